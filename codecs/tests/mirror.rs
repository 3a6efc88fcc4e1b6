//! Remote mirroring (codecs mirror.rs, docs/wire.md 2.1) over `tests/fixtures/mirror.pcap`:
//! frames scapy wrapped (its GRE and `scapy.contrib.erspan`, make_fixtures.py
//! `build_mirror`) and tshark 4.0 dissects to the same fields (check_with_tshark.py,
//! tests/tshark_compare.rs). The expected numbers here are the ones that script set.

use std::path::PathBuf;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::mirror::{ErspanInfo, MirrorKind, MirrorRepr, SwitchTime, SwitchTimeError};
use ccreplay_codecs::packet::IpAddrs;
use ccreplay_codecs::{DecodeConfig, ErrorKind, Layer, LinkStart, Packet};

/// The records of mirror.pcap, in order.
fn records() -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mirror.pcap");
    let mut r = CaptureReader::open(path).expect("fixture (make_fixtures.py)");
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        out.push(rec.unwrap().data.to_vec());
    }
    assert_eq!(out.len(), 13);
    out
}

fn decode(b: &[u8]) -> Packet<'_> {
    Packet::decode_ethernet(b, &DecodeConfig::default())
}

/// The mirrored frame reads as it does on its own, every offset moved by where it starts, and
/// its ICRC checks (it covers the mirrored frame's IP and UDP, not the encapsulation's).
#[test]
fn the_mirrored_frame_reads_as_the_frame_alone() {
    // (record, kind, where the frame starts: 14 + 20 + GRE (+ ERSPAN), bytes scapy wrote)
    let cases = [
        (0, MirrorKind::ErspanII, 14 + 20 + 8 + 8),
        (1, MirrorKind::ErspanIII, 14 + 20 + 8 + 12),
        (2, MirrorKind::ErspanIII, 14 + 20 + 8 + 12 + 8),
        (3, MirrorKind::ErspanI, 14 + 20 + 4),
        (4, MirrorKind::Teb, 14 + 20 + 8),
    ];
    let recs = records();
    for (i, kind, at) in cases {
        let p = decode(&recs[i]);
        let m = p
            .mirror
            .unwrap_or_else(|| panic!("record {i}: {:?}", p.error));
        assert_eq!((m.kind, m.inner), (kind, at), "record {i}");
        assert_eq!(m.ip.addrs.src().to_string(), "10.9.0.1");
        assert_eq!(m.eth.unwrap().src, [2, 0, 0, 0, 0, 0x5a]);
        let alone = decode(&recs[i][at..]);
        assert!(p.error.is_none() && alone.error.is_none(), "record {i}");
        assert!(p.warning.is_none(), "record {i}: {:?}", p.warning);
        assert_eq!(p.ip.unwrap().offset, alone.ip.unwrap().offset + at);
        assert_eq!(p.ip.unwrap().addrs, alone.ip.unwrap().addrs);
        assert_eq!(
            p.eth,
            alone.eth.map(|mut e| {
                for v in e.vlans.iter_mut().flatten() {
                    v.offset += at;
                }
                e
            })
        );
        let (r, a) = (p.roce.unwrap(), alone.roce.unwrap());
        assert_eq!((r.bth, r.bth_offset), (a.bth, a.bth_offset + at));
        let (computed, found) = p.icrc_check().unwrap();
        assert_eq!(computed, found, "record {i}: ICRC");
    }
}

/// The headers' fields, as make_fixtures.py set them through scapy.
#[test]
fn erspan_fields_are_the_ones_the_switch_wrote() {
    let recs = records();
    let m = decode(&recs[0]).mirror.unwrap();
    let e = m.erspan.unwrap();
    assert_eq!((m.gre.proto, m.gre.seq, m.gre.key), (0x88BE, Some(1), None));
    assert_eq!(
        (e.version(), e.vlan(), e.cos(), e.en_bso(), e.truncated()),
        (1, 100, 3, 3, false)
    );
    assert_eq!((e.span_id(), e.index()), (5, 0x12345));

    let m = decode(&recs[1]).mirror.unwrap();
    let e = m.erspan.unwrap();
    assert_eq!((m.gre.proto, m.gre.seq), (0x22EB, Some(2)));
    assert_eq!((e.version(), e.cos(), e.span_id()), (2, 5, 7));
    assert_eq!(
        (e.timestamp(), e.sgt(), e.p(), e.ft()),
        (0x0102_0304, 0xBEEF, true, 0)
    );
    assert_eq!(
        (e.hw_id(), e.direction(), e.gra(), e.o()),
        (5, true, 1, false)
    );
    assert_eq!(e.platform, None);

    // Every bit of session, timestamp and Hw ID set; the platform subheader's 64 bits are
    // platf_id 3 (6 bits), info1 0x12345 (26), info2 0x89ABCDEF (32).
    let e = decode(&recs[2]).mirror.unwrap().erspan.unwrap();
    assert_eq!(
        (e.span_id(), e.timestamp(), e.hw_id()),
        (1023, u32::MAX, 63)
    );
    assert_eq!(
        (e.gra(), e.o(), e.p(), e.direction()),
        (2, true, false, false)
    );
    assert_eq!(e.platform, Some(3 << 58 | 0x12345 << 32 | 0x89AB_CDEF));

    let m = decode(&recs[4]).mirror.unwrap();
    assert_eq!(
        (m.gre.proto, m.gre.key, m.gre.seq),
        (0x6558, Some(0x2A), None)
    );
}

/// T = 1: the switch cut the frame to 60 bytes, inside the SEND payload (data 42 + BTH 12 =
/// 54, 7 payload bytes and pad to 62, ICRC to 66): a cut, as a snaplen's, not a lying length.
#[test]
fn a_frame_the_switch_cut_reads_as_cut() {
    let recs = records();
    let p = decode(&recs[5]);
    let at = 14 + 20 + 8 + 8;
    assert!(p.mirror.unwrap().truncated());
    let e = p.error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Payload, at + 54));
    assert!(p.headers_complete() && p.cut(false));
    // The same record with T clear: the frame's IP length claims more than the encapsulation
    // holds, a lying length.
    let mut whole = recs[5].clone();
    whole[at - 8 + 2] &= !0x04;
    let p = decode(&whole);
    assert!(!p.mirror.unwrap().truncated() && !p.cut(false));
    let e = p.error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Ipv4, at + 14));
    assert!(matches!(e.kind, ErrorKind::BadLength { .. }));
}

/// ERSPAN III frame type 2 carries the IP packet without an Ethernet header.
#[test]
fn frame_type_2_is_an_ip_packet() {
    let recs = records();
    let p = decode(&recs[6]);
    let m = p.mirror.unwrap();
    assert_eq!((m.kind, m.erspan.unwrap().ft()), (MirrorKind::ErspanIII, 2));
    assert!(p.eth.is_none() && p.error.is_none());
    let ip = p.ip.unwrap();
    assert_eq!(ip.offset, 14 + 20 + 8 + 12);
    assert_eq!(
        ip.addrs,
        IpAddrs::V4 {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2]
        }
    );
    assert_eq!(p.icrc_check().map(|(c, f)| c == f), Some(true));
}

/// GRE that is not a mirror, and encapsulations ccreplay does not read: the packet is its
/// outer headers, with the error naming the layer.
#[test]
fn other_gre_and_unknown_versions() {
    let recs = records();
    let p = decode(&recs[7]);
    assert!(p.mirror.is_none() && p.error.is_none() && p.roce.is_none());
    assert_eq!(p.ip.unwrap().protocol, 47);
    for (i, layer, offset, what, found) in [
        (8, Layer::Erspan, 42, "ERSPAN version", 3),
        (9, Layer::Gre, 34, "GRE version", 1),
        (10, Layer::Gre, 34, "GRE routing (RFC 1701)", 0x4000),
        (11, Layer::Erspan, 42, "ERSPAN frame type", 3),
    ] {
        let p = decode(&recs[i]);
        assert!(p.mirror.is_none() && p.roce.is_none(), "record {i}");
        assert_eq!(p.ip.unwrap().addrs.src().to_string(), "10.9.0.1");
        let e = p.error.unwrap();
        assert_eq!(
            (e.layer, e.offset, e.kind),
            (layer, offset, ErrorKind::Unsupported { what, found }),
            "record {i}"
        );
    }
}

/// Every cut point of the ERSPAN III record (outer 0..54, the ACK 54..116): the error names
/// the layer the cut falls in, headers are whole only past the ACK's AETH, and the same bytes
/// as a whole record (the outer IP length then lies) never read as cut.
#[test]
fn every_cut_of_a_mirrored_record() {
    let b = &records()[1];
    assert_eq!(b.len(), 116);
    let cfg = DecodeConfig::default();
    // (first byte of the layer, layer): outer Ethernet, IPv4, GRE, ERSPAN; the ACK's
    // Ethernet, IPv4, UDP, BTH, AETH, ICRC (no payload: the AETH ends at 108 + 4).
    let layers = [
        (0, Layer::Ethernet),
        (14, Layer::Ipv4),
        (34, Layer::Gre),
        (42, Layer::Erspan),
        (54, Layer::Ethernet),
        (68, Layer::Ipv4),
        (88, Layer::Udp),
        (96, Layer::Bth),
        (108, Layer::Aeth),
        (112, Layer::Icrc),
    ];
    for cut in 0..b.len() {
        let p = Packet::decode(&b[..cut], b.len(), LinkStart::Ethernet, &cfg);
        let e = p.error.unwrap_or_else(|| panic!("cut at {cut}: no error"));
        let want = layers.iter().rev().find(|(at, _)| *at <= cut).unwrap();
        assert_eq!((e.layer, e.offset), (want.1, want.0), "cut at {cut}");
        assert_eq!(p.headers_complete(), cut >= 112, "cut at {cut}");
        let whole = Packet::decode(&b[..cut], cut, LinkStart::Ethernet, &cfg);
        assert!(
            !(whole.is_malformed() && whole.headers_complete()),
            "record of {cut} bytes, not cut: {:?}",
            whole.error
        );
    }
    assert!(decode(b).error.is_none());
}

/// The writer wraps a frame as scapy did: the same bytes for ERSPAN II, type I and gretap.
#[test]
fn the_writer_wraps_as_scapy_did() {
    let recs = records();
    let base = MirrorRepr {
        kind: MirrorKind::ErspanII,
        src_mac: [2, 0, 0, 0, 0, 0x5a],
        dst_mac: [2, 0, 0, 0, 0, 0xc0],
        src_ip: [10, 9, 0, 1],
        dst_ip: [10, 9, 0, 2],
        ttl: 63,
        key: None,
        seq: 1,
        session: 5,
        vlan: 100,
        cos: 3,
        truncated: false,
        index: 0x12345,
        timestamp: 0,
    };
    for (i, repr) in [
        (0, base),
        (
            3,
            MirrorRepr {
                kind: MirrorKind::ErspanI,
                ..base
            },
        ),
        (
            4,
            MirrorRepr {
                kind: MirrorKind::Teb,
                key: Some(0x2A),
                ..base
            },
        ),
    ] {
        let inner = decode(&recs[i]).mirror.unwrap().inner;
        let mut out = Vec::new();
        repr.write(&recs[i][inner..], &mut out).unwrap();
        assert_eq!(out, recs[i], "record {i}");
    }
}

/// A GRE or ERSPAN header the outer IP length leaves no room for is a lying length, not a
/// cut: the ERSPAN III record (GRE 34..42, ERSPAN 42..54) with its outer IPv4 total length
/// set to 20 + 6 (GRE's 8 bytes do not fit) and to 20 + 8 + 4 (ERSPAN's 12 do not).
#[test]
fn headers_longer_than_the_outer_ip_payload() {
    let rec = &records()[1];
    for (total, layer, offset, room) in [
        (26u16, Layer::Gre, 34, 6),
        (28, Layer::Erspan, 42, 0),
        (32, Layer::Erspan, 42, 4),
    ] {
        let mut b = rec.clone();
        b[16..18].copy_from_slice(&total.to_be_bytes());
        let p = decode(&b);
        let e = p.error.unwrap();
        assert_eq!((e.layer, e.offset), (layer, offset), "total {total}");
        assert_eq!(
            e.kind,
            ErrorKind::BadLength {
                field: "ip payload",
                found: room,
                expected: "room for the GRE and ERSPAN headers",
            }
        );
        assert!(!p.headers_complete() && p.mirror.is_none());
    }
    // ERSPAN I: GRE's 4 bytes fit (total 20 + 4), the frame's Ethernet header does not.
    let mut b = records()[3].clone();
    b[16..18].copy_from_slice(&24u16.to_be_bytes());
    let e = decode(&b).error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Ethernet, 38));
    assert_eq!(
        e.kind,
        ErrorKind::BadLength {
            field: "ip payload",
            found: 0,
            expected: "room for the mirrored frame's Ethernet header",
        }
    );
}

/// GRE with a checksum (C, RFC 2784: checksum and 16 reserved bits before the key): the
/// gretap record's flags made C | K (0xA000), the word 0x1234_0000 put after its first 4
/// bytes and the outer IPv4 total length grown by 4 (20 + 8 + the 66-byte SEND: 94 -> 98).
#[test]
fn gre_checksum_comes_before_the_key() {
    let rec = &records()[4];
    let mut b = rec[..38].to_vec();
    b.extend_from_slice(&[0x12, 0x34, 0, 0]);
    b.extend_from_slice(&rec[38..]);
    assert_eq!(u16::from_be_bytes([b[16], b[17]]), 94);
    b[16..18].copy_from_slice(&98u16.to_be_bytes());
    b[34] = 0xA0;
    let p = decode(&b);
    let m = p.mirror.unwrap();
    assert_eq!(
        (m.gre.checksum, m.gre.key, m.gre.seq),
        (Some(0x1234), Some(0x2A), None)
    );
    assert_eq!((m.kind, m.inner), (MirrorKind::Teb, 14 + 20 + 12));
    assert!(p.error.is_none() && p.icrc_check().is_some_and(|(c, f)| c == f));
}

/// GRE flag bits RFC 2784 / 2890 leave zero (here the enhanced GRE ack bit, 0x0080, on the
/// gretap record whose flags are K alone, 0x2000) are a warning; the frame is still read.
#[test]
fn reserved_gre_flags_are_a_warning() {
    let mut b = records()[4].clone();
    assert_eq!(&b[34..36], &[0x20, 0x00]);
    b[35] = 0x80;
    let p = decode(&b);
    assert!(p.error.is_none() && p.roce.is_some());
    let w = p.warning.unwrap();
    assert_eq!((w.layer, w.offset, p.warnings), (Layer::Gre, 34, 1));
    assert_eq!(
        w.kind,
        ErrorKind::Reserved {
            field: "gre.flags.reserved",
            found: 0x80
        }
    );
}

/// An ERSPAN III header the writer wrote reads back with the repr's values: session, VLAN,
/// CoS, T (set: the frame still reads whole, T only excuses what a cut leaves), timestamp, Hw ID (the low 6 bits of `index`), and the fixed P 1, FT 0, D 0, Gra 1.
#[test]
fn the_writer_writes_erspan_iii() {
    let frame = &records()[0][50..];
    let repr = MirrorRepr {
        kind: MirrorKind::ErspanIII,
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_ip: [192, 0, 2, 1],
        dst_ip: [192, 0, 2, 2],
        ttl: 9,
        key: Some(0xDEAD_BEEF),
        seq: 77,
        session: 0x2AB,
        vlan: 0xABC,
        cos: 6,
        truncated: true,
        index: 0xFFF_FF2D,
        timestamp: 0x8765_4321,
    };
    let mut out = Vec::new();
    repr.write(frame, &mut out).unwrap();
    let p = decode(&out);
    let m = p.mirror.unwrap();
    let e = m.erspan.unwrap();
    assert_eq!(
        (m.gre.key, m.gre.seq, m.gre.proto),
        (Some(0xDEAD_BEEF), Some(77), 0x22EB)
    );
    assert_eq!((m.ip.ttl, m.inner), (9, 14 + 20 + 12 + 12));
    assert_eq!(
        (e.version(), e.span_id(), e.vlan(), e.cos(), e.truncated()),
        (2, 0x2AB, 0xABC, 6, true)
    );
    assert_eq!((e.timestamp(), e.hw_id(), e.sgt()), (0x8765_4321, 0x2D, 0));
    assert_eq!(
        (e.p(), e.ft(), e.direction(), e.gra(), e.o()),
        (true, 0, false, 1, false)
    );
    assert!(p.error.is_none() && p.warning.is_none());
    assert_eq!(&out[m.inner..], frame);
}

/// IPv4's 16-bit total length bounds the frame: 65,535 - 20 (IPv4) - 8 (GRE with a sequence
/// number) - 8 (ERSPAN II) = 65,499 bytes fit, one more does not, and nothing is written.
#[test]
fn a_frame_too_long_for_ipv4_is_refused() {
    let repr = MirrorRepr {
        kind: MirrorKind::ErspanII,
        src_mac: [0; 6],
        dst_mac: [0; 6],
        src_ip: [0; 4],
        dst_ip: [0; 4],
        ttl: 1,
        key: None,
        seq: 0,
        session: 0,
        vlan: 0,
        cos: 0,
        truncated: false,
        index: 0,
        timestamp: 0,
    };
    let mut out = Vec::new();
    assert!(repr.write(&vec![0; 65_499], &mut out).is_ok());
    assert_eq!(out.len(), 14 + 65_535);
    out.clear();
    let err = repr.write(&vec![0; 65_500], &mut out).unwrap_err();
    assert_eq!(err.len, 65_500);
    assert!(out.is_empty());
}

/// ERSPAN III's timestamp as the switch's clock (wire.md 2.1), from the values
/// make_fixtures.py set (tshark 4.0.17 reads the same: `erspan.timestamp`, `erspan.gra`,
/// `erspan.platid`, `erspan.pid3.timestamp` 2309737967, `erspan.pid5.timestamp` 1700000003).
#[test]
fn the_switch_time_is_the_timestamp_in_its_unit() {
    let recs = records();
    let time = |i: usize| {
        decode(&recs[i])
            .mirror
            .unwrap()
            .erspan
            .unwrap()
            .switch_time()
    };
    // Record 2: Gra 1, 0x01020304 = 16,909,060 units of 100 ns; no subheader: wraps every
    // 2^32 × 100 ns.
    assert_eq!(
        time(1),
        Ok(SwitchTime {
            ns: 1_690_906_000,
            unit_ns: 100,
            period_ns: Some(429_496_729_600),
        })
    );
    // Record 3: Gra 2 with 0xFFFFFFFF ns, more than a second of nanoseconds.
    assert_eq!(
        time(2),
        Err(SwitchTimeError::NanosecondsOutOfRange(u32::MAX))
    );
    // Record 13: Gra 2, 123,456,789 ns, the seconds 1,700,000,003 in a Platf ID 5 subheader.
    assert_eq!(
        time(12),
        Ok(SwitchTime {
            ns: 1_700_000_003_123_456_789,
            unit_ns: 1,
            period_ns: None,
        })
    );
    // ERSPAN II (record 1) has no timestamp.
    assert_eq!(time(0), Err(SwitchTimeError::NoTimestamp));
}

/// The other units and subheaders, on headers built by hand: bytes 4-7 the timestamp, byte
/// 11's low bits Gra (<< 1) and O; the subheader's first 6 bits its Platf ID.
#[test]
fn the_subheader_widens_the_timestamp_when_its_platform_says_so() {
    let header = |ts: u32, gra: u8, platform: Option<u64>| {
        let mut bytes = [0u8; 12];
        bytes[0] = 0x20; // Ver 2
        bytes[4..8].copy_from_slice(&ts.to_be_bytes());
        bytes[11] = (gra << 1) | u8::from(platform.is_some());
        ErspanInfo {
            offset: 42,
            bytes,
            platform,
        }
        .switch_time()
    };
    let plat = |id: u64, low: u64| Some((id << 58) | low);
    // Gra 0: 100 µs units, 7 × 100,000 ns; wraps every 2^32 × 100 µs.
    assert_eq!(
        header(7, 0, None),
        Ok(SwitchTime {
            ns: 700_000,
            unit_ns: 100_000,
            period_ns: Some(429_496_729_600_000),
        })
    );
    // Gra 1, Platf ID 3: upper 32 bits 2, lower 5 → (2 × 2^32 + 5) × 100 ns.
    let wide = Ok(SwitchTime {
        ns: 858_993_459_700,
        unit_ns: 100,
        period_ns: None,
    });
    assert_eq!(header(5, 1, plat(3, 2)), wide);
    assert_eq!(header(5, 1, plat(7, 2)), wide);
    // Platf ID 5 carries IEEE 1588 seconds: no upper bits of a 100 ns count.
    assert_eq!(
        header(5, 1, plat(5, 2)).map(|t| (t.ns, t.period_ns)),
        Ok((500, Some(429_496_729_600)))
    );
    // Gra 2 without seconds wraps each second; with Platf ID 6 (or 3) they come first.
    assert_eq!(
        header(999_999_999, 2, None).map(|t| (t.ns, t.period_ns)),
        Ok((999_999_999, Some(1_000_000_000)))
    );
    assert_eq!(header(1, 2, plat(6, 10)).map(|t| t.ns), Ok(10_000_000_001));
    assert_eq!(header(1, 2, plat(3, 10)).map(|t| t.ns), Ok(10_000_000_001));
    // Platf ID 1 (VSM domain, port index) has no time.
    assert_eq!(header(1, 2, plat(1, 10)).map(|t| t.ns), Ok(1));
    // A 64-bit count of 100 ns past u64 nanoseconds is read as the 32-bit field alone.
    assert_eq!(
        header(1, 1, plat(3, 0xFFFF_FFFF)).map(|t| (t.ns, t.period_ns)),
        Ok((100, Some(429_496_729_600)))
    );
    assert_eq!(header(1, 3, None), Err(SwitchTimeError::PlatformUnit));
}

/// The wire length of a mirrored copy is the mirrored frame's: record 1's data frame after
/// its 50 bytes of outer Ethernet 14, IPv4 20, GRE 8 and ERSPAN II 8; record 6, the same frame
/// cut by the switch to 60 bytes (T), from its own IPv4 length; a frame on its own, its length.
#[test]
fn a_copys_wire_length_is_the_mirrored_frames() {
    let recs = records();
    let whole = decode(&recs[0]);
    let frame_len = recs[0].len() - 50;
    assert_eq!(whole.wire_len(recs[0].len()), frame_len);
    let cut = decode(&recs[5]);
    assert_eq!(recs[5].len(), 50 + 60);
    assert_eq!(cut.wire_len(recs[5].len()), frame_len);
    let alone = decode(&recs[0][50..]);
    assert_eq!(alone.wire_len(frame_len), frame_len);
}

/// `mirror_session` keeps one ERSPAN session's copies: record 1 is session 5 (make_fixtures.py
/// set it), read with 5 or no filter, left unread (no IP, no BTH) with 6; ERSPAN I (record 4)
/// carries no session ID, so a filter leaves it unread too (the harness counts such copies as
/// `other_mirror_session`).
#[test]
fn another_sessions_copy_is_not_read() {
    let recs = records();
    let with = |s: Option<u16>, i: usize| {
        let cfg = DecodeConfig {
            mirror_session: s,
            ..DecodeConfig::default()
        };
        let p = Packet::decode_ethernet(&recs[i], &cfg);
        let read = p.mirror.as_ref().map(|m| m.read);
        (read, p.roce.map(|r| r.bth_offset), p.error.is_some())
    };
    assert_eq!(with(None, 0), (Some(true), Some(92), false));
    assert_eq!(with(Some(5), 0), (Some(true), Some(92), false));
    assert_eq!(with(Some(6), 0), (Some(false), None, false));
    assert_eq!(with(Some(6), 3).0, Some(false));
}
