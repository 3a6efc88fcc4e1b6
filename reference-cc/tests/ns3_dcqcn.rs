//! `dcqcn-ns3`: the simulator's "Mellanox version of DCQCN" (`rdma-hw.cc` `cnp_received_mlx`,
//! `UpdateAlphaMlx`, `CheckRateDecreaseMlx`, `RateIncEventTimerMlx`, `RateIncEventMlx`).
//!
//! The expected decisions come from the Python (IEEE double) re-statement of those C++
//! functions below, which runs them under ns-3's scheduling rule (a global heap of events
//! ordered by time, then by the uid `Simulator::Schedule` hands out) — a different structure
//! from the model's per-flow timers. `int(x)` is the C++ `DataRate(double)` truncation for
//! in-range values. Defaults: `mix/config.txt` (A = ALPHA_RESUME_INTERVAL 1 µs, D =
//! RATE_DECREASE_INTERVAL 4 µs, R = RP_TIMER 900 µs, g = 1/256, F = FAST_RECOVERY_TIMES 1,
//! RATE_AI 50 Mb/s, RATE_HAI 100 Mb/s, MIN_RATE 100 Mb/s), line rate 100 Gbps. Times in ns.
//!
//! ```python
//! import heapq, struct
//! def bits(x): return '0x%016x' % struct.unpack('<Q', struct.pack('<d', x))[0]
//! class Sim:  # rdma-hw.cc *Mlx with ns-3's scheduler: events ordered by (time, uid)
//!     def __init__(s, line=100_000_000_000, A=1000, D=4000, R=900_000, g=0.00390625, F=1,
//!                  rai=50_000_000, rhai=100_000_000, minr=100_000_000, clamp=False, first=1.0):
//!         s.__dict__.update(line=line, A=A, D=D, R=R, g=g, F=F, rai=rai, rhai=rhai, minr=minr,
//!                           clamp=clamp, first=first)
//!         s.q, s.uid, s.now, s.live, s.log = [], 0, 0, {}, []
//!         s.rate = s.tgt = line; s.alpha = 1.0; s.aca = s.dca = False; s.first_cnp = True; s.stage = 0
//!     def sched(s, delay, name):  # Simulator::Schedule; re-scheduling a name cancels the old event
//!         s.uid += 1; heapq.heappush(s.q, (s.now + delay, s.uid, name)); s.live[name] = s.uid
//!     def until(s, t):  # fire events due at or before t (C-5: timers before an event at t)
//!         while s.q and s.q[0][0] <= t:
//!             tm, uid, name = heapq.heappop(s.q)
//!             if s.live.get(name) == uid: s.now = tm; getattr(s, name)()
//!         s.now = t
//!     def rec(s, what): s.log.append((what, s.now, s.rate, s.tgt, bits(s.alpha), s.stage, s.aca, s.dca))
//!     def cnp(s, t):  # cnp_received_mlx
//!         s.until(t); s.aca = s.dca = True
//!         if s.first_cnp:
//!             s.alpha = 1.0; s.aca = False; s.sched(s.A, 'upd_alpha'); s.sched(s.D + 1, 'dec')
//!             s.rate = s.tgt = int(s.rate * s.first); s.first_cnp = False
//!         s.rec('cnp')
//!     def upd_alpha(s):  # UpdateAlphaMlx
//!         s.alpha = (1 - s.g) * s.alpha + s.g if s.aca else (1 - s.g) * s.alpha
//!         s.aca = False; s.sched(s.A, 'upd_alpha')
//!     def dec(s):  # CheckRateDecreaseMlx
//!         s.sched(s.D, 'dec')
//!         if s.dca:
//!             if s.clamp or s.stage != 0: s.tgt = s.rate
//!             s.rate = max(s.minr, int(s.rate * (1 - s.alpha / 2)))
//!             s.stage = 0; s.dca = False; s.sched(s.R, 'rp'); s.rec('dec')
//!     def rp(s):  # RateIncEventTimerMlx + RateIncEventMlx
//!         s.sched(s.R, 'rp')
//!         if s.stage >= s.F:
//!             s.tgt = min(s.line, s.tgt + (s.rai if s.stage == s.F else s.rhai))
//!         s.rate = int(s.rate / 2) + int(s.tgt / 2); s.stage += 1; s.rec('rp')
//! ```
//!
//! A decision is written below as `(cause, t_ns, Rc, Rt, alpha bits, timer_stage,
//! alpha_cnp_arrived, decrease_cnp_arrived)`, the tuple `rec` logs.

use ccreplay_reference_cc::ns3::{DcqcnNs3, DcqcnNs3Params};
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

const T0: u64 = 1_000_000;

/// Drives the model like the harness's `ModelDut`: every timer due at or before an event
/// fires first (C-5).
struct Run {
    m: DcqcnNs3,
    out: Vec<Decision>,
    index: u64,
}

impl Run {
    fn new(p: &DcqcnNs3Params) -> Self {
        Run {
            m: DcqcnNs3::new(p).unwrap(),
            out: Vec::new(),
            index: 0,
        }
    }

    fn until(&mut self, t_ns: u64) {
        while let Some(d) = self.m.next_timer_ns() {
            if d > t_ns {
                break;
            }
            self.m.on_timer(d, &mut self.out);
        }
    }

    fn event(&mut self, t_ns: u64, flow: u32, kind: EventKind) {
        self.until(t_ns);
        let ev = Event {
            t_ns,
            flow,
            index: self.index,
            kind,
        };
        self.index += 1;
        self.m.on_event(&ev, &mut self.out);
    }

    fn cnp(&mut self, t_ns: u64) {
        self.event(t_ns, 0, EventKind::RxCnp);
    }
}

type Row = (&'static str, u64, u64, u64, u64, u64, bool, bool);

fn row(d: &Decision) -> Row {
    let cause = match d.cause {
        Cause::Event { kind: "rx_cnp", .. } => "cnp",
        Cause::Timer {
            name: "rate_decrease",
        } => "dec",
        Cause::Timer {
            name: "rate_increase",
        } => "rp",
        other => panic!("unexpected cause {other:?}"),
    };
    let u = |n| match d.state.get(n) {
        Some(StateValue::U64(v)) => v,
        other => panic!("{n}: {other:?}"),
    };
    let b = |n| match d.state.get(n) {
        Some(StateValue::Bool(v)) => v,
        other => panic!("{n}: {other:?}"),
    };
    let alpha = match d.state.get("alpha") {
        Some(StateValue::F64(a)) => a.to_bits(),
        other => panic!("alpha: {other:?}"),
    };
    assert_eq!(d.outputs.rate_bps, Some(u("Rc")));
    (
        cause,
        d.t_ns,
        u("Rc"),
        u("Rt"),
        alpha,
        u("timer_stage"),
        b("alpha_cnp_arrived"),
        b("decrease_cnp_arrived"),
    )
}

fn rows(out: &[Decision]) -> Vec<Row> {
    out.iter().map(row).collect()
}

/// Defaults are `mix/config.txt`'s (docs/models/ns3.md table).
#[test]
fn defaults_are_config_txt() {
    let p = DcqcnNs3Params::default();
    assert_eq!(p.alpha_resume_interval, 1.0); // ALPHA_RESUME_INTERVAL 1
    assert_eq!(p.rate_decrease_interval, 4.0); // RATE_DECREASE_INTERVAL 4
    assert_eq!(p.rp_timer, 900.0); // RP_TIMER 900
    assert_eq!(p.ewma_gain, 0.00390625); // EWMA_GAIN 0.00390625
    assert_eq!(p.fast_recovery_times, 1); // FAST_RECOVERY_TIMES 1
    assert_eq!(p.rate_ai, 50_000_000); // RATE_AI 50Mb/s
    assert_eq!(p.rate_hai, 100_000_000); // RATE_HAI 100Mb/s
    assert_eq!(p.min_rate, 100_000_000); // MIN_RATE 100Mb/s
    assert!(!p.clamp_target_rate); // CLAMP_TARGET_RATE 0
    assert_eq!(p.rate_on_first_cnp, 1.0); // RdmaHw attribute RateOnFirstCnp
}

#[rstest]
#[case::zero_line(DcqcnNs3Params { line_rate_bps: 0, ..DcqcnNs3Params::default() }, "line_rate_bps")]
#[case::line_above_10t(DcqcnNs3Params { line_rate_bps: 10_000_000_000_001, ..DcqcnNs3Params::default() }, "line_rate_bps")]
#[case::alpha_zero(DcqcnNs3Params { alpha_resume_interval: 0.0, ..DcqcnNs3Params::default() }, "ALPHA_RESUME_INTERVAL")]
#[case::alpha_sub_ns(DcqcnNs3Params { alpha_resume_interval: 0.0005, ..DcqcnNs3Params::default() }, "ALPHA_RESUME_INTERVAL")]
#[case::decrease_nan(DcqcnNs3Params { rate_decrease_interval: f64::NAN, ..DcqcnNs3Params::default() }, "RATE_DECREASE_INTERVAL")]
#[case::rp_negative(DcqcnNs3Params { rp_timer: -900.0, ..DcqcnNs3Params::default() }, "RP_TIMER")]
#[case::rp_huge(DcqcnNs3Params { rp_timer: 2e9, ..DcqcnNs3Params::default() }, "RP_TIMER")]
#[case::g_above_one(DcqcnNs3Params { ewma_gain: 1.5, ..DcqcnNs3Params::default() }, "EWMA_GAIN")]
#[case::g_negative(DcqcnNs3Params { ewma_gain: -0.1, ..DcqcnNs3Params::default() }, "EWMA_GAIN")]
#[case::ai_above_line(DcqcnNs3Params { rate_ai: 100_000_000_001, ..DcqcnNs3Params::default() }, "RATE_AI")]
#[case::hai_above_line(DcqcnNs3Params { rate_hai: 100_000_000_001, ..DcqcnNs3Params::default() }, "RATE_HAI")]
#[case::min_zero(DcqcnNs3Params { min_rate: 0, ..DcqcnNs3Params::default() }, "MIN_RATE")]
#[case::min_above_line(DcqcnNs3Params { min_rate: 100_000_000_001, ..DcqcnNs3Params::default() }, "MIN_RATE")]
#[case::first_zero(DcqcnNs3Params { rate_on_first_cnp: 0.0, ..DcqcnNs3Params::default() }, "RATE_ON_FIRST_CNP")]
#[case::first_above_one(DcqcnNs3Params { rate_on_first_cnp: 1.5, ..DcqcnNs3Params::default() }, "RATE_ON_FIRST_CNP")]
fn rejected_params(#[case] p: DcqcnNs3Params, #[case] name: &str) {
    let e = DcqcnNs3::new(&p).expect_err("rejected");
    assert_eq!(e.name, name, "{e}");
}

/// Defaults. First CNP: alpha = 1 and its "arrived" bit cleared, rate kept (RATE_ON_FIRST_CNP
/// 1), alpha timer at +1 µs, decrease check at +4 µs + 1 ns. The check cuts with the alpha of
/// four decays, (255/256)^4 = 0x3fef80bf80200000:
///   int(1e11 * (1 - a/2)) = 50776684272 (target not clamped: stage 0, CLAMP_TARGET_RATE 0).
/// A second CNP sets both bits; the alpha update at +6 µs adds g; the check at +8.001 µs cuts
/// again. A CNP 2 ns before +908.001 µs, where the rate-increase timer (scheduled at
/// +8.001 µs) and a decrease check (scheduled at +904.001 µs) are both due: ns-3 runs the
/// earlier-scheduled rate increase first (fast recovery, stage 1), so the check then clamps
/// the target to that rate before cutting.
///   Simulation: `s = Sim(); s.cnp(T0); s.cnp(T0+5500); s.cnp(T0+907999); s.until(T0+908001)`
#[test]
fn decrease_checks_and_the_scheduling_order_on_ties() {
    let mut r = Run::new(&DcqcnNs3Params::default());
    r.cnp(T0);
    assert_eq!(r.m.next_timer_ns(), Some(T0 + 1000));
    r.cnp(T0 + 5500);
    r.cnp(T0 + 907_999);
    r.until(T0 + 908_001);
    let expected: Vec<Row> = vec![
        (
            "cnp",
            1000000,
            100000000000,
            100000000000,
            0x3ff0000000000000,
            0,
            false,
            true,
        ),
        (
            "dec",
            1004001,
            50776684272,
            100000000000,
            0x3fef80bf80200000,
            0,
            false,
            false,
        ),
        (
            "cnp",
            1005500,
            50776684272,
            100000000000,
            0x3fef613ec09fe000,
            0,
            true,
            true,
        ),
        (
            "dec",
            1008001,
            26072565153,
            100000000000,
            0x3fef233928b9037f,
            0,
            false,
            false,
        ),
        (
            "cnp",
            1907999,
            26072565153,
            100000000000,
            0x3f9d88cf75f82505,
            0,
            true,
            true,
        ),
        (
            "rp",
            1908001,
            63036282576,
            100000000000,
            0x3fa0b5a353411670,
            1,
            false,
            true,
        ),
        (
            "dec",
            1908001,
            62007663202,
            63036282576,
            0x3fa0b5a353411670,
            0,
            false,
            false,
        ),
    ];
    assert_eq!(rows(&r.out), expected);
}

/// Timer stages with CLAMP_TARGET_RATE 1, A = 55 µs (alpha stays 1 here), R = 10 µs.
/// By hand: first check: 1e11 × (1 − 1/2) = 5e10, target clamped to 1e11 (the rate before
/// the cut). Second check (CNP at +5 µs): target = 5e10, rate = 2.5e10. Then the rate
/// increases (F = 1): stage 0 fast recovery: 2.5e10/2 + 5e10/2 = 3.75e10; stage 1 = F active
/// increase: Rt = 5e10 + 5e7 = 50,050,000,000, Rc = 1.875e10 + 2.5025e10 = 43,775,000,000;
/// stage 2 hyper: Rt = 50,150,000,000, Rc = 21,887,500,000 + 25,075,000,000 = 46,962,500,000.
/// The increase at +28.001 µs ties with a decrease check (no CNP: no decision).
///   Simulation: `s = Sim(A=55_000, R=10_000, clamp=True); s.cnp(T0); s.cnp(T0+5000); s.until(T0+38001)`
#[test]
fn fast_recovery_active_and_hyper_increase() {
    let p = DcqcnNs3Params {
        alpha_resume_interval: 55.0,
        rp_timer: 10.0,
        clamp_target_rate: true,
        ..DcqcnNs3Params::default()
    };
    let mut r = Run::new(&p);
    r.cnp(T0);
    r.cnp(T0 + 5000);
    r.until(T0 + 38_001);
    let one = 0x3ff0000000000000;
    let expected: Vec<Row> = vec![
        (
            "cnp",
            1000000,
            100000000000,
            100000000000,
            one,
            0,
            false,
            true,
        ),
        (
            "dec",
            1004001,
            50000000000,
            100000000000,
            one,
            0,
            false,
            false,
        ),
        (
            "cnp",
            1005000,
            50000000000,
            100000000000,
            one,
            0,
            true,
            true,
        ),
        (
            "dec",
            1008001,
            25000000000,
            50000000000,
            one,
            0,
            true,
            false,
        ),
        ("rp", 1018001, 37500000000, 50000000000, one, 1, true, false),
        ("rp", 1028001, 43775000000, 50050000000, one, 2, true, false),
        ("rp", 1038001, 46962500000, 50150000000, one, 3, true, false),
    ];
    assert_eq!(rows(&r.out), expected);
    assert_eq!(r.m.flow(0).unwrap().rp_time_stage, 3);
}

/// CLAMP_TARGET_RATE decides whether a decrease at stage 0 sets the target rate: with the
/// scenario above, the second check leaves Rt = 1e11 (0) or sets Rt = 5e10 (1).
#[rstest]
#[case::off(false, 100_000_000_000)]
#[case::on(true, 50_000_000_000)]
fn clamp_target_rate(#[case] clamp: bool, #[case] rt_bps: u64) {
    let p = DcqcnNs3Params {
        alpha_resume_interval: 55.0,
        rp_timer: 10.0,
        clamp_target_rate: clamp,
        ..DcqcnNs3Params::default()
    };
    let mut r = Run::new(&p);
    r.cnp(T0);
    r.cnp(T0 + 5000);
    r.until(T0 + 8_001);
    let last = row(r.out.last().unwrap());
    assert_eq!((last.0, last.2, last.3), ("dec", 25_000_000_000, rt_bps));
}

/// RATE_ON_FIRST_CNP 0.5 on a 1 Gbps line: the first CNP sets Rc = Rt = int(1e9 × 0.5);
/// the cut int(5e8 × (1 − 0x3fef80bf80200000/2)) ≈ 2.5e8 is below MIN_RATE 600 Mb/s → 6e8.
///   Simulation: `s = Sim(line=10**9, minr=6*10**8, first=0.5, rai=0, rhai=0); s.cnp(T0); s.until(T0+4001)`
#[test]
fn rate_on_first_cnp_and_min_rate() {
    let p = DcqcnNs3Params {
        line_rate_bps: 1_000_000_000,
        min_rate: 600_000_000,
        rate_ai: 0,
        rate_hai: 0,
        rate_on_first_cnp: 0.5,
        ..DcqcnNs3Params::default()
    };
    let mut r = Run::new(&p);
    r.cnp(T0);
    r.until(T0 + 4001);
    let expected: Vec<Row> = vec![
        (
            "cnp",
            1000000,
            500000000,
            500000000,
            0x3ff0000000000000,
            0,
            false,
            true,
        ),
        (
            "dec",
            1004001,
            600000000,
            500000000,
            0x3fef80bf80200000,
            0,
            false,
            false,
        ),
    ];
    assert_eq!(rows(&r.out), expected);
}

/// Intervals are µs as ns-3's `MicroSeconds(double)` converts them: 0.3 µs is 299 ns
/// (python3 -c "from fractions import Fraction as F; import math; print(math.floor(F(0.3)*1000))").
#[test]
fn fractional_interval_floors_like_ns3() {
    let p = DcqcnNs3Params {
        alpha_resume_interval: 0.3,
        ..DcqcnNs3Params::default()
    };
    let mut r = Run::new(&p);
    r.cnp(T0);
    assert_eq!(r.m.next_timer_ns(), Some(T0 + 299));
}

/// Only CNPs are inputs; no flow, no timer before the first CNP; alpha updates make no
/// decision; flows decide in flow order at equal times.
#[test]
fn inputs_timers_and_flows() {
    let mut r = Run::new(&DcqcnNs3Params::default());
    r.event(
        10,
        0,
        EventKind::TxData {
            psn: 0,
            bytes: 1000,
            opcode: 4,
        },
    );
    assert_eq!(r.m.next_timer_ns(), None);
    assert!(r.out.is_empty());
    r.event(T0, 1, EventKind::RxCnp);
    r.event(T0, 0, EventKind::RxCnp);
    r.until(T0 + 3000); // three alpha updates per flow: no decision
    assert_eq!(r.out.len(), 2);
    r.until(T0 + 4001);
    let flows: Vec<u32> = r.out.iter().map(|d| d.flow).collect();
    assert_eq!(flows, vec![1, 0, 0, 1]);
    assert_eq!(r.m.name(), "dcqcn-ns3");
}
