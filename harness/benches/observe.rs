//! The observed-DUT judge's estimators and checks per event (issue 15.6: a 1 M-packet sender
//! capture judged in under 2 s on one core; the whole command's figure is in
//! docs/performance.md). Input: 16 HPCC-like flows on a 100 Gbps link, each packet answered by
//! an ACK and a reference decision (rate and window), so every check runs on every packet:
//! 1 M data packets, 1 M ACKs, 1 M decisions.

use std::hint::black_box;

use ccreplay::observe::tap::Pauses;
use ccreplay::observe::{Allowances, Judge};
use ccreplay_codecs::Dialect;
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Outputs, State};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PACKETS: u64 = 1_000_000;
const FLOWS: u32 = 16;

/// (event, the reference's decision on it) in trace order.
fn stream() -> Vec<(Event, Option<Decision>)> {
    let mut v = Vec::with_capacity(2 * PACKETS as usize);
    let mut index = vec![0u64; FLOWS as usize];
    // 1,070-byte frames at 100 Gbps: 85.6 ns each; flows take turns.
    for k in 0..PACKETS {
        let flow = (k % u64::from(FLOWS)) as u32;
        let psn = (k / u64::from(FLOWS)) as u32 & 0xFF_FFFF;
        let t = 1_000_000 + k * 86;
        let i = &mut index[flow as usize];
        v.push((
            Event {
                t_ns: t,
                flow,
                index: *i,
                kind: EventKind::TxData {
                    psn,
                    bytes: 1000,
                    opcode: 7,
                },
            },
            None,
        ));
        *i += 1;
        let ack = Event {
            t_ns: t + 8_000,
            flow,
            index: *i,
            kind: EventKind::RxAck(AckInfo {
                psn,
                syndrome: 0,
                int: None,
                n: None,
                cwnd: None,
                rcc_flags: None,
                ts_ns: None,
            }),
        };
        *i += 1;
        let d = Decision {
            t_ns: ack.t_ns,
            flow,
            cause: Cause::Event {
                kind: "rx_ack",
                index: ack.index,
            },
            outputs: Outputs {
                rate_bps: Some(6_250_000_000 + (k % 7) * 1_000_000),
                window_bytes: Some(50_000 + (k % 5) * 100),
                ..Outputs::default()
            },
            state: State::default(),
        };
        v.push((ack, Some(d)));
    }
    // ACKs come 8 µs after their packet: trace order is time order.
    v.sort_by_key(|(e, _)| e.t_ns);
    v
}

fn bench(c: &mut Criterion) {
    let events = stream();
    let mut g = c.benchmark_group("observe");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.sample_size(10);
    g.bench_function("judge_2M_events", |b| {
        b.iter(|| {
            let mut j = Judge::new(
                Allowances::default(),
                Dialect::Hpcc,
                100_000_000_000,
                1000,
                1,
                Pauses::default(),
                true,
            );
            for (e, d) in &events {
                j.event(e);
                if let Some(d) = d {
                    j.decision(d);
                }
            }
            black_box(j.finish())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
