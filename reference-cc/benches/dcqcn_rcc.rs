//! Decisions per second of the DCQCN and RCC reference models on long synthetic event
//! streams, replayed with the C-5 timer contract. The decision buffer is reserved once, so
//! the timed loop allocates nothing per event (flows are created on the first iteration's
//! first events only).
//!
//! Run: `cargo bench -p ccreplay-reference-cc --bench dcqcn_rcc -- --warm-up-time 1
//! --measurement-time 5`.

use std::hint::black_box;

use ccreplay_reference_cc::dcqcn::{NicParams, Np, NpParams, Rp, RpNic, RpParams};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::rcc::{Receiver, ReceiverParams, Sender, SenderParams};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const EVENTS: u64 = 200_000;
const FLOWS: u64 = 8;

/// Replay `events` (timers first, C-5); returns the number of decisions.
fn replay(m: &mut dyn Model, events: &[Event], out: &mut Vec<Decision>) -> usize {
    out.clear();
    for ev in events {
        while let Some(d) = m.next_timer_ns() {
            if d > ev.t_ns {
                break;
            }
            m.on_timer(d, out);
        }
        m.on_event(ev, out);
    }
    out.len()
}

/// DCQCN sender stream: 8 flows, a 1000-byte packet every 100 ns (round robin), a CNP to
/// one flow every 7 µs (each flow every 56 µs, about the NP's 50 µs pacing).
fn dcqcn_sender_stream() -> Vec<Event> {
    (0..EVENTS)
        .map(|i| {
            let t_ns = i * 100;
            let flow = (i % FLOWS) as u32;
            let kind = if i % 70 == 0 {
                EventKind::RxCnp
            } else {
                EventKind::TxData {
                    psn: (i & 0xFF_FFFF) as u32,
                    bytes: 1000,
                    opcode: 0x07,
                }
            };
            Event {
                t_ns,
                flow,
                index: i / FLOWS,
                kind,
            }
        })
        .collect()
}

/// Receiver stream: 8 flows of 64-packet WRITE messages, a packet every 100 ns; every 5th
/// packet CE-marked; one-way delays swinging between 11 and 17 µs so RCC enters PID mode.
fn receiver_stream() -> Vec<Event> {
    (0..EVENTS)
        .map(|i| {
            let t_ns = 1_000_000 + i * 100;
            let flow = (i % FLOWS) as u32;
            let k = i / FLOWS;
            let opcode = match k % 64 {
                0 => 0x06,
                63 => 0x08,
                _ => 0x07,
            };
            let delay = 11_000 + (k * 250) % 6_000;
            Event {
                t_ns,
                flow,
                index: k,
                kind: EventKind::RxData {
                    psn: (k & 0xFF_FFFF) as u32,
                    bytes: 1000,
                    opcode,
                    ecn: if i % 5 == 0 { 3 } else { 2 },
                    send_ts_ns: Some(t_ns - delay),
                },
            }
        })
        .collect()
}

/// RCC sender stream: ACKs carrying windows between 10 and 150 KB.
fn rcc_ack_stream() -> Vec<Event> {
    (0..EVENTS)
        .map(|i| Event {
            t_ns: i * 100,
            flow: (i % FLOWS) as u32,
            index: i / FLOWS,
            kind: EventKind::RxAck(AckInfo {
                psn: (i & 0xFF_FFFF) as u32,
                syndrome: 0,
                int: None,
                n: Some(4),
                cwnd: Some(10_000 + ((i * 7_919) % 140_000) as u32),
                rcc_flags: Some(0),
                ts_ns: Some(i * 100),
            }),
        })
        .collect()
}

fn bench_one(c: &mut Criterion, name: &str, make: &dyn Fn() -> Box<dyn Model>, events: &[Event]) {
    let mut out = Vec::new();
    let decisions = replay(&mut *make(), events, &mut out);
    out.reserve(decisions);
    let mut g = c.benchmark_group("decisions");
    g.throughput(Throughput::Elements(decisions as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut m = make();
            black_box(replay(&mut *m, black_box(events), &mut out))
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let tx = dcqcn_sender_stream();
    let rx = receiver_stream();
    let acks = rcc_ack_stream();
    bench_one(
        c,
        "dcqcn",
        &|| Box::new(Rp::new(RpParams::default()).unwrap()),
        &tx,
    );
    bench_one(
        c,
        "dcqcn-nic",
        &|| Box::new(RpNic::new(NicParams::default()).unwrap()),
        &tx,
    );
    bench_one(
        c,
        "dcqcn-np",
        &|| Box::new(Np::new(NpParams::default()).unwrap()),
        &rx,
    );
    bench_one(
        c,
        "rcc-receiver",
        &|| Box::new(Receiver::new(ReceiverParams::default()).unwrap()),
        &rx,
    );
    bench_one(
        c,
        "rcc-sender",
        &|| Box::new(Sender::new(SenderParams::default()).unwrap()),
        &acks,
    );
}

criterion_group!(dcqcn_rcc, benches);
criterion_main!(dcqcn_rcc);
