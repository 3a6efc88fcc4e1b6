//! Decisions per second of the HPCC and FNCC senders on a long synthetic ACK stream:
//! 1,000,000 ACKs over 64 flows with 1-3 INT hops each (plus the data packets that precede
//! them). Decisions go into one reused Vec, cleared every 1024 events as a replay writer would.

use std::hint::black_box;

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::fncc::{self, Fncc};
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ACKS: usize = 1_000_000;
const FLOWS: usize = 64;
/// Events fed between two clears of the decision Vec.
const CHUNK: usize = 1024;

/// A deterministic stream: per flow the TS advances 500..4500 ns per ACK, txBytes by up
/// to 40 units, queues vary; hop count 1-3 by flow; every 8th flow's path changes once.
/// A data packet precedes every `tx_every`-th ACK (`usize::MAX`: only the first).
fn stream(tx_every: usize) -> Vec<Event> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ts = [0u32; FLOWS];
    let mut txb = [0u32; FLOWS];
    let mut psn = [0u32; FLOWS];
    let mut index = [0u64; FLOWS];
    let mut evs = Vec::with_capacity(ACKS + ACKS / tx_every + 1);
    for i in 0..ACKS {
        let f = (rnd() % FLOWS as u64) as usize;
        let t_ns = i as u64 * 10;
        if i % tx_every == 0 {
            evs.push(Event {
                t_ns,
                flow: f as u32,
                index: index[f],
                kind: EventKind::TxData {
                    psn: psn[f],
                    bytes: 1000,
                    opcode: 7,
                },
            });
            index[f] += 1;
            psn[f] = (psn[f] + 1) & 0xFF_FFFF;
        }
        let r = rnd();
        ts[f] = (ts[f] + 500 + (r % 4000) as u32) & 0xFF_FFFF;
        txb[f] = (txb[f] + ((r >> 12) % 40) as u32) & 0xF_FFFF;
        let q = ((r >> 20) % 400) as u16;
        let n_hop = 1 + f % 3;
        let hops = [
            IntHop {
                b: 2,
                ts: ts[f],
                tx_bytes: txb[f],
                qlen: q,
            },
            IntHop {
                b: 3,
                ts: ts[f] ^ 0x55,
                tx_bytes: txb[f] / 2,
                qlen: q / 3,
            },
            IntHop {
                b: 2,
                ts: ts[f].wrapping_add(7) & 0xFF_FFFF,
                tx_bytes: txb[f] / 3,
                qlen: 0,
            },
        ];
        let path_id = if f & 7 == 0 && i > ACKS / 2 { 2 } else { 1 };
        evs.push(Event {
            t_ns,
            flow: f as u32,
            index: index[f],
            kind: EventKind::RxAck(AckInfo {
                psn: psn[f].wrapping_sub(1 + (r >> 40) as u32 % 4) & 0xFF_FFFF,
                syndrome: 0,
                int: IntStack::from_hops(path_id, &hops[..n_hop]),
                n: Some(4),
                cwnd: None,
                rcc_flags: None,
                ts_ns: None,
            }),
        });
        index[f] += 1;
    }
    evs
}

fn replay<M: Model>(m: &mut M, evs: &[Event], out: &mut Vec<Decision>) -> u64 {
    let mut w = 0u64;
    for chunk in evs.chunks(CHUNK) {
        out.clear();
        for e in chunk {
            m.on_event(e, out);
        }
        if let Some(d) = out.last() {
            w = w.wrapping_add(d.outputs.window_bytes.unwrap_or(0));
        }
    }
    w
}

/// Replays `window` `reps` times (a cache-resident stream: only the model is measured).
fn replay_window<M: Model>(
    m: &mut M,
    window: &[Event],
    reps: usize,
    out: &mut Vec<Decision>,
) -> u64 {
    let mut w = 0u64;
    for _ in 0..reps {
        w = w.wrapping_add(replay(m, window, out));
    }
    w
}

fn bench(c: &mut Criterion) {
    let hp = hpcc::Params {
        base_rtt_ns: 12_000,
        ..hpcc::Params::default()
    };
    let fp = fncc::Params {
        base_rtt_ns: 12_000,
        ..fncc::Params::default()
    };
    let mut out = Vec::with_capacity(CHUNK);
    let mut g = c.benchmark_group("ack_decisions");
    g.throughput(Throughput::Elements(ACKS as u64));
    g.sample_size(10);
    // 1M ACKs read from memory (256 B per event): bound by memory bandwidth as much as by
    // the model.
    for (tx_every, label) in [(usize::MAX, "stream"), (1, "stream_tx_per_ack")] {
        let evs = stream(tx_every);
        g.bench_function(format!("hpcc/{label}"), |b| {
            b.iter(|| {
                let mut m = Hpcc::new(&hp).unwrap();
                black_box(replay(&mut m, black_box(&evs), &mut out))
            })
        });
        g.bench_function(format!("fncc/{label}"), |b| {
            b.iter(|| {
                let mut m = Fncc::new(&fp).unwrap();
                black_box(replay(&mut m, black_box(&evs), &mut out))
            })
        });
    }
    // The first 4096 ACKs of the stream (1 MiB) replayed 244 times: ~1M ACKs, cache-resident.
    let evs = stream(usize::MAX);
    let window = &evs[..4096];
    let reps = ACKS / window.len();
    g.throughput(Throughput::Elements((reps * window.len()) as u64));
    g.bench_function("hpcc/cached", |b| {
        b.iter(|| {
            let mut m = Hpcc::new(&hp).unwrap();
            black_box(replay_window(&mut m, black_box(window), reps, &mut out))
        })
    });
    g.bench_function("fncc/cached", |b| {
        b.iter(|| {
            let mut m = Fncc::new(&fp).unwrap();
            black_box(replay_window(&mut m, black_box(window), reps, &mut out))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
