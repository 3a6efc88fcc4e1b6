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

use crate::dcqcn::flows::{FlowTable, ReactionPoint, Timed, rp_on_event, rp_on_timer};
use crate::dcqcn::increase::{IncreaseConfig, RateState};
use crate::dcqcn::{check_line_rate, err, rate_mbps_to_bps, time_us_to_ns};
use crate::event::{Cause, Decision, Event, FlowId, Outputs, State, StateValue};
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

/// DCQCN sender, paper profile (`dcqcn`, DCQCN-3).
#[derive(Clone, Debug)]
pub struct Rp {
    params: RpParams,
    cfg: RpConfig,
    flows: FlowTable<RpFlow>,
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
        rp_on_event(&mut self.flows, &self.cfg, ev, out);
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.flows.next_deadline_ns()
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        rp_on_timer(&mut self.flows, &self.cfg, now_ns, out);
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

    fn fire_timers(
        &mut self,
        flow: FlowId,
        deadline_ns: u64,
        cfg: &RpConfig,
        out: &mut Vec<Decision>,
    ) {
        self.fire(flow, deadline_ns, cfg, out);
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
}
