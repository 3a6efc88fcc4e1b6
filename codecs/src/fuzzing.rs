//! The bodies of the cargo-fuzz targets, shared with the stable test that replays every corpus
//! file (`tests/fuzz_corpus.rs`), so a crash found by the fuzzer stays a regression test.

use arbitrary::Arbitrary;

use crate::frame::FrameRepr;
use crate::shim::{IntConfig, IntLayout};
use crate::{DecodeConfig, Dialect, LinkStart, Packet};

/// Decode arbitrary bytes in `dialect`. The first byte picks how the record was captured (link
/// start, and how much longer the original frame was than the captured bytes); the rest is the
/// frame. Panics only if a decoder invariant breaks.
pub fn decode(data: &[u8], dialect: Dialect) {
    let cfg = DecodeConfig::for_dialect(dialect);
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let orig_len = frame.len() + (sel as usize & 0x0F) * 16;
    let start = match sel >> 6 {
        0 | 1 => LinkStart::Ethernet,
        2 => LinkStart::Network {
            offset: 0,
            ether_type: 0x0800,
        },
        _ => LinkStart::Network {
            offset: 0,
            ether_type: 0x86DD,
        },
    };
    let p = Packet::decode(frame, orig_len, start, &cfg);
    let _ = (p.icrc_check(), p.ecn());
    // A mirroring switch's stamp, read twice by one clock: at capture time 0, then again at
    // the latest time a record can claim (the unwrap across the widest gap).
    let stamp = crate::mirror_clock::Stamp::of_packet(&p);
    let mut clock = crate::mirror_clock::SwitchClock::default();
    let _ = clock.time(0, &stamp);
    let _ = clock.time(u64::MAX - orig_len as u64, &stamp);
    if let Some(r) = &p.roce {
        let _ = (
            r.reth(),
            r.deth(),
            r.rdeth(),
            r.aeth(),
            r.atomic_eth(),
            r.imm_dt(),
            r.ieth(),
        );
        if let Some(s) = r.int_stack() {
            assert!(s.hops().count() <= cfg.int.max_hops as usize);
        }
        // Every view lies inside the captured bytes.
        let base = frame.as_ptr() as usize;
        let end = base + frame.len();
        let pay = r.payload.as_ptr() as usize;
        assert!(pay >= base && pay + r.payload.len() <= end);
    }
    if let Some(e) = p.error {
        let _ = e.to_string();
        // Length fields are checked against the original length (wire.md 2), so an error after
        // whole headers is only ever a cut (the snapshot length's, or a mirroring switch's):
        // what `replay` replays as whole and counts as `snaplen_cut`, and `inspect` as
        // `cut_by_snaplen`, must be the same set.
        if p.headers_complete() {
            assert!(
                p.cut(frame.len() < orig_len),
                "headers whole, frame whole: {e}"
            );
        }
    } else if p.roce.is_some() {
        let _ = FrameRepr::from_packet(&p);
    }
}

/// Structure-aware round-trip input.
#[derive(Debug, Arbitrary)]
pub struct RoundTrip {
    /// Dialect to write and read.
    pub dialect: Dialect,
    /// INT layout.
    pub layout: IntLayout,
    /// max_hops, folded into 1..=15.
    pub max_hops: u8,
    /// The frame, made writable by `conform`.
    pub frame: FrameRepr,
}

/// Write a conformed frame, decode it, and require the same frame back with a valid ICRC.
pub fn roundtrip(input: RoundTrip) {
    let int = IntConfig {
        layout: input.layout,
        max_hops: 1 + input.max_hops % 15,
    };
    let cfg = DecodeConfig {
        dialect: input.dialect,
        int,
        udp_port: 4791,
        ..DecodeConfig::default()
    };
    let mut frame = input.frame;
    frame.conform(cfg.dialect, int, cfg.udp_port);
    let mut out = Vec::new();
    if frame.emit(cfg.dialect, int, &mut out).is_err() {
        return;
    }
    let p = Packet::decode_ethernet(&out, &cfg);
    assert_eq!(p.error, None, "{frame:?}");
    let (computed, found) = p.icrc_check().expect("ICRC present");
    assert_eq!(computed, found, "ICRC");
    assert_eq!(FrameRepr::from_packet(&p).as_ref(), Some(&frame));
}

/// Read arbitrary bytes as a capture, in memory and through the streaming reader, and decode
/// every record in every dialect. Both readers must see the same records and stop alike.
pub fn capture(data: &[u8]) {
    use crate::capture::CaptureReader;
    let Ok(mut slice) = CaptureReader::from_slice(data) else {
        assert!(
            CaptureReader::new(data).is_err(),
            "readers disagree on the file header"
        );
        return;
    };
    let mut stream = CaptureReader::new(data).expect("same header as the slice reader");
    let mut n = 0u32;
    loop {
        let a = slice.next_record();
        let b = stream.next_record();
        match (a, b) {
            (None, None) => break,
            (Some(Ok(ra)), Some(Ok(rb))) => {
                assert_eq!(ra, rb, "record {n}");
                for d in Dialect::ALL {
                    let p = Packet::from_record(&ra, &DecodeConfig::for_dialect(d));
                    let _ = p.icrc_check();
                }
            }
            (Some(Err(_)), Some(Err(_))) => {}
            (a, b) => panic!(
                "readers disagree at record {n}: {:?} vs {:?}",
                a.is_some(),
                b.is_some()
            ),
        }
        n += 1;
        if n > 100_000 {
            break;
        }
    }
}
