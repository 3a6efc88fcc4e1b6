#!/usr/bin/env python3
"""Expected frames for frame.rs's writer tests (`FrameRepr::emit`).

Run: python3 codecs/tests/make_frame_vectors.py   (scapy 2.8; prints hex frames)

`FrameRepr::emit` writes IPv4 with Don't Fragment set (etherparse's default, as RoCEv2 NICs
do); make_vectors.py's IPv4 frames have it clear. This script takes make_vectors.py's frames,
sets DF (flags byte |= 0x40), recomputes the IPv4 header checksum (RFC 1071, below) and the
ICRC (make_vectors.icrc: DF is not masked by the ICRC), and for the scapy-built frames checks
the result against scapy building the same packet with flags="DF". The IPv6 frame has no DF
and is printed as make_vectors.py prints it.
"""
import contextlib
import io
import struct

from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, raw
from scapy.contrib.roce import BTH, cnp

import make_vectors


def ipv4_checksum(h: bytes) -> int:
    s = sum(struct.unpack(">%dH" % (len(h) // 2), h[:10] + b"\0\0" + h[12:]))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def with_df(frame: bytes, bth_in_payload: int) -> bytes:
    f = bytearray(frame)
    f[14 + 6] |= 0x40
    ihl = (f[14] & 0xF) * 4
    f[14 + 10:14 + 12] = struct.pack(">H", ipv4_checksum(bytes(f[14:14 + ihl])))
    f[-4:] = make_vectors.icrc(bytes(f), 14, bth_in_payload)
    return bytes(f)


def main():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        make_vectors.main()
    frames = dict(line.split() for line in out.getvalue().splitlines())
    # BTH's offset in the UDP payload: after the INT stack (2 + 5 * 8) or the rcc shim (8).
    bth_at = {"scapy_write_first": 0, "scapy_cnp": 0, "hpcc_ack": 42, "fncc_ack": 0,
              "rcc_data": 8, "rcc_ack": 8}
    df = {name: with_df(bytes.fromhex(frames[name]), at) for name, at in bth_at.items()}
    p1 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / IP(src="192.168.1.1", dst="192.168.1.2", tos=0x02, ttl=64, id=7, flags="DF")
          / UDP(sport=0xC001, dport=4791, chksum=0)
          / BTH(opcode=0x06, padcount=2, pkey=0xFFFF, dqpn=0x000123, ackreq=1, psn=0x000010)
          / Raw(struct.pack(">QII", 0x1122334455667788, 0xCAFEBABE, 0x2000) + b"ABCDEF" + b"\0\0"))
    p3 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / IP(src="10.0.0.2", dst="10.0.0.1", ttl=64, id=1, flags="DF")
          / UDP(sport=0xC003, dport=4791, chksum=0) / cnp(0x12))
    assert raw(p1) == df["scapy_write_first"]
    assert raw(p3) == df["scapy_cnp"]
    # Two more, for the fields the first seven leave at 0: IPv6 with DSCP 46 (EF) and ECN 1
    # (tc 0xB9) under one 802.1Q tag with DEI set; IPv4 with DSCP 46, ECN 1 (tos 0xB9), DF and
    # 4 option bytes (3 NOPs, EOL). Both RC SEND_ONLY with 3 payload bytes and PadCnt 1.
    send = BTH(opcode=0x04, padcount=1, dqpn=0x000ABC, psn=0x000777) / Raw(b"xyz\0")
    p4 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / Dot1Q(prio=6, id=1, vlan=0xABC)
          / IPv6(src="fd00::1", dst="fd00::2", tc=0xB9, fl=0xFEDCB, hlim=3)
          / UDP(sport=0xC008, dport=4791) / send)
    p5 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / IP(src="10.0.0.1", dst="10.0.0.2", tos=0xB9, ttl=5, id=0x1234, flags="DF",
               options=[b"\x01\x01\x01\x00"])
          / UDP(sport=0xC009, dport=4791, chksum=0) / send)
    b4, b5 = raw(p4), raw(p5)
    # scapy's ICRC agrees with make_vectors.icrc (IPv6 after one tag at 18; IPv4 IHL 6).
    assert make_vectors.icrc(b4, 18, 0) == b4[-4:]
    assert make_vectors.icrc(b5, 14, 0) == b5[-4:]
    assert b5[14] == 0x46
    df["ipv6_dscp_dei"] = b4
    df["ipv4_options_dscp"] = b5
    for name in ("ipv6_dscp_dei", "ipv4_options_dscp", "scapy_write_first", "scapy_ack_ipv6_qinq", "scapy_cnp", "hpcc_ack",
                 "fncc_ack", "rcc_data", "rcc_ack"):
        print(name, df[name].hex() if name in df else frames[name])


if __name__ == "__main__":
    main()
