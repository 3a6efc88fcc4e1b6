//! The streaming comparison of `diff` and `check` (issue 18 item 4): two streams of 1 M HPCC-like
//! decisions each (1,000 flows, rate, window and 8 state values, every 50th a timer firing),
//! compared as they come — in step, as `diff --dut` feeds them, and with the DUT's stream in
//! another flow order (64 flows taking turns on the reference's side, one after another in
//! blocks of 64,000 decisions on the DUT's: the far-ahead case, about 32,000 held) — against
//! holding both sides whole and aligning them after (`diff::diff`, what `diff` did before).

use std::hint::black_box;

use ccreplay::diff::{self, DiffOptions, Side, StateCompare, StreamDiff, Which};
use ccreplay_reference_cc::{Cause, Decision, Outputs, State, StateValue};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const DECISIONS: u64 = 1_000_000;

const NAMES: &[&str] = &[
    "W",
    "Wc",
    "U",
    "incStage",
    "lastUpdateSeq",
    "snd_nxt",
    "u",
    "tau",
];

/// Decision `k` of a stream whose flows take turns, `flows` of them.
fn decision(k: u64, flows: u64) -> Decision {
    let flow = (k % flows) as u32;
    let i = k / flows;
    let w = 50_000 + (k % 5) * 100;
    Decision {
        t_ns: 1_000_000 + k * 100,
        flow,
        cause: if i % 50 == 49 {
            Cause::Timer { name: "alpha" }
        } else {
            Cause::Event {
                kind: "rx_ack",
                index: 2 * i + 1,
            }
        },
        outputs: Outputs {
            rate_bps: Some(w * 125_000),
            window_bytes: Some(w),
            ..Outputs::default()
        },
        state: State::new(
            NAMES,
            &[
                StateValue::U64(w),
                StateValue::U64(w),
                StateValue::F64(0.95 + (k % 3) as f64 * 0.01),
                StateValue::U64(k % 5),
                StateValue::U64(i),
                StateValue::U64(i + 1),
                StateValue::F64(0.9),
                StateValue::U64(8_000),
            ],
        ),
    }
}

fn bench(c: &mut Criterion) {
    let opts = DiffOptions {
        state: StateCompare::All,
        ..DiffOptions::default()
    };
    let lockstep: Vec<Decision> = (0..DECISIONS).map(|k| decision(k, 1_000)).collect();
    let interleaved: Vec<Decision> = (0..DECISIONS).map(|k| decision(k, 64)).collect();
    // The same decisions, one flow after another in each block of 1,000 per flow.
    let mut flow_major = interleaved.clone();
    flow_major.sort_by_key(|d| (d.t_ns / 6_400_000, d.flow));

    let mut g = c.benchmark_group("stream_diff");
    g.throughput(Throughput::Elements(2 * DECISIONS));
    g.sample_size(10);
    g.bench_function("in_step_1000_flows_2x1M", |b| {
        b.iter(|| {
            let mut sd = StreamDiff::new(&opts);
            for d in &lockstep {
                sd.push(Which::Reference, d);
                sd.push(Which::Dut, d);
            }
            black_box(sd.finish())
        })
    });
    g.bench_function("whole_1000_flows_2x1M", |b| {
        b.iter(|| {
            let (mut r, mut d) = (Side::default(), Side::default());
            for x in &lockstep {
                r.push(x);
                d.push(x);
            }
            black_box(diff::diff(&r, &d, &opts))
        })
    });
    g.bench_function("far_ahead_64_flows_2x1M", |b| {
        b.iter(|| {
            let mut sd = StreamDiff::new(&opts);
            for (r, d) in interleaved.iter().zip(&flow_major) {
                sd.push(Which::Reference, r);
                sd.push(Which::Dut, d);
            }
            black_box((sd.max_held(), sd.dropped(), sd.finish()))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
