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

use crate::dcqcn::flows::{FlowTable, ReactionPoint, Timed, rp_on_event};
use crate::dcqcn::increase::{IncreaseConfig, IncreaseTaken, RateState, byte_expiry};
use crate::dcqcn::{check_line_rate, err, next_phase_after, rate_mbps_to_bps, time_us_to_ns};
use crate::event::{Cause, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
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

/// The rules and branches of the NIC profile whose use `coverage()` counts, each named by its
/// row of docs/models/dcqcn.md (N1-N6, the R3-R7 rows it reuses, the choices) or its rule
/// (C-3, C-5); docs/conformance.md says which the bundled traces exercise. Counted once per
/// event or per flow's timers due at one ns that exercise them, observed from the flow's
/// state before and after (so counting cannot change a decision). A branch counts only where
/// it decided the outcome: N2's bounds and floor when the minimum-rate clamp did not override
/// them, each of N3's three conditions when it alone held.
pub const COVERAGE: [&str; 39] = [
    "choice 1 tx_data before the flow's first CNP: unthrottled, not counted",
    "choice 10 first CNP, rate_to_set_on_first_cnp = 0: line rate, cut flagged",
    "choice 10 first CNP, rate_to_set_on_first_cnp > 0: Rc = Rt = it, no cut",
    "R7 first-CNP rate raised to rpg_min_rate",
    "choice 11 first CNP with initial_alpha_value = 0: alpha timer idle",
    "N5 later CNP: flags set, nothing cut now",
    "N5 CNP while a cut is already flagged (one cut per period)",
    "choice 11 CNP re-arms an idle alpha timer at its next phase point",
    "choice 11 CNP re-arms an idle rate-decrease timer at its next phase point",
    "N1 alpha timer, CNP in the period: alpha raised",
    "N1 alpha raised, capped at 1023",
    "N1 alpha timer, no CNP in the period: alpha decays",
    "N1 choice 11 alpha reaches 0: its timer stops",
    "N5 rate-decrease timer: one cut",
    "N2 cut by alpha (Rc alpha >> rpg_gd the smaller), not clamped",
    "N2 cut limited by rpg_min_dec_fac, not clamped",
    "N2 C-3 cut floored (the reduction was not whole), not clamped",
    "N4 cut clamped to the minimum rate",
    "N3 Rt = Rc on clamp_tgt_rate alone",
    "N3 Rt = Rc on a byte-counter increase alone",
    "N3 Rt = Rc on a timer increase alone (clamp_tgt_rate_after_time_inc)",
    "N3 Rt kept: no clamp condition",
    "N4 cut resets advanced stages",
    "N4 cut resets a non-zero byte counter",
    "C-5 alpha and rate-decrease timers due at the same ns",
    "choice 9 a cut supersedes a rate increase due at the same ns",
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
    pub const FIRST_CNP_LINE: usize = 1;
    pub const FIRST_CNP_RATE: usize = 2;
    pub const FIRST_CNP_MIN: usize = 3;
    pub const FIRST_CNP_ALPHA_IDLE: usize = 4;
    pub const LATER_CNP: usize = 5;
    pub const CNP_ALREADY_FLAGGED: usize = 6;
    pub const REARM_ALPHA: usize = 7;
    pub const REARM_DECREASE: usize = 8;
    pub const ALPHA_RAISED: usize = 9;
    pub const ALPHA_CAPPED: usize = 10;
    pub const ALPHA_DECAYS: usize = 11;
    pub const ALPHA_STOPS: usize = 12;
    pub const CUT: usize = 13;
    pub const CUT_BY_ALPHA: usize = 14;
    pub const CUT_BY_FAC: usize = 15;
    pub const CUT_FLOORED: usize = 16;
    pub const CUT_MIN_CLAMP: usize = 17;
    pub const RT_BY_CLAMP_TGT: usize = 18;
    pub const RT_BY_BYTES: usize = 19;
    pub const RT_BY_TIME: usize = 20;
    pub const RT_KEPT: usize = 21;
    pub const CUT_RESETS_STAGES: usize = 22;
    pub const CUT_RESETS_BYTES: usize = 23;
    pub const TIE_ALPHA_DECREASE: usize = 24;
    pub const CUT_SUPERSEDES_INCREASE: usize = 25;
    pub const INCREASE_TIMER: usize = 26;
    pub const BYTE_EXPIRY: usize = 27;
    pub const BYTE_KEEPS_REMAINDER: usize = 28;
    pub const BYTE_REMAINDER_EXPIRES: usize = 29;
    /// Fast recovery by the timer; + 1: by the byte counter.
    pub const FAST: usize = 30;
    /// Additive increase by the timer; + 1: by the byte counter.
    pub const ADDITIVE: usize = 32;
    /// Hyper increase by the timer; + 1: by the byte counter.
    pub const HYPER: usize = 34;
    pub const HYPER_I2: usize = 36;
    pub const RT_LINE_CLAMP: usize = 37;
    pub const HALF_SUM_ODD: usize = 38;
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
fn covered_by_event(
    cfg: &NicConfig,
    before: &NicFlow,
    kind: &EventKind,
    after: &NicFlow,
) -> Covered {
    let mut c = [false; COVERAGE.len()];
    match *kind {
        EventKind::RxCnp if !before.limiter => {
            // Choice 10: the first CNP allocates the rate limiter.
            c[cov::FIRST_CNP_LINE] = cfg.first_cnp_bps == 0;
            c[cov::FIRST_CNP_RATE] = cfg.first_cnp_bps > 0;
            c[cov::FIRST_CNP_MIN] = cfg.first_cnp_bps > 0 && after.rate.rc_bps > cfg.first_cnp_bps;
            c[cov::FIRST_CNP_ALPHA_IDLE] = after.alpha_deadline_ns.is_none();
        }
        EventKind::RxCnp => {
            c[cov::LATER_CNP] = true;
            c[cov::CNP_ALREADY_FLAGGED] = before.decrease_cnp_arrived;
            c[cov::REARM_ALPHA] =
                before.alpha_deadline_ns.is_none() && after.alpha_deadline_ns.is_some();
            c[cov::REARM_DECREASE] =
                before.decrease_deadline_ns.is_none() && after.decrease_deadline_ns.is_some();
        }
        EventKind::TxData { bytes, .. } => {
            c[cov::TX_UNTHROTTLED] = !before.limiter;
            let b = &before.rate;
            let expiry = if before.limiter {
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

/// Which of [`COVERAGE`] the timers of one flow due at `d` exercised (alpha, rate_decrease,
/// rate_increase: C-5). Neither the rate-decrease nor the rate-increase timer changes alpha,
/// and the alpha timer changes no rate, so the cut is observed with `after.alpha` and the
/// rate state before.
fn covered_by_timers(cfg: &NicConfig, before: &NicFlow, d: u64, after: &NicFlow) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let alpha = before.alpha_deadline_ns == Some(d);
    let decrease = before.decrease_deadline_ns == Some(d);
    let increase = before.rate.increase_deadline_ns == Some(d);
    if alpha {
        if before.alpha_cnp_arrived {
            c[cov::ALPHA_RAISED] = true;
            // N1: floor(G alpha / 1024) + (1024 - G) above the 10-bit field.
            let raised = ((cfg.g * before.alpha) >> 10) + (ALPHA_ONE - cfg.g);
            c[cov::ALPHA_CAPPED] = raised > ALPHA_MAX;
        } else {
            c[cov::ALPHA_DECAYS] = true;
        }
        c[cov::ALPHA_STOPS] = after.alpha == 0 && after.alpha_deadline_ns.is_none();
    }
    c[cov::TIE_ALPHA_DECREASE] = alpha && decrease;
    let cut = decrease && before.decrease_cnp_arrived;
    let b = &before.rate;
    if cut {
        c[cov::CUT] = true;
        // N2 on the alpha the alpha timer left (it fires first at a tie).
        let rc = u128::from(b.rc_bps);
        let product = rc * u128::from(after.alpha);
        let by_alpha = product >> cfg.gd;
        let kept = rc * u128::from(100 - cfg.min_dec_fac);
        let by_fac = kept / 100;
        let clamped = rc - by_alpha.min(by_fac) < u128::from(cfg.inc.min_rate_bps);
        c[cov::CUT_MIN_CLAMP] = clamped;
        if !clamped {
            let floored = if by_alpha <= by_fac {
                c[cov::CUT_BY_ALPHA] = true;
                product & ((1u128 << cfg.gd) - 1) != 0
            } else {
                c[cov::CUT_BY_FAC] = true;
                kept % 100 != 0
            };
            c[cov::CUT_FLOORED] = floored;
        }
        // N3: each condition where it alone makes Rt = Rc (a DUT that drops one is told apart
        // only there); none: Rt kept.
        let conditions = [
            cfg.clamp_tgt_rate,
            b.byte_stage > 0,
            cfg.clamp_after_time_inc && b.timer_stage > 0,
        ];
        match conditions {
            [true, false, false] => c[cov::RT_BY_CLAMP_TGT] = true,
            [false, true, false] => c[cov::RT_BY_BYTES] = true,
            [false, false, true] => c[cov::RT_BY_TIME] = true,
            [false, false, false] => c[cov::RT_KEPT] = true,
            _ => {}
        }
        c[cov::CUT_RESETS_STAGES] = b.timer_stage > 0 || b.byte_stage > 0;
        c[cov::CUT_RESETS_BYTES] = b.byte_counter > 0;
        c[cov::CUT_SUPERSEDES_INCREASE] = increase;
    } else if increase {
        c[cov::INCREASE_TIMER] = true;
        covered_increase(&cfg.inc, b, &after.rate, false, &mut c);
    }
    c
}

#[inline]
fn count(into: &mut [u64; COVERAGE.len()], c: Covered) {
    for (n, hit) in into.iter_mut().zip(c) {
        *n += u64::from(hit);
    }
}

/// DCQCN sender with NIC-firmware semantics (`dcqcn-nic`, DCQCN-4).
#[derive(Clone, Debug)]
pub struct RpNic {
    params: NicParams,
    cfg: NicConfig,
    flows: FlowTable<NicFlow>,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
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
            covered: [0; COVERAGE.len()],
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
        if !matches!(ev.kind, EventKind::RxCnp | EventKind::TxData { .. }) {
            return; // not a DCQCN sender input (rp_on_event ignores it too)
        }
        let before = match self.flows.get(ev.flow) {
            Some(f) => *f,
            None => NicFlow::new(&self.cfg),
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

    /// Feed `stream` (t in ns, flow 0) to `m`, firing its timers first (C-5); the decisions.
    fn run(m: &mut RpNic, stream: &[(u64, EventKind)]) -> Vec<Decision> {
        let mut out = Vec::new();
        for (i, (t_ns, kind)) in stream.iter().enumerate() {
            while let Some(d) = m.next_timer_ns().filter(|d| d <= t_ns) {
                m.on_timer(d, &mut out);
            }
            let ev = Event {
                t_ns: *t_ns,
                flow: 0,
                index: i as u64,
                kind: *kind,
            };
            m.on_event(&ev, &mut out);
        }
        out
    }

    fn tx(bytes: u32) -> EventKind {
        EventKind::TxData {
            psn: 0,
            bytes,
            opcode: 0x0a,
        }
    }

    /// Every rule of [`COVERAGE`] on two hand-built flows, the counts tallied by hand from
    /// docs/models/dcqcn.md N1-N6, R3-R7 and choices 1, 7, 9-11 (rule numbers are positions in
    /// COVERAGE). Times in µs; state (Rc, Rt, alpha, stages (timer, byte), byte counter).
    ///
    /// B: line 1 Gbps, min 200 Mbps, rate_to_set_on_first_cnp 100 Mbps, G = 0 (alpha 1023 after
    /// a period with a CNP, 0 after one without), alpha0 = 0, alpha period 20, monitor period
    /// 10, T = 10, B = 16 x 64 = 1024 B, F = 2, R_AI 10, R_HAI 100 Mbps, min_dec_fac 60, gd 11,
    /// clamp_tgt_rate off, after_time_inc on. First CNP at 1: phase points 11, 21, ... (cut)
    /// and 21, 41, ... (alpha).
    /// - 0: tx unthrottled [0]. 1: first CNP, Rc = Rt = max(100, 200) Mbps [2, 3], alpha 0:
    ///   alpha timer idle [4]; increase at 11. 2: tx 1500, expiry, 476 left [27, 28], stages
    ///   (0, 1): fast recovery [31]. 3: CNP [5], re-arms alpha at 21 [7], cut at 11 [8].
    ///   4: CNP while flagged [5, 6].
    /// - 11: cut [13], alpha 0: by alpha, reduction 0, 200 Mbps not below the floor [14];
    ///   byte stage alone [19]; resets stages and 476 B [22, 23]; the increase due at 11
    ///   superseded [25]. 21: alpha raised, 1024 capped [9, 10]; increase (1, 0): fast [26, 30].
    /// - 22: CNP [5], cut at 31 [8]. 31: cut with alpha 1023: 200 Mbps x 0.6 below the floor
    ///   [13, 17]; timer stage alone [20]; resets (1, 0) [22]; supersedes [25]. 32: CNP [5],
    ///   cut at 41 [8]. 41: alpha raised, capped [9, 10]; cut, tie [13, 24], clamped [17],
    ///   stages (0, 0): Rt kept [21]; supersedes [25].
    /// - 51: increase (1, 0): fast [26, 30]. 52: tx 3000: 1976 left [27, 28], (1, 1) fast [31].
    ///   53: tx 100, 1976 >= B: expires again, 1052 left, (1, 2): additive, Rt 210, Rc 205 Mbps
    ///   [27, 28, 29, 33]. 54: tx 1, again, 29 left, (1, 3): Rt 220, Rc 212.5 [27, 28, 29,
    ///   33]. 61: alpha decays to 0, stops [11, 12]; increase (2, 3): additive, Rt 230, Rc
    ///   221.25 [26, 32]. 62: tx 1000, 5 left, (2, 4): Rt 240, Rc 230.625 [27, 28, 33].
    /// - 71: (3, 4): hyper i = 1, Rt 340, Rc 285.3125 [26, 34]. 72: tx 1100, 81 left, (3, 5):
    ///   hyper, Rt 440, Rc 362.65625 [27, 28, 35]. 81: (4, 5): i = 2, Rt 640, Rc 501328125
    ///   [26, 34, 36]. 82: tx 1000, 57 left, (4, 6): i = 2, Rt 840, Rc floor(1341328125 / 2)
    ///   = 670664062 [27, 28, 35, 36, 38]. 91: (5, 6): i = 3, Rt 1140 clamped to 1000,
    ///   Rc 835332031 [26, 34, 36, 37]. 92, 93: tx 1000 each, 33 and 9 left, (5, 7), (5, 8):
    ///   i = 3, clamped, odd sums: Rc 917666015, 958833007 [27, 28, 35, 36, 37, 38] x 2.
    /// - 94: CNP [5], re-arms alpha and the cut at 101 [7, 8]. 101: alpha raised, capped [9,
    ///   10]; cut, tie [13, 24]: Rc alpha >> 11 = 478948323 above Rc 40 / 100 = 383533202.8,
    ///   floored, Rc 575299805 [15, 16]; stages (5, 8) both clamp conditions: no N3 row;
    ///   resets (5, 8) and 9 B [22, 23]; supersedes [25]. 111: (1, 0): fast, Rc 767066406
    ///   [26, 30]. 121: alpha decays to 0, stops [11, 12]; (2, 0): additive, Rt 968833007,
    ///   Rc floor(1735899413 / 2) [26, 32, 38].
    /// - 122: CNP [5], alpha at 141, cut at 131 [7, 8]. 131: cut with alpha 0: by alpha,
    ///   reduction 0 [13, 14]; timer stage alone [20]; resets (2, 0) [22]; supersedes [25].
    ///   141: alpha raised, capped [9, 10]; (1, 0): fast, Rc = Rt = 867949706 [26, 30].
    ///   142: an ACK: not a sender input, nothing counted.
    ///
    /// A: line 1 Gbps, rate_to_set_on_first_cnp 0, clamp_tgt_rate on, alpha period, monitor
    /// period and T 10 µs, the other knobs NVIDIA's defaults (G 1019, alpha0 1023, min 1 Mbps,
    /// min_dec_fac 50). 0: tx [0]. 1: first CNP at the line rate, flagged [1]. 11: alpha
    /// decays to floor(1019 x 1023 / 1024) = 1018 [11]; cut, tie [13, 24]: 1e9 x 1018 >> 11 =
    /// 497070312.5 (floored) below 5e8: by alpha [14, 16], Rc 502929688; no increase yet:
    /// clamp_tgt_rate alone [18]; supersedes [25].
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let us = |t: u64| t * 1_000;
        let mut b = RpNic::new(NicParams {
            line_rate_bps: 1_000_000_000,
            dce_tcp_g: 0,
            dce_tcp_rtt: 20,
            initial_alpha_value: 0,
            rate_to_set_on_first_cnp: 100,
            rpg_min_dec_fac: 60,
            rpg_min_rate: 200,
            rpg_gd: 11,
            rate_reduce_monitor_period: 10,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            rpg_time_reset: 10,
            rpg_byte_reset: 16,
            rpg_threshold: 2,
            rpg_ai_rate: 10,
            rpg_hai_rate: 100,
            ..NicParams::default()
        })
        .unwrap();
        let cnp = EventKind::RxCnp;
        let stream_b = [
            (us(0), tx(1000)),
            (us(1), cnp),
            (us(2), tx(1500)),
            (us(3), cnp),
            (us(4), cnp),
            (us(22), cnp),
            (us(32), cnp),
            (us(52), tx(3000)),
            (us(53), tx(100)),
            (us(54), tx(1)),
            (us(62), tx(1000)),
            (us(72), tx(1100)),
            (us(82), tx(1000)),
            (us(92), tx(1000)),
            (us(93), tx(1000)),
            (us(94), cnp),
            (us(122), cnp),
            (
                us(142),
                EventKind::RxAck(crate::event::AckInfo {
                    psn: 0,
                    syndrome: 0,
                    int: None,
                    n: None,
                    cwnd: None,
                    rcc_flags: None,
                    ts_ns: None,
                }),
            ),
        ];
        let out = run(&mut b, &stream_b);
        let rate_at = |t: u64, name: &'static str| {
            out.iter()
                .find(|d| d.t_ns == us(t) && d.cause == Cause::Timer { name })
                .and_then(|d| d.outputs.rate_bps)
        };
        assert_eq!(rate_at(101, "rate_decrease"), Some(575_299_805));
        assert_eq!(out.last().unwrap().outputs.rate_bps, Some(867_949_706));
        let counts: Vec<u64> = b.coverage().iter().map(|c| c.1).collect();
        #[rustfmt::skip]
        let want_b = [
            1, // 0 unthrottled tx: 0
            0, 1, 1, 1, // first CNP: rate_to_set 0 / > 0, raised to the floor, alpha idle
            6, 1, // later CNPs: 3, 4, 22, 32, 94, 122; already flagged: 4
            3, 5, // re-arm alpha: 3, 94, 122; re-arm the cut: 3, 22, 32, 94, 122
            4, 4, 2, 2, // alpha raised, capped: 21, 41, 101, 141; decays, stops: 61, 121
            5, // cuts: 11, 31, 41, 101, 131
            2, 1, 1, 2, // by alpha: 11, 131; by min_dec_fac, floored: 101; clamped: 31, 41
            0, 1, 2, 1, // N3 alone: clamp_tgt_rate; bytes 11; timer 31, 131; kept 41
            4, 2, // resets stages: 11, 31, 101, 131; bytes: 11, 101
            2, 5, // alpha-cut tie: 41, 101; superseded increases: 11, 31, 41, 101, 131
            9, // increase timer: 21, 51, 61, 71, 81, 91, 111, 121, 141
            9, 9, 2, // expiries: 2, 52-54, 62, 72, 82, 92, 93, each leaving a remainder; again: 53, 54
            4, 2, // fast recovery by timer: 21, 51, 111, 141; by bytes: 2, 52
            2, 3, // additive by timer: 61, 121; by bytes: 53, 54, 62
            3, 4, 5, // hyper by timer: 71, 81, 91; by bytes: 72, 82, 92, 93; i >= 2: 81, 82, 91-93
            3, // Rt clamped at the line rate: 91, 92, 93
            4, // odd sums: 82, 92, 93, 121
        ];
        assert_eq!(counts, want_b);

        let mut a = RpNic::new(NicParams {
            line_rate_bps: 1_000_000_000,
            dce_tcp_rtt: 10,
            rate_reduce_monitor_period: 10,
            rpg_time_reset: 10,
            clamp_tgt_rate: true,
            ..NicParams::default()
        })
        .unwrap();
        let out = run(&mut a, &[(us(0), tx(1000)), (us(1), cnp), (us(12), tx(1))]);
        assert_eq!(out.last().unwrap().outputs.rate_bps, Some(502_929_688));
        let counts: Vec<u64> = a.coverage().iter().map(|c| c.1).collect();
        let mut want_a = [0; COVERAGE.len()];
        for rule in [0, 1, 11, 13, 14, 16, 18, 24, 25] {
            want_a[rule] = 1;
        }
        assert_eq!(counts, want_a);
    }
}
