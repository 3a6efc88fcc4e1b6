//! DCQCN reaction point (sender), paper profile `dcqcn` (DCQCN-3; seed 001 §3.1 eqs. 1-4,
//! Figure 7; parameters §5.2 and Figure 14).
//!
//! Per flow: `Rc`, `Rt` (integer bps), `alpha` (f64), the timer and byte-counter stages, the
//! byte counter, the alpha timer and the rate-increase timer. A flow starts at line rate
//! (no slow start) and is unthrottled until its first CNP: before it, nothing is counted and
//! no timer runs (the NIC allocates a rate limiter on the first CNP).
//!
//! Decisions (C-6), each with `rate_bps = Rc` and the state [`Rp::STATE_NAMES`]:
//! - every `rx_cnp`;
//! - a `tx_data` whose bytes make the byte counter expire (other `tx_data` only count bytes;
//!   the count is shown in the next decision's state);
//! - every timer firing that changes the state (`alpha`, then `rate_increase` when both are
//!   due at the same ns: C-5, the order DCQCN-3 lists them).

use serde::{Deserialize, Serialize};

use crate::dcqcn::flows::{FlowTable, ReactionPoint, Timed, rp_on_event};
use crate::dcqcn::increase::{IncreaseConfig, IncreaseTaken, RateState, byte_expiry};
use crate::dcqcn::{check_line_rate, err, rate_mbps_to_bps, time_us_to_ns};
use crate::event::{Cause, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};

/// Paper-profile parameters (C-7): DCQCN / QCN knob names, units in the docs, defaults from
/// seed 001 (§3.1, §5.2, Table 2, Figure 14). `base_rtt_ns` and `mtu_bytes` are accepted
/// because the harness fills them for every model from the trace manifest; DCQCN does not
/// use them.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RpParams {
    /// Line rate `C`, bps; flows start at it (default 40 Gbps, the paper's testbed).
    pub line_rate_bps: u64,
    /// Base RTT, ns (accepted, unused).
    pub base_rtt_ns: u64,
    /// MTU, bytes (accepted, unused).
    pub mtu_bytes: u64,
    /// `T`, rate-increase timer period, µs (default 55, §5.2).
    pub rpg_time_reset: u64,
    /// `B`, byte-counter period, bytes (default 10 MB = 10^7, §5.2).
    pub rpg_byte_reset: u64,
    /// `F`, fast-recovery threshold on the stage counters (default 5, §3.1, Table 2).
    pub rpg_threshold: u32,
    /// `R_AI`, additive-increase step, Mbps (default 40, Table 2).
    pub rpg_ai_rate: u64,
    /// `R_HAI`, hyper-increase step, Mbps (default 400: the paper gives none; QCN's ratio
    /// `R_HAI = 10 × R_AI`, which NVIDIA's defaults 5 / 50 Mbps also keep).
    pub rpg_hai_rate: u64,
    /// Lower clamp of `Rc`, Mbps (default 1: the paper gives none; NVIDIA's default).
    pub rpg_min_rate: u64,
    /// `g`, the alpha gain, in (0, 1] (default 1/256, Figure 14).
    pub dce_tcp_g: f64,
    /// `K`, alpha timer period, µs (default 55, §3.1).
    pub dce_tcp_rtt: u64,
    /// Initial `alpha`, in [0, 1] (default 1, §3.1 footnote 1).
    pub initial_alpha_value: f64,
}

impl Default for RpParams {
    fn default() -> Self {
        RpParams {
            line_rate_bps: 40_000_000_000,
            base_rtt_ns: 0,
            mtu_bytes: 0,
            rpg_time_reset: 55,
            rpg_byte_reset: 10_000_000,
            rpg_threshold: 5,
            rpg_ai_rate: 40,
            rpg_hai_rate: 400,
            rpg_min_rate: 1,
            dce_tcp_g: 1.0 / 256.0,
            dce_tcp_rtt: 55,
            initial_alpha_value: 1.0,
        }
    }
}

/// Validated parameters in model units.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RpConfig {
    inc: IncreaseConfig,
    /// `g`.
    g: f64,
    /// `K`, ns.
    k_ns: u64,
    /// Initial alpha.
    alpha0: f64,
}

impl RpParams {
    /// Reject values the model cannot run with, naming the parameter and why (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.config().map(|_| ())
    }

    fn config(&self) -> Result<RpConfig, ParamError> {
        check_line_rate(self.line_rate_bps)?;
        let line = self.line_rate_bps;
        let t_ns = time_us_to_ns("rpg_time_reset", self.rpg_time_reset, 1)?;
        if self.rpg_byte_reset == 0 {
            return Err(err("rpg_byte_reset", 0, "must be >= 1 byte"));
        }
        if self.rpg_threshold == 0 {
            return Err(err(
                "rpg_threshold",
                0,
                "must be >= 1 (F, fast-recovery stages)",
            ));
        }
        let ai_bps = rate_mbps_to_bps("rpg_ai_rate", self.rpg_ai_rate, 0, line)?;
        let hai_bps = rate_mbps_to_bps("rpg_hai_rate", self.rpg_hai_rate, 0, line)?;
        let min_rate_bps = rate_mbps_to_bps("rpg_min_rate", self.rpg_min_rate, 1, line)?;
        if !(self.dce_tcp_g.is_finite() && self.dce_tcp_g > 0.0 && self.dce_tcp_g <= 1.0) {
            return Err(err(
                "dce_tcp_g",
                self.dce_tcp_g,
                "must be in (0, 1] (the paper's g)",
            ));
        }
        let k_ns = time_us_to_ns("dce_tcp_rtt", self.dce_tcp_rtt, 1)?;
        let a0 = self.initial_alpha_value;
        if !(a0.is_finite() && (0.0..=1.0).contains(&a0)) {
            return Err(err("initial_alpha_value", a0, "must be in [0, 1]"));
        }
        Ok(RpConfig {
            inc: IncreaseConfig {
                line_rate_bps: line,
                min_rate_bps,
                ai_bps,
                hai_bps,
                f: self.rpg_threshold,
                t_ns,
                b_bytes: self.rpg_byte_reset,
            },
            g: self.dce_tcp_g,
            k_ns,
            alpha0: a0,
        })
    }
}

/// One flow of the paper profile.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RpFlow {
    /// A CNP has been received: the rate limiter exists and its counters and timers run.
    throttled: bool,
    rate: RateState,
    /// `alpha` (eqs. 1-2).
    alpha: f64,
    alpha_deadline_ns: Option<u64>,
}

impl Timed for RpFlow {
    fn next_deadline_ns(&self) -> Option<u64> {
        match (self.alpha_deadline_ns, self.rate.increase_deadline_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl RpFlow {
    fn new(cfg: &RpConfig) -> Self {
        RpFlow {
            throttled: false,
            rate: RateState::at_line_rate(cfg.inc.line_rate_bps),
            alpha: cfg.alpha0,
            alpha_deadline_ns: None,
        }
    }

    fn state(&self) -> State {
        State::new(
            Rp::STATE_NAMES,
            &[
                StateValue::U64(self.rate.rc_bps),
                StateValue::U64(self.rate.rt_bps),
                StateValue::F64(self.alpha),
                StateValue::U64(u64::from(self.rate.timer_stage)),
                StateValue::U64(u64::from(self.rate.byte_stage)),
                StateValue::U64(self.rate.byte_counter),
            ],
        )
    }

    /// CNP at `t_ns` (DCQCN-3, eq. 1), in the order eq. 1 writes it; the cut uses the alpha
    /// before this CNP's update.
    fn on_cnp(&mut self, t_ns: u64, cfg: &RpConfig) {
        self.throttled = true;
        let r = &mut self.rate;
        r.rt_bps = r.rc_bps; // eq. 1: Rt = Rc
        r.rc_bps = cut(r.rc_bps, self.alpha).clamp(cfg.inc.min_rate_bps, cfg.inc.line_rate_bps);
        self.alpha = (1.0 - cfg.g) * self.alpha + cfg.g; // eq. 1
        r.reset_increase(t_ns, &cfg.inc);
        self.alpha_deadline_ns = t_ns.checked_add(cfg.k_ns); // restart the alpha timer
    }

    /// Fire this flow's timers due at `d` in DCQCN-3 order (alpha, then rate increase),
    /// one decision per timer that changed the state.
    fn fire(&mut self, flow: FlowId, d: u64, cfg: &RpConfig, out: &mut Vec<Decision>) {
        if self.alpha_deadline_ns == Some(d) {
            let before = self.alpha;
            self.alpha *= 1.0 - cfg.g; // eq. 2: alpha = (1 - g) × alpha
            // At alpha = 0 the timer can change nothing more; the next CNP restarts it.
            self.alpha_deadline_ns = if self.alpha == 0.0 {
                None
            } else {
                d.checked_add(cfg.k_ns)
            };
            if self.alpha.to_bits() != before.to_bits() {
                out.push(self.decision(d, flow, Cause::Timer { name: "alpha" }));
            }
        }
        if self.rate.increase_deadline_ns == Some(d) {
            let before = self.rate;
            self.rate.on_increase_timer(d, &cfg.inc);
            let changed = RateState {
                increase_deadline_ns: before.increase_deadline_ns,
                ..self.rate
            } != before;
            if changed {
                out.push(self.decision(
                    d,
                    flow,
                    Cause::Timer {
                        name: "rate_increase",
                    },
                ));
            }
        }
    }

    fn decision(&self, t_ns: u64, flow: FlowId, cause: Cause) -> Decision {
        Decision {
            t_ns,
            flow,
            cause,
            outputs: Outputs {
                rate_bps: Some(self.rate.rc_bps),
                ..Outputs::default()
            },
            state: self.state(),
        }
    }
}

/// `Rc × (1 − alpha / 2)` in f64 in that order, floored to integer bps (C-3). `Rc < 2^53`
/// (line rate <= 10^13) so `Rc as f64` is exact; `alpha` in [0, 1] keeps the factor in
/// [0.5, 1].
#[inline]
fn cut(rc_bps: u64, alpha: f64) -> u64 {
    (rc_bps as f64 * (1.0 - alpha / 2.0)).floor() as u64
}

/// The rules and branches of DCQCN-3 whose use `coverage()` counts, each named by its row of
/// docs/models/dcqcn.md (R1-R8, the choices) or its rule (C-3, C-5); docs/conformance.md says
/// which the bundled trace exercises. Counted once per event or timer firing that exercises
/// them, observed from the flow's state before and after (so counting cannot change a
/// decision). The paper profile reads no PSN: no wrap rule.
pub const COVERAGE: [&str; 25] = [
    "R8 tx_data before the flow's first CNP: unthrottled, not counted",
    "R1 first CNP of a flow: cut from line rate",
    "R1 later CNP: Rt = Rc, cut with the alpha before its update",
    "R1 CNP moves Rt (Rt != Rc before it)",
    "R1 CNP within an alpha period: alpha timer restarted",
    "R1 CNP resets advanced stages",
    "R1 CNP resets a non-zero byte counter",
    "C-3 cut floored (Rc (1 - alpha/2) not whole), not clamped",
    "R1 R7 cut clamped to the minimum rate",
    "R2 alpha timer: K without a CNP",
    "R2 alpha timer stops at alpha = 0",
    "C-5 alpha and rate-increase timers due at the same ns",
    "R3 rate-increase timer expiry",
    "R3 byte-counter expiry",
    "R3 byte-counter expiry keeps a remainder (choice 7)",
    "R3 byte counter expires again on a remainder >= B (choice 7)",
    "R4 fast recovery by the timer",
    "R4 fast recovery by the byte counter",
    "R6 additive increase by the timer",
    "R6 additive increase by the byte counter",
    "R5 hyper increase by the timer",
    "R5 hyper increase by the byte counter",
    "R5 hyper increase with i >= 2",
    "R7 Rt clamped at the line rate",
    "C-3 (Rt + Rc)/2 floored (odd sum)",
];

/// Indices into [`COVERAGE`].
mod cov {
    pub const TX_UNTHROTTLED: usize = 0;
    pub const FIRST_CNP: usize = 1;
    pub const LATER_CNP: usize = 2;
    pub const CNP_MOVES_RT: usize = 3;
    pub const CNP_IN_ALPHA_PERIOD: usize = 4;
    pub const CNP_RESETS_STAGES: usize = 5;
    pub const CNP_RESETS_BYTES: usize = 6;
    pub const CUT_FLOORED: usize = 7;
    pub const CUT_MIN_CLAMP: usize = 8;
    pub const ALPHA_TIMER: usize = 9;
    pub const ALPHA_STOPS: usize = 10;
    pub const TIMER_TIE: usize = 11;
    pub const INCREASE_TIMER: usize = 12;
    pub const BYTE_EXPIRY: usize = 13;
    pub const BYTE_KEEPS_REMAINDER: usize = 14;
    pub const BYTE_REMAINDER_EXPIRES: usize = 15;
    /// Fast recovery by the timer; + 1: by the byte counter.
    pub const FAST: usize = 16;
    /// Additive increase by the timer; + 1: by the byte counter.
    pub const ADDITIVE: usize = 18;
    /// Hyper increase by the timer; + 1: by the byte counter.
    pub const HYPER: usize = 20;
    pub const HYPER_I2: usize = 22;
    pub const RT_LINE_CLAMP: usize = 23;
    pub const HALF_SUM_ODD: usize = 24;
}

type Covered = [bool; COVERAGE.len()];

/// Mark the increase branches (R4-R7, C-3) one increase took (`by_bytes`: the byte counter
/// triggered it, else the timer).
fn covered_increase(
    cfg: &IncreaseConfig,
    before: &RateState,
    after: &RateState,
    by_bytes: bool,
    c: &mut Covered,
) {
    let t = IncreaseTaken::of(cfg, before, after);
    let by = usize::from(by_bytes);
    c[cov::FAST + by] = t.fast;
    c[cov::ADDITIVE + by] = t.additive;
    c[cov::HYPER + by] = t.hyper;
    c[cov::HYPER_I2] = t.hyper_i2;
    c[cov::RT_LINE_CLAMP] = t.rt_line_clamp;
    c[cov::HALF_SUM_ODD] = t.half_sum_odd;
}

/// Which of [`COVERAGE`] one `rx_cnp` or `tx_data` exercised.
fn covered_by_event(cfg: &RpConfig, before: &RpFlow, kind: &EventKind, after: &RpFlow) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let b = &before.rate;
    match *kind {
        EventKind::RxCnp => {
            c[cov::FIRST_CNP] = !before.throttled;
            c[cov::LATER_CNP] = before.throttled;
            c[cov::CNP_MOVES_RT] = b.rt_bps != b.rc_bps;
            c[cov::CNP_IN_ALPHA_PERIOD] = before.alpha_deadline_ns.is_some();
            c[cov::CNP_RESETS_STAGES] = b.timer_stage > 0 || b.byte_stage > 0;
            c[cov::CNP_RESETS_BYTES] = b.byte_counter > 0;
            // The floor counts where it decided the rate: not under the minimum-rate clamp.
            let product = b.rc_bps as f64 * (1.0 - before.alpha / 2.0);
            let clamped = cut(b.rc_bps, before.alpha) < cfg.inc.min_rate_bps;
            c[cov::CUT_MIN_CLAMP] = clamped;
            c[cov::CUT_FLOORED] = !clamped && product.fract() != 0.0;
        }
        EventKind::TxData { bytes, .. } => {
            c[cov::TX_UNTHROTTLED] = !before.throttled;
            let expiry = if before.throttled {
                byte_expiry(
                    &cfg.inc,
                    b.byte_counter,
                    u64::from(bytes),
                    after.rate.byte_counter,
                )
            } else {
                None // choice 1: nothing counted before the first CNP
            };
            if let Some((keeps, again)) = expiry {
                c[cov::BYTE_EXPIRY] = true;
                c[cov::BYTE_KEEPS_REMAINDER] = keeps;
                c[cov::BYTE_REMAINDER_EXPIRES] = again;
                covered_increase(&cfg.inc, b, &after.rate, true, &mut c);
            }
        }
        _ => {}
    }
    c
}

/// Which of [`COVERAGE`] the timers of one flow due at `d` exercised.
fn covered_by_timers(cfg: &RpConfig, before: &RpFlow, d: u64, after: &RpFlow) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let alpha = before.alpha_deadline_ns == Some(d);
    let increase = before.rate.increase_deadline_ns == Some(d);
    c[cov::ALPHA_TIMER] = alpha;
    c[cov::ALPHA_STOPS] = alpha && after.alpha_deadline_ns.is_none() && after.alpha == 0.0;
    c[cov::TIMER_TIE] = alpha && increase;
    if increase {
        c[cov::INCREASE_TIMER] = true;
        covered_increase(&cfg.inc, &before.rate, &after.rate, false, &mut c);
    }
    c
}

#[inline]
fn count(into: &mut [u64; COVERAGE.len()], c: Covered) {
    for (n, hit) in into.iter_mut().zip(c) {
        *n += u64::from(hit);
    }
}

/// DCQCN sender, paper profile (`dcqcn`, DCQCN-3).
#[derive(Clone, Debug)]
pub struct Rp {
    params: RpParams,
    cfg: RpConfig,
    flows: FlowTable<RpFlow>,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
}

impl Rp {
    /// Decision state names, in order (C-6): `Rc`, `Rt` (bps), `alpha`, the timer and
    /// byte-counter stage counters, and the bytes counted towards the next byte-counter expiry.
    pub const STATE_NAMES: &'static [&'static str] = &[
        "Rc",
        "Rt",
        "alpha",
        "timer_stage",
        "byte_stage",
        "byte_counter",
    ];

    /// A model with validated parameters.
    pub fn new(params: RpParams) -> Result<Self, ParamError> {
        let cfg = params.config()?;
        Ok(Rp {
            params,
            cfg,
            flows: FlowTable::new(),
            covered: [0; COVERAGE.len()],
        })
    }

    /// The parameters this model runs with.
    pub fn params(&self) -> &RpParams {
        &self.params
    }

    /// The current state record of `flow`, if it has been seen.
    pub fn flow_state(&self, flow: FlowId) -> Option<State> {
        self.flows.get(flow).map(RpFlow::state)
    }
}

impl Model for Rp {
    fn name(&self) -> &'static str {
        "dcqcn"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        if !matches!(ev.kind, EventKind::RxCnp | EventKind::TxData { .. }) {
            return; // not a DCQCN sender input (rp_on_event ignores it too)
        }
        let before = match self.flows.get(ev.flow) {
            Some(f) => *f,
            None => RpFlow::new(&self.cfg),
        };
        rp_on_event(&mut self.flows, &self.cfg, ev, out);
        if let Some(after) = self.flows.get(ev.flow) {
            count(
                &mut self.covered,
                covered_by_event(&self.cfg, &before, &ev.kind, after),
            );
        }
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.flows.next_deadline_ns()
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        // rp_on_timer, with each flow's state observed around its timers.
        let (cfg, covered) = (&self.cfg, &mut self.covered);
        self.flows.fire_next(now_ns, |flow, f, d| {
            let before = *f;
            f.fire(flow, d, cfg, out);
            count(covered, covered_by_timers(cfg, &before, d, f));
        });
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }
}

impl ReactionPoint for RpFlow {
    type Config = RpConfig;

    fn start(cfg: &RpConfig) -> Self {
        RpFlow::new(cfg)
    }

    fn cnp(&mut self, t_ns: u64, cfg: &RpConfig) {
        self.on_cnp(t_ns, cfg);
    }

    fn bytes_sent(&mut self, bytes: u64, cfg: &RpConfig) -> bool {
        self.throttled && self.rate.on_bytes_sent(bytes, &cfg.inc)
    }

    fn record(&self, t_ns: u64, flow: FlowId, cause: Cause) -> Decision {
        self.decision(t_ns, flow, cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_floors() {
        // 40e9 × (1 − 1/2) = 2e10 exactly; 3 × (1 − 0.25) = 2.25 -> 2.
        assert_eq!(cut(40_000_000_000, 1.0), 20_000_000_000);
        assert_eq!(cut(3, 0.5), 2);
        assert_eq!(cut(7, 0.0), 7);
    }

    /// Every rule of [`COVERAGE`] on one hand-built flow (the counts tallied by hand from
    /// docs/models/dcqcn.md R1-R8; the stage pairs below are (timer, byte) after the advance).
    /// Line 1000 Mbps, min 400 Mbps, R_AI 10, R_HAI 100 Mbps, F = 2, B = 1500 bytes,
    /// T = K = 10 µs, g = 1 (alpha is 1 after every CNP, 0 after one alpha period).
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let p = RpParams {
            line_rate_bps: 1_000_000_000,
            rpg_time_reset: 10,
            rpg_byte_reset: 1500,
            rpg_threshold: 2,
            rpg_ai_rate: 10,
            rpg_hai_rate: 100,
            rpg_min_rate: 400,
            dce_tcp_g: 1.0,
            dce_tcp_rtt: 10,
            ..RpParams::default()
        };
        let mut m = Rp::new(p).unwrap();
        let tx = |bytes| EventKind::TxData {
            psn: 0,
            bytes,
            opcode: 0x0a,
        };
        let stream = [
            (0, tx(1000)),             // unthrottled: not counted
            (1_000, EventKind::RxCnp), // first: 1e9 -> 5e8 (whole), Rt = 1e9
            (2_000, EventKind::RxCnp), // later, moves Rt, in the alpha period; 2.5e8 -> min 4e8
            (3_000, tx(1500)),         // expiry (0,1): fast recovery by bytes, Rc 4.5e8
            // 12 µs: alpha 1 -> 0 (stops), tie with the increase timer (1,1): fast recovery.
            // 22 µs: timer (2,1): additive, Rt 5.1e8.
            (23_000, tx(3000)), // expiry (2,2): additive by bytes; 1500 left
            (24_000, tx(1)),    // remainder expiry (2,3): additive by bytes
            // 32 µs: timer (3,3): hyper, i = 1.
            (33_000, tx(1499)), // expiry (3,4): hyper by bytes, i = 1
            // 42 µs: timer (4,4): hyper, i = 2: Rt 7.3e8 + 2e8 = 9.3e8.
            (42_100, tx(1500)), // (4,5): i = 2, Rt 1.13e9 clamped to 1e9, odd sum: Rc 895507812
            (42_200, tx(1500)), // (4,6): hyper i = 2, clamped: Rc 947753906
            (42_300, tx(1500)), // (4,7): hyper i = 2, clamped: Rc 973876953
            (42_500, tx(100)),  // counted, no expiry
            (43_000, EventKind::RxCnp), // alpha 0: Rc unchanged; moves Rt; stages, bytes reset
            (44_000, EventKind::RxCnp), // alpha 1 in its period: 973876953 / 2 floored
        ];
        let mut out = Vec::new();
        for (i, (t_ns, kind)) in stream.into_iter().enumerate() {
            while let Some(d) = m.next_timer_ns().filter(|&d| d <= t_ns) {
                m.on_timer(d, &mut out);
            }
            m.on_event(
                &Event {
                    t_ns,
                    flow: 0,
                    index: i as u64,
                    kind,
                },
                &mut out,
            );
        }
        let last = out.last().unwrap();
        assert_eq!(last.outputs.rate_bps, Some(486_938_476));
        let counts: Vec<u64> = m.coverage().iter().map(|c| c.1).collect();
        #[rustfmt::skip]
        let want = [
            1, // R8 unthrottled tx_data
            1, 3, // first, later CNP
            2, // moves Rt: at 2 µs and 43 µs
            2, // in an alpha period: at 2 µs and 44 µs (at 43 µs the timer had stopped)
            1, 1, // resets stages, byte counter: 43 µs
            1, 1, // cut floored (44 µs), clamped to the minimum (2 µs)
            1, 1, 1, // alpha timer, stops at 0, tie: 12 µs
            4, 7, // increase timer 12, 22, 32, 42 µs; byte expiries
            2, 1, // a remainder kept (23, 24 µs); an expiry on the remainder (24 µs)
            1, 1, // fast recovery by timer, by bytes
            1, 2, // additive by timer, by bytes
            2, 4, // hyper by timer, by bytes
            4, // i >= 2: 42 µs and three byte expiries after it
            3, // Rt clamped at the line rate
            1, // odd sum: 42.1 µs
        ];
        assert_eq!(counts, want);
    }
}
