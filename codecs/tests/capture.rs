//! `codecs::capture` over the independent fixtures of `tests/fixtures/` (written by
//! `make_fixtures.py` with hand-written pcap/pcapng containers; the expected frame numbers,
//! timestamps, lengths and link types are the values that script set, cross-checked against
//! tshark 4.0 by `check_with_tshark.py`), plus hand-built malformed inputs.

use std::io;
use std::path::PathBuf;

use ccreplay_codecs::LinkStart;
use ccreplay_codecs::capture::{
    BadBlockReason, CaptureError, CaptureFormat, CaptureReader, LinkType, MAX_BLOCK_BYTES,
    MAX_PACKET_BYTES, PcapWriter, SliceSource, Source,
};
use rstest::rstest;

mod common;
use common::Trickle;

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name))
        .expect("fixture present (run tests/fixtures/make_fixtures.py)")
}

/// The raw JSON token of a numeric key in a flat `.expected.jsonl` line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\": ");
    let start = line.find(&pat)? + pat.len();
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn num(line: &str, key: &str) -> Option<u64> {
    field(line, key).map(|v| v.parse().expect("integer"))
}

/// What a fixture's expected file says about each record.
#[derive(Debug, PartialEq, Eq)]
struct Expect {
    frame_number: u64,
    ts_ns: u64,
    orig_len: u64,
    cap_len: u64,
    link: u64,
    interface_id: u64,
    truncated: bool,
    ip_offset: Option<u64>,
    ipv6: bool,
}

fn expected(stem: &str) -> Vec<Expect> {
    let text = std::fs::read_to_string(fixture_path(&format!("{stem}.expected.jsonl"))).unwrap();
    text.lines()
        .map(|l| Expect {
            frame_number: num(l, "frame.number").unwrap(),
            ts_ns: num(l, "ccreplay.ts_ns").unwrap(),
            orig_len: num(l, "frame.len").unwrap(),
            cap_len: num(l, "frame.cap_len").unwrap(),
            link: num(l, "ccreplay.link_type").unwrap(),
            interface_id: num(l, "ccreplay.interface_id").unwrap_or(0),
            truncated: num(l, "ccreplay.truncated").unwrap() == 1,
            ip_offset: num(l, "ccreplay.offset.ip"),
            ipv6: field(l, "ipv6.src").is_some(),
        })
        .collect()
}

/// What the reader returns, in the same shape.
fn observed<S: Source>(mut reader: CaptureReader<S>) -> Vec<Expect> {
    let mut out = Vec::new();
    while let Some(rec) = reader.next_record() {
        let rec = rec.expect("fixture record");
        let (ip_offset, ipv6) = match rec.link_start().expect("supported link") {
            LinkStart::Network { offset, ether_type } => {
                (Some(offset as u64), ether_type == 0x86dd)
            }
            // Ethernet: the IP header follows 14 bytes + 4 per VLAN tag (decoder's job); take
            // the fixture's own value so only non-Ethernet offsets are checked here.
            LinkStart::Ethernet => (None, false),
        };
        out.push(Expect {
            frame_number: rec.frame_number,
            ts_ns: rec.ts_ns,
            orig_len: u64::from(rec.orig_len),
            cap_len: rec.data.len() as u64,
            link: u64::from(rec.link.to_u32()),
            interface_id: u64::from(rec.interface_id),
            truncated: rec.is_truncated(),
            ip_offset,
            ipv6,
        });
    }
    out
}

/// Drops what `observed` cannot know for Ethernet records (the decoder finds the IP header).
fn comparable(mut e: Vec<Expect>) -> Vec<Expect> {
    for x in &mut e {
        if x.link == 1 || x.ip_offset.is_none() {
            x.ip_offset = None;
            x.ipv6 = false;
        }
    }
    e
}

#[rstest]
#[case("roce_opcodes.pcap")]
#[case("roce_linktypes_eth_us.pcap")]
#[case("roce_linktypes_eth_ns.pcap")]
#[case("roce_linktypes_eth_be_us.pcap")]
#[case("roce_linktypes_eth_be_ns.pcap")]
#[case("roce_linktypes_sll.pcap")]
#[case("roce_linktypes_sll2.pcap")]
#[case("roce_linktypes_rawip.pcap")]
#[case("roce_linktypes_snaplen.pcap")]
#[case("roce_linktypes_tsresol9.pcapng")]
#[case("roce_linktypes_tsresol_bin30.pcapng")]
#[case("roce_linktypes_multi.pcapng")]
#[case("roce_linktypes_editcap.pcapng")]
#[case("hpcc.pcap")]
#[case("fncc.pcap")]
#[case("rcc.pcap")]
#[case("malformed.pcap")]
fn fixture_records_match_the_generator(#[case] name: &str) {
    let stem = name.rsplit_once('.').unwrap().0;
    let want = comparable(expected(stem));
    assert!(!want.is_empty());
    let bytes = fixture(name);
    // Three sources, one answer: a file, a trickling reader, the bytes in memory.
    let from_file = observed(CaptureReader::open(fixture_path(name)).unwrap());
    let from_stream = observed(CaptureReader::new(Trickle(bytes.clone(), 0)).unwrap());
    let from_slice = observed(CaptureReader::from_slice(&bytes).unwrap());
    assert_eq!(comparable(from_file), want, "{name} (file)");
    assert_eq!(comparable(from_stream), want, "{name} (stream)");
    assert_eq!(comparable(from_slice), want, "{name} (slice)");
}

#[test]
fn formats_are_detected_from_the_magic() {
    let fmt = |name| CaptureReader::open(fixture_path(name)).unwrap().format();
    let pcap = |nanosecond, big_endian, link, snaplen| CaptureFormat::Pcap {
        nanosecond,
        big_endian,
        link,
        snaplen,
        version: (2, 4),
    };
    // make_fixtures.py writes snaplen 262144 except for the snaplen fixture (64).
    let eth = LinkType::Ethernet;
    assert_eq!(
        fmt("roce_linktypes_eth_us.pcap"),
        pcap(false, false, eth, 262_144)
    );
    assert_eq!(
        fmt("roce_linktypes_eth_ns.pcap"),
        pcap(true, false, eth, 262_144)
    );
    assert_eq!(
        fmt("roce_linktypes_eth_be_us.pcap"),
        pcap(false, true, eth, 262_144)
    );
    assert_eq!(
        fmt("roce_linktypes_eth_be_ns.pcap"),
        pcap(true, true, eth, 262_144)
    );
    assert_eq!(
        fmt("roce_linktypes_snaplen.pcap"),
        pcap(false, false, eth, 64)
    );
    let sll2 = LinkType::LinuxSll2;
    assert_eq!(
        fmt("roce_linktypes_sll2.pcap"),
        pcap(true, false, sll2, 262_144)
    );
    assert_eq!(fmt("roce_linktypes_multi.pcapng"), CaptureFormat::PcapNg);
}

/// pcap-file's own reader (an independent implementation) sees the same records in every
/// classic pcap fixture: timestamps, original lengths and bytes. (Not the snaplen fixture:
/// pcap-file 2's `PcapReader` rejects any record whose original length exceeds the file's
/// snaplen, which is every record tcpdump cuts; `CaptureReader` accepts them.)
#[rstest]
#[case("roce_opcodes.pcap")]
#[case("roce_linktypes_eth_be_ns.pcap")]
#[case("roce_linktypes_sll.pcap")]
#[case("malformed.pcap")]
fn pcap_records_equal_pcap_file_reader(#[case] name: &str) {
    let bytes = fixture(name);
    let mut theirs = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let mut ours = CaptureReader::from_slice(&bytes).unwrap();
    let mut n = 0;
    while let Some(p) = theirs.next_packet() {
        let p = p.unwrap();
        let r = ours.next_record().unwrap().unwrap();
        assert_eq!(u128::from(r.ts_ns), p.timestamp.as_nanos());
        assert_eq!(r.orig_len, p.orig_len);
        assert_eq!(r.data, &p.data[..]);
        n += 1;
    }
    assert!(ours.next_record().is_none());
    assert!(n > 0);
}

#[test]
fn pcapng_records_equal_pcap_file_reader_at_ns_resolution() {
    // With if_tsresol = 9 the raw count is ns, which is what pcap-file 2 reports for any
    // resolution: the two readers must agree here (and only here).
    use pcap_file::pcapng::{Block, PcapNgReader};
    let bytes = fixture("roce_linktypes_tsresol9.pcapng");
    let mut theirs = PcapNgReader::new(&bytes[..]).unwrap();
    let mut ours = CaptureReader::from_slice(&bytes).unwrap();
    let mut n = 0;
    while let Some(block) = theirs.next_block() {
        if let Block::EnhancedPacket(epb) = block.unwrap() {
            let r = ours.next_record().unwrap().unwrap();
            assert_eq!(u128::from(r.ts_ns), epb.timestamp.as_nanos());
            assert_eq!(r.orig_len, epb.original_len);
            assert_eq!(r.data, &epb.data[..]);
            n += 1;
        }
    }
    assert_eq!(n, 4);
    assert!(ours.next_record().is_none());
}

/// A reader resumed at any record boundary of a classic pcap file gives the records (and
/// frame numbers) the whole-file reader gives from there; a record header's length is its
/// header plus the captured bytes pcap-file reads. Big- and little-endian, µs and ns.
#[rstest]
#[case("roce_linktypes_eth_be_ns.pcap")]
#[case("roce_linktypes_eth_us.pcap")]
#[case("malformed.pcap")]
fn pcap_resumed_at_a_record_frames_the_rest_alike(#[case] name: &str) {
    let bytes = fixture(name);
    let mut theirs = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let whole = CaptureReader::from_slice(&bytes).unwrap();
    fn records<S: Source>(mut r: CaptureReader<S>) -> (Vec<(u64, u64, Vec<u8>)>, u64) {
        let mut v = Vec::new();
        while let Some(x) = r.next_record() {
            let x = x.unwrap();
            v.push((x.frame_number, x.ts_ns, x.data.to_vec()));
        }
        (v, r.offset())
    }
    let (all, _) = records(CaptureReader::from_slice(&bytes).unwrap());
    assert!(all.len() > 1);
    let mut at = 24usize;
    for (i, (frame, _, _)) in all.iter().enumerate() {
        let p = theirs.next_packet().unwrap().unwrap();
        assert_eq!(
            whole.pcap_record_bytes(&bytes[at..]),
            Some(16 + p.data.len() as u64),
            "{name}: record {frame}"
        );
        let resumed = whole
            .resume_pcap(SliceSource::new(&bytes[at..]), at as u64, *frame)
            .unwrap();
        let (rest, end) = records(resumed);
        assert_eq!(rest, all[i..], "{name}: resumed at record {frame}");
        assert_eq!(end, bytes.len() as u64);
        at += 16 + p.data.len();
    }
    assert_eq!(whole.pcap_record_bytes(&bytes[..15]), None, "short header");
    let ng = fixture("roce_linktypes_multi.pcapng");
    let ng = CaptureReader::from_slice(&ng).unwrap();
    assert!(ng.resume_pcap(SliceSource::new(&[]), 0, 1).is_none());
    assert_eq!(ng.pcap_record_bytes(&[0; 16]), None);
}

#[test]
fn slice_records_borrow_the_input() {
    let bytes = fixture("roce_opcodes.pcap");
    let range = bytes.as_ptr_range();
    let mut r = CaptureReader::from_slice(&bytes).unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        assert!(range.contains(&rec.data.as_ptr()));
        n += 1;
    }
    assert_eq!(n, 91);
    assert_eq!(r.offset(), bytes.len() as u64);
}

#[test]
fn pcap_cut_inside_a_record_is_an_error_then_the_end() {
    // roce_linktypes_eth_us.pcap: 24-byte header, record 1 = 16 + 66 bytes (SEND_ONLY, payload
    // 7 + pad 1: 14+20+8+12+8+4), record 2 = 16 + 62 (ACK: 14+20+8+12+4+4) starting at
    // 24 + 82 = 106.
    let bytes = fixture("roce_linktypes_eth_us.pcap");
    let cut = &bytes[..106 + 16 + 10];
    let mut r = CaptureReader::from_slice(cut).unwrap();
    assert_eq!(r.next_record().unwrap().unwrap().data.len(), 66);
    match r.next_record().unwrap() {
        Err(CaptureError::TruncatedRecord {
            record: 2,
            offset: 106,
            len: 62,
            available: 10,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(r.next_record().is_none());
    assert!(r.next_record().is_none());

    // Cut 5 bytes into record 2's header.
    let mut r = CaptureReader::new(Trickle(bytes[..106 + 5].to_vec(), 0)).unwrap();
    assert!(r.next_record().unwrap().is_ok());
    assert!(matches!(
        r.next_record(),
        Some(Err(CaptureError::TruncatedRecordHeader {
            record: 2,
            offset: 106,
            needed: 16,
            available: 5
        }))
    ));
    assert!(r.next_record().is_none());

    // Cut inside the file header.
    assert!(matches!(
        CaptureReader::from_slice(&bytes[..10]),
        Err(CaptureError::TruncatedHeader {
            needed: 24,
            available: 10,
            ..
        })
    ));
}

#[test]
fn pcapng_cut_inside_a_block_is_an_error() {
    // roce_linktypes_tsresol9.pcapng, block by block (pcapng: 12 bytes of framing per block):
    // SHB 12 + 16 + option shb_userappl (4 + 25 -> 28) + end (4) = 64;
    // IDB 12 + 8 + if_name "eth0" (4 + 4) + if_tsresol (4 + 1 -> 4) + end (4) = 40;
    // EPB 12 + 20 + 66 -> 68 = 100 at 104; EPB 12 + 20 + 62 -> 64 = 96 at 204;
    // then 108 and 144: 64 + 40 + 100 + 96 + 108 + 144 = 552, the file's size.
    let bytes = fixture("roce_linktypes_tsresol9.pcapng");
    assert_eq!(bytes.len(), 552);
    let mut r = CaptureReader::from_slice(&bytes[..204 + 50]).unwrap();
    assert!(r.next_record().unwrap().is_ok());
    match r.next_record().unwrap() {
        Err(CaptureError::TruncatedBlock {
            offset: 204,
            block_type: 6,
            needed: 96,
            available: 50,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(r.next_record().is_none());
    // Cut 7 bytes into the second block header.
    let mut r = CaptureReader::new(Trickle(bytes[..204 + 7].to_vec(), 0)).unwrap();
    assert!(r.next_record().unwrap().is_ok());
    assert!(matches!(
        r.next_record(),
        Some(Err(CaptureError::TruncatedBlock {
            offset: 204,
            block_type: 6,
            needed: 12,
            available: 7
        }))
    ));
}

#[test]
fn empty_and_garbage_inputs_are_errors() {
    assert!(matches!(
        CaptureReader::from_slice(&[]),
        Err(CaptureError::Empty)
    ));
    assert!(matches!(
        CaptureReader::new(io::empty()),
        Err(CaptureError::Empty)
    ));
    // "hell" = 68 65 6c 6c.
    match CaptureReader::from_slice(b"hello, not a capture") {
        Err(CaptureError::BadMagic { found: 0x6865_6c6c }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        CaptureReader::from_slice(&[0xd4, 0xc3]),
        Err(CaptureError::TruncatedHeader {
            needed: 4,
            available: 2,
            ..
        })
    ));
}

/// A little-endian µs pcap header with `link` and a record header claiming `incl_len`.
fn pcap_with_record(link: u32, incl_len: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65_535u32.to_le_bytes());
    v.extend_from_slice(&link.to_le_bytes());
    v.extend_from_slice(&7u32.to_le_bytes()); // 7 s
    v.extend_from_slice(&8u32.to_le_bytes()); // 8 µs
    v.extend_from_slice(&incl_len.to_le_bytes());
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(data);
    v
}

#[test]
fn pcap_length_fields_are_never_trusted_for_allocation() {
    let bytes = pcap_with_record(1, u32::MAX, &[0; 20]);
    let mut r = CaptureReader::new(&bytes[..]).unwrap();
    match r.next_record().unwrap() {
        Err(CaptureError::RecordTooLarge {
            record: 1,
            offset: 24,
            len: u32::MAX,
            max: MAX_PACKET_BYTES,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(r.next_record().is_none());
    // One byte under the limit is only truncated (the file is short), not too large.
    let bytes = pcap_with_record(1, MAX_PACKET_BYTES as u32, &[0; 20]);
    let mut r = CaptureReader::new(&bytes[..]).unwrap();
    assert!(matches!(
        r.next_record(),
        Some(Err(CaptureError::TruncatedRecord { available: 20, .. }))
    ));
}

#[test]
fn raw_ip_link_types_12_and_14_and_microsecond_timestamps() {
    // A raw IPv4 record under link type 12, then 14: 7 s + 8 µs = 7_000_008_000 ns.
    for link in [12, 14] {
        let bytes = pcap_with_record(link, 20, &[0x45; 20]);
        let mut r = CaptureReader::from_slice(&bytes).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.link, LinkType::RawIp);
        assert_eq!(rec.ts_ns, 7_000_008_000);
        assert_eq!(
            rec.link_start(),
            Ok(LinkStart::Network {
                offset: 0,
                ether_type: 0x0800
            })
        );
    }
}

/// pcapng builder for hand-made malformed sections (little-endian).
fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    let len = (12 + body.len()) as u32;
    let mut v = Vec::new();
    v.extend_from_slice(&block_type.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(&body);
    v.extend_from_slice(&len.to_le_bytes());
    v
}

fn shb() -> Vec<u8> {
    let mut body = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    block(0x0A0D_0D0A, &body)
}

fn idb(link: u16, options: &[u8]) -> Vec<u8> {
    let mut body = link.to_le_bytes().to_vec();
    body.extend_from_slice(&[0, 0]);
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(options);
    block(1, &body)
}

fn epb(interface: u32, raw_ts: u64, caplen: u32, data: &[u8]) -> Vec<u8> {
    let mut body = interface.to_le_bytes().to_vec();
    body.extend_from_slice(&((raw_ts >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(raw_ts as u32).to_le_bytes());
    body.extend_from_slice(&caplen.to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(data);
    block(6, &body)
}

fn first_error(bytes: &[u8]) -> CaptureError {
    let mut r = match CaptureReader::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => return e,
    };
    loop {
        match r.next_record() {
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                assert!(r.next_record().is_none(), "reader stops after an error");
                return e;
            }
            None => panic!("no error"),
        }
    }
}

#[test]
fn pcapng_framing_errors_name_block_and_offset() {
    // Byte-order magic wrong: 11 22 33 44.
    let mut bad = shb();
    bad[8..12].copy_from_slice(&[0x11, 0x22, 0x33, 0x44]);
    assert!(matches!(
        first_error(&bad),
        CaptureError::BadByteOrderMagic {
            offset: 0,
            found: 0x1122_3344
        }
    ));
    // SHB is 28 bytes (12 + 16); the IDB starts at 28, the EPB at 28 + 20 = 48.
    let mut v = shb();
    v.extend(idb(1, &[]));
    let mut epb_bad_if = epb(5, 0, 4, &[1, 2, 3, 4]);
    v.extend_from_slice(&epb_bad_if);
    assert!(matches!(
        first_error(&v),
        CaptureError::UnknownInterface {
            record: 1,
            offset: 48,
            interface_id: 5,
            interfaces: 1
        }
    ));
    // Captured length 9 with 4 data bytes (padded body of 24 leaves 4 for data).
    epb_bad_if[8..12].copy_from_slice(&0u32.to_le_bytes());
    epb_bad_if[20..24].copy_from_slice(&9u32.to_le_bytes());
    let mut v = shb();
    v.extend(idb(1, &[]));
    v.extend_from_slice(&epb_bad_if);
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            offset: 48,
            block_type: 6,
            reason: BadBlockReason::CapturedLenPastBlock {
                captured: 9,
                available: 4
            }
        }
    ));
    // Total length 30: not a multiple of 4.
    let mut v = shb();
    let mut b = idb(1, &[]);
    b[4..8].copy_from_slice(&30u32.to_le_bytes());
    v.extend(b);
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            offset: 28,
            block_type: 1,
            reason: BadBlockReason::BadLength { len: 30, min: 20 }
        }
    ));
    // Trailing length 24 after a leading 20.
    let mut v = shb();
    let mut b = idb(1, &[]);
    b[16..20].copy_from_slice(&24u32.to_le_bytes());
    v.extend(b);
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            reason: BadBlockReason::LengthMismatch {
                len: 20,
                trailer: 24
            },
            ..
        }
    ));
    // if_tsresol (code 9) with 2 bytes.
    let opt = [9, 0, 2, 0, 9, 9, 0, 0, 0, 0, 0, 0];
    let mut v = shb();
    v.extend(idb(1, &opt));
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            reason: BadBlockReason::BadOptionLength {
                code: 9,
                len: 2,
                expected: 1,
                ..
            },
            ..
        }
    ));
    // An option running past the block: code 2, length 200.
    let opt = [2, 0, 200, 0, b'x', 0, 0, 0];
    let mut v = shb();
    v.extend(idb(1, &opt));
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            reason: BadBlockReason::OptionPastBlock { code: 2, len: 200 },
            ..
        }
    ));
    // pcapng version 2.0.
    let mut v = shb();
    v[12..14].copy_from_slice(&2u16.to_le_bytes());
    assert!(matches!(
        first_error(&v),
        CaptureError::UnsupportedVersion {
            format: "pcapng",
            major: 2,
            ..
        }
    ));
}

#[test]
fn pcapng_large_blocks_are_skipped_or_refused_without_buffering() {
    // An unknown 2 MiB block is skipped in a stream; a 2 MiB EPB is refused before buffering.
    let mut v = shb();
    v.extend(idb(1, &[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0])); // if_tsresol 9
    v.extend(block(0x0F0F, &vec![0xAB; 2 << 20]));
    v.extend(epb(0, 42, 4, &[1, 2, 3, 4]));
    let mut r = CaptureReader::new(Trickle(v.clone(), 0)).unwrap();
    let rec = r.next_record().unwrap().unwrap();
    assert_eq!(
        (rec.frame_number, rec.ts_ns, rec.data),
        (1, 42, &[1u8, 2, 3, 4][..])
    );
    assert!(r.next_record().is_none());

    let mut v = shb();
    v.extend(idb(1, &[]));
    let big = epb(0, 0, 4, &vec![0; 2 << 20]);
    let len = big.len() as u32;
    v.extend(big);
    assert!(matches!(
        first_error(&v),
        CaptureError::BadBlock {
            reason: BadBlockReason::TooLarge { len: l, max: MAX_BLOCK_BYTES },
            ..
        } if l == len
    ));
}

#[test]
fn writer_round_trip_through_two_readers() {
    let pkt_a: Vec<u8> = (0u8..66).collect();
    let pkt_b = vec![0x5A; 1500];
    // Timestamps: an ordinary one, the epoch, and the last ns a pcap can hold:
    // u32::MAX s + 999_999_999 ns = 4294967295999999999.
    let stamps = [1_700_000_000_123_456_789u64, 0, 4_294_967_295_999_999_999];
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    w.write(stamps[0], &pkt_a).unwrap();
    w.write(stamps[1], &pkt_b).unwrap();
    w.write_truncated(stamps[2], &pkt_b[..64], 1500).unwrap();
    // 24 + (16 + 66) + (16 + 1500) + (16 + 64) = 1702 bytes.
    assert_eq!(w.bytes_written(), 1702);
    assert!(matches!(
        w.write(4_294_967_296_000_000_000, &pkt_a),
        Err(CaptureError::TimestampOutOfRange { .. })
    ));
    assert!(matches!(
        w.write_truncated(0, &pkt_a, 10),
        Err(CaptureError::OrigLenTooShort { .. })
    ));
    assert!(matches!(
        w.write(0, &vec![0; MAX_PACKET_BYTES + 1]),
        Err(CaptureError::PacketTooLarge { .. })
    ));
    let bytes = w.into_inner().unwrap();
    assert_eq!(bytes.len(), 1702);
    // Nanosecond magic a1b23c4d little-endian, version 2.4, link type 1.
    assert_eq!(&bytes[0..8], &[0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0]);
    assert_eq!(&bytes[20..24], &[1, 0, 0, 0]);

    let mut ours = CaptureReader::from_slice(&bytes).unwrap();
    let mut theirs = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let originals: [(&[u8], u32); 3] = [(&pkt_a, 66), (&pkt_b, 1500), (&pkt_b[..64], 1500)];
    for (i, (data, orig)) in originals.iter().enumerate() {
        let r = ours.next_record().unwrap().unwrap();
        assert_eq!(
            (r.frame_number, r.ts_ns, r.orig_len, r.data),
            (i as u64 + 1, stamps[i], *orig, *data)
        );
        assert_eq!(r.is_truncated(), i == 2);
        let p = theirs.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp.as_nanos(), u128::from(stamps[i]));
        assert_eq!((&p.data[..], p.orig_len), (*data, *orig));
    }
    assert!(ours.next_record().is_none());
    assert!(theirs.next_packet().is_none());
}

#[test]
fn writer_link_type_and_file_round_trip() {
    // Cargo's scratch folder for integration tests (target/tmp), not the system's /tmp.
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capture-{}.pcap", std::process::id()));
    let mut w = PcapWriter::create(&path).unwrap();
    w.write(5, &[0x45, 0, 0, 20]).unwrap();
    w.flush().unwrap();
    drop(w);
    let mut r = CaptureReader::open(&path).unwrap();
    let rec = r.next_record().unwrap().unwrap();
    assert_eq!((rec.ts_ns, rec.link), (5, LinkType::Ethernet));
    drop(r);
    std::fs::remove_file(&path).unwrap();

    let mut w = PcapWriter::with_link_type(Vec::new(), LinkType::LinuxSll2).unwrap();
    w.write(1, &[0; 20]).unwrap();
    let bytes = w.into_inner().unwrap();
    let mut r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(r.next_record().unwrap().unwrap().link, LinkType::LinuxSll2);
    assert!(matches!(
        CaptureReader::open("/nonexistent/x.pcap"),
        Err(CaptureError::Open { .. })
    ));
}

#[test]
fn microsecond_writer_round_trip() {
    // 1_700_000_000_123_456_789 ns is 1_700_000_000 s + 123_456 µs + 789 ns: the µs file keeps
    // 123_456 in the fraction field, and both readers give 1_700_000_000_123_456_000 ns.
    let mut w = PcapWriter::microsecond(Vec::new()).unwrap();
    assert!(!w.is_nanosecond());
    w.write(1_700_000_000_123_456_789, &[0x11; 60]).unwrap();
    w.write(999, &[0x22; 60]).unwrap();
    let bytes = w.into_inner().unwrap();
    // Microsecond magic a1b2c3d4 little-endian, version 2.4.
    assert_eq!(&bytes[0..8], &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]);
    assert_eq!(&bytes[28..32], &123_456u32.to_le_bytes());
    let mut ours = CaptureReader::from_slice(&bytes).unwrap();
    assert!(matches!(
        ours.format(),
        ccreplay_codecs::capture::CaptureFormat::Pcap {
            nanosecond: false,
            ..
        }
    ));
    let mut theirs = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    for want in [1_700_000_000_123_456_000u64, 0] {
        assert_eq!(ours.next_record().unwrap().unwrap().ts_ns, want);
        let p = theirs.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp.as_nanos(), u128::from(want));
    }
    assert!(PcapWriter::new(Vec::new()).unwrap().is_nanosecond());
}

/// xorshift64*: a fixed pseudo-random sequence, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Reads to the end or the first error; the reader must then stay finished.
fn drain<S: Source>(mut r: CaptureReader<S>) -> usize {
    let mut n = 0;
    while let Some(rec) = r.next_record() {
        if rec.is_err() {
            assert!(r.next_record().is_none());
            break;
        }
        n += 1;
    }
    n
}

/// Mutated and cut fixtures never panic and always end: a record count bounded by the input
/// (each record consumes at least 12 bytes), then `None` for good.
#[test]
fn mutated_captures_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for name in [
        "roce_linktypes_multi.pcapng",
        "roce_linktypes_tsresol_bin30.pcapng",
        "roce_linktypes_eth_be_ns.pcap",
        "roce_opcodes.pcap",
    ] {
        let original = fixture(name);
        for round in 0..400 {
            let mut bytes = original.clone();
            for _ in 0..(1 + rng.next() % 8) {
                let i = (rng.next() % bytes.len() as u64) as usize;
                bytes[i] = rng.next() as u8;
            }
            if round % 3 == 0 {
                bytes.truncate((rng.next() % bytes.len() as u64) as usize);
            }
            let n_stream = CaptureReader::new(Trickle(bytes.clone(), 0)).map_or(0, drain);
            let n_slice = CaptureReader::from_slice(&bytes).map_or(0, drain);
            // Both sources see the same records.
            assert_eq!(n_stream, n_slice, "{name} round {round}");
            assert!(
                n_slice <= bytes.len() / 12 + 1,
                "{name} round {round}: {n_slice} records"
            );
        }
    }
}

/// Every record of `reader` (frame, time, lengths, link, interface, bytes) and how it ended.
type Framed = (Vec<(u64, u64, u32, u32, u32, Vec<u8>)>, Option<String>);

fn frame_all<S: Source>(reader: Result<CaptureReader<S>, CaptureError>) -> Framed {
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(format!("open: {e}"))),
    };
    let mut recs = Vec::new();
    while let Some(r) = reader.next_record() {
        match r {
            Ok(r) => recs.push((
                r.frame_number,
                r.ts_ns,
                r.orig_len,
                r.link.to_u32(),
                r.interface_id,
                r.data.to_vec(),
            )),
            Err(e) => return (recs, Some(e.to_string())),
        }
    }
    (recs, None)
}

/// `data` cut into blocks of `size` bytes, as a `BlockSource` asks for them.
fn blocks(data: &[u8], size: usize) -> impl FnMut() -> io::Result<Option<Vec<u8>>> + '_ {
    let mut chunks = data.chunks(size);
    move || Ok(chunks.next().map(<[u8]>::to_vec))
}

// A reader over blocks (read by other threads in `ccreplay`) frames exactly as over one
// stream: the same records and the same error, at the same offset, whatever the block size —
// for every fixture and fuzz seed, whole and cut short at several points.
#[test]
fn block_source_frames_like_a_stream() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut inputs = Vec::new();
    for dir in ["tests/fixtures", "fuzz/corpus/capture_reader"] {
        let mut names: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("folder present")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "pcap" || e == "pcapng" || dir.contains("fuzz"))
            })
            .collect();
        names.sort();
        for p in names {
            inputs.push(std::fs::read(&p).expect("readable"));
        }
    }
    assert!(inputs.len() > 20, "{} inputs", inputs.len());
    let mut records = 0;
    let mut errors = 0;
    for data in &inputs {
        let n = data.len();
        for cut in [n, n - n / 3, n / 2, 30, 23] {
            let data = &data[..cut.min(n)];
            let want = frame_all(CaptureReader::from_slice(data));
            records += want.0.len();
            errors += want.1.is_some() as usize;
            for size in [1, 2, 3, 5, 16, 17, 100, 1000, 4096, 1 << 20] {
                let got = frame_all(CaptureReader::with_source(
                    ccreplay_codecs::capture::BlockSource::new(blocks(data, size)),
                ));
                assert_eq!(got, want, "{n}-byte input cut at {cut}, blocks of {size}");
            }
        }
    }
    // The comparison saw records and errors of both kinds of ending.
    assert!(
        records > 500 && errors > 20,
        "{records} records, {errors} errors"
    );
}

// `BlockSource::locate` says where each record's bytes are: inside the current block (no
// copy) unless the record straddles a block edge.
#[test]
fn block_source_locates_records() {
    let data = fixture("hpcc.pcap");
    let size = 1000;
    let mut reader = CaptureReader::with_source(ccreplay_codecs::capture::BlockSource::new(
        blocks(&data, size),
    ))
    .expect("pcap");
    let (mut in_block, mut straddled) = (0, 0);
    let mut at = 24u64; // file offset of the next record header
    while let Some(r) = reader.next_record_in() {
        let (rec, src) = r.expect("valid fixture");
        let len = rec.data.len() as u64;
        let first = (at + 16) / size as u64; // block of the record's first byte
        let last = (at + 16 + len - 1) / size as u64;
        match src.locate(rec.data) {
            Ok((b, off)) => {
                assert_eq!(first, last, "record at {at} said to lie in one block");
                assert_eq!(&b[off..off + rec.data.len()], rec.data);
                assert_eq!(off as u64, (at + 16) % size as u64);
                in_block += 1;
            }
            Err(bytes) => {
                // A record whose header alone straddles is copied too.
                assert!(first != last || at / size as u64 != first, "record at {at}");
                assert_eq!(bytes, rec.data);
                straddled += 1;
            }
        }
        at += 16 + len;
    }
    assert_eq!(at, data.len() as u64);
    assert!(in_block > 0 && straddled > 0, "{in_block} / {straddled}");
}

/// What is a flow's data (`Roce::is_flow_data`), counted over two scapy-made captures whose
/// opcodes tshark 4.0.17 counts (tests/fixtures/README.md): a READ twin — 2 READ requests,
/// 2 + 390 + 1 READ responses, 10 CNPs — and rdma_cm's five MADs to QP1 (UD SEND_ONLY).
#[rstest]
#[case("read/dcqcn_clamp_read.pcap", 405, 393, 0)]
#[case("cm/cm_mads.pcap", 5, 0, 5)]
fn flow_data_is_sends_writes_and_read_responses_not_mads(
    #[case] name: &str,
    #[case] frames: usize,
    #[case] data: usize,
    #[case] gsi: usize,
) {
    use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let mut reader = CaptureReader::open(fixture_path(name)).unwrap();
    let (mut n, mut d, mut g) = (0, 0, 0);
    while let Some(rec) = reader.next_record() {
        let rec = rec.unwrap();
        let p = Packet::from_record(&rec, &cfg);
        let r = p.roce.expect("RoCEv2");
        n += 1;
        d += r.is_flow_data() as usize;
        g += r.bth.is_gsi() as usize;
        // Flow data by opcode and DestQP alike: a UD SEND is flow data unless it is to QP1.
        let op = r.bth.opcode();
        assert_eq!(
            r.is_flow_data(),
            (op.is_data() || op.is_read_response()) && r.bth.dest_qp() != 1,
            "{name} frame {}",
            rec.frame_number
        );
    }
    assert_eq!((n, d, g), (frames, data, gsi), "{name}");
}

/// A record of exactly `MAX_PACKET_BYTES` is written (the limit is inclusive, as the reader's
/// is), and a writer whose flush fails reports it with the bytes written so far.
#[test]
fn writer_limits_and_a_failing_flush() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    w.write(0, &vec![0; MAX_PACKET_BYTES]).unwrap();
    // 24 + 16 + 262,144.
    assert_eq!(w.bytes_written(), 262_184);
    let bytes = w.into_inner().unwrap();
    let mut r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(
        r.next_record().unwrap().unwrap().data.len(),
        MAX_PACKET_BYTES
    );

    struct NoFlush(Vec<u8>);
    impl std::io::Write for NoFlush {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::other("disk gone"))
        }
    }
    let mut w = PcapWriter::new(NoFlush(Vec::new())).unwrap();
    w.write(0, &[1, 2, 3]).unwrap();
    match w.flush() {
        Err(CaptureError::Write { offset, .. }) => assert_eq!(offset, 24 + 16 + 3),
        other => panic!("{other:?}"),
    }
}
