//! Decoding speed on a 1,000,000-packet `hpcc` capture held in memory (data, ACKs and CNPs
//! mixed): bare record iteration vs full decode to BTH / AETH / INT; and the same capture's
//! 256-byte variant as a switch mirrors it (ERSPAN III), decoded, and timed by the switch's
//! clock (`mirror_clock`).
//!
//! `cargo bench -p ccreplay-codecs --bench decode`

mod common;

use std::hint::black_box;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock};
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PACKETS: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    // Data payloads of 1 KiB (a 730 MB capture: bare iteration is memory-latency bound), 256 B,
    // and 64 B (the header-dominated shape of many congestion-control captures).
    for payload in [1024, 256, 64] {
        bench_capture(c, payload);
    }
    bench_mirrored(c);
}

/// The 256-byte capture as a switch mirrors it (`common::erspan3`).
fn bench_mirrored(c: &mut Criterion) {
    let capture = common::erspan3(&common::hpcc_capture(PACKETS, 256));
    let cfg = DecodeConfig::for_dialect(Dialect::Hpcc);
    let mut g = c.benchmark_group("hpcc_1M_payload256_erspan3");
    g.throughput(Throughput::Elements(PACKETS as u64));
    g.sample_size(10);
    g.bench_function("full_decode", |b| {
        b.iter(|| {
            let mut r = CaptureReader::from_slice(&capture).unwrap();
            let mut psn = 0u64;
            while let Some(rec) = r.next_record() {
                let p = Packet::from_record(&rec.unwrap(), &cfg);
                psn += p.roce.map_or(0, |roce| u64::from(roce.bth.psn()));
            }
            black_box(psn)
        })
    });
    g.bench_function("full_decode_and_switch_clock", |b| {
        b.iter(|| {
            let mut r = CaptureReader::from_slice(&capture).unwrap();
            let mut clock = SwitchClock::default();
            let (mut psn, mut t) = (0u64, 0u64);
            while let Some(rec) = r.next_record() {
                let rec = rec.unwrap();
                let p = Packet::from_record(&rec, &cfg);
                psn += p.roce.map_or(0, |roce| u64::from(roce.bth.psn()));
                let stamp = Stamp::of(p.mirror.as_ref());
                t ^= clock.time(rec.ts_ns, &stamp).unwrap_or(rec.ts_ns);
            }
            black_box((psn, t))
        })
    });
    g.finish();
}

fn bench_capture(c: &mut Criterion, payload: usize) {
    let capture = common::hpcc_capture(PACKETS, payload);
    let cfg = DecodeConfig::for_dialect(Dialect::Hpcc);
    let mut g = c.benchmark_group(format!("hpcc_1M_payload{payload}"));
    g.throughput(Throughput::Elements(PACKETS as u64));
    g.sample_size(10);

    g.bench_function("bare_iteration", |b| {
        b.iter(|| {
            let mut r = CaptureReader::from_slice(&capture).unwrap();
            let mut bytes = 0usize;
            while let Some(rec) = r.next_record() {
                bytes += rec.unwrap().data.len();
            }
            black_box(bytes)
        })
    });

    g.bench_function("full_decode", |b| {
        b.iter(|| {
            let mut r = CaptureReader::from_slice(&capture).unwrap();
            let (mut psn, mut hops, mut acks) = (0u64, 0u64, 0u64);
            while let Some(rec) = r.next_record() {
                let p = Packet::from_record(&rec.unwrap(), &cfg);
                if let Some(roce) = &p.roce {
                    psn += roce.bth.psn() as u64;
                    if let Some(a) = roce.aeth() {
                        acks += a.msn as u64;
                    }
                    if let Some(s) = roce.int_stack() {
                        for h in s.hops() {
                            hops += h.qlen as u64;
                        }
                    }
                }
            }
            black_box((psn, hops, acks))
        })
    });

    g.bench_function("full_decode_and_icrc", |b| {
        b.iter(|| {
            let mut r = CaptureReader::from_slice(&capture).unwrap();
            let mut bad = 0u64;
            while let Some(rec) = r.next_record() {
                let p = Packet::from_record(&rec.unwrap(), &cfg);
                bad += p.icrc_check().is_some_and(|(c, f)| c != f) as u64;
            }
            black_box(bad)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
