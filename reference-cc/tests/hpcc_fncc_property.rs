//! Determinism and no-NaN property of the HPCC and FNCC senders and the FNCC receiver
//! (C-3, HPCC-6): many arbitrary event sequences, generated from a fixed xorshift byte
//! source through `arbitrary`, must give finite state, windows in [w_min, W_init], rates
//! equal to floor(W × 8e9 / T), exactly one decision per ACK/NAK, and identical decisions
//! when run twice.

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::fncc::{self, Fncc, Receiver};
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};

/// One INT hop's move since the previous ACK of the flow.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct HopStep {
    b: u8,
    dts_ns: u16,
    dtx_units: u16,
    qlen: u16,
}

#[derive(Arbitrary, Debug)]
enum Step {
    /// Send the flow's next PSN.
    Tx {
        flow: u8,
    },
    /// Go back N PSNs (retransmission).
    Retx {
        flow: u8,
        back: u8,
    },
    /// ACK/NAK `lag` PSNs behind snd_nxt with evolving INT records.
    Ack {
        flow: u8,
        nak: bool,
        lag: u8,
        path_id: u8,
        n: Option<u16>,
        hops: [HopStep; 3],
        n_hop: u8,
    },
    /// Anything at all in the ACK.
    RawAck {
        flow: u8,
        psn: u32,
        raw: [u64; 5],
        n_hop: u8,
        path_id: u16,
        n: Option<u16>,
        no_int: bool,
    },
    Cnp {
        flow: u8,
    },
    Data {
        flow: u8,
        dt_ns: u16,
    },
}

#[derive(Debug)]
struct Script {
    preset: u8,
    eta: f64,
    max_stage: u8,
    w_ai: Option<f64>,
    alpha: f64,
    beta: f64,
    steps: Vec<Step>,
}

impl<'a> Arbitrary<'a> for Script {
    /// Steps are read until the bytes run out (arbitrary's own `Vec` stops at the first
    /// even "keep going" byte, which makes random inputs a step or two long).
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut s = Script {
            preset: u.arbitrary()?,
            eta: u.arbitrary()?,
            max_stage: u.arbitrary()?,
            w_ai: u.arbitrary()?,
            alpha: u.arbitrary()?,
            beta: u.arbitrary()?,
            steps: Vec::new(),
        };
        while !u.is_empty() {
            s.steps.push(u.arbitrary()?);
        }
        Ok(s)
    }
}

const FLOWS: usize = 4;

/// HPCC part of the parameters: a preset plus fuzzed η / maxStage / W_AI, kept only if valid.
fn hpcc_params(s: &Script) -> hpcc::Params {
    let base = match s.preset % 3 {
        0 => hpcc::Params::default(),
        1 => hpcc::Params {
            base_rtt_ns: 12_000,
            reserved_line_rates: vec![hpcc::ReservedLineRate {
                code: 9,
                bps: 1_000_000,
            }],
            ..hpcc::Params::default()
        },
        _ => hpcc::Params {
            line_rate_bps: 25_000_000_000,
            base_rtt_ns: 5_400,
            mtu_bytes: 256,
            ..hpcc::Params::default()
        },
    };
    let fuzzed = hpcc::Params {
        eta: s.eta,
        max_stage: s.max_stage as u32 % 8,
        w_ai_bytes: s.w_ai,
        ..base.clone()
    };
    if fuzzed.validate().is_ok() {
        fuzzed
    } else {
        base
    }
}

fn fncc_params(s: &Script) -> fncc::Params {
    let h = hpcc_params(s);
    let p = fncc::Params {
        line_rate_bps: h.line_rate_bps,
        base_rtt_ns: h.base_rtt_ns,
        mtu_bytes: h.mtu_bytes,
        w_min_bytes: h.w_min_bytes,
        eta: h.eta,
        max_stage: h.max_stage,
        w_ai_bytes: h.w_ai_bytes,
        expected_flows: h.expected_flows,
        reserved_line_rates: h.reserved_line_rates,
        alpha: s.alpha,
        beta: s.beta,
        t_active_ns: None,
    };
    if p.validate().is_ok() {
        p
    } else {
        fncc::Params {
            alpha: 1.05,
            beta: 0.9,
            ..p
        }
    }
}

/// The script as events, in time order, with per-flow indices.
fn events(s: &Script) -> Vec<Event> {
    let mut snd_nxt = [0u32; FLOWS];
    // Start near the TS (2^24) and txBytes (2^20) wraps so both wrap early.
    let start = IntHop {
        b: 2,
        ts: 0xFF_F000,
        tx_bytes: 0xF_FF00,
        qlen: 0,
    };
    let mut hop_now = [[start; 3]; FLOWS];
    let mut index = [0u64; FLOWS];
    let mut t_ns = 0u64;
    let mut out = Vec::new();
    let ack = |psn, int, n| AckInfo {
        psn,
        syndrome: 0,
        int,
        n,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    for step in &s.steps {
        t_ns += 100;
        let (flow, kind) = match *step {
            Step::Tx { flow } => {
                let f = flow as usize % FLOWS;
                let psn = snd_nxt[f];
                snd_nxt[f] = (psn + 1) & 0xFF_FFFF;
                (
                    f,
                    EventKind::TxData {
                        psn,
                        bytes: 1000,
                        opcode: 7,
                    },
                )
            }
            Step::Retx { flow, back } => {
                let f = flow as usize % FLOWS;
                let psn = snd_nxt[f].wrapping_sub(back as u32) & 0xFF_FFFF;
                snd_nxt[f] = (psn + 1) & 0xFF_FFFF;
                (
                    f,
                    EventKind::TxData {
                        psn,
                        bytes: 1000,
                        opcode: 7,
                    },
                )
            }
            Step::Ack {
                flow,
                nak,
                lag,
                path_id,
                n,
                hops,
                n_hop,
            } => {
                let f = flow as usize % FLOWS;
                let mut recs = [IntHop::default(); 3];
                for (i, h) in hops.iter().enumerate() {
                    let prev = hop_now[f][i];
                    // A quarter of the TS deltas are 0 (HPCC-3), as are a quarter of the
                    // txBytes deltas; the rest span 0.25..16383 ns / units.
                    let dts = if h.dts_ns & 3 == 0 { 0 } else { h.dts_ns >> 2 };
                    let dtx = if h.dtx_units & 3 == 0 {
                        0
                    } else {
                        h.dtx_units >> 2
                    };
                    recs[i] = IntHop {
                        b: h.b % 11, // codes 0..10: mapped, reserved-mapped (9), unmapped
                        ts: (prev.ts + dts as u32) & 0xFF_FFFF,
                        tx_bytes: (prev.tx_bytes + dtx as u32) & 0xF_FFFF,
                        qlen: h.qlen,
                    };
                }
                hop_now[f] = recs;
                let n_hop = (n_hop % 4) as usize;
                let int = IntStack::from_hops(path_id as u16 % 3, &recs[..n_hop]);
                let psn = snd_nxt[f].wrapping_sub(1 + lag as u32) & 0xFF_FFFF;
                let a = ack(psn, int, n);
                (
                    f,
                    if nak {
                        EventKind::RxNak(a)
                    } else {
                        EventKind::RxAck(a)
                    },
                )
            }
            Step::RawAck {
                flow,
                psn,
                raw,
                n_hop,
                path_id,
                n,
                no_int,
            } => {
                let f = flow as usize % FLOWS;
                let hops: Vec<IntHop> = raw.iter().map(|&r| IntHop::from_u64(r)).collect();
                let int = if no_int {
                    None
                } else {
                    IntStack::from_hops(path_id, &hops[..(n_hop % 6) as usize])
                };
                (f, EventKind::RxAck(ack(psn & 0xFF_FFFF, int, n)))
            }
            Step::Cnp { flow } => (flow as usize % FLOWS, EventKind::RxCnp),
            Step::Data { flow, dt_ns } => {
                t_ns += dt_ns as u64;
                (
                    flow as usize % FLOWS,
                    EventKind::RxData {
                        psn: 0,
                        bytes: 1000,
                        opcode: 0,
                        ecn: 0,
                        send_ts_ns: None,
                    },
                )
            }
        };
        out.push(Event {
            t_ns,
            flow: flow as u32,
            index: index[flow],
            kind,
        });
        index[flow] += 1;
    }
    out
}

/// Bit-exact fingerprint of a decision (f64 by bits, so -0.0 ≠ 0.0 and NaN is caught).
fn bits(d: &Decision) -> Vec<u64> {
    let mut v = vec![
        d.t_ns,
        d.flow as u64,
        d.outputs.rate_bps.unwrap_or(u64::MAX),
        d.outputs.window_bytes.unwrap_or(u64::MAX),
        d.outputs.ack_n.map_or(u64::MAX, u64::from),
    ];
    for (_, s) in d.state.fields() {
        v.push(match s {
            StateValue::U64(x) => x,
            StateValue::I64(x) => x as u64,
            StateValue::F64(x) => x.to_bits(),
            StateValue::Bool(b) => b as u64,
        });
    }
    v
}

fn run(m: &mut dyn Model, evs: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    for e in evs {
        let before = out.len();
        m.on_event(e, &mut out);
        let made = out.len() - before;
        let expect = match (&e.kind, m.name()) {
            (EventKind::RxAck(_) | EventKind::RxNak(_), "hpcc" | "fncc") => 1,
            (EventKind::RxData { .. }, "fncc-receiver") => 1,
            _ => 0,
        };
        assert_eq!(made, expect, "{} on {:?}", m.name(), e.kind.name());
    }
    out
}

/// A sender decision is in range: W, Wc in [w_min, W_init]; R = floor(W × 8e9 / T);
/// every f64 finite and >= 0.
fn check_sender(d: &Decision, w_min: u64, w_init: u64, t_ns: u64) {
    let w = d.outputs.window_bytes.unwrap();
    assert!((w_min..=w_init).contains(&w), "W {w}");
    let wc = match d.state.get("Wc") {
        Some(StateValue::U64(v)) => v,
        other => panic!("Wc {other:?}"),
    };
    assert!((w_min..=w_init).contains(&wc), "Wc {wc}");
    let r = (w as u128 * 8_000_000_000 / t_ns as u128) as u64;
    assert_eq!(d.outputs.rate_bps, Some(r));
    for (name, v) in d.state.fields() {
        if let StateValue::F64(x) = v {
            assert!(x.is_finite() && x >= 0.0, "{name} = {x}");
        }
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n.div_ceil(8))
            .flat_map(|_| self.next().to_le_bytes())
            .take(n)
            .collect()
    }
}

#[test]
fn arbitrary_sequences_are_deterministic_finite_and_in_range() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut acks = 0usize;
    let mut moved = 0usize;
    let mut speedups = 0usize;
    for case in 0..3000 {
        let len = 64 + (rng.next() % 4096) as usize;
        let data = rng.bytes(len);
        let Ok(script) = Script::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        let evs = events(&script);
        let hp = hpcc_params(&script);
        let fp = fncc_params(&script);
        let t_ns = hp.base_rtt_ns;

        let mut h1 = Hpcc::new(&hp).unwrap();
        let (w_min, w_init) = (h1.w_min_bytes(), h1.w_init_bytes());
        let a = run(&mut h1, &evs);
        let b = run(&mut Hpcc::new(&hp).unwrap(), &evs);
        assert_eq!(
            a.iter().map(bits).collect::<Vec<_>>(),
            b.iter().map(bits).collect::<Vec<_>>(),
            "case {case}: HPCC not deterministic"
        );
        for d in &a {
            check_sender(d, w_min, w_init, t_ns);
            moved += (d.outputs.window_bytes != Some(w_init)) as usize;
        }
        acks += a.len();

        let a = run(&mut Fncc::new(&fp).unwrap(), &evs);
        let b = run(&mut Fncc::new(&fp).unwrap(), &evs);
        assert_eq!(
            a.iter().map(bits).collect::<Vec<_>>(),
            b.iter().map(bits).collect::<Vec<_>>(),
            "case {case}: FNCC not deterministic"
        );
        for d in &a {
            check_sender(d, w_min, w_init, t_ns);
            speedups += (d.state.get("lhcs") == Some(StateValue::Bool(true))) as usize;
        }

        let a = run(&mut Receiver::new(&fp).unwrap(), &evs);
        let b = run(&mut Receiver::new(&fp).unwrap(), &evs);
        assert_eq!(
            a.iter().map(bits).collect::<Vec<_>>(),
            b.iter().map(bits).collect::<Vec<_>>()
        );
        for d in &a {
            let n = d.outputs.ack_n.unwrap();
            assert!((1..=FLOWS as u16).contains(&n), "N {n}");
        }
    }
    // The generator must exercise the interesting paths, or the property proves little.
    assert!(acks > 50_000, "only {acks} ACK decisions");
    assert!(moved > 5000, "windows rarely moved: {moved}");
    assert!(speedups > 200, "speedup rarely fired: {speedups}");
    eprintln!("{acks} HPCC ACK decisions, {moved} with W < W_init, {speedups} FNCC speedups");
}
