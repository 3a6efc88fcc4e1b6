//! HPCC sender (seed 000, Algorithm 1; algorithms.md HPCC-1..8), and the shared core that
//! [`crate::fncc`] reuses with its last-hop speedup hook.
//!
//! One [`Hpcc`] model holds the state of every flow of a capture point (dense flow ids from 0).
//! Per flow it keeps the window `W`, the reference window `Wc`, the normalised inflight
//! estimate `U`, `incStage`, `lastUpdateSeq`, `snd_nxt` and the INT records `L` of the last
//! ACK. Every ACK or NAK (wire.md 5.3: a NAK carries INT like an ACK) runs `NEWACK` and yields
//! exactly one [`Decision`] with `window_bytes` and `rate_bps`. HPCC has no timers.
//!
//! Arithmetic (C-3): `U`, `u'`, `txRate` and the unclamped window are f64 computed with
//! `+ - * / min` in the order Algorithm 1 writes them; `W`, `Wc`, `W_init` and `R` are integers
//! (floor, then clamp). See `docs/models/hpcc.md` for every formula and choice.

use ccreplay_codecs::shim::int::{
    IntHop, IntStack, IntStackHeader, LineRate, NHOP_FIELD_MAX, QLEN_UNIT,
};
use serde::{Deserialize, Serialize};

use crate::event::{AckInfo, Decision, Event, EventKind, FlowId, State, StateValue};
use crate::model::{Model, ParamError};
use crate::psn::{psn_add, psn_after};

/// ns per second × bits per byte: converts `bytes × 8e9 / ns` into bps (HPCC-1).
const BITS_NS_PER_BYTE_S: u128 = 8_000_000_000;
/// Largest window kept exactly in f64 (2^53): larger windows are rejected by `validate`.
const MAX_EXACT_F64: u64 = 1 << 53;
/// Number of line-rate codes (4-bit `B` field).
const N_CODES: usize = 16;

/// A reserved INT line-rate code (8..15, wire.md 5.1) mapped to a rate by configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(deny_unknown_fields)]
pub struct ReservedLineRate {
    /// The 4-bit code, 8..=15.
    pub code: u8,
    /// Its rate in bits per second (> 0).
    pub bps: u64,
}

/// HPCC parameters (C-7, HPCC-8). Units are in the names; defaults are the paper's.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// `B_NIC`: NIC line rate in bps (default 100 Gbps, seed 000 5.1 simulations).
    pub line_rate_bps: u64,
    /// `T`: base RTT in ns (default 13 µs, the `T` of the paper's simulations, seed 000 5.1).
    pub base_rtt_ns: u64,
    /// MTU in bytes (default 1000: the 1 KB packets of seed 000 4.1 / 5.1).
    pub mtu_bytes: u64,
    /// Smallest window in bytes; `None` = one MTU (HPCC-6).
    pub w_min_bytes: Option<u64>,
    /// `η`: target utilisation, in (0, 1] (default 0.95, seed 000 3.3).
    pub eta: f64,
    /// `maxStage`: AI rounds before MI (default 5, seed 000 3.3). 0 means every round is MI
    /// (the paper tried 0..5, footnote 5 of 5.1).
    pub max_stage: u32,
    /// `W_AI` in bytes; `None` = `W_init × (1 − η) / expected_flows` (HPCC-8).
    pub w_ai_bytes: Option<f64>,
    /// `N` of the `W_AI` rule of thumb: expected concurrent flows per link (default 100).
    pub expected_flows: u32,
    /// Rates for the reserved line-rate codes 8..15 (empty by default). A hop whose code has
    /// no rate contributes nothing to the ACK (like HPCC-3), its record is still stored.
    pub reserved_line_rates: Vec<ReservedLineRate>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 13_000,
            mtu_bytes: 1000,
            w_min_bytes: None,
            eta: 0.95,
            max_stage: 5,
            w_ai_bytes: None,
            expected_flows: 100,
            reserved_line_rates: Vec::new(),
        }
    }
}

use crate::model::err;

impl Params {
    /// Reject values the model cannot run with (C-7), naming the parameter and why.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.derive().map(|_| ())
    }

    /// `W_init = floor(B_NIC × T / 8e9)` bytes (HPCC-1), exact in integer arithmetic; `None`
    /// when it does not fit in u64.
    pub fn w_init_bytes(&self) -> Option<u64> {
        let w = self.line_rate_bps as u128 * self.base_rtt_ns as u128 / BITS_NS_PER_BYTE_S;
        u64::try_from(w).ok()
    }

    /// Validate and precompute what the per-ACK path needs.
    pub(crate) fn derive(&self) -> Result<Derived, ParamError> {
        if self.line_rate_bps == 0 {
            return Err(err("line_rate_bps", 0, "must be > 0"));
        }
        if self.base_rtt_ns == 0 || self.base_rtt_ns > MAX_EXACT_F64 {
            return Err(err(
                "base_rtt_ns",
                self.base_rtt_ns,
                "must be in 1..=2^53 ns (T divides U and the rate, and must be exact in f64)",
            ));
        }
        if self.mtu_bytes == 0 {
            return Err(err("mtu_bytes", 0, "must be > 0"));
        }
        if !(self.eta.is_finite() && self.eta > 0.0 && self.eta <= 1.0) {
            return Err(err("eta", self.eta, "must be in (0, 1]"));
        }
        if self.expected_flows == 0 {
            return Err(err("expected_flows", 0, "must be >= 1"));
        }
        let w_init = match self.w_init_bytes() {
            Some(w) if w <= MAX_EXACT_F64 => w,
            _ => {
                return Err(err(
                    "base_rtt_ns",
                    self.base_rtt_ns,
                    "line_rate_bps × base_rtt_ns / 8e9 (W_init) exceeds 2^53 bytes",
                ));
            }
        };
        let w_min = self.w_min_bytes.unwrap_or(self.mtu_bytes);
        if w_min == 0 {
            return Err(err("w_min_bytes", 0, "must be >= 1 byte"));
        }
        if w_min > w_init {
            return Err(err(
                "w_min_bytes",
                w_min,
                "exceeds W_init = line_rate_bps × base_rtt_ns / 8e9 (raise base_rtt_ns or \
                 line_rate_bps, or lower w_min_bytes / mtu_bytes)",
            ));
        }
        // HPCC-8: W_AI = W_init × (1 − η) / N, in that order (C-3).
        let w_ai = match self.w_ai_bytes {
            Some(w) if w.is_finite() && w >= 0.0 => w,
            Some(w) => return Err(err("w_ai_bytes", w, "must be finite and >= 0")),
            None => w_init as f64 * (1.0 - self.eta) / self.expected_flows as f64,
        };
        let t_f = self.base_rtt_ns as f64;
        let mut b_bytes_per_ns = [0.0; N_CODES];
        for (code, b) in b_bytes_per_ns.iter_mut().enumerate() {
            if let Some(bps) = LineRate(code as u8).bps() {
                *b = bps as f64 / 8e9;
            }
        }
        let mut seen = [false; N_CODES];
        for r in &self.reserved_line_rates {
            if !(8..16).contains(&r.code) {
                return Err(err(
                    "reserved_line_rates.code",
                    r.code,
                    "only the reserved codes 8..=15 can be mapped (0..=7 are fixed by wire.md 5.1)",
                ));
            }
            if r.bps == 0 {
                return Err(err("reserved_line_rates.bps", 0, "must be > 0"));
            }
            if seen[r.code as usize] {
                return Err(err(
                    "reserved_line_rates.code",
                    r.code,
                    "mapped more than once",
                ));
            }
            seen[r.code as usize] = true;
            b_bytes_per_ns[r.code as usize] = r.bps as f64 / 8e9;
        }
        let mut b_t = [0.0; N_CODES];
        for (bt, b) in b_t.iter_mut().zip(b_bytes_per_ns) {
            *bt = b * t_f;
        }
        Ok(Derived {
            t_ns: self.base_rtt_ns,
            t_f,
            eta: self.eta,
            max_stage: self.max_stage,
            w_init,
            w_min,
            w_ai,
            b_bytes_per_ns,
            b_t,
        })
    }
}

/// Parameters after validation, in the form the per-ACK path uses.
#[derive(Clone, Debug)]
pub(crate) struct Derived {
    pub(crate) t_ns: u64,
    /// `T` as f64 (exact: `validate` keeps `T` <= 2^53).
    pub(crate) t_f: f64,
    pub(crate) eta: f64,
    pub(crate) max_stage: u32,
    pub(crate) w_init: u64,
    pub(crate) w_min: u64,
    pub(crate) w_ai: f64,
    /// `B` in bytes per ns per line-rate code; 0 = unmapped reserved code.
    pub(crate) b_bytes_per_ns: [f64; N_CODES],
    /// `B × T` in bytes per line-rate code (the same product Algorithm 1 line 5 forms).
    pub(crate) b_t: [f64; N_CODES],
}

impl Derived {
    /// HPCC-6: floor to whole bytes, clamp into `[w_min, W_init]`. `w` is never NaN.
    #[inline]
    pub(crate) fn floor_clamp(&self, w: f64) -> u64 {
        if w >= self.w_init as f64 {
            self.w_init
        } else if w <= self.w_min as f64 {
            self.w_min
        } else {
            // Positive and below 2^53: truncation is floor and the cast is exact.
            w as u64
        }
    }

    /// HPCC-1: `R = floor(W × 8e9 / T)` bps, exact in integer arithmetic.
    #[inline]
    pub(crate) fn rate_bps(&self, w: u64) -> u64 {
        // Windows below 2.3 GB keep W × 8e9 in u64, where division is cheaper; same result.
        match w.checked_mul(BITS_NS_PER_BYTE_S as u64) {
            Some(bits_ns) => bits_ns / self.t_ns,
            None => {
                let r = w as u128 * BITS_NS_PER_BYTE_S / self.t_ns as u128;
                u64::try_from(r).unwrap_or(u64::MAX)
            }
        }
    }
}

/// Per-flow sender state (Algorithm 1), named as in the paper.
#[derive(Clone, Copy, Debug)]
pub struct FlowState {
    /// `W`: sending window, bytes.
    pub w_bytes: u64,
    /// `W^c`: reference window, bytes.
    pub wc_bytes: u64,
    /// `U`: EWMA of the normalised inflight bytes (starts at 1, like the authors' simulator).
    pub u: f64,
    /// `incStage`: AI rounds since the last MI/MD.
    pub inc_stage: u32,
    /// `lastUpdateSeq`: PSN whose acknowledgement allows the next `Wc` update.
    pub last_update_seq: u32,
    /// `snd_nxt`: next PSN to send (last transmitted PSN + 1, HPCC-7).
    pub snd_nxt: u32,
    /// `R`: pacing rate, bps.
    pub rate_bps: u64,
    /// True once an ACK's INT has been stored in `L` (HPCC-5).
    pub has_int: bool,
    /// `L`: nHop and pathID of the stored INT stack.
    pub l_header: IntStackHeader,
    /// `L`: the stored hop records (the first `min(nHop, 15)` are meaningful).
    pub l_hops: [IntHop; NHOP_FIELD_MAX as usize],
}

impl FlowState {
    fn new(d: &Derived) -> Self {
        FlowState {
            w_bytes: d.w_init,
            wc_bytes: d.w_init,
            u: 1.0,
            inc_stage: 0,
            last_update_seq: 0,
            snd_nxt: 0,
            rate_bps: d.rate_bps(d.w_init),
            has_int: false,
            l_header: Default::default(),
            l_hops: [IntHop::default(); NHOP_FIELD_MAX as usize],
        }
    }

    fn store(&mut self, int: &IntStack) {
        self.l_header = int.header;
        let hops = int.hops();
        self.l_hops[..hops.len()].copy_from_slice(hops);
        self.has_int = true;
    }
}

/// What `MEASUREINFLIGHT` found on one ACK (Algorithm 1 lines 1-10).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measurement {
    /// `u`: the largest per-hop `u'` of this ACK (0 when no hop contributed). FNCC's `U_max`.
    pub u_max: f64,
    /// Index (stack order) of the first hop with that `u'` (0 when none). FNCC's `hop`.
    pub hop: usize,
    /// `τ` after line 8: `min(TS delta of that hop, T)` ns (0 when none).
    pub tau_ns: u64,
    /// True when `ack.seq > lastUpdateSeq` (line 22), so `Wc` was re-synchronised.
    pub update_wc: bool,
    /// True when line 8 clamped the TS delta to `T`.
    pub tau_clamped: bool,
}

/// The outcome of one ACK/NAK for a flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AckOutcome {
    /// The ACK carried no INT stack: no feedback, nothing changed.
    NoInt,
    /// First ACK of the flow or a path change (HPCC-5): INT stored, `W` unchanged.
    Stored,
    /// Algorithm 1 ran.
    Updated(Measurement),
}

/// A hook run at the start of `COMPUTEWIND` (the place FNCC's Algorithm 3 line 30 calls
/// `UpdateWc`). It may change `Wc` before the window is computed from it.
pub(crate) trait WcHook {
    fn update_wc(&mut self, d: &Derived, st: &mut FlowState, m: &Measurement, ack: &AckInfo);
}

/// Plain HPCC: no hook.
pub(crate) struct NoHook;

impl WcHook for NoHook {
    #[inline]
    fn update_wc(&mut self, _: &Derived, _: &mut FlowState, _: &Measurement, _: &AckInfo) {}
}

/// The HPCC sender core shared by [`Hpcc`] and [`crate::fncc::Fncc`]: per-flow state and
/// Algorithm 1, parameterised by a [`WcHook`].
#[derive(Clone, Debug)]
pub(crate) struct Core {
    pub(crate) d: Derived,
    flows: Vec<FlowState>,
}

impl Core {
    pub(crate) fn new(d: Derived) -> Self {
        Core {
            d,
            flows: Vec::new(),
        }
    }

    /// The state of `flow`, created at its initial values on first use. Flow ids are dense
    /// (harness.md 1), so the table grows to the largest id seen.
    #[inline]
    pub(crate) fn flow_mut(&mut self, flow: FlowId) -> &mut FlowState {
        let i = flow as usize;
        if i >= self.flows.len() {
            let init = FlowState::new(&self.d);
            self.flows.resize(i + 1, init);
        }
        &mut self.flows[i]
    }

    pub(crate) fn flow(&self, flow: FlowId) -> Option<&FlowState> {
        self.flows.get(flow as usize)
    }

    /// HPCC-7: `snd_nxt` follows the data packets in trace order (a retransmission moves it
    /// back, as go-back-N does).
    #[inline]
    pub(crate) fn on_tx(&mut self, flow: FlowId, psn: u32) {
        self.flow_mut(flow).snd_nxt = psn_add(psn, 1);
    }

    /// Algorithm 1 `NEWACK` for one ACK (`nak` = false) or NAK. Returns the outcome and the
    /// flow's state, which holds the new `W`, `Wc`, `U`, `R`.
    #[inline]
    pub(crate) fn on_ack<H: WcHook>(
        &mut self,
        flow: FlowId,
        ack: &AckInfo,
        nak: bool,
        hook: &mut H,
    ) -> (AckOutcome, &FlowState) {
        // Split borrows: parameters and the flow's state.
        self.flow_mut(flow);
        let d = &self.d;
        let st = &mut self.flows[flow as usize];
        let outcome = new_ack(d, st, ack, nak, hook);
        (outcome, st)
    }
}

/// Algorithm 1 `NEWACK` (lines 21-27) on one flow's state.
#[inline]
fn new_ack<H: WcHook>(
    d: &Derived,
    st: &mut FlowState,
    ack: &AckInfo,
    nak: bool,
    hook: &mut H,
) -> AckOutcome {
    let Some(int) = ack.int.as_ref() else {
        return AckOutcome::NoInt;
    };

    // HPCC-5: first ACK, or the path changed (pathID or nHop differ): store L only.
    if !st.has_int || int.header != st.l_header {
        if !st.has_int {
            // The first ACK starts the first RTT (as the authors' ns-3 code does): the
            // next Wc update waits for the packet sent after it.
            st.last_update_seq = st.snd_nxt;
        }
        st.store(int);
        return AckOutcome::Stored;
    }

    // ack.seq is the next PSN not yet acknowledged: an ACK acknowledges its PSN (seq =
    // PSN + 1), a NAK names the PSN it did not accept (seq = PSN) — HPCC-7.
    let ack_seq = if nak { ack.psn } else { psn_add(ack.psn, 1) };
    let update_wc = psn_after(ack_seq, st.last_update_seq); // line 22, C-2

    let mut m = measure_inflight(d, st, int);
    m.update_wc = update_wc;
    compute_wind(d, st, &m, update_wc, ack, hook);
    if update_wc {
        st.last_update_seq = st.snd_nxt; // line 24
    }
    st.rate_bps = d.rate_bps(st.w_bytes); // line 27, HPCC-1
    AckOutcome::Updated(m)
}

/// `MEASUREINFLIGHT` (Algorithm 1 lines 1-10, HPCC-2..4); also stores `L = ack.L` (line 27)
/// hop by hop, except the hops HPCC-3 leaves alone.
#[inline]
fn measure_inflight(d: &Derived, st: &mut FlowState, int: &IntStack) -> Measurement {
    let mut u = 0.0; // line 2
    let mut tau_ns = 0u64; // no hop with u' > 0: τ = 0 keeps U (ns-3 `dt = 0`)
    let mut hop = 0usize;
    for (i, (now, prev)) in int.hops().iter().zip(st.l_hops.iter_mut()).enumerate() {
        let dts_ns = now.ts_delta_ns(*prev); // wire.md 5.1: modular, never negative
        if dts_ns == 0 {
            continue; // HPCC-3: contributes nothing, keeps its stored record
        }
        let code = (now.b & 0xF) as usize;
        let b = d.b_bytes_per_ns[code];
        if b > 0.0 {
            // line 4: txRate in bytes per ns
            let tx_rate = now.tx_bytes_delta(*prev) as f64 / dts_ns as f64;
            // line 5: u' = min(qLen) / (B·T) + txRate / B
            let qlen_bytes = now.qlen.min(prev.qlen) as u64 * QLEN_UNIT;
            let u_hop = qlen_bytes as f64 / d.b_t[code] + tx_rate / b;
            if u_hop > u {
                // lines 6-7
                u = u_hop;
                tau_ns = dts_ns;
                hop = i;
            }
        }
        *prev = *now; // line 27: L = ack.L
    }
    let tau_clamped = tau_ns > d.t_ns;
    let tau_ns = tau_ns.min(d.t_ns); // line 8
    // line 9: U = (1 − τ/T)·U + τ/T·u
    let f = tau_ns as f64 / d.t_f;
    st.u = (1.0 - f) * st.u + f * u;
    Measurement {
        u_max: u,
        hop,
        tau_ns,
        update_wc: false,
        tau_clamped,
    }
}

/// `COMPUTEWIND` (Algorithm 1 lines 11-20, HPCC-6) with the hook of FNCC Algorithm 3 line 30.
#[inline]
fn compute_wind<H: WcHook>(
    d: &Derived,
    st: &mut FlowState,
    m: &Measurement,
    update_wc: bool,
    ack: &AckInfo,
    hook: &mut H,
) {
    hook.update_wc(d, st, m, ack);
    let wc = st.wc_bytes as f64;
    let w = if st.u >= d.eta || st.inc_stage >= d.max_stage {
        // line 13: W = Wc / (U/η) + W_AI. U = 0 (only reachable through incStage) makes
        // the quotient +inf: its limit, W_init after the clamp, is used without dividing.
        let u_over_eta = st.u / d.eta;
        let w = if u_over_eta > 0.0 {
            d.floor_clamp(wc / u_over_eta + d.w_ai)
        } else {
            d.w_init
        };
        if update_wc {
            st.inc_stage = 0; // line 15
            st.wc_bytes = w;
        }
        w
    } else {
        let w = d.floor_clamp(wc + d.w_ai); // line 17
        if update_wc {
            st.inc_stage = st.inc_stage.saturating_add(1); // line 19
            st.wc_bytes = w;
        }
        w
    };
    st.w_bytes = w;
}

/// Names of the state in every HPCC decision (C-6), in the order of [`Hpcc`]'s values.
pub const STATE_NAMES: &[&str] = &[
    "W",
    "Wc",
    "U",
    "incStage",
    "lastUpdateSeq",
    "snd_nxt",
    "u",
    "tau",
];

/// The HPCC sender model (name `hpcc`): Algorithm 1 per flow.
///
/// Events: `tx_data` advances `snd_nxt` (no decision); `rx_ack` and `rx_nak` run `NEWACK`
/// and produce one decision each; `rx_cnp`, `rx_data` and `dequeue` are not HPCC inputs (ignored).
#[derive(Clone, Debug)]
pub struct Hpcc {
    core: Core,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
    /// [`Model::outputs_only`]: no state record, no coverage.
    outputs_only: bool,
}

/// The rules and branches of Algorithm 1 whose use `coverage()` counts (docs/models/hpcc.md
/// names the rules; docs/conformance.md says which bundled trace exercises which).
pub const COVERAGE: [&str; 16] = [
    "ACK without INT: no feedback",
    "HPCC-5 first INT of a flow",
    "HPCC-5 path change (nHop or pathID)",
    "HPCC-7 NAK: ack.seq = PSN",
    "INT from more than one hop",
    "line 6-7 most loaded hop is not the first",
    "HPCC-2 INT ts delta across the 24-bit wrap",
    "HPCC-2 INT txBytes delta across the 20-bit wrap",
    "HPCC-3 a hop with a zero TS delta",
    "line 8 tau clamped to T",
    "C-2 serial and integer order of ack.seq and lastUpdateSeq differ (PSN wrap)",
    "line 22 Wc updated (once per RTT)",
    "line 12-13 MD: U >= eta",
    "line 12-13 MI: incStage >= maxStage, U < eta",
    "line 17 AI: incStage < maxStage",
    "HPCC-6 window clamped to [w_min, W_init]",
];

/// Which of [`COVERAGE`] one ACK exercises, from the flow's state before it, the ACK and the
/// outcome (observed from outside Algorithm 1, so counting cannot change a decision).
fn covered_by(
    d: &Derived,
    before: Option<&FlowState>,
    ack: &AckInfo,
    nak: bool,
    outcome: &AckOutcome,
    after: &FlowState,
) -> [bool; COVERAGE.len()] {
    let mut c = [false; COVERAGE.len()];
    c[3] = nak;
    let Some(int) = ack.int.as_ref() else {
        c[0] = true;
        return c;
    };
    let had = before.filter(|b| b.has_int);
    match outcome {
        AckOutcome::Stored => {
            c[1] = had.is_none();
            c[2] = had.is_some();
        }
        AckOutcome::Updated(m) => {
            let b = had.expect("Updated needs a stored INT");
            let hops = int.hops();
            c[4] = hops.len() > 1;
            c[5] = m.hop > 0;
            for (now, prev) in hops.iter().zip(b.l_hops.iter()) {
                c[6] |= now.ts < prev.ts;
                c[7] |= now.tx_bytes < prev.tx_bytes;
                c[8] |= now.ts_delta_ns(*prev) == 0;
            }
            c[9] = m.tau_clamped;
            let seq = if nak { ack.psn } else { psn_add(ack.psn, 1) };
            c[10] = m.update_wc != (seq > b.last_update_seq);
            c[11] = m.update_wc;
            let mi_or_md = after.u >= d.eta || b.inc_stage >= d.max_stage;
            c[12] = after.u >= d.eta;
            c[13] = mi_or_md && after.u < d.eta;
            c[14] = !mi_or_md;
            c[15] = after.w_bytes == d.w_init || after.w_bytes == d.w_min;
        }
        AckOutcome::NoInt => c[0] = true,
    }
    c
}

impl Hpcc {
    /// A model with these parameters, or the first invalid one.
    pub fn new(params: &Params) -> Result<Self, ParamError> {
        Ok(Hpcc {
            covered: [0; COVERAGE.len()],
            core: Core::new(params.derive()?),
            outputs_only: false,
        })
    }

    /// `W_init` in bytes (HPCC-1): the initial and largest window.
    pub fn w_init_bytes(&self) -> u64 {
        self.core.d.w_init
    }

    /// `w_min` in bytes (HPCC-6): the smallest window.
    pub fn w_min_bytes(&self) -> u64 {
        self.core.d.w_min
    }

    /// `W_AI` in bytes actually used (given, or HPCC-8's default).
    pub fn w_ai_bytes(&self) -> f64 {
        self.core.d.w_ai
    }

    /// The state of a flow, if the model has seen it.
    pub fn flow(&self, flow: FlowId) -> Option<&FlowState> {
        self.core.flow(flow)
    }
}

/// The decision record of one ACK for HPCC (C-6).
#[inline]
fn hpcc_decision(ev: &Event, st: &FlowState, m: Option<&Measurement>) -> Decision {
    let (u, tau) = m.map_or((0.0, 0), |m| (m.u_max, m.tau_ns));
    Decision {
        state: State::new(
            STATE_NAMES,
            &[
                StateValue::U64(st.w_bytes),
                StateValue::U64(st.wc_bytes),
                StateValue::F64(st.u),
                StateValue::U64(st.inc_stage as u64),
                StateValue::U64(st.last_update_seq as u64),
                StateValue::U64(st.snd_nxt as u64),
                StateValue::F64(u),
                StateValue::U64(tau),
            ],
        ),
        ..Decision::rate_window(ev, st.rate_bps, st.w_bytes)
    }
}

impl Model for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let (ack, nak) = match &ev.kind {
            EventKind::TxData { psn, .. } => {
                self.core.on_tx(ev.flow, *psn);
                return;
            }
            EventKind::RxAck(a) => (a, false),
            EventKind::RxNak(a) => (a, true),
            EventKind::RxCnp | EventKind::RxData { .. } | EventKind::Dequeue { .. } => return,
        };
        if self.outputs_only {
            let (_, st) = self.core.on_ack(ev.flow, ack, nak, &mut NoHook);
            out.push(Decision::rate_window(ev, st.rate_bps, st.w_bytes));
            return;
        }
        let before = self.core.flow(ev.flow).copied();
        let (outcome, st) = self.core.on_ack(ev.flow, ack, nak, &mut NoHook);
        let m = match &outcome {
            AckOutcome::Updated(m) => Some(m),
            _ => None,
        };
        out.push(hpcc_decision(ev, st, m));
        let st = *st;
        let c = covered_by(&self.core.d, before.as_ref(), ack, nak, &outcome, &st);
        for (n, hit) in self.covered.iter_mut().zip(c) {
            *n += hit as u64;
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
mod tests {
    use super::*;

    /// Line 13 with U = 0 (reachable only through incStage >= maxStage): Wc / (U/η) would be
    /// +inf; the model takes its clamped limit W_init instead of dividing (C-3: no inf).
    #[test]
    fn compute_wind_with_zero_u_takes_w_init() {
        let p = Params {
            base_rtt_ns: 12_000,
            max_stage: 0,
            ..Params::default()
        };
        let d = p.derive().unwrap();
        let mut st = FlowState::new(&d);
        st.u = 0.0;
        st.wc_bytes = 5000;
        let ack = AckInfo {
            psn: 0,
            syndrome: 0,
            int: None,
            n: None,
            cwnd: None,
            rcc_flags: None,
            ts_ns: None,
        };
        compute_wind(
            &d,
            &mut st,
            &Measurement::default(),
            true,
            &ack,
            &mut NoHook,
        );
        assert_eq!(
            (st.w_bytes, st.wc_bytes, st.inc_stage),
            (150_000, 150_000, 0)
        );
    }

    /// HPCC-6 floor and clamp, and HPCC-1 pacing, on hand values (W_init 150,000, w_min 1000).
    #[test]
    fn floor_clamp_and_rate() {
        let p = Params {
            base_rtt_ns: 12_000,
            ..Params::default()
        };
        let d = p.derive().unwrap();
        assert_eq!(d.floor_clamp(1234.999), 1234);
        assert_eq!(d.floor_clamp(999.9), 1000);
        assert_eq!(d.floor_clamp(f64::INFINITY), 150_000);
        assert_eq!(d.floor_clamp(150_000.5), 150_000);
        // 1000 × 8e9 / 12000 = 666,666,666.67 -> 666,666,666
        assert_eq!(d.rate_bps(1000), 666_666_666);
        // Past the u64 fast path (2^32 × 8e9 > 2^64): 2^32 × 8e9 / 12000
        //   python3 -c "print(2**32*8_000_000_000//12000)" -> 2863311530666666
        assert_eq!(d.rate_bps(1 << 32), 2_863_311_530_666_666);
    }
}
