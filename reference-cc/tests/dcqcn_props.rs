//! Property test of the DCQCN models (`dcqcn`, `dcqcn-nic`, `dcqcn-np`) over arbitrary event
//! sequences, timers included: no panic, every rate within `[min rate, line rate]`, `alpha`
//! finite and in range, CNPs at least `N` apart, timers that always move forward, and two runs
//! of the same input giving the same decisions bit for bit (C-3).
//!
//! The same [`check`] is the body of the `model_dcqcn` fuzz target (`fuzz/fuzz_targets/`
//! includes this file); here it runs on inputs from a deterministic xorshift byte source.

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_reference_cc::dcqcn::{NicParams, Np, NpParams, Rp, RpNic, RpParams};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};

/// Parameter knobs, mapped into valid ranges by [`Knobs::params`].
#[derive(Debug, Arbitrary)]
pub struct Knobs {
    line_gbps: u8,
    time_reset_us: u16,
    byte_reset: u32,
    threshold: u8,
    ai_mbps: u16,
    hai_mbps: u16,
    min_mbps: u16,
    g_raw: u16,
    alpha_us: u16,
    alpha0_raw: u16,
    nic_g: u16,
    nic_alpha_us: u8,
    nic_alpha0: u16,
    first_cnp_mbps: u32,
    min_dec_fac: u8,
    gd: u8,
    monitor_us: u8,
    clamp: bool,
    clamp_after: bool,
    cnp_gap_us: u8,
}

/// One input step; times advance by `dt_ns`.
#[derive(Debug, Arbitrary)]
pub enum Step {
    /// The sender receives a CNP.
    Cnp { flow: u8, dt_ns: u16 },
    /// The sender transmits a data packet.
    Tx { flow: u8, dt_ns: u16, bytes: u32 },
    /// The receiver gets a data packet.
    Rx { flow: u8, dt_ns: u16, ecn: u8 },
    /// An ACK (ignored by DCQCN).
    Ack { flow: u8, dt_ns: u16 },
    /// Time passes, in units of 16 ns (up to about 1 ms).
    Wait { dt_16ns: u16 },
    /// Time jumps close to the end of u64 time.
    FarJump { left_ns: u16 },
}

/// A whole input: the knobs, then steps until the bytes run out (at most [`MAX_STEPS`]).
#[derive(Debug)]
pub struct Scenario {
    knobs: Knobs,
    steps: Vec<Step>,
}

/// Longest step list read from one input.
const MAX_STEPS: usize = 2_048;

/// Timer firings allowed between two events, and in a whole run (a far time jump would
/// otherwise fire a periodic timer billions of times; past the budget the models must cope
/// with overdue timers, which is checked too).
const MAX_FIRES_PER_GAP: usize = 64;
const MAX_FIRES_PER_RUN: usize = 2_000;

impl Knobs {
    fn params(&self) -> (RpParams, NicParams, NpParams) {
        let line_mbps = 1_000 * (1 + u64::from(self.line_gbps) % 400);
        let line = line_mbps * 1_000_000;
        let rp = RpParams {
            line_rate_bps: line,
            rpg_time_reset: 10 + u64::from(self.time_reset_us) % 1_000,
            rpg_byte_reset: 1 + u64::from(self.byte_reset) % 50_000_000,
            rpg_threshold: 1 + u32::from(self.threshold) % 10,
            rpg_ai_rate: u64::from(self.ai_mbps) % (line_mbps + 1),
            rpg_hai_rate: u64::from(self.hai_mbps) % (line_mbps + 1),
            rpg_min_rate: 1 + u64::from(self.min_mbps) % line_mbps,
            dce_tcp_g: (1.0 + f64::from(self.g_raw)) / 65_536.0,
            dce_tcp_rtt: 10 + u64::from(self.alpha_us) % 1_000,
            initial_alpha_value: f64::from(self.alpha0_raw) / 65_535.0,
            ..RpParams::default()
        };
        let nic = NicParams {
            line_rate_bps: line,
            dce_tcp_g: u32::from(self.nic_g) % 1024,
            dce_tcp_rtt: 1 + u64::from(self.nic_alpha_us) % 64,
            initial_alpha_value: u32::from(self.nic_alpha0) % 1024,
            rate_to_set_on_first_cnp: u64::from(self.first_cnp_mbps) % (line_mbps + 1),
            rpg_min_dec_fac: u32::from(self.min_dec_fac) % 101,
            rpg_min_rate: 1 + u64::from(self.min_mbps) % line_mbps,
            rpg_gd: u32::from(self.gd) % 32,
            rate_reduce_monitor_period: 1 + u64::from(self.monitor_us) % 64,
            clamp_tgt_rate: self.clamp,
            clamp_tgt_rate_after_time_inc: self.clamp_after,
            rpg_time_reset: 10 + u64::from(self.time_reset_us) % 1_000,
            rpg_byte_reset: 1 + u64::from(self.byte_reset) % 100_000,
            rpg_threshold: 1 + u32::from(self.threshold) % 10,
            rpg_ai_rate: u64::from(self.ai_mbps) % (line_mbps + 1),
            rpg_hai_rate: u64::from(self.hai_mbps) % (line_mbps + 1),
            ..NicParams::default()
        };
        let np = NpParams {
            min_time_between_cnps: u64::from(self.cnp_gap_us) % 100,
            ..NpParams::default()
        };
        (rp, nic, np)
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

    /// The event stream: monotone times, flows 0..4 spread over the u32 range.
    fn events(&self) -> Vec<Event> {
        let mut t: u64 = 0;
        let mut index = [0u64; 4];
        let mut out = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let (flow, dt, kind) = match *s {
                Step::Cnp { flow, dt_ns } => (flow, u64::from(dt_ns), EventKind::RxCnp),
                Step::Tx { flow, dt_ns, bytes } => (
                    flow,
                    u64::from(dt_ns),
                    EventKind::TxData {
                        psn: 0,
                        bytes,
                        opcode: 0x07,
                    },
                ),
                Step::Rx { flow, dt_ns, ecn } => (
                    flow,
                    u64::from(dt_ns),
                    EventKind::RxData {
                        psn: 0,
                        bytes: 1000,
                        opcode: 0x07,
                        ecn: ecn & 3,
                        send_ts_ns: None,
                    },
                ),
                Step::Ack { flow, dt_ns } => (
                    flow,
                    u64::from(dt_ns),
                    EventKind::RxAck(ccreplay_reference_cc::event::AckInfo {
                        psn: 0,
                        syndrome: 0,
                        int: None,
                        n: None,
                        cwnd: None,
                        rcc_flags: None,
                        ts_ns: None,
                    }),
                ),
                Step::Wait { dt_16ns } => {
                    t = t.saturating_add(16 * u64::from(dt_16ns));
                    continue;
                }
                Step::FarJump { left_ns } => {
                    t = t.max(u64::MAX - u64::from(left_ns));
                    continue;
                }
            };
            t = t.saturating_add(dt);
            let f = usize::from(flow % 4);
            let id = (flow % 4) as u32 * 0x4000_0001;
            out.push(Event {
                t_ns: t,
                flow: id,
                index: index[f],
                kind,
            });
            index[f] += 1;
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
            assert!(
                out[before..].iter().all(|x| x.t_ns == d),
                "timer decision time"
            );
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
        assert!(
            out[before..]
                .iter()
                .all(|x| x.t_ns == ev.t_ns && x.flow == ev.flow)
        );
    }
    let end = events
        .last()
        .map_or(0, |e| e.t_ns.saturating_add(2_000_000));
    fire_until(m, end, &mut out);
    out
}

fn u64_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        other => panic!("{name} = {other:?}"),
    }
}

fn check_rates(d: &Decision, min_bps: u64, line_bps: u64) {
    let rc = u64_of(d, "Rc");
    assert_eq!(d.outputs.rate_bps, Some(rc));
    assert!(
        (min_bps..=line_bps).contains(&rc),
        "Rc {rc} out of [{min_bps}, {line_bps}]"
    );
    assert!(u64_of(d, "Rt") <= line_bps, "Rt above line rate");
}

/// Bit-exact equality of two decision lists (f64 state compared by bits).
fn same(a: &[Decision], b: &[Decision]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.t_ns == y.t_ns
                && x.flow == y.flow
                && x.cause == y.cause
                && x.outputs == y.outputs
                && x.state
                    .fields()
                    .zip(y.state.fields())
                    .all(|((n1, v1), (n2, v2))| {
                        n1 == n2
                            && match (v1, v2) {
                                (StateValue::F64(p), StateValue::F64(q)) => {
                                    p.to_bits() == q.to_bits()
                                }
                                _ => v1 == v2,
                            }
                    })
                && x.state.fields().count() == y.state.fields().count()
        })
}

/// Run the three DCQCN models on `data` twice and check every property. Returns how many
/// decisions each model made (`dcqcn`, `dcqcn-nic`, `dcqcn-np`).
pub fn check(data: &[u8]) -> [usize; 3] {
    let Some(sc) = Scenario::from_bytes(data) else {
        return [0; 3];
    };
    let (rp, nic, np) = sc.knobs.params();
    let events = sc.events();

    let (min_rp, line) = (rp.rpg_min_rate * 1_000_000, rp.line_rate_bps);
    let run_rp = || {
        drive(
            &mut Rp::new(rp.clone()).expect("valid dcqcn params"),
            &events,
        )
    };
    let a = run_rp();
    for d in &a {
        check_rates(d, min_rp, line);
        match d.state.get("alpha") {
            Some(StateValue::F64(x)) => assert!(x.is_finite() && (0.0..=1.0).contains(&x)),
            other => panic!("alpha = {other:?}"),
        }
    }
    assert!(same(&a, &run_rp()), "dcqcn is deterministic");

    let min_nic = nic.rpg_min_rate * 1_000_000;
    let run_nic = || {
        drive(
            &mut RpNic::new(nic.clone()).expect("valid nic params"),
            &events,
        )
    };
    let b = run_nic();
    for d in &b {
        check_rates(d, min_nic, line);
        assert!(u64_of(d, "alpha") <= 1023);
    }
    assert!(same(&b, &run_nic()), "dcqcn-nic is deterministic");

    let n_ns = np.min_time_between_cnps * 1_000;
    let run_np = || drive(&mut Np::new(np.clone()).expect("valid np params"), &events);
    let c = run_np();
    let mut last: Vec<(u32, u64)> = Vec::new();
    for d in &c {
        assert_eq!(d.outputs.send_cnp, Some(true));
        match last.iter_mut().find(|(f, _)| *f == d.flow) {
            Some((_, t)) => {
                assert!(d.t_ns - *t >= n_ns, "CNPs of a flow at least N apart");
                *t = d.t_ns;
            }
            None => last.push((d.flow, d.t_ns)),
        }
    }
    assert!(same(&c, &run_np()), "dcqcn-np is deterministic");
    [a.len(), b.len(), c.len()]
}

/// Marsaglia's xorshift64 (13, 7, 17): a deterministic byte source for the stable test.
#[cfg(test)]
fn xorshift_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect()
}

#[test]
fn arbitrary_event_sequences_keep_the_invariants() {
    let mut total = [0usize; 3];
    for seed in 0..300u64 {
        let len = 64 + (seed as usize * 37) % 4_000;
        let n = check(&xorshift_bytes(
            seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            len,
        ));
        for (t, n) in total.iter_mut().zip(n) {
            *t += n;
        }
    }
    // The inputs exercise every model (not a vacuous pass).
    eprintln!(
        "decisions: dcqcn {}, dcqcn-nic {}, dcqcn-np {}",
        total[0], total[1], total[2]
    );
    assert!(total.iter().all(|&n| n > 1_000), "{total:?}");
}

#[test]
fn default_parameters_on_a_dense_cnp_storm() {
    // A handcrafted stress input: 2000 CNPs and packets on 3 flows with default knobs.
    let mut events = Vec::new();
    for i in 0..2_000u64 {
        let flow = (i % 3) as u32;
        let kind = if i % 7 == 0 {
            EventKind::RxCnp
        } else {
            EventKind::TxData {
                psn: 0,
                bytes: 9_000,
                opcode: 0x07,
            }
        };
        events.push(Event {
            t_ns: i * 3_000,
            flow,
            index: i,
            kind,
        });
    }
    let a = drive(&mut Rp::new(RpParams::default()).unwrap(), &events);
    let b = drive(&mut RpNic::new(NicParams::default()).unwrap(), &events);
    assert!(!a.is_empty() && !b.is_empty());
    for d in &a {
        check_rates(d, 1_000_000, 40_000_000_000);
    }
    for d in &b {
        check_rates(d, 1_000_000, 100_000_000_000);
    }
}
