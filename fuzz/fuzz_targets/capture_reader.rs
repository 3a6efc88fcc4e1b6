//! Capture reader: arbitrary bytes as pcap / pcapng, read in memory and streamed, every record
//! decoded in every dialect (see `ccreplay_codecs::fuzzing::capture`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccreplay_codecs::fuzzing::capture(data));
