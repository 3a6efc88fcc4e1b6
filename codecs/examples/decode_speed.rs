//! Iterate a capture held in memory, bare and fully decoded, and print packets per second of
//! each: a whole-program counterpart of `benches/decode.rs` for profilers (callgrind, perf).
//!
//! `cargo run --release -p ccreplay-codecs --example decode_speed -- FILE [DIALECT]`

use std::time::Instant;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: decode_speed FILE [roce|hpcc|fncc|rcc]");
        std::process::exit(2);
    };
    let dialect: Dialect = args
        .next()
        .map_or(Ok(Dialect::Hpcc), |d| d.parse())
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let cfg = DecodeConfig::for_dialect(dialect);

    let t = Instant::now();
    let mut r = CaptureReader::from_slice(&data).expect("capture");
    let (mut n, mut bytes) = (0u64, 0usize);
    while let Some(rec) = r.next_record() {
        bytes += rec.expect("record").data.len();
        n += 1;
    }
    let bare = t.elapsed();

    let t = Instant::now();
    let mut r = CaptureReader::from_slice(&data).expect("capture");
    let (mut psn, mut hops) = (0u64, 0u64);
    while let Some(rec) = r.next_record() {
        let p = Packet::from_record(&rec.expect("record"), &cfg);
        if let Some(roce) = &p.roce {
            psn += roce.bth.psn() as u64 + roce.aeth().map_or(0, |a| a.msn as u64);
            if let Some(s) = roce.int_stack() {
                hops += s.hops().map(|h| h.qlen as u64).sum::<u64>();
            }
        }
    }
    let full = t.elapsed();
    println!(
        "{n} packets ({bytes} bytes): bare {:.2} M/s, full decode {:.2} M/s ({:.0} %) [{psn} {hops}]",
        n as f64 / bare.as_secs_f64() / 1e6,
        n as f64 / full.as_secs_f64() / 1e6,
        100.0 * bare.as_secs_f64() / full.as_secs_f64()
    );
}
