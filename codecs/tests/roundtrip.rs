//! Round-trip properties: arbitrary headers → write → parse → equal, for every dialect.
//!
//! The bytes come from a fixed xorshift64* stream, so the run is deterministic and a failure
//! names the case that reproduces it.

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::frame::FrameRepr;
use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

fn roundtrip(dialect: Dialect, layout: IntLayout, cases: u64) {
    let cfg = DecodeConfig {
        dialect,
        int: IntConfig {
            layout,
            max_hops: 5,
        },
        udp_port: 4791,
        ..DecodeConfig::default()
    };
    let mut out = Vec::new();
    for case in 0..cases {
        let data = bytes(case + 1, 2048);
        let mut u = Unstructured::new(&data);
        let Ok(mut frame) = FrameRepr::arbitrary(&mut u) else {
            continue;
        };
        frame.conform(dialect, cfg.int, cfg.udp_port);
        out.clear();
        frame
            .emit(dialect, cfg.int, &mut out)
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let p = Packet::decode_ethernet(&out, &cfg);
        assert_eq!(p.error, None, "case {case}: {frame:?}");
        let (computed, found) = p.icrc_check().expect("ICRC present");
        assert_eq!(computed, found, "case {case}: ICRC");
        let back = FrameRepr::from_packet(&p).expect("whole frame");
        assert_eq!(back, frame, "case {case}");
    }
}

#[test]
fn roce_round_trip() {
    roundtrip(Dialect::Roce, IntLayout::Padded, 3000);
}

#[test]
fn hpcc_round_trip_padded_and_grown() {
    roundtrip(Dialect::Hpcc, IntLayout::Padded, 2000);
    roundtrip(Dialect::Hpcc, IntLayout::Grown, 2000);
}

#[test]
fn fncc_round_trip() {
    roundtrip(Dialect::Fncc, IntLayout::Padded, 2000);
}

#[test]
fn rcc_round_trip() {
    roundtrip(Dialect::Rcc, IntLayout::Padded, 2000);
}

/// Arbitrary bytes never panic the decoder, in any dialect, whole or cut anywhere.
#[test]
fn garbage_never_panics() {
    for case in 0..2000u64 {
        let data = bytes(case + 7, 200);
        for d in Dialect::ALL {
            let cfg = DecodeConfig::for_dialect(d);
            for cut in [0, 13, 14, 33, 41, 54, 90, 200] {
                let p = Packet::decode(
                    &data[..cut],
                    200,
                    ccreplay_codecs::LinkStart::Ethernet,
                    &cfg,
                );
                let _ = p.icrc_check();
            }
        }
    }
}
