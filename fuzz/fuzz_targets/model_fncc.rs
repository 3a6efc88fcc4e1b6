//! FNCC sender and receiver models on arbitrary event sequences: no panic, state finite,
//! W and Wc in [w_min, W_init] (the last-hop speedup included), R = floor(W × 8e9 / T),
//! N in 1..=flows seen, and deterministic (C-3, HPCC-6, FNCC-1, FNCC-2). FNCC-3's
//! `insert_int` is exercised on the same stacks.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::fncc::{self, Fncc, Receiver};
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
    /// An ACK filled by switches on its way back (record 0 = last hop), with N.
    Ack {
        flow: u8,
        nak: bool,
        lag: u8,
        path_id: u8,
        n_hop: u8,
        n: Option<u16>,
        hops: [HopStep; 4],
    },
    Raw {
        flow: u8,
        psn: u32,
        n: Option<u16>,
        int: Option<IntStack>,
    },
    Cnp {
        flow: u8,
    },
    /// Receiver side: a data packet `dt_ns` after the previous event.
    Data {
        flow: u8,
        dt_ns: u16,
    },
}

#[derive(Debug)]
struct Input {
    raw_params: fncc::Params,
    preset: u8,
    alpha: f64,
    beta: f64,
    t_active_ns: Option<u16>,
    steps: Vec<Step>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut i = Input {
            raw_params: u.arbitrary()?,
            preset: u.arbitrary()?,
            alpha: u.arbitrary()?,
            beta: u.arbitrary()?,
            t_active_ns: u.arbitrary()?,
            steps: Vec::new(),
        };
        while !u.is_empty() && i.steps.len() < 4096 {
            i.steps.push(u.arbitrary()?);
        }
        Ok(i)
    }
}

fn params(i: &Input) -> fncc::Params {
    if i.raw_params.validate().is_ok() {
        return i.raw_params.clone();
    }
    assert!(Fncc::new(&i.raw_params).is_err());
    assert!(Receiver::new(&i.raw_params).is_err());
    let base = match i.preset % 3 {
        0 => fncc::Params::default(),
        1 => fncc::Params {
            base_rtt_ns: 12_000,
            ..fncc::Params::default()
        },
        _ => fncc::Params {
            line_rate_bps: 400_000_000_000,
            base_rtt_ns: 3_000,
            max_stage: 0,
            ..fncc::Params::default()
        },
    };
    let p = fncc::Params {
        alpha: i.alpha,
        beta: i.beta,
        t_active_ns: i.t_active_ns.map(u64::from),
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
    let mut t_ns = 0u64;
    let mut out = Vec::with_capacity(steps.len());
    let ack = |psn, int, n| AckInfo {
        psn,
        syndrome: 0,
        int,
        n,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    for step in steps {
        t_ns += 100;
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
                n,
                hops,
            } => {
                let f = flow as usize % FLOWS;
                let mut int = IntStack::new();
                let n_hop = n_hop as usize % 5;
                for (j, h) in hops.iter().enumerate().take(n_hop) {
                    let prev = hop_now[f][j];
                    let dts = if h.dts_ns & 3 == 0 { 0 } else { h.dts_ns >> 2 };
                    let dtx = if h.dtx_units & 3 == 0 {
                        0
                    } else {
                        h.dtx_units >> 2
                    };
                    let rec = IntHop {
                        b: h.b & 0xF,
                        ts: (prev.ts + dts as u32) & 0xFF_FFFF,
                        tx_bytes: (prev.tx_bytes + dtx as u32) & 0xF_FFFF,
                        qlen: h.qlen,
                    };
                    hop_now[f][j] = rec;
                    // FNCC-3: each switch on the way back pushes its data-egress record.
                    let id = if j == 0 { path_id as u16 & 3 } else { 0 };
                    fncc::insert_int(&mut int, id, rec, 5).unwrap();
                }
                assert_eq!(int.n_hop() as usize, n_hop);
                let psn = snd_nxt[f].wrapping_sub(1 + lag as u32) & 0xFF_FFFF;
                let a = ack(psn, Some(int), n);
                (
                    f,
                    if nak {
                        EventKind::RxNak(a)
                    } else {
                        EventKind::RxAck(a)
                    },
                )
            }
            Step::Raw { flow, psn, n, int } => (
                flow as usize % FLOWS,
                EventKind::RxAck(ack(psn & 0xFF_FFFF, int, n)),
            ),
            Step::Cnp { flow } => (flow as usize % FLOWS, EventKind::RxCnp),
            Step::Data { flow, dt_ns } => {
                t_ns += dt_ns as u64;
                (
                    flow as usize % FLOWS,
                    EventKind::RxData {
                        psn: 0,
                        bytes: 1,
                        opcode: 0,
                        ecn: 0,
                        send_ts_ns: None,
                    },
                )
            }
        };
        out.push(Event {
            t_ns,
            flow: f as u32,
            index: index[f],
            kind,
        });
        index[f] += 1;
    }
    out
}

fn run(m: &mut dyn Model, evs: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    for e in evs {
        let before = out.len();
        m.on_event(e, &mut out);
        let expect = match (&e.kind, m.name()) {
            (EventKind::RxAck(_) | EventKind::RxNak(_), "fncc") => 1,
            (EventKind::RxData { .. }, "fncc-receiver") => 1,
            _ => 0,
        };
        assert_eq!(out.len() - before, expect);
    }
    out
}

fn bits(d: &Decision) -> Vec<u64> {
    let mut v = vec![
        d.outputs.rate_bps.unwrap_or(u64::MAX),
        d.outputs.window_bytes.unwrap_or(u64::MAX),
        d.outputs.ack_n.map_or(u64::MAX, u64::from),
    ];
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
    let mut m = Fncc::new(&p).unwrap();
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
    let b = run(&mut Fncc::new(&p).unwrap(), &evs);
    assert!(
        a.iter().map(bits).eq(b.iter().map(bits)),
        "sender not deterministic"
    );

    let mut seen = [false; FLOWS];
    let mut r = Receiver::new(&p).unwrap();
    let ra = run(&mut r, &evs);
    let mut k = 0;
    for e in &evs {
        if matches!(e.kind, EventKind::RxData { .. }) {
            seen[e.flow as usize] = true;
            let n = ra[k].outputs.ack_n.unwrap();
            let n_seen = seen.iter().filter(|s| **s).count() as u16;
            assert!((1..=n_seen).contains(&n), "N {n} with {n_seen} flows seen");
            k += 1;
        }
    }
    let rb = run(&mut Receiver::new(&p).unwrap(), &evs);
    assert!(
        ra.iter().map(bits).eq(rb.iter().map(bits)),
        "receiver not deterministic"
    );
});
