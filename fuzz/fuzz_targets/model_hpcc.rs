//! HPCC sender model on arbitrary event sequences: no panic, every f64 in state finite
//! and non-negative, W and Wc in [w_min, W_init], R = floor(W × 8e9 / T), one decision per
//! ACK/NAK and none otherwise, and the same decisions on a second run (C-3, HPCC-1, HPCC-6).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};
use libfuzzer_sys::fuzz_target;

const FLOWS: usize = 8;

#[derive(Arbitrary, Debug, Clone, Copy)]
struct HopStep {
    b: u8,
    dts_ns: u16,
    dtx_units: u16,
    qlen: u16,
}

#[derive(Arbitrary, Debug)]
enum Step {
    Tx {
        flow: u8,
    },
    Retx {
        flow: u8,
        back: u8,
    },
    /// ACK/NAK behind snd_nxt with INT records that move by small steps (wraps included).
    Ack {
        flow: u8,
        nak: bool,
        lag: u8,
        path_id: u8,
        n_hop: u8,
        hops: [HopStep; 4],
    },
    /// Anything at all.
    Raw {
        flow: u8,
        nak: bool,
        psn: u32,
        int: Option<IntStack>,
    },
    Cnp {
        flow: u8,
    },
    Data {
        flow: u8,
    },
}

#[derive(Debug)]
struct Input {
    raw_params: hpcc::Params,
    preset: u8,
    eta: f64,
    max_stage: u8,
    w_ai: Option<f64>,
    steps: Vec<Step>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut i = Input {
            raw_params: u.arbitrary()?,
            preset: u.arbitrary()?,
            eta: u.arbitrary()?,
            max_stage: u.arbitrary()?,
            w_ai: u.arbitrary()?,
            steps: Vec::new(),
        };
        while !u.is_empty() && i.steps.len() < 4096 {
            i.steps.push(u.arbitrary()?);
        }
        Ok(i)
    }
}

/// Fully arbitrary parameters when valid, else a preset with the fuzzed η / maxStage / W_AI
/// when those are valid, else the preset.
fn params(i: &Input) -> hpcc::Params {
    if i.raw_params.validate().is_ok() {
        return i.raw_params.clone();
    }
    assert!(Hpcc::new(&i.raw_params).is_err());
    let base = match i.preset % 3 {
        0 => hpcc::Params::default(),
        1 => hpcc::Params {
            base_rtt_ns: 12_000,
            reserved_line_rates: vec![hpcc::ReservedLineRate { code: 9, bps: 1 }],
            ..hpcc::Params::default()
        },
        _ => hpcc::Params {
            line_rate_bps: 25_000_000_000,
            base_rtt_ns: 5_400,
            mtu_bytes: 256,
            ..hpcc::Params::default()
        },
    };
    let p = hpcc::Params {
        eta: i.eta,
        max_stage: i.max_stage as u32 % 8,
        w_ai_bytes: i.w_ai,
        ..base.clone()
    };
    if p.validate().is_ok() { p } else { base }
}

fn events(steps: &[Step]) -> Vec<Event> {
    let start = IntHop {
        b: 2,
        ts: 0xFF_F000,
        tx_bytes: 0xF_FF00,
        qlen: 0,
    };
    let mut hop_now = [[start; 4]; FLOWS];
    let mut snd_nxt = [0u32; FLOWS];
    let mut index = [0u64; FLOWS];
    let mut out = Vec::with_capacity(steps.len());
    let ack = |psn, int| AckInfo {
        psn,
        syndrome: 0,
        int,
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    for (k, step) in steps.iter().enumerate() {
        let (f, kind) = match *step {
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
                n_hop,
                hops,
            } => {
                let f = flow as usize % FLOWS;
                let mut recs = [IntHop::default(); 4];
                for (j, h) in hops.iter().enumerate() {
                    let prev = hop_now[f][j];
                    // A quarter of the deltas are 0 (HPCC-3).
                    let dts = if h.dts_ns & 3 == 0 { 0 } else { h.dts_ns >> 2 };
                    let dtx = if h.dtx_units & 3 == 0 {
                        0
                    } else {
                        h.dtx_units >> 2
                    };
                    recs[j] = IntHop {
                        b: h.b & 0xF,
                        ts: (prev.ts + dts as u32) & 0xFF_FFFF,
                        tx_bytes: (prev.tx_bytes + dtx as u32) & 0xF_FFFF,
                        qlen: h.qlen,
                    };
                }
                hop_now[f] = recs;
                let int = IntStack::from_hops(path_id as u16 & 3, &recs[..n_hop as usize % 5]);
                let psn = snd_nxt[f].wrapping_sub(1 + lag as u32) & 0xFF_FFFF;
                let a = ack(psn, int);
                (
                    f,
                    if nak {
                        EventKind::RxNak(a)
                    } else {
                        EventKind::RxAck(a)
                    },
                )
            }
            Step::Raw {
                flow,
                nak,
                psn,
                int,
            } => {
                let a = ack(psn & 0xFF_FFFF, int);
                let kind = if nak {
                    EventKind::RxNak(a)
                } else {
                    EventKind::RxAck(a)
                };
                (flow as usize % FLOWS, kind)
            }
            Step::Cnp { flow } => (flow as usize % FLOWS, EventKind::RxCnp),
            Step::Data { flow } => (
                flow as usize % FLOWS,
                EventKind::RxData {
                    psn: 0,
                    bytes: 1,
                    opcode: 0,
                    ecn: 3,
                    send_ts_ns: None,
                },
            ),
        };
        out.push(Event {
            t_ns: k as u64 * 100,
            flow: f as u32,
            index: index[f],
            kind,
        });
        index[f] += 1;
    }
    out
}

fn run(m: &mut Hpcc, evs: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    for e in evs {
        let before = out.len();
        m.on_event(e, &mut out);
        let expect = matches!(e.kind, EventKind::RxAck(_) | EventKind::RxNak(_)) as usize;
        assert_eq!(out.len() - before, expect);
    }
    out
}

fn bits(d: &Decision) -> Vec<u64> {
    let mut v = vec![d.outputs.rate_bps.unwrap(), d.outputs.window_bytes.unwrap()];
    v.extend(d.state.fields().map(|(_, s)| match s {
        StateValue::U64(x) => x,
        StateValue::I64(x) => x as u64,
        StateValue::F64(x) => x.to_bits(),
        StateValue::Bool(b) => b as u64,
    }));
    v
}

fuzz_target!(|input: Input| {
    let p = params(&input);
    let evs = events(&input.steps);
    let mut m = Hpcc::new(&p).unwrap();
    let (w_min, w_init) = (m.w_min_bytes(), m.w_init_bytes());
    let a = run(&mut m, &evs);
    for d in &a {
        let w = d.outputs.window_bytes.unwrap();
        assert!(
            (w_min..=w_init).contains(&w),
            "W {w} outside [{w_min}, {w_init}]"
        );
        let Some(StateValue::U64(wc)) = d.state.get("Wc") else {
            panic!("Wc")
        };
        assert!((w_min..=w_init).contains(&wc), "Wc {wc}");
        let r = (w as u128 * 8_000_000_000 / p.base_rtt_ns as u128) as u64;
        assert_eq!(d.outputs.rate_bps, Some(r));
        for (name, v) in d.state.fields() {
            if let StateValue::F64(x) = v {
                assert!(x.is_finite() && x >= 0.0, "{name} = {x}");
            }
        }
    }
    for f in 0..FLOWS as u32 {
        if let Some(st) = m.flow(f) {
            assert!(st.u.is_finite() && st.u >= 0.0);
        }
    }
    let b = run(&mut Hpcc::new(&p).unwrap(), &evs);
    assert!(
        a.iter().map(bits).eq(b.iter().map(bits)),
        "not deterministic"
    );
});
