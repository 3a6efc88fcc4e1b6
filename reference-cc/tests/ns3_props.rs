//! Property test of the ns-3 profiles (`hpcc-ns3`, `dcqcn-ns3`) over arbitrary parameters and
//! event sequences, timers included (C-3, C-5, C-6): no panic; every f64 in state finite and
//! in range (`u >= 0`, `alpha` in [0, 1]); rates within `[MIN_RATE, line rate]` (HPCC) or
//! `[1, line rate]` (DCQCN); the window within `[1, m_win]`; exactly one decision per ACK/NAK
//! (HPCC) or CNP (DCQCN) and none for other events; timer decisions at their deadline and
//! fired timers moving forward; and identical decisions, bit for bit, when run twice.
//!
//! The same [`check`] is the body of the `model_ns3` fuzz target (`fuzz/fuzz_targets/`
//! includes this file); here it runs on inputs from a deterministic xorshift byte source.

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::ns3::{DcqcnNs3, DcqcnNs3Params, HpccNs3, HpccNs3Params};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};

/// Longest step list read from one input.
const MAX_STEPS: usize = 2_048;
/// Flows an input spreads its events over.
const FLOWS: usize = 4;
/// Timer firings allowed between two events, and in a whole run.
const MAX_FIRES_PER_GAP: usize = 64;
const MAX_FIRES_PER_RUN: usize = 3_000;

/// Parameter knobs, mapped into valid ranges by [`Knobs::params`].
#[derive(Debug, Arbitrary)]
pub struct Knobs {
    line_code: u8,
    rtt_ns: u16,
    win_raw: u32,
    eta_raw: u16,
    mi_thresh: u8,
    ai_raw: u32,
    min_raw: u32,
    multi_rate: bool,
    fast_react: bool,
    int_multi: u16,
    var_win: bool,
    sample_feedback: bool,
    alpha_ns: u16,
    decrease_ns: u16,
    rp_ns: u16,
    g_raw: u16,
    fast_recovery_times: u8,
    hai_raw: u32,
    clamp: bool,
    first_raw: u16,
}

/// One INT hop's move since the flow's previous ACK.
#[derive(Debug, Arbitrary, Clone, Copy)]
pub struct HopStep {
    b: u8,
    dts_ns: u16,
    dtx_units: u16,
    qlen: u16,
}

/// One input step; times advance by `dt_ns`.
#[derive(Debug, Arbitrary)]
pub enum Step {
    /// The sender transmits `n` more PSNs (or goes back `n` when `back`).
    Tx { flow: u8, n: u8, back: bool },
    /// An ACK or NAK of a PSN `behind` the last sent, with `n_hop` records (6..=7: longer
    /// than the simulator's 5; 8: no INT at all).
    Ack {
        flow: u8,
        dt_ns: u16,
        behind: u8,
        nak: bool,
        n_hop: u8,
        hops: [HopStep; 7],
    },
    /// A CNP reaches the sender.
    Cnp { flow: u8, dt_ns: u16 },
    /// Time passes, in units of 64 ns (up to about 4 ms).
    Wait { dt_64ns: u16 },
}

/// A whole input.
#[derive(Debug)]
pub struct Scenario {
    knobs: Knobs,
    steps: Vec<Step>,
}

impl Knobs {
    fn params(&self) -> (HpccNs3Params, DcqcnNs3Params) {
        // 1..=400 Gbps in 1 Gbps steps, or one of the INT line rates
        let line = 1_000_000_000 * (1 + u64::from(self.line_code) % 400);
        let rtt = 1 + u64::from(self.rtt_ns);
        let win =
            (!self.win_raw.is_multiple_of(4)).then(|| 1 + u64::from(self.win_raw) % 10_000_000);
        let min_rate = 1 + u64::from(self.min_raw) * 997 % line;
        let h = HpccNs3Params {
            line_rate_bps: line,
            base_rtt_ns: rtt,
            win_bytes: win,
            u_target: (1.0 + f64::from(self.eta_raw)) / 65_536.0,
            mi_thresh: u32::from(self.mi_thresh % 8),
            rate_ai: u64::from(self.ai_raw) * 1_000 % (line + 1),
            min_rate,
            multi_rate: self.multi_rate,
            fast_react: self.fast_react,
            int_multi: 1 + u32::from(self.int_multi),
            var_win: self.var_win,
            sample_feedback: self.sample_feedback,
            ..HpccNs3Params::default()
        };
        // Intervals in ns as µs floats (1 ns .. 65.5 µs), which `micros_to_ns` floors.
        let us = |ns: u16| f64::from(ns.max(1)) / 1000.0 + 1e-7;
        let d = DcqcnNs3Params {
            line_rate_bps: line,
            alpha_resume_interval: us(self.alpha_ns),
            rate_decrease_interval: us(self.decrease_ns),
            rp_timer: us(self.rp_ns),
            ewma_gain: f64::from(self.g_raw) / 65_535.0,
            fast_recovery_times: u32::from(self.fast_recovery_times % 8),
            rate_ai: u64::from(self.ai_raw) * 1_000 % (line + 1),
            rate_hai: u64::from(self.hai_raw) * 1_000 % (line + 1),
            min_rate,
            clamp_target_rate: self.clamp,
            rate_on_first_cnp: (1.0 + f64::from(self.first_raw)) / 65_536.0,
            ..DcqcnNs3Params::default()
        };
        (h, d)
    }
}

impl Scenario {
    /// Read a scenario; `None` if the bytes do not even hold the knobs.
    pub fn from_bytes(data: &[u8]) -> Option<Scenario> {
        let mut u = Unstructured::new(data);
        let knobs = Knobs::arbitrary(&mut u).ok()?;
        let mut steps = Vec::new();
        while !u.is_empty() && steps.len() < MAX_STEPS {
            match Step::arbitrary(&mut u) {
                Ok(s) => steps.push(s),
                Err(_) => break,
            }
        }
        Some(Scenario { knobs, steps })
    }

    /// The event stream: monotone times, flows spread over the u32 range, per-flow INT
    /// records that evolve by the steps' deltas (modular, so wraps and zero deltas occur).
    fn events(&self) -> Vec<Event> {
        let mut t: u64 = 0;
        let mut index = [0u64; FLOWS];
        let mut snd_nxt = [0u32; FLOWS];
        let mut recs = [[IntHop::default(); 7]; FLOWS];
        let mut out = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let (flow, dt, kind) = match *s {
                Step::Tx { flow, n, back } => {
                    let f = usize::from(flow) % FLOWS;
                    let mut kinds = Vec::new();
                    let start = if back {
                        snd_nxt[f].wrapping_sub(u32::from(n)) & 0xFF_FFFF
                    } else {
                        snd_nxt[f]
                    };
                    for k in 0..u32::from(n % 16) + 1 {
                        kinds.push(EventKind::TxData {
                            psn: (start + k) & 0xFF_FFFF,
                            bytes: 1000,
                            opcode: 4,
                        });
                    }
                    snd_nxt[f] = (start + u32::from(n % 16) + 1) & 0xFF_FFFF;
                    for kind in kinds {
                        t = t.saturating_add(10);
                        out.push(Event {
                            t_ns: t,
                            flow: f as u32 * 0x4000_0001,
                            index: index[f],
                            kind,
                        });
                        index[f] += 1;
                    }
                    continue;
                }
                Step::Ack {
                    flow,
                    dt_ns,
                    behind,
                    nak,
                    n_hop,
                    hops,
                } => {
                    let f = usize::from(flow) % FLOWS;
                    let n = usize::from(n_hop % 9);
                    let int = (n < 8).then(|| {
                        for (r, h) in recs[f].iter_mut().zip(hops.iter()).take(n) {
                            r.b = h.b % 16;
                            r.ts = r.ts.wrapping_add(u32::from(h.dts_ns)) & 0xFF_FFFF;
                            r.tx_bytes = r.tx_bytes.wrapping_add(u32::from(h.dtx_units)) & 0xF_FFFF;
                            r.qlen = h.qlen;
                        }
                        IntStack::from_hops(0, &recs[f][..n]).unwrap()
                    });
                    let info = AckInfo {
                        psn: snd_nxt[f].wrapping_sub(1 + u32::from(behind)) & 0xFF_FFFF,
                        syndrome: 0,
                        int,
                        n: None,
                        cwnd: None,
                        rcc_flags: None,
                        ts_ns: None,
                    };
                    let kind = if nak {
                        EventKind::RxNak(info)
                    } else {
                        EventKind::RxAck(info)
                    };
                    (f, u64::from(dt_ns), kind)
                }
                Step::Cnp { flow, dt_ns } => (
                    usize::from(flow) % FLOWS,
                    u64::from(dt_ns),
                    EventKind::RxCnp,
                ),
                Step::Wait { dt_64ns } => {
                    t = t.saturating_add(64 * u64::from(dt_64ns));
                    continue;
                }
            };
            t = t.saturating_add(dt);
            out.push(Event {
                t_ns: t,
                flow: flow as u32 * 0x4000_0001,
                index: index[flow],
                kind,
            });
            index[flow] += 1;
        }
        out
    }
}

/// Replay with the C-5 contract (capped per gap); check the timer contract on the way.
fn drive(m: &mut dyn Model, events: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    let mut budget = MAX_FIRES_PER_RUN;
    let mut fire_until = |m: &mut dyn Model, t: u64, out: &mut Vec<Decision>| {
        for _ in 0..MAX_FIRES_PER_GAP {
            if budget == 0 {
                break;
            }
            let Some(d) = m.next_timer_ns() else { break };
            if d > t {
                break;
            }
            budget -= 1;
            let before = out.len();
            m.on_timer(d, out);
            assert!(out[before..].iter().all(|x| x.t_ns == d), "timer time");
            assert!(
                m.next_timer_ns().is_none_or(|n| n > d),
                "{}: a fired timer must move forward",
                m.name()
            );
        }
    };
    for ev in events {
        fire_until(m, ev.t_ns, &mut out);
        let before = out.len();
        m.on_event(ev, &mut out);
        let made = out.len() - before;
        let expected = match (m.name(), &ev.kind) {
            ("hpcc-ns3", EventKind::RxAck(_) | EventKind::RxNak(_)) => 1,
            ("dcqcn-ns3", EventKind::RxCnp) => 1,
            _ => 0,
        };
        assert_eq!(made, expected, "{}: decisions for {:?}", m.name(), ev.kind);
        assert!(
            out[before..]
                .iter()
                .all(|x| x.t_ns == ev.t_ns && x.flow == ev.flow)
        );
    }
    let end = events.last().map_or(0, |e| e.t_ns.saturating_add(100_000));
    fire_until(m, end, &mut out);
    out
}

fn check_state(d: &Decision) {
    for (name, v) in d.state.fields() {
        match v {
            StateValue::F64(x) => {
                assert!(x.is_finite() && x >= 0.0, "{name} = {x}");
                if name == "alpha" {
                    assert!(x <= 1.0, "alpha = {x}");
                }
            }
            StateValue::U64(_) | StateValue::I64(_) | StateValue::Bool(_) => {}
        }
    }
}

fn u64_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        other => panic!("{name} = {other:?}"),
    }
}

/// Run one input through both profiles and check every property. Inputs whose knobs cannot
/// be read are skipped.
pub fn check(data: &[u8]) {
    let Some(sc) = Scenario::from_bytes(data) else {
        return;
    };
    let (hp, dp) = sc.knobs.params();
    let events = sc.events();

    // hpcc-ns3: a knob set may be rejected (a derived window past 2^32 − 1): then the
    // constructor must say so, and validate must agree.
    match HpccNs3::new(&hp) {
        Err(e) => assert!(hp.validate().is_err(), "{e}"),
        Ok(m0) => {
            let line = hp.line_rate_bps;
            let win = m0.win_bytes();
            let mut m = m0.clone();
            let a = drive(&mut m, &events);
            for d in &a {
                check_state(d);
                let r = d.outputs.rate_bps.unwrap();
                assert!((hp.min_rate..=line).contains(&r), "R = {r}");
                assert_eq!(u64_of(d, "R"), r);
                let w = d.outputs.window_bytes.unwrap();
                if !hp.var_win {
                    assert_eq!(w, win);
                } else if u128::from(win) * u128::from(r) < 1 << 64 {
                    assert!((1..=win).contains(&w), "window {w} of {win}");
                }
                if hp.multi_rate {
                    for n in ["Rc0", "Rc1", "Rc2", "Rc3", "Rc4"] {
                        assert!((hp.min_rate..=line).contains(&u64_of(d, n)));
                    }
                } else {
                    assert!((hp.min_rate..=line).contains(&u64_of(d, "Rc")));
                }
            }
            let mut m2 = m0;
            assert_eq!(a, drive(&mut m2, &events), "hpcc-ns3 not deterministic");
        }
    }

    let m0 = DcqcnNs3::new(&dp).expect("knobs map into valid dcqcn-ns3 parameters");
    let mut m = m0.clone();
    let a = drive(&mut m, &events);
    for d in &a {
        check_state(d);
        let rc = d.outputs.rate_bps.unwrap();
        assert!((1..=dp.line_rate_bps).contains(&rc), "Rc = {rc}");
        assert!(u64_of(d, "Rt") <= dp.line_rate_bps);
    }
    let mut m2 = m0;
    assert_eq!(a, drive(&mut m2, &events), "dcqcn-ns3 not deterministic");
}

/// xorshift64* bytes: a fixed, reproducible source of inputs.
#[cfg(test)]
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[cfg(test)]
#[test]
fn arbitrary_sequences_hold_the_properties() {
    for seed in 1..=200u64 {
        let len = 64 + (seed as usize * 97) % 6000;
        check(&bytes(seed, len));
    }
}

/// The state check can fail: a NaN or a negative f64 in state is caught.
#[cfg(test)]
#[rstest::rstest]
#[case::nan(f64::NAN)]
#[case::negative(-0.5)]
#[case::infinite(f64::INFINITY)]
#[should_panic(expected = "U = ")]
fn bad_state_is_caught(#[case] u: f64) {
    let d = Decision {
        t_ns: 0,
        flow: 0,
        cause: ccreplay_reference_cc::Cause::Timer { name: "x" },
        outputs: Default::default(),
        state: ccreplay_reference_cc::State::new(&["U"], &[StateValue::F64(u)]),
    };
    check_state(&d);
}
