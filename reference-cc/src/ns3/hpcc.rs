//! `hpcc-ns3`: HPCC as the simulator computes it (`rdma-hw.cc` `HandleAckHp`, `UpdateRateHp`,
//! `FastReactHp`; state in `rdma-queue-pair.h` `hp`; INT record in `int-header.h` `IntHop`).
//!
//! Rate-based: per flow the simulator keeps the sending rate `m_rate` (R), the reference rate
//! `hp.m_curRate` (Rc), the utilisation EWMA `hp.u` (U) and `hp.m_incStage`, or with
//! `MULTI_RATE` one `u`, `Rc` and `incStage` per hop. Every ACK/NAK runs the update: when its
//! sequence passes `lastUpdateSeq` it is the once-per-RTT *committed* update (Rc and incStage
//! take the new values); otherwise, with `FAST_REACT`, a *fast react*: R, U and the stored
//! INT move, Rc and incStage do not. The window is derived from R (`VAR_WIN`,
//! `RdmaQueuePair::GetWin`). `docs/models/ns3.md` lists every rule with its source line and
//! every difference from the paper profile `hpcc`.

use std::collections::BTreeMap;

use ccreplay_codecs::shim::int::{IntHop, IntStackHeader};
use serde::{Deserialize, Serialize};

use super::{check_line_rate, check_min_rate, check_step, cxx_f64_to_u64, err, flag};
use crate::event::{AckInfo, Decision, Event, EventKind, FlowId, State, StateValue};
use crate::model::{Model, ParamError};
use crate::psn::{psn_add, psn_after};

/// `IntHeader::maxHop` (int-header.h): the simulator's INT stack holds 5 records.
pub const MAX_HOP: usize = 5;

/// `IntHop::byteUnit` (int-header.h): txBytes unit, bytes (before `INT_MULTI`).
const BYTE_UNIT: u64 = 128;
/// `IntHop::qlenUnit` (int-header.h): qLen unit, bytes (before `INT_MULTI`).
const QLEN_UNIT: u32 = 80;
/// Largest base RTT accepted, ns (2^53: exact in f64).
const MAX_BASE_RTT_NS: u64 = 1 << 53;

/// `hpcc-ns3` parameters (C-7). Keys are the simulator's config names (`mix/config.txt`);
/// rates in bps, flags 0/1. Defaults are `mix/config.txt`'s (see `docs/models/ns3.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HpccNs3Params {
    /// NIC line rate, bps: `qp->m_max_rate`, the start rate and upper clamp (default 100 Gbps).
    pub line_rate_bps: u64,
    /// `qp->m_baseRtt`, ns: `T` of the EWMA (third.cc: `maxRtt` with `GLOBAL_T 1`).
    pub base_rtt_ns: u64,
    /// Packet payload, bytes (`PACKET_PAYLOAD_SIZE`); accepted, not used by the rate.
    pub mtu_bytes: u64,
    /// `qp->m_win`, bytes (third.cc: `maxBdp`); `None` = `floor(line_rate_bps × base_rtt_ns /
    /// 8e9)`, third.cc's `rtt * bw / 1000000000 / 8` with `bw` the line rate.
    pub win_bytes: Option<u64>,
    /// `U_TARGET`: η, target utilisation (`m_targetUtil`), in (0, 1].
    #[serde(rename = "U_TARGET")]
    pub u_target: f64,
    /// `MI_THRESH`: additive rounds before a multiplicative one (`m_miThresh`).
    #[serde(rename = "MI_THRESH")]
    pub mi_thresh: u32,
    /// `RATE_AI`: additive step, bps (`m_rai`).
    #[serde(rename = "RATE_AI")]
    pub rate_ai: u64,
    /// `MIN_RATE`: lower clamp, bps (`m_minRate`).
    #[serde(rename = "MIN_RATE")]
    pub min_rate: u64,
    /// `MULTI_RATE`: one reference rate per hop (`m_multipleRate`).
    #[serde(rename = "MULTI_RATE", deserialize_with = "flag")]
    pub multi_rate: bool,
    /// `FAST_REACT`: react on every ACK (`m_fast_react`).
    #[serde(rename = "FAST_REACT", deserialize_with = "flag")]
    pub fast_react: bool,
    /// `INT_MULTI`: multiplier of the INT byte and queue units (`IntHop::multi`), >= 1.
    #[serde(rename = "INT_MULTI")]
    pub int_multi: u32,
    /// `VAR_WIN`: window = `m_win × R / line rate` (`m_var_win`).
    #[serde(rename = "VAR_WIN", deserialize_with = "flag")]
    pub var_win: bool,
    /// `HAS_WIN`: the flow has a window; must be 1 (0 makes the simulator divide by 0).
    #[serde(rename = "HAS_WIN", deserialize_with = "flag")]
    pub has_win: bool,
    /// `SAMPLE_FEEDBACK`: on a fast-react ACK skip hops whose qLen is 0 (`m_sampleFeedback`).
    #[serde(rename = "SAMPLE_FEEDBACK", deserialize_with = "flag")]
    pub sample_feedback: bool,
}

impl Default for HpccNs3Params {
    fn default() -> Self {
        HpccNs3Params {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 13_000,
            mtu_bytes: 1000,
            win_bytes: None,
            u_target: 0.95,
            mi_thresh: 0,
            rate_ai: 50_000_000,
            min_rate: 100_000_000,
            multi_rate: true,
            fast_react: true,
            int_multi: 1,
            var_win: true,
            has_win: true,
            sample_feedback: false,
        }
    }
}

/// Validated parameters in the form the per-ACK path uses.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    max_rate_bps: u64,
    base_rtt_ns: u64,
    win_bytes: u64,
    u_target: f64,
    mi_thresh: u32,
    rai_bps: u64,
    min_rate_bps: u64,
    multi_rate: bool,
    fast_react: bool,
    int_multi: u32,
    var_win: bool,
    sample_feedback: bool,
}

impl HpccNs3Params {
    /// Reject values the model cannot run with, naming the parameter and why (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.config().map(|_| ())
    }

    /// `m_win` in bytes: `win_bytes`, or third.cc's BDP `rtt × bw / 1e9 / 8` (two integer
    /// divisions, which floor like one division by 8e9).
    pub fn window_bytes(&self) -> u64 {
        self.win_bytes.unwrap_or_else(|| {
            let w = self.line_rate_bps as u128 * self.base_rtt_ns as u128 / 1_000_000_000 / 8;
            u64::try_from(w).unwrap_or(u64::MAX)
        })
    }

    fn config(&self) -> Result<Config, ParamError> {
        check_line_rate(self.line_rate_bps)?;
        if self.base_rtt_ns == 0 || self.base_rtt_ns > MAX_BASE_RTT_NS {
            return Err(err(
                "base_rtt_ns",
                self.base_rtt_ns,
                "must be in 1..=2^53 ns (T weights the EWMA and must be exact in f64)",
            ));
        }
        if self.mtu_bytes == 0 {
            return Err(err("mtu_bytes", 0, "must be > 0"));
        }
        if !self.has_win {
            return Err(err(
                "HAS_WIN",
                0,
                "must be 1 for HPCC: with no window the simulator divides u's queue term by \
                 m_win = 0 (rdma-hw.cc UpdateRateHp), which gives NaN",
            ));
        }
        let win = self.window_bytes();
        if win == 0 || win > u64::from(u32::MAX) {
            return Err(err(
                "win_bytes",
                win,
                "must be in 1..=2^32-1 bytes (the simulator's uint32_t m_win); the default \
                 is line_rate_bps × base_rtt_ns / 8e9",
            ));
        }
        if !(self.u_target.is_finite() && self.u_target > 0.0 && self.u_target <= 1.0) {
            return Err(err("U_TARGET", self.u_target, "must be in (0, 1]"));
        }
        check_step("RATE_AI", self.rate_ai, self.line_rate_bps)?;
        check_min_rate(self.min_rate, self.line_rate_bps)?;
        if self.int_multi == 0 {
            return Err(err(
                "INT_MULTI",
                0,
                "must be >= 1 (it multiplies the INT units)",
            ));
        }
        Ok(Config {
            max_rate_bps: self.line_rate_bps,
            base_rtt_ns: self.base_rtt_ns,
            win_bytes: win,
            u_target: self.u_target,
            mi_thresh: self.mi_thresh,
            rai_bps: self.rate_ai,
            min_rate_bps: self.min_rate,
            multi_rate: self.multi_rate,
            fast_react: self.fast_react,
            int_multi: self.int_multi,
            var_win: self.var_win,
            sample_feedback: self.sample_feedback,
        })
    }
}

/// Per-hop state of `MULTI_RATE` (`hp.hopState[i]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopState {
    /// `u`: this hop's utilisation EWMA (starts at 1).
    pub u: f64,
    /// `Rc`: this hop's reference rate, bps (starts at line rate).
    pub rc_bps: u64,
    /// `incStage` of this hop.
    pub inc_stage: u32,
}

/// Per-flow sender state (`RdmaQueuePair`), named as in the simulator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowState {
    /// The first ACK has been seen (the simulator tests `m_lastUpdateSeq == 0`).
    pub started: bool,
    /// `hp.m_lastUpdateSeq` as a PSN.
    pub last_update_seq: u32,
    /// `snd_nxt` as a PSN (last transmitted PSN + 1; a NAK moves it back to `snd_una`).
    pub snd_nxt: u32,
    /// `snd_una` as a PSN, once an ACK or NAK was seen.
    pub snd_una: Option<u32>,
    /// `m_rate`: the sending rate, bps.
    pub rate_bps: u64,
    /// `hp.m_curRate`: the reference rate, bps.
    pub cur_rate_bps: u64,
    /// `hp.u`: the flow's utilisation EWMA (single rate; starts at 1).
    pub u: f64,
    /// `hp.m_incStage` (single rate).
    pub inc_stage: u32,
    /// `hp.hop`: the stored INT records.
    pub hops: [IntHop; MAX_HOP],
    /// `hp.hopState` (`MULTI_RATE`).
    pub hop_state: [HopState; MAX_HOP],
    /// Coverage only, never read by the update: the nHop and pathID of the last INT stack
    /// whose records were stored (the simulator keeps none: docs/models/ns3.md H7).
    seen_path: Option<IntStackHeader>,
}

impl FlowState {
    /// `RdmaHw::AddQueuePair` + the `RdmaQueuePair` constructor.
    fn new(cfg: &Config) -> Self {
        FlowState {
            started: false,
            last_update_seq: 0,
            snd_nxt: 0,
            snd_una: None,
            rate_bps: cfg.max_rate_bps,
            cur_rate_bps: cfg.max_rate_bps,
            u: 1.0,
            inc_stage: 0,
            hops: [IntHop::default(); MAX_HOP],
            hop_state: [HopState {
                u: 1.0,
                rc_bps: cfg.max_rate_bps,
                inc_stage: 0,
            }; MAX_HOP],
            seen_path: None,
        }
    }
}

/// `qp->m_max_rate.GetBitRate()` etc. as f64 (exact: rates <= 10^13 < 2^53).
#[inline]
fn f(x: u64) -> f64 {
    x as f64
}

/// `IntHop::GetQlen()`: `(uint32_t)qlen * qlenUnit * multi`, in the simulator's uint32
/// arithmetic (wraps; only for `INT_MULTI` >= 410 with a 17-bit qLen).
#[inline]
fn get_qlen(h: &IntHop, multi: u32) -> u32 {
    u32::from(h.qlen)
        .wrapping_mul(QLEN_UNIT)
        .wrapping_mul(multi)
}

/// The hop's line rate, bps (`IntHop::GetLineRate()`): codes 0..4 are the simulator's
/// `lineRateValues` (25, 50, 100, 200, 400 Gbps); 5..7 are wire.md 5.1's (the simulator's
/// table has 0 there and never writes them); 8..15 have none.
#[inline]
fn line_rate(h: &IntHop) -> Option<u64> {
    h.line_rate().bps()
}

/// What one ACK did, for the decision record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// First ACK: INT stored, `lastUpdateSeq = snd_nxt` (rdma-hw.cc "first RTT").
    First,
    /// The committed once-per-RTT update.
    Update,
    /// A fast react (`FAST_REACT`, ACK not past `lastUpdateSeq`).
    Fast,
    /// Nothing: `FAST_REACT` is 0 and the ACK is not past `lastUpdateSeq`.
    Ignored,
}

/// `if (m_sampleFeedback) if (GetQlen() == 0 and fast_react) continue;` (N13).
#[inline]
fn sampled_out(cfg: &Config, hop: &IntHop, fast_react: bool) -> bool {
    cfg.sample_feedback && fast_react && get_qlen(hop, cfg.int_multi) == 0
}

/// One hop's `tau` (ns, before any clamp) and `u` against its stored record `prev`
/// (`UpdateRateHp`, N5-N6). `None` for a hop the simulator would divide by zero on — no known
/// line rate, or a zero time delta (docs/models/ns3.md H8) —, which is skipped.
#[inline]
fn hop_u(cfg: &Config, hop: &IntHop, prev: &IntHop) -> Option<(u64, f64)> {
    let line_bps = line_rate(hop)?;
    let tau = hop.ts_delta_ns(*prev); // GetTimeDelta: modular 24-bit
    if tau == 0 {
        return None;
    }
    // `double duration = tau * 1e-9;`
    let duration = tau as f64 * 1e-9;
    // `GetBytesDelta(...) * 8 / duration`: units delta × 128 × multi × 8 in uint64, then
    // / double. Max 2^20 × 2^7 × 2^32 × 8 = 2^62: no overflow.
    let bytes_delta = (u64::from(hop.tx_bytes.wrapping_sub(prev.tx_bytes)) & 0xF_FFFF)
        * BYTE_UNIT
        * u64::from(cfg.int_multi);
    let tx_rate = (bytes_delta * 8) as f64 / duration;
    // `u = txRate / GetLineRate() + (double)min(qlen, qlen_prev) * m_max_rate /
    //  GetLineRate() / m_win`, left to right.
    let qlen_min = get_qlen(hop, cfg.int_multi).min(get_qlen(prev, cfg.int_multi));
    let u = tx_rate / f(line_bps)
        + f64::from(qlen_min) * f(cfg.max_rate_bps) / f(line_bps) / f(cfg.win_bytes);
    Some((tau, u))
}

/// Each hop's [`hop_u`] as one update computed it (`None`: sampled out or skipped), for the
/// coverage count to read instead of dividing again.
type HopUs = [Option<(u64, f64)>; MAX_HOP];

/// `RdmaHw::UpdateRateHp` after the first RTT, for one ACK with `hops` (nhop <= 5).
/// It updates `st` exactly as the C++ does; `us` receives each hop's `hop_u` (only read by
/// [`covered_by`], never by the update).
fn update_rate(
    cfg: &Config,
    st: &mut FlowState,
    hops: &[IntHop],
    fast_react: bool,
    us: &mut HopUs,
) {
    let t = cfg.base_rtt_ns;
    let mut big_u = 0.0f64; // `double U = 0`
    let mut dt = 0u64; // `uint64_t dt = 0`
    let mut updated = [false; MAX_HOP];
    let mut updated_any = false;
    for (i, hop) in hops.iter().enumerate() {
        if sampled_out(cfg, hop, fast_react) {
            continue;
        }
        // Differences from the simulator (docs/models/ns3.md, "Hops the simulator divides by
        // zero on"): a hop with no known line rate or a zero time delta would make `u` inf or
        // NaN there; here it is skipped like a sampled-out hop (record not stored).
        let Some((mut tau, u)) = hop_u(cfg, hop, &st.hops[i]) else {
            continue;
        };
        us[i] = Some((tau, u));
        updated[i] = true;
        updated_any = true;
        if !cfg.multi_rate {
            // single R: the first hop with the largest u (strict >) gives U and dt
            if u > big_u {
                big_u = u;
                dt = tau;
            }
        } else {
            // per-hop R: `if (tau > m_baseRtt) tau = m_baseRtt;` then the hop's EWMA
            if tau > t {
                tau = t;
            }
            let hs = &mut st.hop_state[i];
            hs.u = (hs.u * (t - tau) as f64 + u * tau as f64) / t as f64;
        }
        st.hops[i] = *hop; // `qp->hp.hop[i] = ih.hop[i]`
    }

    let mut new_rate = 0u64;
    let mut new_inc_stage = st.inc_stage;
    let mut new_rate_per_hop = [0u64; MAX_HOP];
    let mut new_inc_per_hop = [0u32; MAX_HOP];
    if !cfg.multi_rate {
        if updated_any {
            if dt > t {
                dt = t;
            }
            // `hp.u = (hp.u * (m_baseRtt - dt) + U * dt) / double(m_baseRtt)`
            st.u = (st.u * (t - dt) as f64 + big_u * dt as f64) / t as f64;
            let max_c = st.u / cfg.u_target;
            let (r, s) = next_rate(cfg, st.cur_rate_bps, st.inc_stage, max_c);
            new_rate = r;
            new_inc_stage = s;
        }
    } else {
        new_rate = cfg.max_rate_bps;
        for i in 0..hops.len() {
            let hs = st.hop_state[i];
            if updated[i] {
                let c = hs.u / cfg.u_target;
                let (r, s) = next_rate(cfg, hs.rc_bps, hs.inc_stage, c);
                new_rate_per_hop[i] = r;
                new_inc_per_hop[i] = s;
                if r < new_rate {
                    new_rate = r;
                }
            } else if hs.rc_bps < new_rate {
                new_rate = hs.rc_bps;
            }
        }
    }
    if updated_any {
        st.rate_bps = new_rate; // ChangeRate(qp, new_rate)
    }
    if !fast_react {
        if updated_any {
            st.cur_rate_bps = new_rate;
            // Single rate only: with MULTI_RATE the C++ assigns an uninitialised
            // `new_incStage` here (never read); incStage is left unchanged.
            st.inc_stage = new_inc_stage;
        }
        if cfg.multi_rate {
            for i in 0..hops.len() {
                if updated[i] {
                    st.hop_state[i].rc_bps = new_rate_per_hop[i];
                    st.hop_state[i].inc_stage = new_inc_per_hop[i];
                }
            }
        }
    }
}

/// The MI/AI step and the clamps of `UpdateRateHp`, shared by the single and per-hop rates:
/// `if (c >= 1 || incStage >= m_miThresh) { R = Rc / c + m_rai; incStage = 0 } else
/// { R = Rc + m_rai; incStage + 1 }`, then `< m_minRate` → `m_minRate`, `> m_max_rate` →
/// `m_max_rate`, in that order.
#[inline]
fn next_rate(cfg: &Config, rc_bps: u64, inc_stage: u32, c: f64) -> (u64, u32) {
    let (r, s) = unclamped_rate(cfg, rc_bps, inc_stage, c);
    (clamp_rate(cfg, r), s)
}

/// N9 before the clamps: the rate and incStage of the MI/MD or the AI branch.
#[inline]
fn unclamped_rate(cfg: &Config, rc_bps: u64, inc_stage: u32, c: f64) -> (u64, u32) {
    if c >= 1.0 || inc_stage >= cfg.mi_thresh {
        // `DataRate / double` = DataRate(bps / c) (data-rate.cc), `+` adds the u64 bps
        // (wrapping, as C++ unsigned arithmetic). c = 0 gives +inf → 0 (cxx_f64_to_u64).
        (cxx_f64_to_u64(f(rc_bps) / c).wrapping_add(cfg.rai_bps), 0)
    } else {
        (rc_bps.wrapping_add(cfg.rai_bps), inc_stage.wrapping_add(1))
    }
}

/// N9's clamps: `< m_minRate` → `m_minRate`, then `> m_max_rate` → `m_max_rate`.
#[inline]
fn clamp_rate(cfg: &Config, r: u64) -> u64 {
    let mut r = r;
    if r < cfg.min_rate_bps {
        r = cfg.min_rate_bps;
    }
    if r > cfg.max_rate_bps {
        r = cfg.max_rate_bps;
    }
    r
}

/// The rules and branches of `hpcc-ns3` whose use `coverage()` counts, named by their rows of
/// docs/models/ns3.md (N1-N14, H7-H10) or the project rule (C-2); docs/conformance.md says
/// which bundled trace exercises which. Counted once per `rx_ack` / `rx_nak` that exercises
/// them, observed from outside the update ([`covered_by`]: the flow's state before and after,
/// the ACK, the same pure per-hop functions and the per-hop values the update computed, read
/// only), so counting cannot change a decision.
pub const COVERAGE: [&str; 27] = [
    "H10 ACK without INT (nhop 0): no rate change",
    "N3 first ACK of a flow: INT stored, lastUpdateSeq = snd_nxt",
    "N2 committed update: ack.seq after lastUpdateSeq (once per RTT)",
    "N2 fast react: ack.seq not after lastUpdateSeq (FAST_REACT 1)",
    "N2 ACK within the RTT ignored (FAST_REACT 0)",
    "C-2 serial and integer order of ack.seq and lastUpdateSeq differ (PSN wrap)",
    "H9 NAK: ack.seq = PSN, snd_nxt = snd_una first",
    "N4 more than 5 hops: no rate change",
    "INT from more than one hop",
    "H7 path change (nHop or pathID): deltas against another path's records",
    "N5 INT ts delta across the 24-bit wrap",
    "N5 INT txBytes delta across the 20-bit wrap",
    "H8 a hop skipped: zero TS delta or no line rate",
    "N13 SAMPLE_FEEDBACK: a hop with qLen 0 skipped on a fast react",
    "N7 MULTI_RATE 0: one U from the most loaded hop",
    "N7 the most loaded hop is not the first",
    "N7 N8 tau clamped to T",
    "N8 MULTI_RATE 1: u and Rc per hop",
    "N10 MULTI_RATE 1: R from a hop other than the first",
    "N10 MULTI_RATE 1: R bounded by the Rc of a hop not updated",
    "N9 MD: c >= 1",
    "N9 MI: incStage >= MI_THRESH, c < 1",
    "N9 AI: incStage < MI_THRESH",
    "N9 rate clamped to MIN_RATE",
    "N9 rate clamped to the line rate",
    "N14 VAR_WIN 1: window from the rate",
    "N14 VAR_WIN 0: fixed window",
];

/// Indices into [`COVERAGE`].
mod cov {
    pub const NO_INT: usize = 0;
    pub const FIRST: usize = 1;
    pub const COMMITTED: usize = 2;
    pub const FAST: usize = 3;
    pub const IGNORED: usize = 4;
    pub const PSN_WRAP: usize = 5;
    pub const NAK: usize = 6;
    pub const LONG_STACK: usize = 7;
    pub const MULTI_HOP: usize = 8;
    pub const PATH_CHANGE: usize = 9;
    pub const TS_WRAP: usize = 10;
    pub const TX_WRAP: usize = 11;
    pub const UNDEFINED_HOP: usize = 12;
    pub const SAMPLED_OUT: usize = 13;
    pub const SINGLE: usize = 14;
    pub const MAX_NOT_FIRST: usize = 15;
    pub const TAU_CLAMPED: usize = 16;
    pub const MULTI: usize = 17;
    pub const R_LATER_HOP: usize = 18;
    pub const R_STALE_HOP: usize = 19;
    pub const MD: usize = 20;
    pub const MI: usize = 21;
    pub const AI: usize = 22;
    pub const MIN_CLAMP: usize = 23;
    pub const MAX_CLAMP: usize = 24;
    pub const VAR_WIN: usize = 25;
    pub const FIXED_WIN: usize = 26;
}

/// The rules one ACK exercised, bit `i` for [`COVERAGE`]`[i]`: counting them walks the set
/// bits (a handful) instead of adding 27 flags (a seventh of the model's instructions).
#[derive(Clone, Copy, Default)]
struct Covered(u32);

const _: () = assert!(COVERAGE.len() <= 32);

impl Covered {
    /// Mark rule `i` when `hit` (a rule once marked stays marked).
    #[inline]
    fn set(&mut self, i: usize, hit: bool) {
        self.0 |= u32::from(hit) << i;
    }
}

/// Mark the N9 branch and clamp one rate computation took (`c` after its EWMA, `rc_bps` and
/// `inc_stage` before it), and return the clamped rate.
fn covered_step(cfg: &Config, rc_bps: u64, inc_stage: u32, c: f64, cv: &mut Covered) -> u64 {
    if c >= 1.0 {
        cv.set(cov::MD, true);
    } else if inc_stage >= cfg.mi_thresh {
        cv.set(cov::MI, true);
    } else {
        cv.set(cov::AI, true);
    }
    let (r, _) = unclamped_rate(cfg, rc_bps, inc_stage, c);
    cv.set(cov::MIN_CLAMP, r < cfg.min_rate_bps);
    cv.set(cov::MAX_CLAMP, r > cfg.max_rate_bps);
    clamp_rate(cfg, r)
}

/// Which of [`COVERAGE`] one ACK (`nak` false) or NAK exercised, from the flow's state before
/// and after it, the ACK and how [`HpccNs3::on_ack`] dispatched it.
fn covered_by(
    cfg: &Config,
    before: &FlowState,
    ack: &AckInfo,
    nak: bool,
    kind: Kind,
    after: &FlowState,
    us: &HopUs,
) -> Covered {
    let mut cv = Covered::default();
    cv.set(cov::NAK, nak);
    cv.set(cov::VAR_WIN, cfg.var_win);
    cv.set(cov::FIXED_WIN, !cfg.var_win);
    let (hops, nhop, header) = match &ack.int {
        Some(s) => (s.hops(), usize::from(s.n_hop()), Some(s.header)),
        None => (&[][..], 0, None),
    };
    cv.set(cov::NO_INT, nhop == 0);
    cv.set(cov::FIRST, kind == Kind::First);
    cv.set(cov::COMMITTED, kind == Kind::Update);
    cv.set(cov::FAST, kind == Kind::Fast);
    cv.set(cov::IGNORED, kind == Kind::Ignored);
    if kind != Kind::First {
        let ack_seq = if nak { ack.psn } else { psn_add(ack.psn, 1) };
        let last = before.last_update_seq;
        cv.set(cov::PSN_WRAP, psn_after(ack_seq, last) != (ack_seq > last));
    }
    if kind == Kind::Ignored {
        return cv;
    }
    if nhop > MAX_HOP {
        cv.set(cov::LONG_STACK, true);
        return cv;
    }
    if kind == Kind::First {
        return cv;
    }
    // The update ran on these hops.
    let fast = kind == Kind::Fast;
    cv.set(cov::MULTI_HOP, hops.len() > 1);
    cv.set(
        cov::PATH_CHANGE,
        matches!((before.seen_path, header), (Some(p), Some(h)) if p != h),
    );
    let t = cfg.base_rtt_ns;
    let mut updated = [false; MAX_HOP];
    let (mut max_u, mut max_hop, mut max_tau) = (0.0f64, None, 0u64);
    for (i, (hop, prev)) in hops.iter().zip(&before.hops).enumerate() {
        if sampled_out(cfg, hop, fast) {
            cv.set(cov::SAMPLED_OUT, true);
            continue;
        }
        // The update's own hop_u of this hop (the same pure function of `hop` and `prev`).
        let Some((tau, u)) = us[i] else {
            cv.set(cov::UNDEFINED_HOP, true);
            continue;
        };
        updated[i] = true;
        cv.set(cov::TS_WRAP, hop.ts < prev.ts);
        cv.set(cov::TX_WRAP, hop.tx_bytes < prev.tx_bytes);
        if cfg.multi_rate {
            cv.set(cov::TAU_CLAMPED, tau > t);
        } else if u > max_u {
            (max_u, max_hop, max_tau) = (u, Some(i), tau);
        }
    }
    if !updated.contains(&true) {
        return cv;
    }
    if !cfg.multi_rate {
        cv.set(cov::SINGLE, true);
        cv.set(cov::MAX_NOT_FIRST, max_hop.is_some_and(|i| i > 0));
        cv.set(cov::TAU_CLAMPED, max_tau > t);
        let c = after.u / cfg.u_target;
        covered_step(cfg, before.cur_rate_bps, before.inc_stage, c, &mut cv);
    } else {
        cv.set(cov::MULTI, true);
        // R = min(line rate, each updated hop's new rate, each other hop's Rc): which hop
        // gave it (the first to reach the minimum) and whether a hop not updated did.
        let (mut r, mut from) = (cfg.max_rate_bps, None);
        let (mut min_updated, mut min_stale) = (u64::MAX, u64::MAX);
        let states = before.hop_state.iter().zip(&after.hop_state);
        for (i, ((b, a), up)) in states.zip(updated).take(hops.len()).enumerate() {
            let cand = if up {
                let c = a.u / cfg.u_target;
                let x = covered_step(cfg, b.rc_bps, b.inc_stage, c, &mut cv);
                min_updated = min_updated.min(x);
                x
            } else {
                min_stale = min_stale.min(b.rc_bps);
                b.rc_bps
            };
            if cand < r {
                (r, from) = (cand, Some(i));
            }
        }
        cv.set(cov::R_LATER_HOP, from.is_some_and(|i| i > 0));
        cv.set(
            cov::R_STALE_HOP,
            min_stale < min_updated.min(cfg.max_rate_bps),
        );
    }
    cv
}

/// State names of a single-rate (`MULTI_RATE 0`) decision, in order (C-6).
pub const STATE_NAMES_SINGLE: &[&str] = &["R", "Rc", "U", "incStage", "lastUpdateSeq", "snd_nxt"];

/// State names of a per-hop-rate (`MULTI_RATE 1`) decision, in order (C-6): the rate, then
/// each of the 5 hops' `u` and `Rc` (`hp.hopState[i]`; hops an ACK never reported keep their
/// initial 1 and line rate).
pub const STATE_NAMES_MULTI: &[&str] = &[
    "R",
    "lastUpdateSeq",
    "u0",
    "u1",
    "u2",
    "u3",
    "u4",
    "Rc0",
    "Rc1",
    "Rc2",
    "Rc3",
    "Rc4",
];

/// The `hpcc-ns3` sender model.
///
/// Events: `tx_data` sets `snd_nxt`; `rx_ack` / `rx_nak` run `HandleAckHp` and yield one
/// decision each (`rate_bps` = R, `window_bytes` = `GetWin()`); others are ignored.
#[derive(Clone, Debug)]
pub struct HpccNs3 {
    cfg: Config,
    flows: FlowTable,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
    /// [`Model::outputs_only`]: no state in the decisions, no coverage counted (a third of
    /// the model's instructions per ACK: the state copy before the update, the coverage
    /// check after it, the state record).
    outputs_only: bool,
}

impl HpccNs3 {
    /// A model with these parameters, or the first invalid one.
    pub fn new(params: &HpccNs3Params) -> Result<Self, ParamError> {
        Ok(HpccNs3 {
            cfg: params.config()?,
            flows: FlowTable::default(),
            covered: [0; COVERAGE.len()],
            outputs_only: false,
        })
    }

    /// The state of a flow, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&FlowState> {
        self.flows.get(flow)
    }

    /// `m_win` in bytes.
    pub fn win_bytes(&self) -> u64 {
        self.cfg.win_bytes
    }
}

/// `RdmaQueuePair::GetWin()`: `m_win × m_rate / m_max_rate` (uint64 arithmetic, at least 1)
/// with `VAR_WIN`, else `m_win`.
fn window(cfg: &Config, st: &FlowState) -> u64 {
    if cfg.var_win {
        let w = cfg.win_bytes.wrapping_mul(st.rate_bps) / cfg.max_rate_bps;
        w.max(1)
    } else {
        cfg.win_bytes
    }
}

/// Flow states by flow id. Ids below `DENSE_FLOWS` (the engine numbers each host's flows
/// from 0) sit in a `Vec` indexed by id, the rest in a map: every event looks its flow up,
/// and a B-tree search was a tenth of the model's instructions per ACK.
#[derive(Clone, Debug, Default)]
struct FlowTable {
    dense: Vec<Option<FlowState>>,
    sparse: BTreeMap<FlowId, FlowState>,
}

/// Flow ids kept in `FlowTable::dense` (at most this many states' worth of `Option`s).
const DENSE_FLOWS: usize = 4096;

impl FlowTable {
    fn get(&self, flow: FlowId) -> Option<&FlowState> {
        match self.dense.get(flow as usize) {
            Some(s) => s.as_ref(),
            None if (flow as usize) < DENSE_FLOWS => None,
            None => self.sparse.get(&flow),
        }
    }

    /// The flow's state, created as `RdmaHw::AddQueuePair` does when first seen.
    #[inline(always)]
    fn get_or_new(&mut self, flow: FlowId, cfg: &Config) -> &mut FlowState {
        let i = flow as usize;
        if i < DENSE_FLOWS {
            if i >= self.dense.len() {
                self.dense.resize(i + 1, None);
            }
            self.dense[i].get_or_insert_with(|| FlowState::new(cfg))
        } else {
            self.sparse
                .entry(flow)
                .or_insert_with(|| FlowState::new(cfg))
        }
    }
}

/// `RdmaHw::ReceiveAck` (the HPCC part) for one ACK (`nak` false) or NAK on the flow's state
/// `st`: how it was dispatched; `us` receives the update's per-hop values (coverage only).
fn on_ack(cfg: &Config, st: &mut FlowState, ack: &AckInfo, nak: bool, us: &mut HopUs) -> Kind {
    // The ACK's cumulative sequence: next PSN expected (ACK: PSN + 1; NAK: the PSN).
    let ack_seq = if nak { ack.psn } else { psn_add(ack.psn, 1) };
    // `qp->Acknowledge(seq)`: snd_una = max(snd_una, seq).
    let una = match st.snd_una {
        Some(u) if !psn_after(ack_seq, u) => u,
        _ => ack_seq,
    };
    st.snd_una = Some(una);
    if nak {
        st.snd_nxt = una; // `RecoverQueue`: snd_nxt = snd_una, before HandleAckHp
    }
    let (hops, nhop): (&[IntHop], usize) = match &ack.int {
        Some(s) => (s.hops(), usize::from(s.n_hop())),
        None => (&[], 0),
    };
    // HandleAckHp: full update when ack_seq > lastUpdateSeq, else FastReactHp.
    let kind = if !st.started {
        Kind::First
    } else if psn_after(ack_seq, st.last_update_seq) {
        Kind::Update
    } else if cfg.fast_react {
        Kind::Fast
    } else {
        Kind::Ignored
    };
    let next_seq = st.snd_nxt;
    match kind {
        Kind::First => {
            // "first RTT": lastUpdateSeq = snd_nxt; store INT. The C++ asserts
            // nhop <= maxHop; a longer stack stores nothing here.
            st.started = true;
            st.last_update_seq = next_seq;
            if nhop <= MAX_HOP {
                st.hops[..hops.len()].copy_from_slice(hops);
            }
        }
        Kind::Update | Kind::Fast => {
            let fast = kind == Kind::Fast;
            // `if (ih.nhop <= IntHeader::maxHop)`: a longer stack changes no rate.
            if nhop <= MAX_HOP {
                update_rate(cfg, st, hops, fast, us);
            }
            if !fast && psn_after(next_seq, st.last_update_seq) {
                st.last_update_seq = next_seq;
            }
        }
        Kind::Ignored => {}
    }
    if kind != Kind::Ignored && (1..=MAX_HOP).contains(&nhop) {
        // Coverage only (H7): the path whose records were just stored.
        st.seen_path = ack.int.as_ref().map(|s| s.header);
    }
    kind
}

/// The decision for `ev` with the flow's state `st` after it.
#[inline]
fn decision(cfg: &Config, ev: &Event, st: &FlowState) -> Decision {
    let state = if cfg.multi_rate {
        let h = &st.hop_state;
        State::new(
            STATE_NAMES_MULTI,
            &[
                StateValue::U64(st.rate_bps),
                StateValue::U64(u64::from(st.last_update_seq)),
                StateValue::F64(h[0].u),
                StateValue::F64(h[1].u),
                StateValue::F64(h[2].u),
                StateValue::F64(h[3].u),
                StateValue::F64(h[4].u),
                StateValue::U64(h[0].rc_bps),
                StateValue::U64(h[1].rc_bps),
                StateValue::U64(h[2].rc_bps),
                StateValue::U64(h[3].rc_bps),
                StateValue::U64(h[4].rc_bps),
            ],
        )
    } else {
        State::new(
            STATE_NAMES_SINGLE,
            &[
                StateValue::U64(st.rate_bps),
                StateValue::U64(st.cur_rate_bps),
                StateValue::F64(st.u),
                StateValue::U64(u64::from(st.inc_stage)),
                StateValue::U64(u64::from(st.last_update_seq)),
                StateValue::U64(u64::from(st.snd_nxt)),
            ],
        )
    };
    Decision {
        state,
        ..Decision::rate_window(ev, st.rate_bps, window(cfg, st))
    }
}

impl Model for HpccNs3 {
    fn name(&self) -> &'static str {
        "hpcc-ns3"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let (ack, nak) = match &ev.kind {
            EventKind::TxData { psn, .. } => {
                let st = self.flows.get_or_new(ev.flow, &self.cfg);
                st.snd_nxt = psn_add(*psn, 1);
                return;
            }
            EventKind::RxAck(a) => (a, false),
            EventKind::RxNak(a) => (a, true),
            EventKind::RxCnp | EventKind::RxData { .. } | EventKind::Dequeue { .. } => return,
        };
        let cfg = &self.cfg;
        let st = self.flows.get_or_new(ev.flow, cfg);
        let mut us = [None; MAX_HOP];
        if self.outputs_only {
            on_ack(cfg, st, ack, nak, &mut us);
            out.push(Decision::rate_window(ev, st.rate_bps, window(cfg, st)));
            return;
        }
        let before = *st;
        let kind = on_ack(cfg, st, ack, nak, &mut us);
        out.push(decision(cfg, ev, st));
        let cv = covered_by(cfg, &before, ack, nak, kind, st, &us);
        let mut bits = cv.0;
        while bits != 0 {
            self.covered[bits.trailing_zeros() as usize] += 1;
            bits &= bits - 1;
        }
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }

    fn outputs_only(&mut self, on: bool) {
        self.outputs_only = on;
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn has_timers(&self) -> bool {
        false
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}
}

#[cfg(test)]
mod tests;
