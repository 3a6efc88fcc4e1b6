#!/usr/bin/env python3
"""Lumina copies for codecs/tests/lumina.rs, built with scapy 2.8's RoCE layer.

Run: /path/to/venv/bin/python codecs/tests/make_lumina_vectors.py   (prints NAME HEX lines, and
writes tests/fixtures/lumina.pcap — the vectors in this order, an ns pcap written with struct —
and tests/fixtures/lumina.expected.jsonl: per frame, the values this script set, under
inspect's keys, as inspect reads the file with `--lumina-port 5000`; and
tests/fixtures/lumina_dumped.pcap / .expected.jsonl: the six copies as Lumina's dumper writes
them, read with `--lumina-port 4791`)

Each vector is a RoCEv2 packet as a NIC sends it (scapy computes its ICRC), then rewritten the
way a Lumina switch's egress rewrites the copy it mirrors (lumina/p4 `SwitchEgress`:
`add_timestamp` and the lines around it), by hand here:
- destination MAC = the 48-bit ingress timestamp, source MAC = the switch sequence number;
- IPv4 TTL = the event (0 none, 1 drop, 2 ECN, 3 bit error); an ECN event's CE mark was set at
  ingress, before the copy, so the copy carries it; a bit error's flipped IPv4 identification
  is flipped back in the copy (so the copy has the packet's own);
- UDP checksum = the packet's source port, UDP source port = random, destination port = the
  testbed's dumper port (5000 here); the IPv4 header checksum recomputed (scapy, del chksum).
The UDP payload (BTH ... ICRC) is the packet's, unchanged.

The `dumped_*` vectors are those copies as Lumina's own dumper writes them to its pcap
(lumina/roce-pkt-dump/main.c `is_roce_pkt`): UDP source port = the checksum field (the packet's
own), destination port = 4791, CE set when the TTL says ECN (already set here), the IPv4 and
UDP checksums recomputed (scapy, chksum=None); MACs and TTL left as the switch wrote them.
"""
import json
import os
import struct

from scapy.all import IP, UDP, Ether, Raw, raw
from scapy.contrib.roce import BTH, AETH, cnp


def mac(v: int) -> str:
    return ":".join("%02x" % b for b in v.to_bytes(6, "big"))


def copy(pkt, ts: int, seq: int, event: int, rand_sport: int, dumper_port: int):
    ip, udp = pkt[IP], pkt[UDP]
    body = bytes(udp.payload)  # BTH ... ICRC, as the NIC sent it
    tos = ip.tos | 3 if event == 2 else ip.tos
    return (Ether(dst=mac(ts), src=mac(seq))
            / IP(src=ip.src, dst=ip.dst, tos=tos, ttl=event, id=ip.id, flags=ip.flags)
            / UDP(sport=rand_sport, dport=dumper_port, chksum=udp.sport)
            / Raw(body))


def dumped(cp):
    """A switch's copy as Lumina's dumper rewrites it before writing its file."""
    ip, udp = cp[IP], cp[UDP]
    tos = ip.tos
    if ip.ttl == 2 and tos & 3 in (1, 2):
        tos = (tos & 0xFC) | 3
    return (Ether(dst=cp[Ether].dst, src=cp[Ether].src)
            / IP(src=ip.src, dst=ip.dst, tos=tos, ttl=ip.ttl, id=ip.id, flags=ip.flags)
            / UDP(sport=udp.chksum, dport=4791)
            / Raw(bytes(udp.payload)))


def main():
    # A WRITE MIDDLE of 64 bytes, ECT(0), to QP 0x000011 at PSN 5.
    data = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
            / IP(src="10.0.0.1", dst="10.0.0.2", tos=0x02, ttl=64, id=0x1234, flags="DF")
            / UDP(sport=0xC123, dport=4791, chksum=0)
            / BTH(opcode=0x07, pkey=0xFFFF, dqpn=0x000011, psn=5)
            / Raw(bytes(range(64))))
    # The receiver's ACK of PSN 5 (MSN 1), back to QP 0x000022.
    ack = (Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
           / IP(src="10.0.0.2", dst="10.0.0.1", ttl=64, id=0x0042, flags="DF")
           / UDP(sport=0xD456, dport=4791, chksum=0)
           / BTH(opcode=0x11, pkey=0xFFFF, dqpn=0x000022, psn=5)
           / AETH(syndrome=0x1F, msn=1))
    # A CNP for QP 0x000022.
    c = (Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
         / IP(src="10.0.0.2", dst="10.0.0.1", tos=0x02, ttl=64, id=0x0043, flags="DF")
         / UDP(sport=0xD457, dport=4791, chksum=0) / cnp(0x22))
    # (timestamp, sequence number, event, random source port) of each copy; the packet it
    # copies, its own source port, DestQP, PSN, opcode and ECN as the receiver gets it.
    made = {
        "data_none": (0x0001_2345_6789, 7, 0, 0xBEEF, data, 0xC123, 0x11, 5, 0x07, 2),
        "data_ecn": (0x0001_2345_6800, 8, 2, 0x0101, data, 0xC123, 0x11, 5, 0x07, 3),
        "data_drop": (0x0001_2345_6900, 9, 1, 0x0202, data, 0xC123, 0x11, 5, 0x07, 2),
        "data_bit_error": (0x0001_2345_6A00, 10, 3, 0x0303, data, 0xC123, 0x11, 5, 0x07, 2),
        "ack_none": (0xFFFF_FFFF_FFF0, 0x7FFF_FFFF, 0, 0x0404, ack, 0xD456, 0x22, 5, 0x11, 0),
        "cnp_none": (0x0000_0000_0001, 1, 0, 0x0505, c, 0xD457, 0x22, 0, 0x81, 2),
    }
    events = ["none", "drop", "ecn", "bit_error"]
    expected = []
    for i, (name, (ts, seq, ev, rport, pkt, sport, qp, psn, op, ecn)) in enumerate(made.items()):
        expected.append({
            "frame.number": i + 1, "ccreplay.ts_ns": 1_700_000_000 * 10**9 + 1000 * i,
            "eth.dst": mac(ts), "eth.src": mac(seq), "ip.src": pkt[IP].src, "ip.dst": pkt[IP].dst,
            "ip.ttl": ev, "ip.dsfield.ecn": ecn, "udp.srcport": sport, "udp.dstport": 4791,
            "ccreplay.lumina.seq": seq, "ccreplay.lumina.switch_ns": ts,
            "ccreplay.lumina.event": events[ev], "ccreplay.lumina.udp.srcport": rport,
            "ccreplay.lumina.udp.dstport": 5000, "infiniband.bth.opcode": op,
            "infiniband.bth.destqp": qp, "infiniband.bth.psn": psn, "ccreplay.icrc.valid": 1,
        })
    expected.append({
        "frame.number": 7, "ccreplay.ts_ns": 1_700_000_000 * 10**9 + 6000, "ip.ttl": 64,
        "ip.src": "10.0.0.1", "ip.dst": "10.0.0.2",
        "udp.srcport": 0xC123, "udp.dstport": 4791, "infiniband.bth.destqp": 0x11,
        "infiniband.bth.psn": 5, "ccreplay.icrc.valid": 1,
    })
    vectors = {
        "data_none": copy(data, 0x0001_2345_6789, 7, 0, 0xBEEF, 5000),
        "data_ecn": copy(data, 0x0001_2345_6800, 8, 2, 0x0101, 5000),
        "data_drop": copy(data, 0x0001_2345_6900, 9, 1, 0x0202, 5000),
        "data_bit_error": copy(data, 0x0001_2345_6A00, 10, 3, 0x0303, 5000),
        "ack_none": copy(ack, 0xFFFF_FFFF_FFF0, 0x7FFF_FFFF, 0, 0x0404, 5000),
        "cnp_none": copy(c, 0x0000_0000_0001, 1, 0, 0x0505, 5000),
        "data_original": data,
    }
    for name, p in vectors.items():
        print(name, raw(p).hex())
    for name in ["data_none", "data_drop", "ack_none"]:
        print("dumped_" + name, raw(dumped(vectors[name])).hex())
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "..", "..", "tests", "fixtures", "lumina.pcap")
    with open(out, "wb") as f:
        # ns pcap (magic a1b23c4d), little-endian, snaplen 65535, Ethernet.
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(vectors.values()):
            b = raw(p)
            t = 1_700_000_000 * 10**9 + 1000 * i
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(b), len(b)) + b)
    with open(os.path.join(os.path.dirname(out), "lumina.expected.jsonl"), "w") as f:
        for e in expected:
            f.write(json.dumps(e) + "\n")
    # The dumper's file: the six copies, ports put back.
    copies = [n for n in vectors if n != "data_original"]
    with open(os.path.join(os.path.dirname(out), "lumina_dumped.pcap"), "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i, n in enumerate(copies):
            b = raw(dumped(vectors[n]))
            t = 1_700_000_000 * 10**9 + 1000 * i
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(b), len(b)) + b)
    with open(os.path.join(os.path.dirname(out), "lumina_dumped.expected.jsonl"), "w") as f:
        for e in expected[:len(copies)]:
            d = dict(e)
            d["ccreplay.lumina.udp.srcport"] = d["udp.srcport"]
            d["ccreplay.lumina.udp.dstport"] = 4791
            f.write(json.dumps(d) + "\n")


if __name__ == "__main__":
    main()
