#!/usr/bin/env python3
"""Independent test vectors for codecs/tests/packet_vectors.rs.

Run: python3 codecs/tests/make_vectors.py   (scapy 2.8; prints hex frames)

The plain RoCEv2 frames are built by scapy.contrib.roce, which computes the ICRC itself. The
dialect frames (hpcc, fncc, rcc) are assembled with struct.pack from wire.md 5, and their ICRC
comes from `icrc()` below, a zlib.crc32 over the masked pseudo-header of wire.md 4 — checked
first against scapy's ICRC on the scapy-built frames.
"""
import struct
import zlib

from scapy.all import IP, UDP, Dot1AD, Dot1Q, Ether, IPv6, Raw, raw
from scapy.contrib.roce import AETH, BTH, cnp


def icrc(frame: bytes, ip_off: int, bth_in_payload: int) -> bytes:
    """ICRC of a frame whose last 4 bytes are the ICRC slot (wire.md 4)."""
    v = frame[ip_off] >> 4
    if v == 4:
        ihl = (frame[ip_off] & 0xF) * 4
        ip = bytearray(frame[ip_off:ip_off + ihl])
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
    else:
        ihl = 40
        ip = bytearray(frame[ip_off:ip_off + 40])
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
    udp = bytearray(frame[ip_off + ihl:ip_off + ihl + 8])
    udp[6:8] = b"\xff\xff"
    pay = bytearray(frame[ip_off + ihl + 8:-4])
    pay[bth_in_payload + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(pay)) & 0xFFFFFFFF
    return struct.pack("<I", crc)


def ipv4_udp(payload_len: int, src, dst, tos=0, ttl=64, ident=0) -> bytes:
    tot = 20 + 8 + payload_len
    h = struct.pack(">BBHHHBBH4s4s", 0x45, tos, tot, ident, 0, ttl, 17, 0, bytes(src), bytes(dst))
    s = sum(struct.unpack(">10H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    h = h[:10] + struct.pack(">H", ~s & 0xFFFF) + h[12:]
    return h


def with_icrc(f_no_icrc: bytes, bth_in_payload: int) -> bytes:
    f = f_no_icrc + b"\0\0\0\0"
    return f_no_icrc + icrc(f, 14, bth_in_payload)


def hop(b, ts, tx, q):
    return struct.pack(">Q", (b << 60) | (ts << 36) | (tx << 16) | q)


def int_stack(path_id, hops, max_hops=5):
    return struct.pack(">H", (len(hops) << 12) | path_id) + b"".join(hops) + b"\0" * 8 * (max_hops - len(hops))


def bth(opcode, dqp, psn, se=0, m=0, pad=0, tver=0, pkey=0xFFFF, fecn=0, becn=0, ackreq=0):
    return struct.pack(">BBHB3sB3s", opcode, se << 7 | m << 6 | pad << 4 | tver, pkey,
                       fecn << 7 | becn << 6, dqp.to_bytes(3, "big"), ackreq << 7, psn.to_bytes(3, "big"))


def l2l3(payload_len_with_icrc: int, sport: int, tos=0) -> bytes:
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = ipv4_udp(payload_len_with_icrc, [10, 0, 0, 1], [10, 0, 0, 2], tos=tos)
    udp = struct.pack(">HHHH", sport, 4791, 8 + payload_len_with_icrc, 0)
    return eth + ip + udp


def main():
    p1 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / IP(src="192.168.1.1", dst="192.168.1.2", tos=0x02, ttl=64, id=7)
          / UDP(sport=0xC001, dport=4791, chksum=0)
          / BTH(opcode=0x06, padcount=2, pkey=0xFFFF, dqpn=0x000123, ackreq=1, psn=0x000010)
          / Raw(struct.pack(">QII", 0x1122334455667788, 0xCAFEBABE, 0x2000) + b"ABCDEF" + b"\0\0"))
    p2 = (Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", type=0x88A8)
          / Dot1AD(prio=3, vlan=100) / Dot1Q(prio=5, vlan=200)
          / IPv6(src="fd00::2", dst="fd00::1", tc=0x03, fl=0x12345, hlim=64)
          / UDP(sport=0xC002, dport=4791)
          / BTH(opcode=0x11, dqpn=0x000456, psn=0x00ABCD) / AETH(syndrome=0x60, msn=5))
    p3 = (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
          / IP(src="10.0.0.2", dst="10.0.0.1", ttl=64, id=1)
          / UDP(sport=0xC003, dport=4791, chksum=0) / cnp(0x12))
    for name, p, ip_off in (("scapy_write_first", p1, 14), ("scapy_ack_ipv6_qinq", p2, 22),
                            ("scapy_cnp", p3, 14)):
        b = raw(p)
        assert icrc(b, ip_off, 0) == b[-4:], name  # our Python ICRC agrees with scapy's
        print(name, b.hex())

    # hpcc: RC ACK (0x11) with a 5-slot INT stack, 2 hops filled, pathID 0x123 ^ 0x456 = 0x575.
    st = int_stack(0x575, [hop(2, 0xFFFFF0, 0xFFFFE, 0x0010), hop(3, 0x000100, 0x00005, 0xFFFF)])
    body = st + bth(0x11, 0x000007, 0x000064) + struct.pack(">B3s", 0x1F, (42).to_bytes(3, "big"))
    f = l2l3(len(body) + 4, 0xC004) + body
    print("hpcc_ack", with_icrc(f, len(st)).hex())

    # fncc: RC ACK + AETH ACK credit 0 msn 9 + N = 4 + stack with 1 hop (record 0 = last hop).
    body = (bth(0x11, 0x000008, 0x000200) + struct.pack(">B3s", 0x00, (9).to_bytes(3, "big"))
            + struct.pack(">H", 4) + int_stack(0xABC, [hop(2, 0x123456, 0x54321, 0x0100)]))
    f = l2l3(len(body) + 4, 0xC005) + body
    print("fncc_ack", with_icrc(f, 0).hex())

    # rcc: RC SEND_ONLY data with ts shim 1_000_000_123 ns and 4 payload bytes, ECT(0).
    shim = struct.pack(">Q", 1_000_000_123)
    body = shim + bth(0x04, 0x000009, 0x000001) + b"\xde\xad\xbe\xef"
    f = l2l3(len(body) + 4, 0xC006, tos=0x02) + body
    print("rcc_data", with_icrc(f, 8).hex())

    # rcc: RC ACK with ts shim 2_000_000_000 ns, AETH, cwnd 33750, N 4, flags PID (0x01).
    shim = struct.pack(">Q", 2_000_000_000)
    body = (shim + bth(0x11, 0x00000A, 0x000001) + struct.pack(">B3s", 0x00, (1).to_bytes(3, "big"))
            + struct.pack(">IHBB", 33750, 4, 0x01, 0))
    f = l2l3(len(body) + 4, 0xC007) + body
    print("rcc_ack", with_icrc(f, 8).hex())


if __name__ == "__main__":
    main()
