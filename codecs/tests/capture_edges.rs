//! `codecs::capture` at its edges, built by hand (cargo-mutants survivors of reader.rs and
//! source.rs, docs/conformance.md): every length and offset is summed in the comments from the
//! libpcap file format and the pcapng draft; tshark 4.0.17 read the two-section file alike.

use std::io::{self, Read};

use ccreplay_codecs::capture::{
    BadBlockReason, CaptureError, CaptureFormat, CaptureReader, LinkType, MAX_BLOCK_BYTES,
    MAX_PACKET_BYTES, Source,
};

mod common;
use common::Trickle;

// Every length and offset below is summed by hand from the libpcap file format (24-byte file
// header, 16-byte record headers) and the pcapng draft (a block is type, total length, body padded to 32 bits,
// total length again: 12 bytes of framing; SHB body 16, IDB 8, EPB / PB 20, SPB 4; options are
// code, length, value padded to 32 bits).

/// One record as the reader gives it: frame, ts_ns, orig_len, link number, interface, bytes.
type Rec = (u64, u64, u32, u32, u32, Vec<u8>);

/// Every record up to the end or the first error (typed), which must end the iteration.
fn read_all(bytes: &[u8]) -> (Vec<Rec>, Option<CaptureError>) {
    let mut r = match CaptureReader::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        match x {
            Ok(x) => v.push((
                x.frame_number,
                x.ts_ns,
                x.orig_len,
                x.link.to_u32(),
                x.interface_id,
                x.data.to_vec(),
            )),
            Err(e) => {
                assert!(r.next_record().is_none(), "reader stops after an error");
                return (v, Some(e));
            }
        }
    }
    (v, None)
}

/// pcapng blocks in either byte order.
#[derive(Clone, Copy)]
struct Ng {
    big: bool,
}

impl Ng {
    fn u16(self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(self, block_type: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        body.resize(body.len().div_ceil(4) * 4, 0);
        let len = self.u32(12 + body.len() as u32);
        [&self.u32(block_type)[..], &len, &body, &len].concat()
    }
    /// SHB: byte-order magic 0x1A2B3C4D, version 1.0, section length -1 (unknown).
    fn shb(self) -> Vec<u8> {
        let body = [
            &self.u32(0x1A2B_3C4D)[..],
            &self.u16(1),
            &self.u16(0),
            &[0xFF; 8],
        ]
        .concat();
        self.block(0x0A0D_0D0A, &body)
    }
    /// An option: code, length, value padded to 32 bits.
    fn opt(self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut v = [&self.u16(code)[..], &self.u16(value.len() as u16), value].concat();
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }
    /// IDB: link type, reserved, snaplen, options.
    fn idb(self, link: u16, reserved: u16, snaplen: u32, opts: &[u8]) -> Vec<u8> {
        let body = [
            &self.u16(link)[..],
            &self.u16(reserved),
            &self.u32(snaplen),
            opts,
        ]
        .concat();
        self.block(1, &body)
    }
    fn ts(self, raw: u64) -> Vec<u8> {
        [self.u32((raw >> 32) as u32), self.u32(raw as u32)].concat()
    }
    /// EPB: interface, timestamp (high, low), captured and original length, data.
    fn epb(self, iface: u32, raw: u64, caplen: u32, orig: u32, data: &[u8]) -> Vec<u8> {
        let body = [
            &self.u32(iface)[..],
            &self.ts(raw),
            &self.u32(caplen),
            &self.u32(orig),
            data,
        ]
        .concat();
        self.block(6, &body)
    }
    /// Obsolete Packet Block: a 16-bit interface id and a 16-bit drops count.
    fn pb(self, iface: u16, drops: u16, raw: u64, caplen: u32, orig: u32, data: &[u8]) -> Vec<u8> {
        let body = [
            &self.u16(iface)[..],
            &self.u16(drops),
            &self.ts(raw),
            &self.u32(caplen),
            &self.u32(orig),
            data,
        ]
        .concat();
        self.block(2, &body)
    }
    /// SPB: original length, data.
    fn spb(self, orig: u32, data: &[u8]) -> Vec<u8> {
        self.block(3, &[&self.u32(orig)[..], data].concat())
    }
}

const BE: Ng = Ng { big: true };
const LE: Ng = Ng { big: false };

/// Two sections, big-endian then little-endian, with every packet block kind, interface
/// options, per-interface snaplen and link, and the blocks that take a frame number without
/// being records. Checked with tshark 4.0.17 (`tshark -r x.pcapng -T fields -e frame.number
/// -e frame.time_epoch -e frame.len -e frame.cap_len -e frame.interface_id`: the same frames
/// 1 to 8, times, lengths and interfaces, the custom and journal blocks as frames 5 to 7, then
/// "interface index 1 is not less than section interface count 1"); the sums by hand:
///
/// section 1 (big-endian), at 0: SHB 28;
/// IDB 0 at 28: Ethernet, snaplen 0, if_tsresol 3 (ms: 4 + 1 -> 8), if_tsoffset 10 s (4 + 8),
///   end (4): 20 + 24 = 44; IDB 1 at 72: raw IP (101), snaplen 6, no options: 20;
/// frame 1, EPB at 92 on if 0: raw 5 ms + 10 s = 10,005,000,000 ns, 4 of 60 bytes: 36;
/// frame 2, PB at 128 on if 1 (16-bit id 1, drops 5): raw 2^32 + 2 µs = 4,294,967,298,000 ns;
///   4 of 4 bytes: 36 (the IDB's snaplen does not cut a PB or EPB);
/// frame 3, SPB at 164: original length 5 of 8 data bytes -> 5 captured (if 0's snaplen is 0,
///   no limit), time 0: 12 + 4 + 8 = 24;
/// section 2 (little-endian), at 188: SHB 28; IDB 0 at 216: Linux SLL (113), snaplen 6, no
///   options: 20;
/// frame 4, SPB at 236: original 100, snaplen 6, so 6 data bytes (the draft: an SPB's data
///   is min(original length, snaplen) long), padded to 8: 24; the reader takes min(8 bytes in
///   the block, 100, 6) = 6;
/// frames 5, 6, 7: a custom block (0xBAD) at 260 (16), a systemd journal block (9) at 276
///   (one 36-byte export entry, "__REALTIME_TIMESTAMP=1\nMESSAGE=xyz\n\n": 48) and a custom
///   block that must not be copied (0x40000BAD) at 324 (16);
/// an unknown block (0x0101) at 340: 16, no frame;
/// frame 8, EPB at 356 on if 0: 7 µs = 7,000 ns, 3 of 3 bytes: 12 + 20 + 4 = 36;
/// then an EPB at 392 on interface 1, which section 2 does not describe (the table is reset
///   by its SHB): frame 9 fails.
fn two_sections() -> Vec<u8> {
    let opts = [
        BE.opt(9, &[3]),
        BE.opt(14, &10u64.to_be_bytes()),
        BE.opt(0, &[]),
    ]
    .concat();
    [
        BE.shb(),
        BE.idb(1, 0, 0, &opts),
        BE.idb(101, 0, 6, &[]),
        BE.epb(0, 5, 4, 60, &[1, 2, 3, 4]),
        BE.pb(1, 5, (1 << 32) + 2, 4, 4, &[0x45, 0, 0, 4]),
        BE.spb(5, &[9, 8, 7, 6, 5, 4, 3, 2]),
        LE.shb(),
        LE.idb(113, 0, 6, &[]),
        LE.spb(100, &[1, 2, 3, 4, 5, 6]),
        LE.block(0xBAD, &[0; 4]),
        LE.block(9, b"__REALTIME_TIMESTAMP=1\nMESSAGE=xyz\n\n"),
        LE.block(0x4000_0BAD, &[0; 4]),
        LE.block(0x0101, &[0; 4]),
        LE.epb(0, 7, 3, 3, &[0xA, 0xB, 0xC]),
        LE.epb(1, 0, 0, 0, &[]),
    ]
    .concat()
}

#[test]
fn pcapng_two_sections_every_packet_block_by_hand() {
    let bytes = two_sections();
    assert_eq!(bytes.len(), 392 + 32);
    let (recs, err) = read_all(&bytes);
    let want: Vec<Rec> = vec![
        (1, 10_005_000_000, 60, 1, 0, vec![1, 2, 3, 4]),
        (2, 4_294_967_298_000, 4, 101, 1, vec![0x45, 0, 0, 4]),
        (3, 0, 5, 1, 0, vec![9, 8, 7, 6, 5]),
        (4, 0, 100, 113, 0, vec![1, 2, 3, 4, 5, 6]),
        (8, 7_000, 3, 113, 0, vec![0xA, 0xB, 0xC]),
    ];
    assert_eq!(recs, want);
    assert!(matches!(
        err,
        Some(CaptureError::UnknownInterface {
            record: 9,
            offset: 392,
            interface_id: 1,
            interfaces: 1
        })
    ));
    // The reader's offset and next frame number after each record: the end of its block.
    let mut r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!((r.offset(), r.next_frame()), (28, 1));
    assert_eq!(r.source().available().len(), bytes.len() - 28);
    let mut seen = Vec::new();
    while let Some(Ok(rec)) = r.next_record() {
        let n = rec.frame_number;
        seen.push((n, r.offset(), r.next_frame()));
    }
    assert_eq!(
        seen,
        [
            (1, 128, 2),
            (2, 164, 3),
            (3, 188, 4),
            (4, 260, 5),
            (8, 392, 9)
        ]
    );
    // Over a stream handing out 5 bytes at a time: the same.
    let mut s = CaptureReader::new(Trickle(bytes.clone(), 0)).unwrap();
    let mut n = 0;
    while let Some(Ok(rec)) = s.next_record() {
        assert_eq!(rec.data, &want[n].5[..]);
        n += 1;
    }
    assert_eq!(n, 5);
    let rest = s.into_source().into_inner();
    assert_eq!(rest.1, bytes.len(), "the stream was read to its end");
}

/// A pcap file header: magic, version, thiszone 0, sigfigs 0, snaplen, link-type field, in
/// the byte order the magic is written in.
fn pcap_header(magic: u32, big: bool, version: (u16, u16), snaplen: u32, link: u32) -> Vec<u8> {
    let ng = Ng { big };
    [
        &ng.u32(magic)[..],
        &ng.u16(version.0),
        &ng.u16(version.1),
        &[0; 8],
        &ng.u32(snaplen),
        &ng.u32(link),
    ]
    .concat()
}

/// A pcap record header and its bytes.
fn pcap_record(big: bool, sec: u32, frac: u32, orig: u32, data: &[u8]) -> Vec<u8> {
    let ng = Ng { big };
    [
        &ng.u32(sec)[..],
        &ng.u32(frac),
        &ng.u32(data.len() as u32),
        &ng.u32(orig),
        data,
    ]
    .concat()
}

/// The libpcap file header: both magics in both byte orders, the FCS bits of the link-type
/// field, versions, and a header cut short.
#[test]
fn pcap_file_header_edges_by_hand() {
    // Big-endian nanosecond magic (a1b23c4d written as is), snaplen 8, link 101 (raw IP).
    // A zero-length record (orig 60), then one of 10 bytes past the snaplen of 8 (kept
    // whole: the reader does not cut at the snaplen), then the end.
    let bytes = [
        pcap_header(0xA1B2_3C4D, true, (2, 4), 8, 101),
        pcap_record(true, 1, 2, 60, &[]),
        pcap_record(true, 3, 999_999_999, 10, &[0x45; 10]),
    ]
    .concat();
    let r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(
        r.format(),
        CaptureFormat::Pcap {
            nanosecond: true,
            big_endian: true,
            link: LinkType::RawIp,
            snaplen: 8,
            version: (2, 4)
        }
    );
    // 1 s + 2 ns; 3 s + 999,999,999 ns.
    let (recs, err) = read_all(&bytes);
    assert_eq!(
        recs,
        [
            (1, 1_000_000_002, 60, 101, 0, vec![]),
            (2, 3_999_999_999, 10, 101, 0, vec![0x45; 10])
        ]
    );
    assert!(err.is_none());
    // Offsets: the header 24, record 1 ends at 24 + 16 = 40, record 2 at 40 + 16 + 10 = 66.
    let mut r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(r.offset(), 24);
    assert!(r.next_record().unwrap().unwrap().is_truncated());
    assert_eq!((r.offset(), r.next_frame()), (40, 2));
    assert!(r.next_record().unwrap().is_ok());
    assert_eq!((r.offset(), r.next_frame()), (66, 3));
    assert!(r.next_record().is_none());
    assert_eq!(r.offset(), 66);

    // Little-endian microsecond magic (d4 c3 b2 a1 on disk) with link-type field 0x24000001:
    // libpcap's LT_FCS_LENGTH_PRESENT (0x04000000) and an FCS length of 2 16-bit words in
    // bits 28-31 (0x20000000) over LINKTYPE_ETHERNET; the link type is still Ethernet.
    let bytes = pcap_header(0xA1B2_C3D4, false, (2, 4), 65_535, 0x2400_0001);
    assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
    let r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(
        r.format(),
        CaptureFormat::Pcap {
            nanosecond: false,
            big_endian: false,
            link: LinkType::Ethernet,
            snaplen: 65_535,
            version: (2, 4)
        }
    );
    // A header of exactly 24 bytes is a capture with no record; 23 is cut.
    assert!(read_all(&bytes).0.is_empty());
    assert!(matches!(
        CaptureReader::from_slice(&bytes[..23]),
        Err(CaptureError::TruncatedHeader {
            what: "pcap file header",
            offset: 0,
            needed: 24,
            available: 23
        })
    ));
    assert!(matches!(
        CaptureReader::from_slice(&bytes[..3]),
        Err(CaptureError::TruncatedHeader {
            what: "file magic number",
            offset: 0,
            needed: 4,
            available: 3
        })
    ));
    // Version 3.0 is not libpcap's 2.x; 2.2 (older writers) is read.
    match CaptureReader::from_slice(&pcap_header(0xA1B2_C3D4, true, (3, 0), 0, 1)) {
        Err(CaptureError::UnsupportedVersion {
            format: "pcap",
            offset: 0,
            major: 3,
            minor: 0,
            expected: "2.x",
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(CaptureReader::from_slice(&pcap_header(0xA1B2_C3D4, true, (2, 2), 0, 1)).is_ok());
    // The resumed reader reads the big-endian header's records alike; pcap_record_bytes
    // reads a big-endian captured length (10 -> 16 + 10 = 26).
    let bytes = [
        pcap_header(0xA1B2_3C4D, true, (2, 4), 8, 101),
        pcap_record(true, 3, 4, 10, &[0x45; 10]),
    ]
    .concat();
    let r = CaptureReader::from_slice(&bytes).unwrap();
    assert_eq!(r.pcap_record_bytes(&bytes[24..]), Some(26));
}

/// A pcap record one byte over `MAX_PACKET_BYTES` is refused before anything is buffered;
/// the error names the record and where it starts.
#[test]
fn pcap_record_limit_by_hand() {
    let mut bytes = pcap_header(0xA1B2_C3D4, false, (2, 4), 0, 1);
    bytes.extend(pcap_record(false, 0, 0, 1, &[7]));
    // Record 2 at 24 + 16 + 1 = 41 claims 262,145 bytes.
    bytes.extend(pcap_record(false, 0, 0, 0, &[]));
    bytes[41 + 8..41 + 12].copy_from_slice(&(MAX_PACKET_BYTES as u32 + 1).to_le_bytes());
    let (recs, err) = read_all(&bytes);
    assert_eq!(recs.len(), 1);
    assert!(matches!(
        err,
        Some(CaptureError::RecordTooLarge {
            record: 2,
            offset: 41,
            len: 262_145,
            max: MAX_PACKET_BYTES
        })
    ));
}

/// The Section Header Block cut at every interesting length, with a bad trailer, too short a
/// total length; then an SHB cut inside a later section.
#[test]
fn pcapng_section_header_cut_or_bad_by_hand() {
    let shb = LE.shb(); // 28 bytes: type, length 28, magic, 1.0, section length, length 28
    let err = |b: &[u8]| read_all(b).1.expect("an error");
    for n in [4, 8, 11] {
        match err(&shb[..n]) {
            CaptureError::TruncatedHeader {
                what: "pcapng section header",
                offset: 0,
                needed: 28,
                available,
            } => assert_eq!(available, n),
            other => panic!("{n}: {other:?}"),
        }
    }
    // 12 to 23 bytes: the fixed part (24) is cut; 24 to 27: the trailing length is.
    for n in [12, 23, 24, 26, 27] {
        match err(&shb[..n]) {
            CaptureError::TruncatedBlock {
                offset: 0,
                block_type: 0x0A0D_0D0A,
                needed: 28,
                available,
            } => assert_eq!(available, n as u64),
            other => panic!("{n}: {other:?}"),
        }
    }
    // A whole SHB alone is a capture with no record.
    assert_eq!(read_all(&shb).1.map(|e| e.to_string()), None);
    // Total length 24 < 28; 30 not a multiple of 4.
    for len in [24u32, 30] {
        let mut b = shb.clone();
        b[4..8].copy_from_slice(&len.to_le_bytes());
        match err(&b) {
            CaptureError::BadBlock {
                offset: 0,
                block_type: 0x0A0D_0D0A,
                reason: BadBlockReason::BadLength { len: l, min: 28 },
            } => assert_eq!(l, len),
            other => panic!("{len}: {other:?}"),
        }
    }
    // Trailing length 32 after a leading 28.
    let mut b = shb.clone();
    b[24..28].copy_from_slice(&32u32.to_le_bytes());
    assert!(matches!(
        err(&b),
        CaptureError::BadBlock {
            offset: 0,
            block_type: 0x0A0D_0D0A,
            reason: BadBlockReason::LengthMismatch {
                len: 28,
                trailer: 32
            }
        }
    ));
    // A big-endian SHB whose byte-order magic is written little-endian: the whole block is
    // read little-endian, so its length 00 00 00 1c is 0x1C000000 (a multiple of 4, above 28)
    // and its version 00 01 . 00 00 is 256.0.
    let mut b = BE.shb();
    b[8..12].copy_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    assert!(matches!(
        err(&b),
        CaptureError::UnsupportedVersion {
            format: "pcapng",
            offset: 0,
            major: 256,
            minor: 0,
            expected: "1.x"
        }
    ));
    b[8..12].copy_from_slice(&0x1A2B_3C4Eu32.to_be_bytes());
    assert!(matches!(
        err(&b),
        CaptureError::BadByteOrderMagic {
            offset: 0,
            found: 0x1A2B_3C4E
        }
    ));
    // A second section at 28, cut: 3 bytes (no type yet: 0), 10 bytes (a type, no length),
    // 20 bytes (the header is there, its fixed part is not).
    let two = [LE.shb(), BE.shb()].concat();
    for (n, block_type, needed) in [(3, 0, 12), (10, 0x0A0D_0D0A, 12), (20, 0x0A0D_0D0A, 28)] {
        match err(&two[..28 + n]) {
            CaptureError::TruncatedBlock {
                offset: 28,
                block_type: t,
                needed: nd,
                available,
            } => assert_eq!((t, nd, available), (block_type, needed, n as u64)),
            other => panic!("{n}: {other:?}"),
        }
    }
    // The second section, big-endian, reads its own blocks so: an IDB and an EPB whose
    // raw 2 is 2 µs = 2,000 ns.
    let mut v = two.clone();
    v.extend(BE.idb(1, 0, 0, &[]));
    v.extend(BE.epb(0, 2, 1, 1, &[0xAA]));
    assert_eq!(read_all(&v).0, [(1, 2_000, 1, 1, 0, vec![0xAA])]);
}

/// Block lengths: each type's minimum (IDB 20, EPB and PB 32, SPB 16, others 12) is read, 4
/// less is refused; skipped blocks are checked to their trailing length.
#[test]
fn pcapng_block_lengths_by_hand() {
    let at_28 = |b: &[u8]| {
        let mut v = LE.shb();
        v.extend(LE.idb(1, 0, 0, &[]));
        v.extend_from_slice(b);
        v
    };
    // Minimal blocks after SHB 28 + IDB 20: an EPB of 32 (no data), an SPB of 16 (original
    // length 9, no data: 0 captured), an unknown block of 12 (skipped), a PB of 32.
    let v = at_28(
        &[
            LE.epb(0, 1, 0, 0, &[]),
            LE.spb(9, &[]),
            LE.block(0x0123, &[]),
            LE.pb(0, 0, 3, 0, 0, &[]),
        ]
        .concat(),
    );
    assert_eq!(v.len(), 48 + 32 + 16 + 12 + 32);
    let (recs, err) = read_all(&v);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        recs,
        [
            (1, 1_000, 0, 1, 0, vec![]),
            (2, 0, 9, 1, 0, vec![]),
            (3, 3_000, 0, 1, 0, vec![])
        ]
    );
    // Each 4 bytes short of its minimum, at 48.
    for (block_type, min) in [(1u32, 20u32), (6, 32), (2, 32), (3, 16), (0x0123, 12)] {
        let mut b = LE.block(block_type, &vec![0; min as usize - 12]);
        b[4..8].copy_from_slice(&(min - 4).to_le_bytes());
        let (_, err) = read_all(&at_28(&b));
        match err {
            Some(CaptureError::BadBlock {
                offset: 48,
                block_type: t,
                reason: BadBlockReason::BadLength { len, min: m },
            }) => assert_eq!((t, len, m), (block_type, min - 4, min)),
            other => panic!("{block_type:#x}: {other:?}"),
        }
    }
    // An unknown block of 100 bytes at 48, cut: after 50 bytes (its body is not all there:
    // 50 available) and after 98 (its body is, 2 bytes of its trailing length are).
    let unknown = LE.block(0x0123, &[0x55; 88]);
    assert_eq!(unknown.len(), 100);
    for n in [50, 98] {
        match read_all(&at_28(&unknown[..n])).1 {
            Some(CaptureError::TruncatedBlock {
                offset: 48,
                block_type: 0x0123,
                needed: 100,
                available,
            }) => assert_eq!(available, n as u64),
            other => panic!("{n}: {other:?}"),
        }
    }
    // Its trailing length wrong (104).
    let mut bad = unknown.clone();
    bad[96..100].copy_from_slice(&104u32.to_le_bytes());
    assert!(matches!(
        read_all(&at_28(&bad)).1,
        Some(CaptureError::BadBlock {
            offset: 48,
            block_type: 0x0123,
            reason: BadBlockReason::LengthMismatch {
                len: 100,
                trailer: 104
            }
        })
    ));
    // An EPB's trailing length wrong (40 after 36), in a big-endian section.
    let mut v = BE.shb();
    v.extend(BE.idb(1, 0, 0, &[]));
    let mut e = BE.epb(0, 0, 4, 4, &[1, 2, 3, 4]);
    e[32..36].copy_from_slice(&40u32.to_be_bytes());
    v.extend(e);
    assert!(matches!(
        read_all(&v).1,
        Some(CaptureError::BadBlock {
            offset: 48,
            block_type: 6,
            reason: BadBlockReason::LengthMismatch {
                len: 36,
                trailer: 40
            }
        })
    ));
}

/// Captured lengths against the block and against `MAX_PACKET_BYTES`; the buffered-block limit
/// `MAX_BLOCK_BYTES` (1 MiB) is inclusive.
#[test]
fn pcapng_captured_length_and_block_limits_by_hand() {
    let with = |b: Vec<u8>| [LE.shb(), LE.idb(1, 0, 0, &[9, 0, 1, 0, 9, 0, 0, 0]), b].concat();
    // IDB with if_tsresol 9: 28 + 20 + 8 = 56 is where the EPB starts.
    // 4 captured bytes filling the 24-byte body exactly.
    let (recs, err) = read_all(&with(LE.epb(0, 5, 4, 4, &[1, 2, 3, 4])));
    assert_eq!(
        (recs, err.is_none()),
        (vec![(1, 5, 4, 1, 0, vec![1, 2, 3, 4])], true)
    );
    // 5 claimed with 4 in the block (body 24, 20 fixed).
    assert!(matches!(
        read_all(&with(LE.epb(0, 5, 5, 5, &[1, 2, 3, 4]))).1,
        Some(CaptureError::BadBlock {
            offset: 56,
            block_type: 6,
            reason: BadBlockReason::CapturedLenPastBlock {
                captured: 5,
                available: 4
            }
        })
    ));
    // 262,144 claimed: not too large, past the block; 262,145: too large.
    assert!(matches!(
        read_all(&with(LE.epb(0, 5, 262_144, 4, &[1, 2, 3, 4]))).1,
        Some(CaptureError::BadBlock {
            reason: BadBlockReason::CapturedLenPastBlock {
                captured: 262_144,
                available: 4
            },
            ..
        })
    ));
    assert!(matches!(
        read_all(&with(LE.epb(0, 5, 262_145, 4, &[1, 2, 3, 4]))).1,
        Some(CaptureError::RecordTooLarge {
            record: 1,
            offset: 56,
            len: 262_145,
            max: MAX_PACKET_BYTES
        })
    ));
    // An EPB of exactly 1 MiB: 12 + 20 + 4 data bytes + 1,048,540 option bytes (15 comments
    // of 4 + 65,532, one of 4 + 65,492, opt_endofopt 4). Read. 4 bytes more: refused.
    let mut body = [
        &0u32.to_le_bytes()[..],
        &[0; 8],
        &4u32.to_le_bytes(),
        &4u32.to_le_bytes(),
    ]
    .concat();
    body.extend([1, 2, 3, 4]);
    for _ in 0..15 {
        body.extend(LE.opt(1, &[b'c'; 65_532]));
    }
    body.extend(LE.opt(1, &[b'c'; 65_492]));
    body.extend(LE.opt(0, &[]));
    let epb = LE.block(6, &body);
    assert_eq!(epb.len(), MAX_BLOCK_BYTES);
    let (recs, err) = read_all(&with(epb));
    assert_eq!((recs.len(), err.is_none()), (1, true));
    body.extend([0; 4]);
    assert!(matches!(
        read_all(&with(LE.block(6, &body))).1,
        Some(CaptureError::BadBlock {
            offset: 56,
            block_type: 6,
            reason: BadBlockReason::TooLarge {
                len: 1_048_580,
                max: MAX_BLOCK_BYTES
            }
        })
    ));
}

/// A section may describe 65,536 interfaces (`MAX_INTERFACES`), not one more; the last of
/// them is usable.
#[test]
fn pcapng_interface_limit_by_hand() {
    let idb = LE.idb(1, 0, 0, &[]);
    let mut v = LE.shb();
    for _ in 0..65_536 {
        v.extend_from_slice(&idb);
    }
    let mut ok = v.clone();
    ok.extend(LE.epb(65_535, 0, 1, 1, &[9]));
    assert_eq!(read_all(&ok).0, [(1, 0, 1, 1, 65_535, vec![9])]);
    // The 65,537th IDB at 28 + 65,536 × 20 = 1,310,748.
    v.extend_from_slice(&idb);
    assert!(matches!(
        read_all(&v).1,
        Some(CaptureError::TooManyInterfaces {
            offset: 1_310_748,
            max: 65_536
        })
    ));
}

/// Interface Description Block options: padding, the end-of-options marker, an option that
/// ends the block exactly, `if_tsoffset` of a wrong length, the 16-bit link type beside its
/// reserved field.
#[test]
fn pcapng_interface_options_by_hand() {
    // One EPB of raw timestamp 7 after an IDB with `opts` (LE, link 1, reserved 0xFFFF).
    let ts_with = |opts: Vec<u8>| {
        let v = [
            LE.shb(),
            LE.idb(1, 0xFFFF, 0, &opts),
            LE.epb(0, 7, 1, 1, &[1]),
        ]
        .concat();
        let (recs, err) = read_all(&v);
        match (recs.first(), err) {
            (Some(r), None) => Ok((r.1, r.3)),
            (_, e) => Err(e),
        }
    };
    // No options: µs (7 µs = 7,000 ns); the link is the low 16 bits, not 0xFFFF0001.
    assert_eq!(ts_with(vec![]).ok(), Some((7_000, 1)));
    // if_name "eth10" (5 bytes, padded to 8), then if_tsresol 9: 7 ns.
    let name = LE.opt(2, b"eth10");
    assert_eq!(name.len(), 12);
    assert_eq!(
        ts_with([name.clone(), LE.opt(9, &[9])].concat()).ok(),
        Some((7, 1))
    );
    // if_tsresol 9 as the last option, without opt_endofopt: it ends the block exactly.
    assert_eq!(ts_with(LE.opt(9, &[9])).ok(), Some((7, 1)));
    // opt_endofopt first: what follows is not read (µs).
    assert_eq!(
        ts_with([LE.opt(0, &[]), LE.opt(9, &[9])].concat()).ok(),
        Some((7_000, 1))
    );
    // if_tsoffset -1 s with if_tsresol 0 (seconds): raw 7 s - 1 s = 6 s.
    assert_eq!(
        ts_with([LE.opt(9, &[0]), LE.opt(14, &(-1i64).to_le_bytes())].concat()).ok(),
        Some((6_000_000_000, 1))
    );
    // if_tsoffset of 4 bytes.
    match ts_with(LE.opt(14, &[0; 4])) {
        Err(Some(CaptureError::BadBlock {
            offset: 28,
            block_type: 1,
            reason:
                BadBlockReason::BadOptionLength {
                    code: 14,
                    name: "if_tsoffset",
                    len: 4,
                    expected: 8,
                },
        })) => {}
        other => panic!("{other:?}"),
    }
    // if_name claiming 9 bytes (padded 12) where 8 are left.
    let mut cut = LE.opt(2, b"eth10");
    cut[2..4].copy_from_slice(&9u16.to_le_bytes());
    assert!(matches!(
        ts_with(cut),
        Err(Some(CaptureError::BadBlock {
            reason: BadBlockReason::OptionPastBlock { code: 2, len: 9 },
            ..
        }))
    ));
}

/// A reader that hands out `data[..good]`, then fails once with `kind`, then goes on.
struct FailOnce {
    data: Vec<u8>,
    at: usize,
    good: usize,
    kind: Option<io::ErrorKind>,
}

impl Read for FailOnce {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.good
            && let Some(kind) = self.kind.take()
        {
            return Err(io::Error::new(kind, "injected"));
        }
        let end = if self.at < self.good {
            self.good
        } else {
            self.data.len()
        };
        let k = out.len().min(end - self.at);
        out[..k].copy_from_slice(&self.data[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

/// A read error is reported with the offset of the header, record or block being read; an
/// interrupted read is retried and changes nothing.
#[test]
fn read_errors_name_the_offset_and_interrupts_are_retried() {
    let pcap = [
        pcap_header(0xA1B2_C3D4, false, (2, 4), 0, 1),
        pcap_record(false, 1, 2, 10, &[3; 10]),
        pcap_record(false, 4, 5, 6, &[7; 6]),
    ]
    .concat();
    // Record 2 starts at 24 + 16 + 10 = 50.
    let ng = two_sections();
    let run = |data: &[u8], good: usize, kind: io::ErrorKind| {
        let r = CaptureReader::new(FailOnce {
            data: data.to_vec(),
            at: 0,
            good,
            kind: Some(kind),
        });
        let mut r = match r {
            Ok(r) => r,
            Err(e) => return (0, Some(e)),
        };
        let mut n = 0;
        while let Some(x) = r.next_record() {
            match x {
                Ok(_) => n += 1,
                Err(e) => return (n, Some(e)),
            }
        }
        (n, None)
    };
    let offset_of = |x: (usize, Option<CaptureError>)| match x {
        (n, Some(CaptureError::Io { offset, source })) => {
            assert_eq!(source.to_string(), "injected");
            (n, offset)
        }
        other => panic!("{other:?}"),
    };
    // pcap: in the file header (0), record 1's header or data (24), record 2's (50).
    for (good, want) in [
        (0, (0, 0)),
        (10, (0, 0)),
        (30, (0, 24)),
        (45, (0, 24)),
        (55, (1, 50)),
    ] {
        assert_eq!(
            offset_of(run(&pcap, good, io::ErrorKind::Other)),
            want,
            "{good}"
        );
    }
    // pcapng (two_sections): in the first SHB (0), the first IDB (28), the second SHB at 188
    // (after 3 records), the journal block at 276 while its body is skipped (after 4
    // records; `Io`'s offset is "the file offset of the read", here the block's), and while
    // its trailing length is read, at 276 + 48 - 4 = 320.
    for (good, want) in [
        (10, (0, 0)),
        (30, (0, 28)),
        (190, (3, 188)),
        (300, (4, 276)),
        (322, (4, 320)),
    ] {
        assert_eq!(
            offset_of(run(&ng, good, io::ErrorKind::Other)),
            want,
            "{good}"
        );
    }
    // Interrupted reads anywhere: the same records and the same end as without them.
    for good in [0, 10, 30, 190, 300, 322] {
        let (n, e) = run(&ng, good, io::ErrorKind::Interrupted);
        assert!(
            matches!(e, Some(CaptureError::UnknownInterface { record: 9, .. })),
            "{good}: {e:?}"
        );
        assert_eq!(n, 5, "{good}");
    }
    for good in [0, 30, 55] {
        assert_eq!(run(&pcap, good, io::ErrorKind::Interrupted).0, 2);
    }
}
