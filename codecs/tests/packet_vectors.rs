//! Whole-frame decoding against independent vectors.
//!
//! Every frame below was printed by `codecs/tests/make_vectors.py`: the plain RoCEv2 frames are
//! built by scapy.contrib.roce (which computes the ICRC itself), the dialect frames are packed
//! by hand from wire.md 5 with a zlib ICRC that the script first checks against scapy's. Every
//! expected value is one the script *set*, never one read back from this crate.

use ccreplay_codecs::error::{ErrorKind, Layer};
use ccreplay_codecs::ib::{NakCode, Syndrome};
use ccreplay_codecs::packet::{AckExt, IpAddrs, Shim};
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
use rstest::rstest;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const SCAPY_WRITE_FIRST: &str = "020000000002020000000001080045020044000700004011f74cc0a80101c0a80102c00112b7003000000620ffff00000123800000101122334455667788cafebabe00002000414243444546000067ade63b";
const SCAPY_ACK_IPV6_QINQ: &str = "02000000000102000000000288a860648100a0c886dd60312345001c1140fd000000000000000000000000000002fd000000000000000000000000000001c00212b7001c09191100ffff000004560000abcd60000005986c7049";
const SCAPY_CNP: &str = "02000000000202000000000108004500003c00010000401166ae0a0000020a000001c00312b7002800008100ffff40000012000000000000000000000000000000000000000046e3ae1d";
const HPCC_ACK: &str = "02000000000202000000000108004500005a00000000401166910a0000010a000002c00412b70046000025752fffff0ffffe0010300010000005ffff0000000000000000000000000000000000000000000000001100ffff00000007000000641f00002ae9d3e207";
const FNCC_ACK: &str = "02000000000202000000000108004500005c000000004011668f0a0000010a000002c00512b7004800001100ffff00000008000002000000000900041abc21234565432101000000000000000000000000000000000000000000000000000000000000000000dae4151f";
const RCC_DATA: &str = "02000000000202000000000108004502003800000000401166b10a0000010a000002c00612b700240000000000003b9aca7b0400ffff0000000900000001deadbeeff043f1a9";
const RCC_ACK: &str = "02000000000202000000000108004500004000000000401166ab0a0000010a000002c00712b7002c000000000000773594001100ffff0000000a0000000100000001000083d60004010023c050d0";

fn decode(bytes: &[u8], d: Dialect) -> Packet<'_> {
    Packet::decode_ethernet(bytes, &DecodeConfig::for_dialect(d))
}

fn assert_icrc_valid(p: &Packet<'_>) {
    let (computed, found) = p.icrc_check().expect("complete RoCEv2 packet");
    assert_eq!(computed, found, "ICRC");
}

#[test]
fn scapy_write_first_with_reth_and_pad() {
    let b = hex(SCAPY_WRITE_FIRST);
    let p = decode(&b, Dialect::Roce);
    assert_eq!(p.error, None);
    let ip = p.ip.unwrap();
    assert_eq!(
        ip.addrs,
        IpAddrs::V4 {
            src: [192, 168, 1, 1],
            dst: [192, 168, 1, 2]
        }
    );
    assert_eq!((ip.ecn, ip.dscp, ip.ttl), (2, 0, 64)); // tos = 0x02: ECT(0)
    let udp = p.udp.unwrap();
    assert_eq!((udp.src_port, udp.dst_port), (0xC001, 4791));
    let r = p.roce.unwrap();
    assert_eq!(r.bth_offset, 42);
    assert_eq!(r.bth.opcode().0, 0x06);
    assert_eq!(r.bth.pad_cnt(), 2);
    assert_eq!(r.bth.dest_qp(), 0x123);
    assert_eq!(r.bth.psn(), 0x10);
    assert!(r.bth.ack_req());
    let reth = r.reth().unwrap();
    assert_eq!(
        (reth.va, reth.r_key, reth.dma_len),
        (0x1122_3344_5566_7788, 0xCAFE_BABE, 0x2000)
    );
    assert_eq!(r.payload, b"ABCDEF");
    assert_eq!(r.pad, &[0, 0]);
    assert_eq!(r.icrc_field(), Some(0x67ad_e63b));
    assert_icrc_valid(&p);
}

#[test]
fn scapy_nak_over_ipv6_with_two_tags() {
    let b = hex(SCAPY_ACK_IPV6_QINQ);
    let p = decode(&b, Dialect::Roce);
    assert_eq!(p.error, None);
    let eth = p.eth.unwrap();
    let outer = eth.vlans[0].unwrap();
    let inner = eth.vlans[1].unwrap();
    assert_eq!((outer.tpid, outer.pcp, outer.vid), (0x88A8, 3, 100));
    assert_eq!((inner.tpid, inner.pcp, inner.vid), (0x8100, 5, 200));
    assert_eq!(eth.priority(), Some(3));
    let ip = p.ip.unwrap();
    assert_eq!(ip.offset, 22);
    assert_eq!((ip.ecn, ip.ttl), (3, 64)); // tc = 0x03: CE
    assert_eq!(ip.addrs.src().to_string(), "fd00::2");
    let r = p.roce.unwrap();
    assert_eq!(r.bth.opcode().0, 0x11);
    assert_eq!((r.bth.dest_qp(), r.bth.psn()), (0x456, 0xABCD));
    let aeth = r.aeth().unwrap();
    assert_eq!(aeth.msn, 5);
    assert_eq!(aeth.decoded(), Syndrome::Nak(NakCode::PsnSequenceError));
    assert_icrc_valid(&p);
}

#[test]
fn scapy_cnp() {
    let b = hex(SCAPY_CNP);
    let p = decode(&b, Dialect::Roce);
    assert_eq!(p.error, None);
    assert_eq!(p.warnings, 0);
    let r = p.roce.unwrap();
    assert!(r.bth.opcode().is_cnp());
    assert!(r.bth.becn());
    assert_eq!(r.bth.dest_qp(), 0x12);
    assert_eq!(r.cnp_reserved, Some(&[0u8; 16]));
    assert!(r.payload.is_empty());
    assert_icrc_valid(&p);
}

#[test]
fn hpcc_ack_with_two_hops() {
    let b = hex(HPCC_ACK);
    let p = decode(&b, Dialect::Hpcc);
    assert_eq!(p.error, None);
    let r = p.roce.unwrap();
    let Shim::Int(st) = r.shim else {
        panic!("no INT shim")
    };
    assert_eq!(st.n_hop(), 2);
    assert_eq!(st.header.path_id, 0x575);
    assert_eq!(st.wire_len, 42);
    assert_eq!(
        st.hop(0),
        Some(IntHop {
            b: 2,
            ts: 0xFF_FFF0,
            tx_bytes: 0xF_FFFE,
            qlen: 0x10
        })
    );
    assert_eq!(
        st.hop(1),
        Some(IntHop {
            b: 3,
            ts: 0x100,
            tx_bytes: 5,
            qlen: 0xFFFF
        })
    );
    assert_eq!(r.bth_offset, 42 + 42);
    assert_eq!((r.bth.dest_qp(), r.bth.psn()), (7, 100));
    let aeth = r.aeth().unwrap();
    assert_eq!((aeth.syndrome, aeth.msn), (0x1F, 42));
    assert_icrc_valid(&p);
    // Read as plain RoCE, the INT header bytes 0x25 0x75 are taken as an opcode 0x25 (UC
    // SEND_ONLY_IMM) — the dialect is what makes the bytes unambiguous.
    assert_eq!(decode(&b, Dialect::Roce).roce.unwrap().bth.opcode().0, 0x25);
}

#[test]
fn fncc_ack_carries_n_and_int() {
    let b = hex(FNCC_ACK);
    let p = decode(&b, Dialect::Fncc);
    assert_eq!(p.error, None);
    let r = p.roce.unwrap();
    assert_eq!(r.shim, Shim::None);
    let AckExt::Fncc(f) = r.ack_ext else {
        panic!("no FNCC extension")
    };
    assert_eq!(f.n, 4);
    assert_eq!(f.int.header.path_id, 0xABC);
    assert_eq!(
        f.int.hop(0),
        Some(IntHop {
            b: 2,
            ts: 0x12_3456,
            tx_bytes: 0x5_4321,
            qlen: 0x100
        })
    );
    assert_eq!(r.aeth().unwrap().msn, 9);
    assert!(r.payload.is_empty());
    assert_icrc_valid(&p);
}

#[test]
fn rcc_data_and_ack() {
    let b = hex(RCC_DATA);
    let p = decode(&b, Dialect::Rcc);
    assert_eq!(p.error, None);
    let r = p.roce.unwrap();
    assert_eq!(r.shim, Shim::RccTimestamp(1_000_000_123));
    assert_eq!(r.bth.opcode().0, 0x04);
    assert_eq!(r.payload, &[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(p.ip.unwrap().ecn, 2);
    assert_icrc_valid(&p);

    let b = hex(RCC_ACK);
    let p = decode(&b, Dialect::Rcc);
    assert_eq!(p.error, None);
    let r = p.roce.unwrap();
    assert_eq!(r.shim, Shim::RccTimestamp(2_000_000_000));
    let AckExt::Rcc(e) = r.ack_ext else {
        panic!("no RCC extension")
    };
    assert_eq!((e.cwnd, e.n, e.flags, e.reserved), (33_750, 4, 1, 0));
    assert_icrc_valid(&p);
}

#[test]
fn flipped_bit_breaks_icrc() {
    let mut b = hex(SCAPY_WRITE_FIRST);
    let n = b.len();
    b[n - 6] ^= 1; // a payload byte
    let p = decode(&b, Dialect::Roce);
    let (computed, found) = p.icrc_check().unwrap();
    assert_ne!(computed, found);
    // TTL, TOS and the UDP checksum are masked: changing them keeps the ICRC valid.
    let mut b = hex(SCAPY_WRITE_FIRST);
    b[14 + 8] = 1; // TTL
    b[14 + 1] = 0xFF; // TOS
    b[14 + 10] ^= 0xFF; // IP checksum
    b[34 + 6] = 0x12; // UDP checksum
    b[42 + 4] = 0xC0; // FECN, BECN
    assert_icrc_valid(&decode(&b, Dialect::Roce));
}

// Truncations: each cut lands inside a different header; the error names that layer, the
// header's offset, and how many bytes it needed vs had. Offsets: Ethernet 0, IPv4 14, UDP 34,
// BTH 42, RETH 54 (in SCAPY_WRITE_FIRST).
#[rstest]
#[case(10, Layer::Ethernet, 0, 14, 10)]
#[case(20, Layer::Ipv4, 14, 20, 6)]
#[case(38, Layer::Udp, 34, 8, 4)]
#[case(50, Layer::Bth, 42, 12, 8)]
#[case(60, Layer::Reth, 54, 16, 6)]
fn snaplen_cuts_are_typed(
    #[case] cut: usize,
    #[case] layer: Layer,
    #[case] offset: usize,
    #[case] needed: usize,
    #[case] available: usize,
) {
    let b = hex(SCAPY_WRITE_FIRST);
    // orig_len is the full frame: the record was cut by snaplen, the length fields are honest.
    let p = Packet::decode(
        &b[..cut],
        b.len(),
        ccreplay_codecs::LinkStart::Ethernet,
        &DecodeConfig::default(),
    );
    let e = p.error.expect("error");
    assert_eq!((e.layer, e.offset), (layer, offset));
    assert_eq!(e.kind, ErrorKind::Truncated { needed, available });
    assert_eq!(p.icrc_check(), None);
}

#[test]
fn lying_lengths_are_bad_length_errors() {
    // IPv4 total length 0x0044 = 68 raised to 0x0100 = 256 > the 82-byte frame.
    let mut b = hex(SCAPY_WRITE_FIRST);
    b[16] = 0x01;
    b[17] = 0x00;
    let e = decode(&b, Dialect::Roce).error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Ipv4, 14));
    assert!(matches!(
        e.kind,
        ErrorKind::BadLength {
            field: "ipv4.total_len",
            found: 256,
            ..
        }
    ));
    // UDP length 0x0030 = 48 raised to 0x0040 = 64 > IP payload 48.
    let mut b = hex(SCAPY_WRITE_FIRST);
    b[39] = 0x40;
    let e = decode(&b, Dialect::Roce).error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Udp, 34));
    // IHL 4 < 5.
    let mut b = hex(SCAPY_WRITE_FIRST);
    b[14] = 0x44;
    let e = decode(&b, Dialect::Roce).error.unwrap();
    assert_eq!(
        e.kind,
        ErrorKind::BadLength {
            field: "ipv4.ihl",
            found: 4,
            expected: ">= 5"
        }
    );
}

#[test]
fn unknown_opcode_keeps_the_rest_opaque() {
    let mut b = hex(SCAPY_WRITE_FIRST);
    b[42] = 0x1F; // RC operation 0x1F is not in wire.md 2
    let p = decode(&b, Dialect::Roce);
    let e = p.error.unwrap();
    assert_eq!(
        (e.layer, e.offset, e.kind),
        (Layer::Bth, 42, ErrorKind::UnknownOpcode(0x1F))
    );
    let r = p.roce.unwrap();
    // RETH 16 + "ABCDEF" 6 + pad 2 = 24 bytes, kept as they are.
    assert_eq!(r.payload.len(), 24);
    assert_eq!(r.reth, None);
}

#[test]
fn nhop_above_max_in_a_frame() {
    let mut b = hex(HPCC_ACK);
    b[42] = 0x65; // nHop 6, pathID 0x575
    let e = decode(&b, Dialect::Hpcc).error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::IntStack, 42));
    assert_eq!(
        e.kind,
        ErrorKind::NHopTooLarge {
            n_hop: 6,
            max_hops: 5
        }
    );
}

#[test]
fn pfc_frame() {
    // Hand-assembled: dst 01:80:c2:00:00:01, src 02:..:01, 0x8808, opcode 0x0101, enable 0x0008,
    // priority 3 paused for 0x1000 quanta, zero padding to 60 bytes.
    let mut b = hex("0180c200000102000000000188080101000800000000000010000000000000000000");
    b.resize(60, 0);
    let p = decode(&b, Dialect::Roce);
    assert_eq!(p.error, None);
    let pfc = p.pfc.unwrap();
    assert_eq!(pfc.class_enable, 8);
    assert_eq!(pfc.quanta[3], 0x1000);
    assert!(pfc.paused(3));
    assert!(p.ip.is_none() && p.roce.is_none());
}

// A cut after whole headers is only ever the snapshot length's (what `replay` replays as whole
// and `inspect` counts as `cut_by_snaplen`): with the record whole — the same bytes, orig_len =
// their length — every length field is checked against them and no cut is "after the headers".
// SCAPY_WRITE_FIRST's headers end at 70 (BTH 42 + 12, RETH 54 + 16), its ICRC starts at 78 (IPv4
// total length 0x44: the frame is 14 + 68 = 82 bytes).
#[test]
fn headers_whole_with_an_error_means_cut_by_snaplen() {
    let b = hex(SCAPY_WRITE_FIRST);
    assert_eq!(b.len(), 82);
    let cfg = DecodeConfig::default();
    for cut in 0..b.len() {
        let snaplen = Packet::decode(
            &b[..cut],
            b.len(),
            ccreplay_codecs::LinkStart::Ethernet,
            &cfg,
        );
        assert!(snaplen.is_malformed(), "cut at {cut}");
        assert_eq!(snaplen.headers_complete(), cut >= 70, "cut at {cut}");
        let layer = snaplen.error.unwrap().layer;
        if cut >= 70 {
            assert_eq!(
                layer,
                if cut >= 78 {
                    Layer::Icrc
                } else {
                    Layer::Payload
                }
            );
        }
        let whole = Packet::decode(&b[..cut], cut, ccreplay_codecs::LinkStart::Ethernet, &cfg);
        assert!(
            !(whole.is_malformed() && whole.headers_complete()),
            "record of {cut} bytes, not cut: {:?}",
            whole.error
        );
    }
    let full = Packet::decode(&b, b.len(), ccreplay_codecs::LinkStart::Ethernet, &cfg);
    assert!(full.error.is_none() && full.headers_complete());
}
