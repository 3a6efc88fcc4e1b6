//! `dcqcn-ns3`: the simulator's "Mellanox's version of DCQCN" (`rdma-hw.cc`, `CC_MODE 1`):
//! `cnp_received_mlx`, `UpdateAlphaMlx`, `CheckRateDecreaseMlx`, `RateIncEventTimerMlx`,
//! `RateIncEventMlx`, `FastRecoveryMlx`, `ActiveIncreaseMlx`, `HyperIncreaseMlx`; state
//! `RdmaQueuePair::mlx` (`rdma-queue-pair.h`).
//!
//! Per flow: the rate `m_rate` (Rc), the target rate `m_targetRate` (Rt), `m_alpha`, the two
//! "CNP arrived" bits, `m_rpTimeStage`, and three ns-3 events that become model timers (C-5):
//! the alpha update (every `ALPHA_RESUME_INTERVAL`), the rate-decrease check (every
//! `RATE_DECREASE_INTERVAL`, first one 1 ns later) — both started by the flow's first CNP and
//! then running for the life of the flow — and the rate-increase timer (`RP_TIMER`), restarted
//! by every decrease. There is no byte counter in the simulator.
//!
//! Timers of one flow due at the same ns fire in the order ns-3 would run them: the order they
//! were scheduled (ns-3's scheduler breaks time ties by event uid, which grows with each
//! `Simulator::Schedule`). Each timer carries that scheduling sequence number.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::{Deserialize, Serialize};

use super::{check_line_rate, check_min_rate, check_step, cxx_f64_to_u64, err, flag, interval_ns};
use crate::event::{Cause, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};

/// `dcqcn-ns3` parameters (C-7). Keys are the simulator's config names (`mix/config.txt`);
/// intervals in µs as the config writes them, rates in bps, flags 0/1. Defaults are
/// `mix/config.txt`'s (see `docs/models/ns3.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnNs3Params {
    /// NIC line rate, bps: the start rate and the target-rate clamp (default 100 Gbps).
    pub line_rate_bps: u64,
    /// Base RTT, ns (accepted, unused).
    pub base_rtt_ns: u64,
    /// Packet payload, bytes (accepted, unused).
    pub mtu_bytes: u64,
    /// `ALPHA_RESUME_INTERVAL`: alpha update period, µs (`m_alpha_resume_interval`).
    #[serde(rename = "ALPHA_RESUME_INTERVAL")]
    pub alpha_resume_interval: f64,
    /// `RATE_DECREASE_INTERVAL`: rate-decrease check period, µs (`m_rateDecreaseInterval`).
    #[serde(rename = "RATE_DECREASE_INTERVAL")]
    pub rate_decrease_interval: f64,
    /// `RP_TIMER`: rate-increase timer period, µs (`m_rpgTimeReset`).
    #[serde(rename = "RP_TIMER")]
    pub rp_timer: f64,
    /// `EWMA_GAIN`: g of the alpha EWMA (`m_g`), in [0, 1].
    #[serde(rename = "EWMA_GAIN")]
    pub ewma_gain: f64,
    /// `FAST_RECOVERY_TIMES`: timer rounds of fast recovery (`m_rpgThreshold`).
    #[serde(rename = "FAST_RECOVERY_TIMES")]
    pub fast_recovery_times: u32,
    /// `RATE_AI`: additive step of the target rate, bps (`m_rai`).
    #[serde(rename = "RATE_AI")]
    pub rate_ai: u64,
    /// `RATE_HAI`: hyper-additive step of the target rate, bps (`m_rhai`).
    #[serde(rename = "RATE_HAI")]
    pub rate_hai: u64,
    /// `MIN_RATE`: lower clamp of a decrease, bps (`m_minRate`).
    #[serde(rename = "MIN_RATE")]
    pub min_rate: u64,
    /// `CLAMP_TARGET_RATE`: every decrease sets the target rate (`m_EcnClampTgtRate`).
    #[serde(rename = "CLAMP_TARGET_RATE", deserialize_with = "flag")]
    pub clamp_target_rate: bool,
    /// `RATE_ON_FIRST_CNP`: fraction of the rate kept on the first CNP (`m_rateOnFirstCNP`),
    /// in (0, 1].
    #[serde(rename = "RATE_ON_FIRST_CNP")]
    pub rate_on_first_cnp: f64,
}

impl Default for DcqcnNs3Params {
    fn default() -> Self {
        DcqcnNs3Params {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 13_000,
            mtu_bytes: 1000,
            alpha_resume_interval: 1.0,
            rate_decrease_interval: 4.0,
            rp_timer: 900.0,
            ewma_gain: 0.00390625,
            fast_recovery_times: 1,
            rate_ai: 50_000_000,
            rate_hai: 100_000_000,
            min_rate: 100_000_000,
            clamp_target_rate: false,
            rate_on_first_cnp: 1.0,
        }
    }
}

/// Validated parameters in model units.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    line_rate_bps: u64,
    alpha_ns: u64,
    decrease_ns: u64,
    rp_ns: u64,
    g: f64,
    threshold: u32,
    rai_bps: u64,
    rhai_bps: u64,
    min_rate_bps: u64,
    clamp_target_rate: bool,
    rate_on_first_cnp: f64,
}

impl DcqcnNs3Params {
    /// Reject values the model cannot run with, naming the parameter and why (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.config().map(|_| ())
    }

    fn config(&self) -> Result<Config, ParamError> {
        check_line_rate(self.line_rate_bps)?;
        let line = self.line_rate_bps;
        let alpha_ns = interval_ns("ALPHA_RESUME_INTERVAL", self.alpha_resume_interval)?;
        let decrease_ns = interval_ns("RATE_DECREASE_INTERVAL", self.rate_decrease_interval)?;
        let rp_ns = interval_ns("RP_TIMER", self.rp_timer)?;
        let g = self.ewma_gain;
        if !(g.is_finite() && (0.0..=1.0).contains(&g)) {
            return Err(err("EWMA_GAIN", g, "must be in [0, 1]"));
        }
        check_step("RATE_AI", self.rate_ai, line)?;
        check_step("RATE_HAI", self.rate_hai, line)?;
        check_min_rate(self.min_rate, line)?;
        let f = self.rate_on_first_cnp;
        if !(f.is_finite() && f > 0.0 && f <= 1.0) {
            return Err(err("RATE_ON_FIRST_CNP", f, "must be in (0, 1]"));
        }
        Ok(Config {
            line_rate_bps: line,
            alpha_ns,
            decrease_ns,
            rp_ns,
            g,
            threshold: self.fast_recovery_times,
            rai_bps: self.rate_ai,
            rhai_bps: self.rate_hai,
            min_rate_bps: self.min_rate,
            clamp_target_rate: self.clamp_target_rate,
            rate_on_first_cnp: f,
        })
    }
}

/// A pending ns-3 event of a flow: its time and its scheduling sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Deadline, ns.
    pub at_ns: u64,
    /// Scheduling order within the flow (ns-3 runs same-time events in this order).
    pub seq: u64,
}

/// Which of a flow's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Which {
    Alpha,
    Decrease,
    RateIncrease,
}

/// Per-flow state (`RdmaQueuePair::mlx` and `m_rate`), named as in the simulator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowState {
    /// `m_rate`: the sending rate Rc, bps.
    pub rate_bps: u64,
    /// `mlx.m_targetRate`: the target rate Rt, bps.
    pub target_rate_bps: u64,
    /// `mlx.m_alpha`.
    pub alpha: f64,
    /// `mlx.m_alpha_cnp_arrived`.
    pub alpha_cnp_arrived: bool,
    /// `mlx.m_decrease_cnp_arrived`.
    pub decrease_cnp_arrived: bool,
    /// `mlx.m_first_cnp`.
    pub first_cnp: bool,
    /// `mlx.m_rpTimeStage` (saturates at u32::MAX instead of wrapping).
    pub rp_time_stage: u32,
    /// `mlx.m_eventUpdateAlpha`.
    pub alpha_event: Option<Pending>,
    /// `mlx.m_eventDecreaseRate`.
    pub decrease_event: Option<Pending>,
    /// `mlx.m_rpTimer`.
    pub rp_event: Option<Pending>,
    next_seq: u64,
}

impl FlowState {
    /// `RdmaHw::AddQueuePair` (`m_rate = m_targetRate = line rate`) and the `RdmaQueuePair`
    /// constructor (`m_alpha = 1`, `m_first_cnp = true`, bits false, stage 0).
    fn new(cfg: &Config) -> Self {
        FlowState {
            rate_bps: cfg.line_rate_bps,
            target_rate_bps: cfg.line_rate_bps,
            alpha: 1.0,
            alpha_cnp_arrived: false,
            decrease_cnp_arrived: false,
            first_cnp: true,
            rp_time_stage: 0,
            alpha_event: None,
            decrease_event: None,
            rp_event: None,
            next_seq: 0,
        }
    }

    /// `Simulator::Schedule(delay, ...)`: `None` past the end of u64 time (never fires).
    fn schedule(&mut self, now_ns: u64, delay_ns: u64) -> Option<Pending> {
        let seq = self.next_seq;
        self.next_seq += 1;
        now_ns
            .checked_add(delay_ns)
            .map(|at_ns| Pending { at_ns, seq })
    }

    fn slot(&mut self, w: Which) -> &mut Option<Pending> {
        match w {
            Which::Alpha => &mut self.alpha_event,
            Which::Decrease => &mut self.decrease_event,
            Which::RateIncrease => &mut self.rp_event,
        }
    }

    /// `cnp_received_mlx` at `t`.
    fn cnp(&mut self, t: u64, cfg: &Config) {
        self.alpha_cnp_arrived = true;
        self.decrease_cnp_arrived = true;
        if self.first_cnp {
            self.alpha = 1.0;
            self.alpha_cnp_arrived = false;
            // ScheduleUpdateAlphaMlx, then ScheduleDecreaseRateMlx(q, 1): "add 1 ns to make
            // sure rate decrease is after alpha update".
            self.alpha_event = self.schedule(t, cfg.alpha_ns);
            self.decrease_event = self.schedule(t, cfg.decrease_ns + 1);
            // `m_targetRate = m_rate = m_rateOnFirstCNP * m_rate`: DataRate(bps × c).
            let r = cxx_f64_to_u64(self.rate_bps as f64 * cfg.rate_on_first_cnp);
            self.rate_bps = r;
            self.target_rate_bps = r;
            self.first_cnp = false;
        }
    }

    /// `UpdateAlphaMlx` at `t`.
    fn update_alpha(&mut self, t: u64, cfg: &Config) {
        if self.alpha_cnp_arrived {
            self.alpha = (1.0 - cfg.g) * self.alpha + cfg.g;
        } else {
            self.alpha *= 1.0 - cfg.g; // `(1 - m_g) * m_alpha`: multiplication commutes
        }
        self.alpha_cnp_arrived = false;
        self.alpha_event = self.schedule(t, cfg.alpha_ns);
    }

    /// `CheckRateDecreaseMlx` at `t`; true when it cut the rate.
    fn check_rate_decrease(&mut self, t: u64, cfg: &Config) -> bool {
        self.decrease_event = self.schedule(t, cfg.decrease_ns);
        if !self.decrease_cnp_arrived {
            return false;
        }
        let clamp = cfg.clamp_target_rate || self.rp_time_stage != 0;
        if clamp {
            self.target_rate_bps = self.rate_bps;
        }
        // `std::max(m_minRate, m_rate * (1 - m_alpha / 2))`
        let cut = cxx_f64_to_u64(self.rate_bps as f64 * (1.0 - self.alpha / 2.0));
        self.rate_bps = if cfg.min_rate_bps < cut {
            cut
        } else {
            cfg.min_rate_bps
        };
        self.rp_time_stage = 0;
        self.decrease_cnp_arrived = false;
        // Cancel m_rpTimer and schedule it RP_TIMER from now.
        self.rp_event = self.schedule(t, cfg.rp_ns);
        true
    }

    /// `RateIncEventTimerMlx` at `t`: reschedule, `RateIncEventMlx`, `m_rpTimeStage++`.
    fn rate_increase(&mut self, t: u64, cfg: &Config) {
        self.rp_event = self.schedule(t, cfg.rp_ns);
        let half = |bps: u64| cxx_f64_to_u64(bps as f64 / 2.0); // DataRate / 2
        if self.rp_time_stage < cfg.threshold {
            // FastRecoveryMlx
        } else {
            // ActiveIncreaseMlx (stage == threshold) or HyperIncreaseMlx (stage > threshold)
            let step = if self.rp_time_stage == cfg.threshold {
                cfg.rai_bps
            } else {
                cfg.rhai_bps
            };
            self.target_rate_bps = self.target_rate_bps.wrapping_add(step);
            if self.target_rate_bps > cfg.line_rate_bps {
                self.target_rate_bps = cfg.line_rate_bps;
            }
        }
        // `m_rate = (m_rate / 2) + (m_targetRate / 2)`
        self.rate_bps = half(self.rate_bps).wrapping_add(half(self.target_rate_bps));
        self.rp_time_stage = self.rp_time_stage.saturating_add(1);
    }

    fn state(&self) -> State {
        State::new(
            STATE_NAMES,
            &[
                StateValue::U64(self.rate_bps),
                StateValue::U64(self.target_rate_bps),
                StateValue::F64(self.alpha),
                StateValue::U64(u64::from(self.rp_time_stage)),
                StateValue::Bool(self.alpha_cnp_arrived),
                StateValue::Bool(self.decrease_cnp_arrived),
            ],
        )
    }

    /// The earliest pending timer: (deadline, seq, which).
    fn earliest(&self) -> Option<(u64, u64, Which)> {
        [
            (self.alpha_event, Which::Alpha),
            (self.decrease_event, Which::Decrease),
            (self.rp_event, Which::RateIncrease),
        ]
        .into_iter()
        .filter_map(|(p, w)| p.map(|p| (p.at_ns, p.seq, w)))
        .min()
    }
}

/// State names of every decision, in order (C-6): `Rc` = `m_rate`, `Rt` = `m_targetRate`
/// (bps), `alpha`, `timer_stage` = `m_rpTimeStage`, and the two "CNP arrived" bits.
pub const STATE_NAMES: &[&str] = &[
    "Rc",
    "Rt",
    "alpha",
    "timer_stage",
    "alpha_cnp_arrived",
    "decrease_cnp_arrived",
];

/// The rules and branches of `dcqcn-ns3` whose use `coverage()` counts, named by their rows of
/// docs/models/ns3.md (the `*Mlx` functions, D2-D7) or the project rule (C-3);
/// docs/conformance.md says which bundled trace exercises which. Counted once per event or
/// timer firing that exercises them, observed from the flow's state before and after it
/// (nothing allocated; counting cannot change a decision).
pub const COVERAGE: [&str; 20] = [
    "D5 tx_data: no byte counter, nothing changes",
    "cnp_received_mlx first CNP: alpha = 1, alpha and decrease timers started",
    "D7 first CNP with RATE_ON_FIRST_CNP < 1: Rc = Rt lowered",
    "cnp_received_mlx later CNP: both CNP bits set",
    "D2 CNP while a cut is already pending (one cut per interval)",
    "D3 alpha timer, CNP in the interval: alpha = (1 - g) alpha + g",
    "D3 alpha timer, no CNP in the interval: alpha = (1 - g) alpha",
    "D2 decrease check without a CNP: no cut",
    "D2 decrease check after a CNP: cut, rate-increase timer restarted",
    "D4 cut: Rt = Rc, a rate-increase round ran since the last cut",
    "D4 cut: Rt = Rc on CLAMP_TARGET_RATE alone (no round since the last cut)",
    "D4 cut: Rt kept (no round since the last cut, CLAMP_TARGET_RATE 0)",
    "C-3 cut truncated (Rc (1 - alpha/2) not whole), not clamped",
    "D7 cut clamped to MIN_RATE",
    "D5 fast recovery: timer_stage < F",
    "D5 additive increase: timer_stage = F, Rt += RATE_AI",
    "D5 hyper increase: timer_stage > F, Rt += RATE_HAI",
    "Rt clamped at the line rate",
    "C-3 Rc/2 + Rt/2 truncated (an odd rate)",
    "ns-3 order: a rate increase and a decrease check due at the same ns",
];

/// Indices into [`COVERAGE`].
mod cov {
    pub const TX_DATA: usize = 0;
    pub const FIRST_CNP: usize = 1;
    pub const FIRST_CNP_LOWERS: usize = 2;
    pub const LATER_CNP: usize = 3;
    pub const CNP_CUT_PENDING: usize = 4;
    pub const ALPHA_RAISED: usize = 5;
    pub const ALPHA_DECAYS: usize = 6;
    pub const CHECK_NO_CUT: usize = 7;
    pub const CUT: usize = 8;
    pub const CUT_RT_AFTER_ROUND: usize = 9;
    pub const CUT_RT_CLAMP_FLAG: usize = 10;
    pub const CUT_RT_KEPT: usize = 11;
    pub const CUT_TRUNCATED: usize = 12;
    pub const CUT_MIN_CLAMP: usize = 13;
    pub const FAST_RECOVERY: usize = 14;
    pub const ADDITIVE: usize = 15;
    pub const HYPER: usize = 16;
    pub const RT_LINE_CLAMP: usize = 17;
    pub const HALF_TRUNCATED: usize = 18;
    pub const TIE: usize = 19;
}

type Covered = [bool; COVERAGE.len()];

/// Which of [`COVERAGE`] one `rx_cnp` exercised (`b`: the flow's state before it).
fn covered_by_cnp(cfg: &Config, b: &FlowState) -> Covered {
    let mut c = [false; COVERAGE.len()];
    c[cov::FIRST_CNP] = b.first_cnp;
    c[cov::FIRST_CNP_LOWERS] = b.first_cnp && cfg.rate_on_first_cnp < 1.0;
    c[cov::LATER_CNP] = !b.first_cnp;
    c[cov::CNP_CUT_PENDING] = !b.first_cnp && b.decrease_cnp_arrived;
    c
}

/// Which of [`COVERAGE`] one timer firing (`which`, due at `at`) exercised, from the flow's
/// state before (`b`) and after (`a`) it.
fn covered_by_timer(cfg: &Config, which: Which, at: u64, b: &FlowState, a: &FlowState) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let due = |p: Option<Pending>| p.is_some_and(|p| p.at_ns == at);
    match which {
        Which::Alpha => {
            c[cov::ALPHA_RAISED] = b.alpha_cnp_arrived;
            c[cov::ALPHA_DECAYS] = !b.alpha_cnp_arrived;
        }
        Which::Decrease => {
            // Counted once, by the first of the two to fire (it clears its own slot).
            c[cov::TIE] = due(b.rp_event);
            if !b.decrease_cnp_arrived {
                c[cov::CHECK_NO_CUT] = true;
                return c;
            }
            c[cov::CUT] = true;
            c[cov::CUT_RT_AFTER_ROUND] = b.rp_time_stage != 0;
            c[cov::CUT_RT_CLAMP_FLAG] = b.rp_time_stage == 0 && cfg.clamp_target_rate;
            c[cov::CUT_RT_KEPT] = b.rp_time_stage == 0 && !cfg.clamp_target_rate;
            // Which branch decided the new rate: the minimum, or the truncated product.
            let product = b.rate_bps as f64 * (1.0 - b.alpha / 2.0);
            let clamped = cxx_f64_to_u64(product) < cfg.min_rate_bps;
            c[cov::CUT_MIN_CLAMP] = clamped;
            c[cov::CUT_TRUNCATED] = !clamped && product.fract() != 0.0;
        }
        Which::RateIncrease => {
            c[cov::TIE] = due(b.decrease_event);
            let stage = b.rp_time_stage;
            c[cov::FAST_RECOVERY] = stage < cfg.threshold;
            c[cov::ADDITIVE] = stage == cfg.threshold;
            c[cov::HYPER] = stage > cfg.threshold;
            let step = if stage == cfg.threshold {
                cfg.rai_bps
            } else {
                cfg.rhai_bps
            };
            c[cov::RT_LINE_CLAMP] =
                stage >= cfg.threshold && b.target_rate_bps.wrapping_add(step) > cfg.line_rate_bps;
            // `m_rate / 2 + m_targetRate / 2`: each half truncated when its rate is odd.
            c[cov::HALF_TRUNCATED] = b.rate_bps % 2 == 1 || a.target_rate_bps % 2 == 1;
        }
    }
    c
}

#[inline]
fn count(into: &mut [u64; COVERAGE.len()], c: Covered) {
    for (n, hit) in into.iter_mut().zip(c) {
        *n += u64::from(hit);
    }
}

/// The `dcqcn-ns3` reaction-point model.
///
/// Events: `rx_cnp` runs `cnp_received_mlx` and decides; other events are not inputs (the
/// simulator has no byte counter). Timers: `alpha` (no decision: alpha shows in the next
/// one), `rate_decrease` (decides when it cut the rate), `rate_increase` (decides).
#[derive(Clone, Debug)]
pub struct DcqcnNs3 {
    cfg: Config,
    flows: BTreeMap<FlowId, FlowState>,
    /// Every flow's earliest timer: (deadline, flow, seq). Entries whose flow's earliest
    /// timer changed are stale and skipped; the top is always a live entry.
    heap: BinaryHeap<Reverse<(u64, FlowId, u64)>>,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
}

impl DcqcnNs3 {
    /// A model with validated parameters.
    pub fn new(params: &DcqcnNs3Params) -> Result<Self, ParamError> {
        Ok(DcqcnNs3 {
            cfg: params.config()?,
            flows: BTreeMap::new(),
            heap: BinaryHeap::new(),
            covered: [0; COVERAGE.len()],
        })
    }

    /// The state of a flow, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&FlowState> {
        self.flows.get(&flow)
    }

    /// Push the flow's earliest timer (if any), then drop stale entries from the top.
    fn requeue(&mut self, flow: FlowId) {
        if let Some((at, seq, _)) = self.flows.get(&flow).and_then(FlowState::earliest) {
            self.heap.push(Reverse((at, flow, seq)));
        }
        self.clean();
    }

    fn is_live(&self, at: u64, flow: FlowId, seq: u64) -> bool {
        self.flows
            .get(&flow)
            .and_then(FlowState::earliest)
            .is_some_and(|(a, s, _)| a == at && s == seq)
    }

    fn clean(&mut self) {
        while let Some(&Reverse((at, flow, seq))) = self.heap.peek() {
            if self.is_live(at, flow, seq) {
                break;
            }
            self.heap.pop();
        }
    }

    fn decision(t_ns: u64, flow: FlowId, cause: Cause, st: &FlowState) -> Decision {
        Decision {
            t_ns,
            flow,
            cause,
            outputs: Outputs {
                rate_bps: Some(st.rate_bps),
                ..Outputs::default()
            },
            state: st.state(),
        }
    }

    /// Fire one flow's earliest timer (due at `at`).
    fn fire_one(&mut self, flow: FlowId, out: &mut Vec<Decision>) {
        let cfg = self.cfg;
        let Some(st) = self.flows.get_mut(&flow) else {
            return;
        };
        let Some((at, _, which)) = st.earliest() else {
            return;
        };
        let before = *st;
        *st.slot(which) = None;
        match which {
            Which::Alpha => st.update_alpha(at, &cfg),
            Which::Decrease => {
                if st.check_rate_decrease(at, &cfg) {
                    out.push(Self::decision(
                        at,
                        flow,
                        Cause::Timer {
                            name: "rate_decrease",
                        },
                        st,
                    ));
                }
            }
            Which::RateIncrease => {
                st.rate_increase(at, &cfg);
                out.push(Self::decision(
                    at,
                    flow,
                    Cause::Timer {
                        name: "rate_increase",
                    },
                    st,
                ));
            }
        }
        count(
            &mut self.covered,
            covered_by_timer(&cfg, which, at, &before, st),
        );
    }
}

impl Model for DcqcnNs3 {
    fn name(&self) -> &'static str {
        "dcqcn-ns3"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        if ev.kind != EventKind::RxCnp {
            if matches!(ev.kind, EventKind::TxData { .. }) {
                self.covered[cov::TX_DATA] += 1; // D5: no byte counter
            }
            return;
        }
        let cfg = self.cfg;
        let st = self
            .flows
            .entry(ev.flow)
            .or_insert_with(|| FlowState::new(&cfg));
        count(&mut self.covered, covered_by_cnp(&cfg, st));
        let before = st.earliest();
        st.cnp(ev.t_ns, &cfg);
        out.push(Self::decision(ev.t_ns, ev.flow, ev.cause(), st));
        if st.earliest() != before {
            self.requeue(ev.flow);
        }
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }

    /// Fires the timers due at the earliest pending deadline, if it is at or before
    /// `now_ns` (normally `now_ns` itself), in (flow, scheduling order) order. The timers they
    /// schedule are at least 1 ns later, so they wait for the next call.
    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        let Some(d) = self.next_timer_ns() else {
            return;
        };
        if d > now_ns {
            return;
        }
        // The top is always live (`clean`), and each firing re-cleans.
        while let Some(&Reverse((at, flow, _))) = self.heap.peek() {
            if at != d {
                break;
            }
            self.heap.pop();
            self.fire_one(flow, out);
            self.requeue(flow);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `(t_ns, kind)` of flow 0, firing the timers due at or before each event first
    /// (C-5); the coverage counts and the last decision's rate.
    fn run(p: &DcqcnNs3Params, stream: &[(u64, EventKind)]) -> (Vec<u64>, u64) {
        let mut m = DcqcnNs3::new(p).unwrap();
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
        let counts = m.coverage().iter().map(|c| c.1).collect();
        (counts, out.last().unwrap().outputs.rate_bps.unwrap())
    }

    const TX: EventKind = EventKind::TxData {
        psn: 0,
        bytes: 1000,
        opcode: 0x0a,
    };

    /// Every rule of [`COVERAGE`] on two hand-built flows, counted by hand from
    /// docs/models/ns3.md (the `*Mlx` functions). Alpha every 1 µs, decrease checks every
    /// 4 µs from the first CNP + 4 µs + 1 ns, RP_TIMER 8 µs (so every increase falls on a
    /// check and, scheduled 8 µs ahead rather than 4, runs first), g = 1: an alpha update sets
    /// alpha to 1 after a CNP in its interval, else to 0, so each cut below halves the rate.
    #[test]
    fn coverage_counts_every_rule_on_hand_streams() {
        // Line 1 Gbps, F 1, AI 100 Mbps, HAI 400 Mbps, MIN 300 Mbps, CLAMP_TARGET_RATE 0.
        let p = DcqcnNs3Params {
            line_rate_bps: 1_000_000_000,
            rp_timer: 8.0,
            ewma_gain: 1.0,
            rate_ai: 100_000_000,
            rate_hai: 400_000_000,
            min_rate: 300_000_000,
            ..DcqcnNs3Params::default()
        };
        // CNP at 1 µs: first (alpha 1, Rc = Rt = 1e9); alpha 2..4 µs decays to 0.
        // 4.5 µs: a CNP with the first one's cut pending; alpha 5 µs raised to 1.
        //   5.001 µs: cut, Rt kept (no round yet): 1e9 / 2 = 5e8, exact. Increase at 13.001.
        // 8.5 µs: CNP; alpha 9 µs raised. 9.001: cut, Rt kept: 2.5e8 < 3e8: MIN_RATE 3e8;
        //   the increase moves to 17.001. 13.001: check, no CNP.
        // 17.001: increase (first, tie with a check), stage 0: fast recovery, Rc = 1.5e8 + 5e8
        //   = 6.5e8; the check finds no CNP.
        // 20.5 µs: CNP; alpha 21 µs raised. 21.001: cut after a round: Rt = Rc = 6.5e8, Rc =
        //   3.25e8 (exact, above MIN). Increase at 29.001; 25.001 check, no CNP.
        // 29.001: fast recovery, Rc = 1.625e8 + 3.25e8 = 4.875e8 (stage 1); check, no CNP.
        // 33.001: check. 37.001: additive, Rt 7.5e8, Rc = 2.4375e8 + 3.75e8 = 6.1875e8
        //   (stage 2); check. 41.001: check. 45.001: hyper, Rt 7.5e8 + 4e8 = 1.15e9 clamped to
        //   1e9, Rc = 3.09375e8 + 5e8 = 809,375,000; check. Every halved rate is even.
        // Alpha updates 2..45 µs: 44, raised at 5, 9, 21 µs. Checks 5.001 + 4k µs up to 45.001:
        // 11, 3 of them cuts.
        let stream = [
            (0, TX),
            (1_000, EventKind::RxCnp),
            (4_500, EventKind::RxCnp),
            (8_500, EventKind::RxCnp),
            (20_500, EventKind::RxCnp),
            (45_500, TX),
        ];
        let (counts, rate) = run(&p, &stream);
        assert_eq!(rate, 809_375_000);
        #[rustfmt::skip]
        let want = [
            2, // tx_data
            1, 0, 3, 1, // first CNP (not lowered), later CNPs, one with a cut pending (4.5 µs)
            3, 41, // alpha raised, decayed
            8, 3, // checks without and with a cut
            1, 0, 2, // Rt = Rc after a round (21.001); by the flag; kept (5.001, 9.001)
            0, 1, // truncated cut, MIN_RATE (9.001)
            2, 1, 1, // fast recovery (17.001, 29.001), additive (37.001), hyper (45.001)
            1, 0, // Rt at the line rate (45.001), odd halves
            4, // increase and check at one ns: 17.001, 29.001, 37.001, 45.001
        ];
        assert_eq!(counts, want);

        // Line 999,999,999 (odd), RATE_ON_FIRST_CNP 0.5, CLAMP_TARGET_RATE 1, MIN 100 Mbps.
        let p = DcqcnNs3Params {
            line_rate_bps: 999_999_999,
            rp_timer: 8.0,
            ewma_gain: 1.0,
            rate_ai: 100_000_000,
            rate_hai: 400_000_000,
            clamp_target_rate: true,
            rate_on_first_cnp: 0.5,
            ..DcqcnNs3Params::default()
        };
        // 1 µs: first CNP, Rc = Rt = (u64)(999,999,999 × 0.5) = 499,999,999. 4.5 µs: CNP,
        // cut pending; alpha 5 µs raised. 5.001: cut, Rt = Rc by the flag alone (stage 0);
        // 499,999,999 / 2 = 249,999,999.5 truncated. 9.001: check. 13.001: increase first
        // (tie), fast recovery: Rc = 124,999,999 + 249,999,999 = 374,999,998 (both halves of
        // odd rates truncated); check. Alpha updates 2..13 µs: 12, raised once.
        let stream = [
            (0, TX),
            (1_000, EventKind::RxCnp),
            (4_500, EventKind::RxCnp),
            (13_500, TX),
        ];
        let (counts, rate) = run(&p, &stream);
        assert_eq!(rate, 374_999_998);
        #[rustfmt::skip]
        let want = [
            2, 1, 1, 1, 1, // tx_data, first CNP lowered, later CNP with a cut pending
            1, 11, // alpha raised, decayed
            2, 1, // checks without and with a cut
            0, 1, 0, // Rt = Rc by CLAMP_TARGET_RATE alone
            1, 0, // truncated cut
            1, 0, 0, 0, 1, // fast recovery, odd halves
            1, // tie at 13.001
        ];
        assert_eq!(counts, want);
    }
}
