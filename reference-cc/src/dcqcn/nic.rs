//! DCQCN reaction point with NIC-firmware semantics, profile `dcqcn-nic` (DCQCN-4, C-4).
//!
//! What differs from the paper profile ([`crate::dcqcn::Rp`]), after NVIDIA's "DCQCN
//! Parameters" page (ConnectX-4 and later) and the open DCQCN NIC models cited in
//! `docs/models/dcqcn.md`:
//! - `alpha` is an integer with 10 fractional bits (1024 = 1.0, at most 1023), set to
//!   `initial_alpha_value` on the first CNP and updated once every `dce_tcp_rtt` µs by a
//!   free-running timer: `alpha = floor(G × alpha / 1024) + (1024 − G)` (capped at 1023) when a
//!   CNP arrived in the period, else `alpha = floor(G × alpha / 1024)`, with `G = dce_tcp_g`.
//! - A CNP does not cut the rate at once: it sets a flag, and a free-running timer checks the
//!   flag once every `rate_reduce_monitor_period` µs, so the rate is reduced at most once per
//!   period: `Rc = max(Rc − min(Rc × alpha >> rpg_gd, Rc × (100 − rpg_min_dec_fac) / 100),
//!   min rate)`; `Rt = Rc` first when `clamp_tgt_rate`, or a byte-counter increase happened,
//!   or (`clamp_tgt_rate_after_time_inc` and) a timer increase happened since the last cut.
//! - The first CNP allocates the rate limiter: both free-running timers start (phase origin),
//!   `Rc = Rt = rate_to_set_on_first_cnp` when that is non-zero (and this CNP cuts no further),
//!   else `Rc = Rt =` line rate and the CNP is flagged for the first periodic check.
//! - Rate increase: the same engine as the paper profile (DCQCN-3), with `B =
//!   rpg_byte_reset × 64` bytes.
//!
//! Idle periodic timers (alpha already 0 with no CNP flagged; no CNP flagged for the cut) are
//! not reported: skipping them changes nothing, and they are re-armed at their next phase point
//! after the CNP that needs them. Timers of one flow due at the same ns fire in the order
//! `alpha`, `rate_decrease`, `rate_increase` (C-5; the alpha update precedes the cut as in the
//! models cited; a cut restarts the increase timer, so an increase due at the same ns is
//! superseded).
//!
//! Decisions (C-6), each with `rate_bps = Rc` and [`RpNic::STATE_NAMES`]: every `rx_cnp`; a
//! `tx_data` that expires the byte counter; every timer firing that changes the state.

use serde::{Deserialize, Serialize};

use crate::dcqcn::flows::{FlowTable, ReactionPoint, Timed, rp_on_event, rp_on_timer};
use crate::dcqcn::increase::{IncreaseConfig, RateState};
use crate::dcqcn::{check_line_rate, err, next_phase_after, rate_mbps_to_bps, time_us_to_ns};
use crate::event::{Cause, Decision, Event, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};

/// `alpha = 1.0` in the 10-bit fixed point (C-4).
pub const ALPHA_ONE: u32 = 1024;
/// Largest `alpha` the 10-bit field holds.
pub const ALPHA_MAX: u32 = 1023;
/// The byte counter knob counts 64-byte units.
pub const BYTE_RESET_UNIT: u64 = 64;

/// `dcqcn-nic` parameters: the firmware knob names (mlxconfig / `roce_rp` sysfs), their units,
/// and NVIDIA's documented defaults (ConnectX-4 and later). `base_rtt_ns` and `mtu_bytes` are
/// accepted for the harness and unused.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicParams {
    /// Line rate, bps; flows start at it (default 100 Gbps).
    pub line_rate_bps: u64,
    /// Base RTT, ns (accepted, unused).
    pub base_rtt_ns: u64,
    /// MTU, bytes (accepted, unused).
    pub mtu_bytes: u64,
    /// `G`: alpha gain as a 10-bit fixed point, `(1 − g) = G / 1024`, 0..=1023 (default 1019).
    pub dce_tcp_g: u32,
    /// Alpha update period, µs (default 1).
    pub dce_tcp_rtt: u64,
    /// `alpha` set on the first CNP, 10-bit fixed point, 0..=1023 (default 1023).
    pub initial_alpha_value: u32,
    /// `Rc` and `Rt` on the first CNP, Mbps; 0 = keep the line rate (default 0).
    pub rate_to_set_on_first_cnp: u64,
    /// Largest single cut, as the percentage of `Rc` that must remain: 0..=100 (default 50;
    /// 100 disables cuts).
    pub rpg_min_dec_fac: u32,
    /// Lower clamp of `Rc`, Mbps (default 1).
    pub rpg_min_rate: u64,
    /// `log2(Gd)`: the cut is `Rc × alpha >> rpg_gd`, 0..=31 (default 11: `alpha / 2`).
    pub rpg_gd: u32,
    /// Period of the rate-reduction check, µs (default 4).
    pub rate_reduce_monitor_period: u64,
    /// Always set `Rt = Rc` on a cut (default false).
    pub clamp_tgt_rate: bool,
    /// Set `Rt = Rc` on a cut also after timer-driven increases (default true).
    pub clamp_tgt_rate_after_time_inc: bool,
    /// `T`, rate-increase timer period, µs (default 300).
    pub rpg_time_reset: u64,
    /// `B` in 64-byte units (default 32767, about 2 MB).
    pub rpg_byte_reset: u64,
    /// `F`, stage threshold (default 1).
    pub rpg_threshold: u32,
    /// `R_AI`, Mbps (default 5).
    pub rpg_ai_rate: u64,
    /// `R_HAI`, Mbps (default 50).
    pub rpg_hai_rate: u64,
}

impl Default for NicParams {
    fn default() -> Self {
        NicParams {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 0,
            mtu_bytes: 0,
            dce_tcp_g: 1019,
            dce_tcp_rtt: 1,
            initial_alpha_value: 1023,
            rate_to_set_on_first_cnp: 0,
            rpg_min_dec_fac: 50,
            rpg_min_rate: 1,
            rpg_gd: 11,
            rate_reduce_monitor_period: 4,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            rpg_time_reset: 300,
            rpg_byte_reset: 32767,
            rpg_threshold: 1,
            rpg_ai_rate: 5,
            rpg_hai_rate: 50,
        }
    }
}

/// Validated parameters in model units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NicConfig {
    inc: IncreaseConfig,
    g: u32,
    alpha_period_ns: u64,
    alpha0: u32,
    /// 0 = keep the line rate.
    first_cnp_bps: u64,
    min_dec_fac: u32,
    gd: u32,
    decrease_period_ns: u64,
    clamp_tgt_rate: bool,
    clamp_after_time_inc: bool,
}

impl NicParams {
    /// Reject values the model cannot run with, naming the parameter and why (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.config().map(|_| ())
    }

    fn config(&self) -> Result<NicConfig, ParamError> {
        check_line_rate(self.line_rate_bps)?;
        let line = self.line_rate_bps;
        if self.dce_tcp_g > ALPHA_MAX {
            return Err(err(
                "dce_tcp_g",
                self.dce_tcp_g,
                "must be in 0..=1023 (10-bit G)",
            ));
        }
        let alpha_period_ns = time_us_to_ns("dce_tcp_rtt", self.dce_tcp_rtt, 1)?;
        if self.initial_alpha_value > ALPHA_MAX {
            return Err(err(
                "initial_alpha_value",
                self.initial_alpha_value,
                "must be in 0..=1023 (10-bit fixed point, 1024 = 1.0)",
            ));
        }
        let first_cnp_bps = rate_mbps_to_bps(
            "rate_to_set_on_first_cnp",
            self.rate_to_set_on_first_cnp,
            0,
            line,
        )?;
        if self.rpg_min_dec_fac > 100 {
            return Err(err(
                "rpg_min_dec_fac",
                self.rpg_min_dec_fac,
                "must be in 0..=100 (%)",
            ));
        }
        let min_rate_bps = rate_mbps_to_bps("rpg_min_rate", self.rpg_min_rate, 1, line)?;
        if self.rpg_gd > 31 {
            return Err(err(
                "rpg_gd",
                self.rpg_gd,
                "must be in 0..=31 (a shift; 11 = alpha / 2)",
            ));
        }
        let decrease_period_ns = time_us_to_ns(
            "rate_reduce_monitor_period",
            self.rate_reduce_monitor_period,
            1,
        )?;
        let t_ns = time_us_to_ns("rpg_time_reset", self.rpg_time_reset, 1)?;
        if self.rpg_byte_reset == 0 || self.rpg_byte_reset > u64::from(u32::MAX) {
            return Err(err(
                "rpg_byte_reset",
                self.rpg_byte_reset,
                "must be in 1..=2^32-1 (units of 64 bytes)",
            ));
        }
        if self.rpg_threshold == 0 {
            return Err(err("rpg_threshold", 0, "must be >= 1"));
        }
        let ai_bps = rate_mbps_to_bps("rpg_ai_rate", self.rpg_ai_rate, 0, line)?;
        let hai_bps = rate_mbps_to_bps("rpg_hai_rate", self.rpg_hai_rate, 0, line)?;
        Ok(NicConfig {
            inc: IncreaseConfig {
                line_rate_bps: line,
                min_rate_bps,
                ai_bps,
                hai_bps,
                f: self.rpg_threshold,
                t_ns,
                b_bytes: self.rpg_byte_reset * BYTE_RESET_UNIT,
            },
            g: self.dce_tcp_g,
            alpha_period_ns,
            alpha0: self.initial_alpha_value,
            first_cnp_bps,
            min_dec_fac: self.rpg_min_dec_fac,
            gd: self.rpg_gd,
            decrease_period_ns,
            clamp_tgt_rate: self.clamp_tgt_rate,
            clamp_after_time_inc: self.clamp_tgt_rate_after_time_inc,
        })
    }
}

/// One flow of the NIC profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NicFlow {
    /// The first CNP allocated the rate limiter.
    limiter: bool,
    rate: RateState,
    /// `alpha`, 10 fractional bits.
    alpha: u32,
    alpha_cnp_arrived: bool,
    decrease_cnp_arrived: bool,
    /// Phase origin of both free-running timers (time of the first CNP).
    origin_ns: u64,
    alpha_deadline_ns: Option<u64>,
    decrease_deadline_ns: Option<u64>,
}

impl Timed for NicFlow {
    fn next_deadline_ns(&self) -> Option<u64> {
        [
            self.alpha_deadline_ns,
            self.decrease_deadline_ns,
            self.rate.increase_deadline_ns,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// One alpha update (C-4 widths: 10 fractional bits, floor by the shift, cap 1023).
#[inline]
fn alpha_update(alpha: u32, g: u32, cnp_arrived: bool) -> u32 {
    let decayed = (g * alpha) >> 10; // G <= 1023, alpha <= 1023: no overflow
    if cnp_arrived {
        (decayed + (ALPHA_ONE - g)).min(ALPHA_MAX)
    } else {
        decayed
    }
}

/// The firmware cut: `Rc − min(Rc × alpha >> gd, Rc × (100 − min_dec_fac) / 100)`, floored
/// by the integer shift and division, then clamped to `[min rate, line rate]`.
#[inline]
fn nic_cut(rc_bps: u64, alpha: u32, cfg: &NicConfig) -> u64 {
    let rc = u128::from(rc_bps);
    let by_alpha = (rc * u128::from(alpha)) >> cfg.gd;
    let by_fac = rc * u128::from(100 - cfg.min_dec_fac) / 100;
    let reduction = by_alpha.min(by_fac);
    // reduction <= rc since (100 - fac) / 100 <= 1.
    let rc_new = (rc - reduction) as u64;
    rc_new.clamp(cfg.inc.min_rate_bps, cfg.inc.line_rate_bps)
}

impl NicFlow {
    fn new(cfg: &NicConfig) -> Self {
        NicFlow {
            limiter: false,
            rate: RateState::at_line_rate(cfg.inc.line_rate_bps),
            alpha: cfg.alpha0,
            alpha_cnp_arrived: false,
            decrease_cnp_arrived: false,
            origin_ns: 0,
            alpha_deadline_ns: None,
            decrease_deadline_ns: None,
        }
    }

    fn state(&self) -> State {
        State::new(
            RpNic::STATE_NAMES,
            &[
                StateValue::U64(self.rate.rc_bps),
                StateValue::U64(self.rate.rt_bps),
                StateValue::U64(u64::from(self.alpha)),
                StateValue::U64(u64::from(self.rate.timer_stage)),
                StateValue::U64(u64::from(self.rate.byte_stage)),
                StateValue::U64(self.rate.byte_counter),
                StateValue::Bool(self.alpha_cnp_arrived),
                StateValue::Bool(self.decrease_cnp_arrived),
            ],
        )
    }

    fn on_cnp(&mut self, t_ns: u64, cfg: &NicConfig) {
        if !self.limiter {
            // First CNP: allocate the rate limiter, start both free-running timers.
            self.limiter = true;
            self.origin_ns = t_ns;
            self.alpha = cfg.alpha0;
            self.alpha_cnp_arrived = false;
            if cfg.first_cnp_bps > 0 {
                let r = cfg.first_cnp_bps.max(cfg.inc.min_rate_bps);
                self.rate.rc_bps = r;
                self.rate.rt_bps = r;
                self.decrease_cnp_arrived = false;
            } else {
                self.decrease_cnp_arrived = true;
            }
            self.rate.reset_increase(t_ns, &cfg.inc);
            self.alpha_deadline_ns = if self.alpha > 0 {
                t_ns.checked_add(cfg.alpha_period_ns)
            } else {
                None
            };
            self.decrease_deadline_ns = if self.decrease_cnp_arrived {
                t_ns.checked_add(cfg.decrease_period_ns)
            } else {
                None
            };
        } else {
            self.alpha_cnp_arrived = true;
            self.decrease_cnp_arrived = true;
            if self.alpha_deadline_ns.is_none() {
                self.alpha_deadline_ns =
                    next_phase_after(self.origin_ns, cfg.alpha_period_ns, t_ns);
            }
            if self.decrease_deadline_ns.is_none() {
                self.decrease_deadline_ns =
                    next_phase_after(self.origin_ns, cfg.decrease_period_ns, t_ns);
            }
        }
    }

    /// Fire this flow's timers due at `d`: alpha, rate_decrease, rate_increase (C-5).
    fn fire(&mut self, flow: FlowId, d: u64, cfg: &NicConfig, out: &mut Vec<Decision>) {
        if self.alpha_deadline_ns == Some(d) {
            let before = (self.alpha, self.alpha_cnp_arrived);
            self.alpha = alpha_update(self.alpha, cfg.g, self.alpha_cnp_arrived);
            self.alpha_cnp_arrived = false;
            self.alpha_deadline_ns = if self.alpha > 0 {
                d.checked_add(cfg.alpha_period_ns)
            } else {
                None
            };
            if (self.alpha, self.alpha_cnp_arrived) != before {
                out.push(self.decision(d, flow, Cause::Timer { name: "alpha" }));
            }
        }
        if self.decrease_deadline_ns == Some(d) {
            self.decrease_deadline_ns = None;
            if self.decrease_cnp_arrived {
                let r = &self.rate;
                let clamp = cfg.clamp_tgt_rate
                    || r.byte_stage > 0
                    || (cfg.clamp_after_time_inc && r.timer_stage > 0);
                if clamp {
                    self.rate.rt_bps = self.rate.rc_bps;
                }
                self.rate.rc_bps = nic_cut(self.rate.rc_bps, self.alpha, cfg);
                self.decrease_cnp_arrived = false;
                self.rate.reset_increase(d, &cfg.inc);
                out.push(self.decision(
                    d,
                    flow,
                    Cause::Timer {
                        name: "rate_decrease",
                    },
                ));
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

/// DCQCN sender with NIC-firmware semantics (`dcqcn-nic`, DCQCN-4).
#[derive(Clone, Debug)]
pub struct RpNic {
    params: NicParams,
    cfg: NicConfig,
    flows: FlowTable<NicFlow>,
}

impl RpNic {
    /// Decision state names, in order (C-6): `Rc`, `Rt` (bps), `alpha` (10-bit fixed point),
    /// the stage counters, the byte counter, and the two CNP-arrived flags.
    pub const STATE_NAMES: &'static [&'static str] = &[
        "Rc",
        "Rt",
        "alpha",
        "timer_stage",
        "byte_stage",
        "byte_counter",
        "alpha_cnp_arrived",
        "decrease_cnp_arrived",
    ];

    /// A model with validated parameters.
    pub fn new(params: NicParams) -> Result<Self, ParamError> {
        let cfg = params.config()?;
        Ok(RpNic {
            params,
            cfg,
            flows: FlowTable::new(),
        })
    }

    /// The parameters this model runs with.
    pub fn params(&self) -> &NicParams {
        &self.params
    }

    /// The current state record of `flow`, if it has been seen.
    pub fn flow_state(&self, flow: FlowId) -> Option<State> {
        self.flows.get(flow).map(NicFlow::state)
    }
}

impl Model for RpNic {
    fn name(&self) -> &'static str {
        "dcqcn-nic"
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

impl ReactionPoint for NicFlow {
    type Config = NicConfig;

    fn start(cfg: &NicConfig) -> Self {
        NicFlow::new(cfg)
    }

    fn cnp(&mut self, t_ns: u64, cfg: &NicConfig) {
        self.on_cnp(t_ns, cfg);
    }

    fn bytes_sent(&mut self, bytes: u64, cfg: &NicConfig) -> bool {
        self.limiter && self.rate.on_bytes_sent(bytes, &cfg.inc)
    }

    fn record(&self, t_ns: u64, flow: FlowId, cause: Cause) -> Decision {
        self.decision(t_ns, flow, cause)
    }

    fn fire_timers(
        &mut self,
        flow: FlowId,
        deadline_ns: u64,
        cfg: &NicConfig,
        out: &mut Vec<Decision>,
    ) {
        self.fire(flow, deadline_ns, cfg, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_fixed_point() {
        // G = 1019: 1019 × 1023 = 1042437, >> 10 = 1018; + (1024 − 1019) = 1023.
        assert_eq!(alpha_update(1023, 1019, true), 1023);
        assert_eq!(alpha_update(1023, 1019, false), 1018);
        // G = 0 (g = 1): CNP -> 0 + 1024, capped at 1023.
        assert_eq!(alpha_update(500, 0, true), 1023);
        assert_eq!(alpha_update(1, 1019, false), 0); // floor(1019 / 1024) = 0
    }
}
