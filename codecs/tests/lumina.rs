//! Lumina's mirrored copies (codecs lumina.rs, docs/wire.md 2.3) against frames scapy 2.8
//! built: make_lumina_vectors.py builds each packet as a NIC sends it (its RoCE layer computes
//! the ICRC) and rewrites the copy as a Lumina switch does — timestamp and sequence number in
//! the MACs, the event in the TTL, the UDP source port into the checksum field, a random source
//! port and the dumper port 5000 — and, `DUMPED_*`, as Lumina's own dumper writes such a copy to
//! its file (ports put back, checksums recomputed). Every expected value below is one the
//! script chose.

use ccreplay_codecs::lumina::LuminaEvent;
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

const DATA_NONE: &[&str] = &[
    "00012345678900000000000708004502006c12344000001154490a0000010a000002beef13880058c1230700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const DATA_ECN: &[&str] = &[
    "00012345680000000000000808004503006c12344000021152480a0000010a000002010113880058c1230700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const DATA_DROP: &[&str] = &[
    "00012345690000000000000908004502006c12344000011153490a0000010a000002020213880058c1230700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const DATA_BIT_ERROR: &[&str] = &[
    "000123456a0000000000000a08004502006c12344000031151490a0000010a000002030313880058c1230700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const ACK_NONE: &[&str] = &[
    "fffffffffff000007fffffff08004500003000424000001166790a0000020a00000104041388001cd4561100",
    "ffff00000022000000051f000001a10530d3",
];
const CNP_NONE: &[&str] = &[
    "00000000000100000000000108004502003c004340000011666a0a0000020a000001050513880028d4578100",
    "ffff400000220000000000000000000000000000000000000000c2c1059b",
];
const DATA_ORIGINAL: &[&str] = &[
    "02000000000202000000000108004502006c12344000401114490a0000010a000002c12312b7005800000700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];

/// The copies above as Lumina's dumper writes them (make_lumina_vectors.py `dumped`).
const DUMPED_DATA_NONE: &[&str] = &[
    "00012345678900000000000708004502006c12344000001154490a0000010a000002c12312b7005839b20700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const DUMPED_DATA_DROP: &[&str] = &[
    "00012345690000000000000908004502006c12344000011153490a0000010a000002c12312b7005839b20700",
    "ffff0000001100000005000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021",
    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f9a55583f",
];
const DUMPED_ACK_NONE: &[&str] = &[
    "fffffffffff000007fffffff08004500003000424000001166790a0000020a000001d45612b7001c02a51100",
    "ffff00000022000000051f000001a10530d3",
];

fn frame(hex: &[&str]) -> Vec<u8> {
    let s: String = hex.concat();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn lumina_cfg(port: u16) -> DecodeConfig {
    DecodeConfig {
        lumina_port: port,
        ..DecodeConfig::for_dialect(Dialect::Roce)
    }
}

/// Each copy read with the dumper port set: the switch's fields, the packet's own UDP ports,
/// its BTH, its ECN as the receiver got it, and its ICRC — scapy's, over the ports put back.
#[test]
fn copies_read_as_the_packets_they_copy() {
    // (copy, timestamp, sequence, event, UDP source port, DestQP, PSN, opcode, ECN)
    let cases = [
        (
            DATA_NONE,
            0x0001_2345_6789u64,
            7u64,
            LuminaEvent::None,
            0xC123u16,
            0x11u32,
            5u32,
            0x07u8,
            2u8,
        ),
        (
            DATA_ECN,
            0x0001_2345_6800,
            8,
            LuminaEvent::Ecn,
            0xC123,
            0x11,
            5,
            0x07,
            3,
        ),
        (
            DATA_DROP,
            0x0001_2345_6900,
            9,
            LuminaEvent::Drop,
            0xC123,
            0x11,
            5,
            0x07,
            2,
        ),
        (
            DATA_BIT_ERROR,
            0x0001_2345_6A00,
            10,
            LuminaEvent::BitError,
            0xC123,
            0x11,
            5,
            0x07,
            2,
        ),
        (
            ACK_NONE,
            0xFFFF_FFFF_FFF0,
            0x7FFF_FFFF,
            LuminaEvent::None,
            0xD456,
            0x22,
            5,
            0x11,
            0,
        ),
        (CNP_NONE, 1, 1, LuminaEvent::None, 0xD457, 0x22, 0, 0x81, 2),
    ];
    for (i, (hex, ts, seq, event, sport, qp, psn, opcode, ecn)) in cases.into_iter().enumerate() {
        let f = frame(hex);
        let p = Packet::decode_ethernet(&f, &lumina_cfg(5000));
        assert_eq!(p.error, None, "case {i}");
        let l = p.lumina.unwrap();
        assert_eq!((l.switch_ns, l.seq, l.event), (ts, seq, event), "case {i}");
        assert_eq!(l.udp_src_port, sport, "case {i}");
        let udp = p.udp.unwrap();
        assert_eq!((udp.src_port, udp.dst_port), (sport, 4791), "case {i}");
        let r = p.roce.unwrap();
        assert_eq!(
            (r.bth.dest_qp(), r.bth.psn(), r.bth.opcode().0),
            (qp, psn, opcode),
            "case {i}"
        );
        assert_eq!(p.ecn(), Some(ecn), "case {i}");
        let (computed, found) = p.icrc_check().unwrap();
        assert_eq!(
            computed, found,
            "case {i}: the ICRC over the packet's own ports"
        );
    }
}

/// The copy's own ports, as captured: the random source port and the dumper port.
#[test]
fn the_copys_own_ports_are_kept() {
    let f = frame(DATA_NONE);
    let l = Packet::decode_ethernet(&f, &lumina_cfg(5000))
        .lumina
        .unwrap();
    assert_eq!((l.copy_src_port, l.copy_dst_port), (0xBEEF, 5000));
}

/// Without the dumper port the copy is UDP to port 5000, no RoCEv2; the packet as the NIC
/// sent it reads the same with or without it.
#[test]
fn only_the_dumper_port_is_read_as_copies() {
    let f = frame(DATA_NONE);
    let p = Packet::decode_ethernet(&f, &lumina_cfg(0));
    assert!(p.roce.is_none() && p.lumina.is_none());
    assert_eq!(p.udp.unwrap().dst_port, 5000);
    let orig = frame(DATA_ORIGINAL);
    for port in [0, 5000] {
        let p = Packet::decode_ethernet(&orig, &lumina_cfg(port));
        assert!(p.lumina.is_none());
        let r = p.roce.unwrap();
        assert_eq!((r.bth.dest_qp(), r.bth.psn()), (0x11, 5));
        let (computed, found) = p.icrc_check().unwrap();
        assert_eq!(computed, found);
    }
}

/// A datagram to the dumper port whose TTL names no event (64: a host's own UDP) is an error
/// at the TTL (IPv4 header at 14, TTL 8 bytes in), not a packet read with a guessed event.
#[test]
fn a_ttl_no_switch_writes_is_an_error() {
    let mut f = frame(DATA_NONE);
    f[14 + 8] = 64;
    let p = Packet::decode_ethernet(&f, &lumina_cfg(5000));
    let e = p.error.unwrap();
    assert_eq!(e.offset, 22);
    assert!(e.to_string().contains("Lumina event"), "{e}");
    assert!(p.roce.is_none() && p.lumina.is_none());
}

/// The files Lumina's dumper writes (roce-pkt-dump puts each copy's ports back — its source
/// port from the checksum field, 4791 — and recomputes the checksums): read with the copies'
/// port set to the RoCEv2 port, each is the packet it copies with the switch's fields (the
/// script's timestamp, sequence number and event), its own ports as captured, and scapy's ICRC.
/// Read without, each is a plain RoCEv2 packet, its Lumina fields unread.
#[test]
fn the_dumpers_files_read_on_the_rocev2_port() {
    let cases = [
        (
            DUMPED_DATA_NONE,
            0x0001_2345_6789u64,
            7u64,
            LuminaEvent::None,
            0xC123u16,
            0x11u32,
        ),
        (
            DUMPED_DATA_DROP,
            0x0001_2345_6900,
            9,
            LuminaEvent::Drop,
            0xC123,
            0x11,
        ),
        (
            DUMPED_ACK_NONE,
            0xFFFF_FFFF_FFF0,
            0x7FFF_FFFF,
            LuminaEvent::None,
            0xD456,
            0x22,
        ),
    ];
    for (i, (hex, ts, seq, event, sport, qp)) in cases.into_iter().enumerate() {
        let f = frame(hex);
        let p = Packet::decode_ethernet(&f, &lumina_cfg(4791));
        assert_eq!(p.error, None, "case {i}");
        let l = p.lumina.unwrap();
        assert_eq!((l.switch_ns, l.seq, l.event), (ts, seq, event), "case {i}");
        assert_eq!(
            (l.udp_src_port, l.copy_src_port, l.copy_dst_port),
            (sport, sport, 4791),
            "case {i}"
        );
        let udp = p.udp.unwrap();
        assert_eq!((udp.src_port, udp.dst_port), (sport, 4791), "case {i}");
        assert_eq!(p.roce.unwrap().bth.dest_qp(), qp, "case {i}");
        let (computed, found) = p.icrc_check().unwrap();
        assert_eq!(computed, found, "case {i}");
        let plain = Packet::decode_ethernet(&f, &lumina_cfg(0));
        assert!(plain.lumina.is_none() && plain.roce.is_some(), "case {i}");
    }
}
