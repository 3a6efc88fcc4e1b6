//! Every expected frame below is one `codecs/tests/make_frame_vectors.py` prints (scapy
//! 2.8.0): make_vectors.py's frames (tests/packet_vectors.rs's: scapy.contrib.roce builds
//! the plain RoCEv2 frames and computes their ICRC and, over IPv6, the UDP checksum; the
//! dialect frames are packed with `struct` from wire.md 5) with IPv4's Don't Fragment bit
//! set, as this writer sets it, the IPv4 checksum and ICRC recomputed (and checked against
//! scapy's own DF frames), plus two frames for DSCP, DEI and IPv4 options. Each
//! `FrameRepr` is written out field by field from the arguments that script gives scapy,
//! never read back from a decoded frame; other expected values are worked out by hand in
//! the comments.

use super::*;
use crate::ib::Opcode;
use crate::packet::DecodeConfig;
use crate::shim::IntLayout;
use crate::shim::int::IntHop;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const SCAPY_WRITE_FIRST: &str = "020000000002020000000001080045020044000740004011b74cc0a80101c0a80102c00112b7003000000620ffff00000123800000101122334455667788cafebabe000020004142434445460000fe19cc3d";
const SCAPY_ACK_IPV6_QINQ: &str = "02000000000102000000000288a860648100a0c886dd60312345001c1140fd000000000000000000000000000002fd000000000000000000000000000001c00212b7001c09191100ffff000004560000abcd60000005986c7049";
const SCAPY_CNP: &str = "02000000000202000000000108004500003c00014000401126ae0a0000020a000001c00312b7002800008100ffff400000120000000000000000000000000000000000000000322a1ca5";
const HPCC_ACK: &str = "02000000000202000000000108004500005a00004000401126910a0000010a000002c00412b70046000025752fffff0ffffe0010300010000005ffff0000000000000000000000000000000000000000000000001100ffff00000007000000641f00002aadcfc063";
const FNCC_ACK: &str = "02000000000202000000000108004500005c000040004011268f0a0000010a000002c00512b7004800001100ffff00000008000002000000000900041abc21234565432101000000000000000000000000000000000000000000000000000000000000000000b656019f";
const RCC_DATA: &str = "02000000000202000000000108004502003800004000401126b10a0000010a000002c00612b700240000000000003b9aca7b0400ffff0000000900000001deadbeefe3c91481";
const IPV6_DSCP_DEI: &str = "0200000000020200000000018100dabc86dd6b9fedcb001c1103fd000000000000000000000000000001fd000000000000000000000000000002c00812b7001ca6bd0410ffff00000abc0000077778797a00db32a844";
const IPV4_OPTIONS_DSCP: &str = "020000000002020000000001080046b900341234400005114bc90a0000010a00000201010100c00912b7001c00000410ffff00000abc0000077778797a00e4c6d5e3";
const RCC_ACK: &str = "02000000000202000000000108004500004000004000401126ab0a0000010a000002c00712b7002c000000000000773594001100ffff0000000a0000000100000001000083d600040100a3ad3ab9";

const MAC1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC2: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn bth(opcode: u8, dest_qp: u32, psn: u32) -> BthRepr {
    BthRepr {
        opcode: Opcode(opcode),
        dest_qp,
        psn,
        ..BthRepr::default()
    }
}

/// make_vectors.py's `l2l3`: 02:..:01 to 02:..:02, 10.0.0.1 to 10.0.0.2, TTL 64, id 0.
fn dialect_frame(sport: u16, ecn: u8, roce: RoceRepr) -> FrameRepr {
    FrameRepr {
        dst_mac: MAC2,
        src_mac: MAC1,
        vlans: [None, None],
        ip: IpRepr::V4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            dscp: 0,
            ecn,
            ttl: 64,
            identification: 0,
            options: Vec::new(),
        },
        udp_src_port: sport,
        udp_dst_port: 4791,
        roce,
    }
}

fn write_first() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(BthRepr {
        pad_cnt: 2,
        ack_req: true,
        ..bth(0x06, 0x123, 0x10)
    });
    roce.reth = Some(RethRepr {
        va: 0x1122_3344_5566_7788,
        r_key: 0xCAFE_BABE,
        dma_len: 0x2000,
    });
    roce.payload = b"ABCDEF".to_vec();
    FrameRepr {
        dst_mac: MAC2,
        src_mac: MAC1,
        vlans: [None, None],
        ip: IpRepr::V4 {
            src: [192, 168, 1, 1],
            dst: [192, 168, 1, 2],
            dscp: 0,
            ecn: 2, // tos 0x02
            ttl: 64,
            identification: 7,
            options: Vec::new(),
        },
        udp_src_port: 0xC001,
        udp_dst_port: 4791,
        roce,
    }
}

fn ack_ipv6_qinq() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(bth(0x11, 0x456, 0xABCD));
    roce.aeth = Some(AethRepr {
        syndrome: 0x60,
        msn: 5,
    });
    FrameRepr {
        dst_mac: MAC1,
        src_mac: MAC2,
        vlans: [
            Some(VlanRepr {
                tpid: 0x88A8,
                pcp: 3,
                dei: false,
                vid: 100,
            }),
            Some(VlanRepr {
                tpid: 0x8100,
                pcp: 5,
                dei: false,
                vid: 200,
            }),
        ],
        ip: IpRepr::V6 {
            src: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            dst: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            dscp: 0,
            ecn: 3, // tc 0x03
            flow_label: 0x12345,
            hop_limit: 64,
        },
        udp_src_port: 0xC002,
        udp_dst_port: 4791,
        roce,
    }
}

fn cnp() -> FrameRepr {
    // scapy's cnp(0x12): opcode 0x81, BECN, DestQP 0x12, 16 zero bytes.
    let roce = RoceRepr::for_opcode(BthRepr {
        becn: true,
        ..bth(0x81, 0x12, 0)
    });
    FrameRepr {
        dst_mac: MAC2,
        src_mac: MAC1,
        vlans: [None, None],
        ip: IpRepr::V4 {
            src: [10, 0, 0, 2],
            dst: [10, 0, 0, 1],
            dscp: 0,
            ecn: 0,
            ttl: 64,
            identification: 1,
            options: Vec::new(),
        },
        udp_src_port: 0xC003,
        udp_dst_port: 4791,
        roce,
    }
}

fn hop(b: u8, ts: u32, tx_bytes: u32, qlen: u16) -> IntHop {
    IntHop {
        b,
        ts,
        tx_bytes,
        qlen,
    }
}

fn hpcc_ack() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(bth(0x11, 7, 0x64));
    roce.shim = ShimRepr::Int(
        IntStack::from_hops(
            0x575,
            &[
                hop(2, 0xFF_FFF0, 0xF_FFFE, 0x0010),
                hop(3, 0x00_0100, 0x0_0005, 0xFFFF),
            ],
        )
        .unwrap(),
    );
    roce.aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 42,
    });
    dialect_frame(0xC004, 0, roce)
}

fn fncc_ack() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(bth(0x11, 8, 0x200));
    roce.aeth = Some(AethRepr {
        syndrome: 0,
        msn: 9,
    });
    roce.ack_ext = AckExtRepr::Fncc {
        n: 4,
        int: IntStack::from_hops(0xABC, &[hop(2, 0x12_3456, 0x5_4321, 0x0100)]).unwrap(),
    };
    dialect_frame(0xC005, 0, roce)
}

fn rcc_data() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(bth(0x04, 9, 1));
    roce.shim = ShimRepr::RccTimestamp(1_000_000_123);
    roce.payload = vec![0xde, 0xad, 0xbe, 0xef];
    dialect_frame(0xC006, 2, roce)
}

fn rcc_ack() -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(bth(0x11, 0xA, 1));
    roce.shim = ShimRepr::RccTimestamp(2_000_000_000);
    roce.aeth = Some(AethRepr {
        syndrome: 0,
        msn: 1,
    });
    roce.ack_ext = AckExtRepr::Rcc(RccExt {
        cwnd: 33_750,
        n: 4,
        flags: 1,
        reserved: 0,
    });
    dialect_frame(0xC007, 0, roce)
}

/// make_frame_vectors.py's p4 and p5: RC SEND_ONLY, DestQP 0xABC, PSN 0x777, "xyz" and
/// PadCnt 1, DSCP 46 and ECN 1; over IPv6 under one tag with DEI, over IPv4 with options.
fn send_with_dscp(v6: bool) -> FrameRepr {
    let mut roce = RoceRepr::for_opcode(BthRepr {
        pad_cnt: 1,
        ..bth(0x04, 0xABC, 0x777)
    });
    roce.payload = b"xyz".to_vec();
    let (vlans, ip, sport) = if v6 {
        let tag = VlanRepr {
            tpid: 0x8100,
            pcp: 6,
            dei: true,
            vid: 0xABC,
        };
        let ip = IpRepr::V6 {
            src: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            dst: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            dscp: 46,
            ecn: 1,
            flow_label: 0xF_EDCB,
            hop_limit: 3,
        };
        ([Some(tag), None], ip, 0xC008)
    } else {
        let ip = IpRepr::V4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            dscp: 46,
            ecn: 1,
            ttl: 5,
            identification: 0x1234,
            options: vec![1, 1, 1, 0],
        };
        ([None, None], ip, 0xC009)
    };
    FrameRepr {
        dst_mac: MAC2,
        src_mac: MAC1,
        vlans,
        ip,
        udp_src_port: sport,
        udp_dst_port: 4791,
        roce,
    }
}

fn vectors() -> [(&'static str, Dialect, FrameRepr, &'static str); 9] {
    [
        (
            "write_first",
            Dialect::Roce,
            write_first(),
            SCAPY_WRITE_FIRST,
        ),
        (
            "ack_ipv6_qinq",
            Dialect::Roce,
            ack_ipv6_qinq(),
            SCAPY_ACK_IPV6_QINQ,
        ),
        ("cnp", Dialect::Roce, cnp(), SCAPY_CNP),
        ("hpcc_ack", Dialect::Hpcc, hpcc_ack(), HPCC_ACK),
        ("fncc_ack", Dialect::Fncc, fncc_ack(), FNCC_ACK),
        ("rcc_data", Dialect::Rcc, rcc_data(), RCC_DATA),
        ("rcc_ack", Dialect::Rcc, rcc_ack(), RCC_ACK),
        (
            "ipv6_dscp_dei",
            Dialect::Roce,
            send_with_dscp(true),
            IPV6_DSCP_DEI,
        ),
        (
            "ipv4_options_dscp",
            Dialect::Roce,
            send_with_dscp(false),
            IPV4_OPTIONS_DSCP,
        ),
    ]
}

/// The writer gives scapy's bytes, byte for byte: lengths, IPv4 checksum, VLAN tags, IPv6
/// traffic class and flow label, UDP checksum over IPv6, pad, ICRC; appended after what
/// `out` already holds.
#[test]
fn emit_writes_the_scapy_vectors() {
    for (name, dialect, frame, want) in vectors() {
        let mut out = vec![0xEE; 3];
        frame.emit(dialect, IntConfig::default(), &mut out).unwrap();
        assert_eq!(out[..3], [0xEE; 3], "{name}");
        assert_eq!(out[3..], hex(want)[..], "{name}");
    }
}

/// Reading the scapy frames back gives the same reprs (IPv4 identification and options,
/// IPv6 flow label, tags, every RoCE header).
#[test]
fn from_packet_reads_the_scapy_vectors() {
    for (name, dialect, frame, want) in vectors() {
        let bytes = hex(want);
        let p = Packet::decode_ethernet(&bytes, &DecodeConfig::for_dialect(dialect));
        assert_eq!(p.error, None, "{name}");
        assert_eq!(FrameRepr::from_packet(&p), Some(frame), "{name}");
    }
    // Not a whole frame: no IP, UDP or RoCE (cut after the Ethernet header).
    let bytes = hex(SCAPY_CNP);
    let p = Packet::decode_ethernet(&bytes[..14], &DecodeConfig::default());
    assert_eq!(FrameRepr::from_packet(&p), None);
}

/// `emit_body` returns BTH's offset inside what it appended: 8 after an rcc timestamp
/// (wire.md 5), 2 + 8 × 5 = 42 after a padded 5-slot INT stack, 0 without a shim, however
/// many bytes `out` held before.
#[test]
fn emit_body_returns_bth_offset_in_the_body() {
    for (frame, want) in [(rcc_data(), 8), (hpcc_ack(), 42), (write_first(), 0)] {
        let mut out = vec![0xEE; 5];
        let off = frame.roce.emit_body(IntConfig::default(), &mut out);
        assert_eq!(off, want);
        assert_eq!(out[5 + off], frame.roce.bth.opcode.0);
    }
    // write_first: BTH 12 + RETH 16 + "ABCDEF" 6 + PadCnt 2 zero bytes = 36.
    let mut out = Vec::new();
    write_first().roce.emit_body(IntConfig::default(), &mut out);
    assert_eq!(out.len(), 36);
    assert_eq!(out[34..], [0, 0]);
}

fn mismatch(opcode: u8, header: &'static str, problem: &'static str) -> EmitError {
    EmitError::ExtHeaderMismatch {
        opcode,
        header,
        problem,
    }
}

/// A frame whose headers are not the opcode's, whose shim or ACK extension is not the
/// dialect's, or whose INT stack is deeper than `max_hops` is refused and nothing is
/// written.
#[test]
fn validate_refuses_what_the_opcode_or_dialect_does_not_carry() {
    let int = IntConfig::default();
    let emit = |f: &FrameRepr, d: Dialect| {
        let mut out = Vec::new();
        let r = f.emit(d, int, &mut out);
        assert!(r.is_ok() || out.is_empty(), "nothing written on error");
        r
    };
    // WRITE_FIRST without its RETH; with an AETH it does not carry.
    let mut f = write_first();
    f.roce.reth = None;
    assert_eq!(emit(&f, Dialect::Roce), Err(mismatch(6, "RETH", "missing")));
    let mut f = write_first();
    f.roce.aeth = Some(AethRepr::default());
    assert_eq!(
        emit(&f, Dialect::Roce),
        Err(mismatch(6, "AETH", "not carried by this opcode"))
    );
    // Shims: hpcc needs its INT stack, rcc its timestamp, roce none.
    let shim = |dialect| EmitError::DialectMismatch {
        what: "shim",
        dialect,
    };
    assert_eq!(
        emit(&write_first(), Dialect::Hpcc),
        Err(shim(Dialect::Hpcc))
    );
    assert_eq!(emit(&write_first(), Dialect::Rcc), Err(shim(Dialect::Rcc)));
    assert_eq!(emit(&hpcc_ack(), Dialect::Roce), Err(shim(Dialect::Roce)));
    assert_eq!(emit(&rcc_ack(), Dialect::Fncc), Err(shim(Dialect::Fncc)));
    // ACK extensions: an fncc ACK needs N and a stack, an rcc ACK its extension; none on
    // data.
    let ext = |dialect| EmitError::DialectMismatch {
        what: "ACK extension",
        dialect,
    };
    let mut f = fncc_ack();
    f.roce.ack_ext = AckExtRepr::None;
    assert_eq!(emit(&f, Dialect::Fncc), Err(ext(Dialect::Fncc)));
    let mut f = rcc_ack();
    f.roce.ack_ext = AckExtRepr::None;
    assert_eq!(emit(&f, Dialect::Rcc), Err(ext(Dialect::Rcc)));
    let mut f = rcc_ack();
    f.roce.ack_ext = fncc_ack().roce.ack_ext;
    assert_eq!(emit(&f, Dialect::Rcc), Err(ext(Dialect::Rcc)));
    let mut f = fncc_ack();
    f.roce.ack_ext = rcc_ack().roce.ack_ext;
    assert_eq!(emit(&f, Dialect::Fncc), Err(ext(Dialect::Fncc)));
    let mut f = rcc_data();
    f.roce.ack_ext = rcc_ack().roce.ack_ext;
    assert_eq!(emit(&f, Dialect::Rcc), Err(ext(Dialect::Rcc)));
    // A plain ACK is fine in roce and hpcc.
    assert!(emit(&ack_ipv6_qinq(), Dialect::Roce).is_ok());
    // INT stacks: 5 hops at max_hops 5 are written, 6 are not (in the shim and in an
    // fncc ACK).
    let hops = [hop(1, 2, 3, 4); 6];
    let deep = |n: usize| IntStack::from_hops(1, &hops[..n]).unwrap();
    let mut f = hpcc_ack();
    f.roce.shim = ShimRepr::Int(deep(5));
    assert!(emit(&f, Dialect::Hpcc).is_ok());
    f.roce.shim = ShimRepr::Int(deep(6));
    let too_deep = Err(EmitError::OutOfRange {
        field: "int.nhop",
        value: 6,
        limit: "<= max_hops",
    });
    assert_eq!(emit(&f, Dialect::Hpcc), too_deep);
    let mut f = fncc_ack();
    f.roce.ack_ext = AckExtRepr::Fncc { n: 1, int: deep(5) };
    assert!(emit(&f, Dialect::Fncc).is_ok());
    f.roce.ack_ext = AckExtRepr::Fncc { n: 1, int: deep(6) };
    assert_eq!(emit(&f, Dialect::Fncc), too_deep);
}

/// The UDP length limit: 65,535 - 60 (the largest IPv4 header) = 65,475 is written, one
/// more byte is not. A SEND_ONLY's UDP length is 8 + BTH 12 + payload + ICRC 4, so a
/// 65,451-byte payload gives 65,475 (0xFFC3); with 40 option bytes the IPv4 total length
/// is 60 + 65,475 = 65,535 (0xFFFF), without options 20 + 65,475 = 65,495 (0xFFD7).
#[test]
fn udp_length_limit_by_hand() {
    let mut f = rcc_data();
    f.roce.shim = ShimRepr::None;
    f.roce.payload = vec![0; 65_451];
    let mut out = Vec::new();
    f.emit(Dialect::Roce, IntConfig::default(), &mut out)
        .unwrap();
    assert_eq!(out.len(), 14 + 20 + 65_475);
    assert_eq!(out[16..18], [0xFF, 0xD7]); // IPv4 total length
    assert_eq!(out[38..40], [0xFF, 0xC3]); // UDP length
    if let IpRepr::V4 { options, .. } = &mut f.ip {
        *options = vec![1; 40]; // 40 NOPs
    }
    out.clear();
    f.emit(Dialect::Roce, IntConfig::default(), &mut out)
        .unwrap();
    assert_eq!(out[14], 0x4F); // IHL 15 words
    assert_eq!(out[16..18], [0xFF, 0xFF]);
    f.roce.payload.push(0);
    out.clear();
    assert_eq!(
        f.emit(Dialect::Roce, IntConfig::default(), &mut out),
        Err(EmitError::OutOfRange {
            field: "udp.length",
            value: 65_476,
            limit: "fits an IP packet",
        })
    );
    assert!(out.is_empty());
    // Options that are not a multiple of 4 are refused too.
    let mut f = write_first();
    if let IpRepr::V4 { options, .. } = &mut f.ip {
        *options = vec![1; 5];
    }
    assert_eq!(
        f.emit(Dialect::Roce, IntConfig::default(), &mut out),
        Err(EmitError::OutOfRange {
            field: "ipv4.options length",
            value: 5,
            limit: "a multiple of 4, at most 40",
        })
    );
}

/// `conform` masks every field to its wire width and fixes what the frame may carry; each
/// expected value is the input masked by hand.
#[test]
fn conform_masks_fields_by_hand() {
    let mut f = write_first();
    f.vlans = [
        None,
        Some(VlanRepr {
            tpid: 0x9100, // not a VLAN TPID: becomes 0x8100
            pcp: 0x0D,    // 0b1101 & 0b111 = 5
            dei: true,
            vid: 0x1234, // & 0xFFF = 0x234
        }),
    ];
    f.ip = IpRepr::V4 {
        src: [1, 2, 3, 4],
        dst: [5, 6, 7, 8],
        dscp: 0xFF, // & 0x3F = 0x3F
        ecn: 0xFE,  // & 3 = 2
        ttl: 9,
        identification: 10,
        options: vec![1; 47], // cut to 40
    };
    f.udp_dst_port = 1;
    f.roce.payload = vec![7; 5000];
    f.conform(Dialect::Roce, IntConfig::default(), 4791);
    assert_eq!(
        f.vlans,
        [
            Some(VlanRepr {
                tpid: 0x8100,
                pcp: 5,
                dei: true,
                vid: 0x234
            }),
            None
        ]
    );
    let IpRepr::V4 {
        dscp, ecn, options, ..
    } = &f.ip
    else {
        unreachable!()
    };
    assert_eq!((*dscp, *ecn, options.len()), (0x3F, 2, 40));
    assert_eq!(f.udp_dst_port, 4791);
    assert_eq!(f.roce.payload.len(), 4096);
    // Options of 7 bytes keep 4 (7 / 4 * 4), of 13 keep 12; a QinQ tag keeps 0x88A8.
    for (n, kept) in [(7, 4), (13, 12), (3, 0), (8, 8)] {
        let mut f = write_first();
        f.vlans[0] = Some(VlanRepr {
            tpid: 0x88A8,
            pcp: 2,
            dei: false,
            vid: 0xFFF,
        });
        if let IpRepr::V4 { options, .. } = &mut f.ip {
            *options = vec![1; n];
        }
        f.conform(Dialect::Roce, IntConfig::default(), 4791);
        let IpRepr::V4 { options, .. } = &f.ip else {
            unreachable!()
        };
        assert_eq!(options.len(), kept, "{n} option bytes");
        assert_eq!(
            f.vlans[0].map(|t| (t.tpid, t.pcp, t.vid)),
            Some((0x88A8, 2, 0xFFF))
        );
    }
    // IPv6: DSCP 0xC1 & 0x3F = 0x01, ECN 0x07 & 3 = 3, flow label 0xFFF1_2345 & 0xF_FFFF
    // = 0x1_2345.
    let mut f = ack_ipv6_qinq();
    f.ip = IpRepr::V6 {
        src: [0; 16],
        dst: [0; 16],
        dscp: 0xC1,
        ecn: 0x07,
        flow_label: 0xFFF1_2345,
        hop_limit: 1,
    };
    f.conform(Dialect::Roce, IntConfig::default(), 4791);
    let IpRepr::V6 {
        dscp,
        ecn,
        flow_label,
        ..
    } = f.ip
    else {
        unreachable!()
    };
    assert_eq!((dscp, ecn, flow_label), (0x01, 3, 0x1_2345));
}

/// `RoceRepr::conform`: a known opcode stays, an unknown one becomes RC SEND_ONLY; 24-bit
/// fields keep their low 24 bits; the dialect's shim and ACK extension are kept when given
/// and made when missing; a CNP loses its payload.
#[test]
fn roce_conform_by_hand() {
    let int = IntConfig::default();
    // RD SEND_ONLY (0x44) carries RDETH and DETH (IBTA 9.2, table 38); 0xAB12_3456 &
    // 0xFF_FFFF = 0x12_3456, 0xCD00_0042 -> 0x42.
    let mut r = RoceRepr::for_opcode(bth(0x44, 1, 1));
    assert!(r.rdeth.is_some() && r.deth.is_some() && r.reth.is_none());
    r.rdeth = Some(RdethRepr {
        reserved: 0,
        ee_context: 0xAB12_3456,
    });
    r.deth = Some(DethRepr {
        q_key: 0xFFFF_FFFF,
        reserved: 0,
        src_qp: 0xCD00_0042,
    });
    r.reth = Some(RethRepr::default()); // not carried: dropped
    r.conform(Dialect::Roce, int);
    assert_eq!(r.bth.opcode, Opcode(0x44));
    assert_eq!(r.rdeth.map(|h| h.ee_context), Some(0x12_3456));
    assert_eq!(
        r.deth.map(|h| (h.q_key, h.src_qp)),
        Some((0xFFFF_FFFF, 0x42))
    );
    assert_eq!(r.reth, None);
    // An ACK's MSN 0xEE00_0007 -> 7; an unknown opcode (0x1F) -> SEND_ONLY, no AETH.
    let mut r = RoceRepr::for_opcode(bth(0x11, 1, 1));
    r.aeth = Some(AethRepr {
        syndrome: 0,
        msn: 0xEE00_0007,
    });
    r.conform(Dialect::Roce, int);
    assert_eq!(r.aeth.map(|h| h.msn), Some(7));
    r.bth.opcode = Opcode(0x1F);
    r.conform(Dialect::Roce, int);
    assert_eq!((r.bth.opcode, r.aeth), (Opcode::RC_SEND_ONLY, None));
    // Dialect extensions given are kept; missing ones are made.
    let mut r = fncc_ack().roce;
    let given = r.ack_ext;
    r.conform(Dialect::Fncc, int);
    assert_eq!(r.ack_ext, given);
    r.ack_ext = AckExtRepr::None;
    r.conform(Dialect::Fncc, int);
    assert_eq!(
        r.ack_ext,
        AckExtRepr::Fncc {
            n: 0,
            int: IntStack::new()
        }
    );
    let mut r = rcc_ack().roce;
    let given = r.ack_ext;
    r.conform(Dialect::Rcc, int);
    assert_eq!(
        (r.ack_ext, r.shim),
        (given, ShimRepr::RccTimestamp(2_000_000_000))
    );
    r.ack_ext = AckExtRepr::None;
    r.conform(Dialect::Rcc, int);
    assert_eq!(r.ack_ext, AckExtRepr::Rcc(RccExt::default()));
    // hpcc keeps its stack, cut to max_hops (6 hops -> 5).
    let mut r = hpcc_ack().roce;
    let hops = [hop(1, 2, 3, 4); 6];
    r.shim = ShimRepr::Int(IntStack::from_hops(9, &hops).unwrap());
    r.conform(Dialect::Hpcc, int);
    assert_eq!(
        r.shim,
        ShimRepr::Int(IntStack::from_hops(9, &hops[..5]).unwrap())
    );
    // A CNP has no payload.
    let mut r = cnp().roce;
    r.payload = vec![1, 2, 3];
    r.conform(Dialect::Roce, int);
    assert!(r.payload.is_empty());
    // The whole conformed frame validates (and so is written).
    let mut f = hpcc_ack();
    f.roce.shim = ShimRepr::None;
    f.conform(
        Dialect::Hpcc,
        IntConfig {
            layout: IntLayout::Grown,
            max_hops: 5,
        },
        4791,
    );
    assert_eq!(f.roce.shim, ShimRepr::Int(IntStack::new()));
}
