//! pcap / pcapng reading and pcap writing.
