//! FNCC (seed 004, section 3.2; algorithms.md FNCC-1..3): the sender ([`Fncc`], HPCC fed with
//! the INT that switches write into ACKs, plus Algorithm 2's last-hop congestion speedup), the
//! receiver ([`Receiver`], the flow count `N` written into every ACK) and the switch
//! ([`Switch`], Algorithm 1: the data direction's egress INT pushed into the ACK).
//!
//! The sender reuses [`crate::hpcc`]'s Algorithm 1 unchanged; the speedup is the hook that
//! Algorithm 3 line 30 calls at the start of `ComputeWind`. See `docs/models/fncc.md`.

use ccreplay_codecs::shim::int::{IntHop, IntStack, QLEN_UNIT};
use serde::{Deserialize, Serialize};

use crate::event::{AckInfo, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::hpcc::{self, AckOutcome, Core, Derived, FlowState, Measurement, WcHook};
use crate::model::{Model, ParamError};

/// FNCC parameters: the HPCC ones ([`hpcc::Params`], same names, units and defaults) plus
/// `alpha`, `beta` and the receiver's `t_active_ns`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// See [`hpcc::Params::line_rate_bps`].
    pub line_rate_bps: u64,
    /// See [`hpcc::Params::base_rtt_ns`] (`RTT` of Algorithm 2 line 12 is this `T`).
    pub base_rtt_ns: u64,
    /// See [`hpcc::Params::mtu_bytes`].
    pub mtu_bytes: u64,
    /// See [`hpcc::Params::w_min_bytes`].
    pub w_min_bytes: Option<u64>,
    /// See [`hpcc::Params::eta`].
    pub eta: f64,
    /// See [`hpcc::Params::max_stage`].
    pub max_stage: u32,
    /// See [`hpcc::Params::w_ai_bytes`].
    pub w_ai_bytes: Option<f64>,
    /// See [`hpcc::Params::expected_flows`].
    pub expected_flows: u32,
    /// See [`hpcc::Params::reserved_line_rates`].
    pub reserved_line_rates: Vec<hpcc::ReservedLineRate>,
    /// `α`: last-hop speedup threshold on `U_max` (default 1.05, seed 004 3.2.2).
    pub alpha: f64,
    /// `β`: share of the fair window the speedup sets, in (0, 1] (default 0.9, seed 004 3.2.2).
    pub beta: f64,
    /// `T_active`: the receiver counts a QP in `N` while its last data packet is less than
    /// this many ns old; `None` = `base_rtt_ns` (FNCC-2).
    pub t_active_ns: Option<u64>,
}

impl Default for Params {
    fn default() -> Self {
        let h = hpcc::Params::default();
        Params {
            line_rate_bps: h.line_rate_bps,
            base_rtt_ns: h.base_rtt_ns,
            mtu_bytes: h.mtu_bytes,
            w_min_bytes: h.w_min_bytes,
            eta: h.eta,
            max_stage: h.max_stage,
            w_ai_bytes: h.w_ai_bytes,
            expected_flows: h.expected_flows,
            reserved_line_rates: h.reserved_line_rates,
            alpha: 1.05,
            beta: 0.9,
            t_active_ns: None,
        }
    }
}

impl Params {
    /// The HPCC part of these parameters.
    pub fn hpcc(&self) -> hpcc::Params {
        hpcc::Params {
            line_rate_bps: self.line_rate_bps,
            base_rtt_ns: self.base_rtt_ns,
            mtu_bytes: self.mtu_bytes,
            w_min_bytes: self.w_min_bytes,
            eta: self.eta,
            max_stage: self.max_stage,
            w_ai_bytes: self.w_ai_bytes,
            expected_flows: self.expected_flows,
            reserved_line_rates: self.reserved_line_rates.clone(),
        }
    }

    /// `T_active` in ns (FNCC-2).
    pub fn t_active_ns(&self) -> u64 {
        self.t_active_ns.unwrap_or(self.base_rtt_ns)
    }

    /// Reject values the models cannot run with (C-7), naming the parameter and why.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.hpcc().validate()?;
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(ParamError {
                name: "alpha",
                value: self.alpha.to_string(),
                reason: "must be finite and >= 0 (a threshold on U_max, e.g. 1.05)",
            });
        }
        if !(self.beta.is_finite() && self.beta > 0.0 && self.beta <= 1.0) {
            return Err(ParamError {
                name: "beta",
                value: self.beta.to_string(),
                reason: "must be in (0, 1]",
            });
        }
        if self.t_active_ns == Some(0) {
            return Err(ParamError {
                name: "t_active_ns",
                value: "0".into(),
                reason: "must be > 0 (or absent for base_rtt_ns)",
            });
        }
        Ok(())
    }
}

/// Algorithm 2 as the `ComputeWind` hook (Algorithm 3 lines 16-30).
#[derive(Clone, Debug)]
struct LastHopSpeedup {
    alpha: f64,
    beta: f64,
    /// Whether the last call set `Wc` (reported as state `lhcs`).
    applied: bool,
    /// Whether that `Wc` was clamped to `w_min` or `W_init` (coverage only).
    clamped: bool,
}

impl WcHook for LastHopSpeedup {
    #[inline]
    fn update_wc(&mut self, d: &Derived, st: &mut FlowState, m: &Measurement, ack: &AckInfo) {
        self.applied = false;
        self.clamped = false;
        // Hop_Detection (Algorithm 2 lines 3-7) picks the first hop with the largest U_j,
        // starting from U_max = 0, hop = 0: the same strict `>` scan as Algorithm 1 lines
        // 6-7, so `m.u_max` / `m.hop` are its result.
        let n = ack.n.unwrap_or(0); // wire.md 5.4: 0 = unknown
        // Line 11: hop = last hop (ACK record 0, wire.md 5.4) & U_max > α; N = 0 disables.
        let speedup = m.hop == 0 && m.u_max > self.alpha && n > 0;
        if !speedup {
            return;
        }
        let Some(rec0) = ack.int.as_ref().and_then(|s| s.hops().first()) else {
            return;
        };
        // Line 12 (Algorithm 3 line 25): Wc = ack.L[0].B × T × β / N, floored and clamped
        // like every window (HPCC-6). b_t holds the product B × T.
        let wc = d.b_t[(rec0.b & 0xF) as usize] * self.beta / n as f64;
        st.wc_bytes = d.floor_clamp(wc);
        self.clamped = !(wc > d.w_min as f64 && wc < d.w_init as f64);
        self.applied = true;
    }
}

/// Names of the state in every FNCC sender decision (C-6).
pub const STATE_NAMES: &[&str] = &[
    "W",
    "Wc",
    "U",
    "incStage",
    "lastUpdateSeq",
    "snd_nxt",
    "Umax",
    "hop",
    "tau",
    "N",
    "lhcs",
];

/// The FNCC sender model (name `fncc`): HPCC's Algorithm 1 on ACK-carried INT plus the
/// last-hop congestion speedup (FNCC-1). Events are handled as by [`hpcc::Hpcc`].
#[derive(Clone, Debug)]
pub struct Fncc {
    core: Core,
    hook: LastHopSpeedup,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
}

/// The rules and branches of the FNCC sender (FNCC-1, docs/models/fncc.md S1-S4 and choices;
/// the inherited HPCC ones named as in [`hpcc::COVERAGE`]) whose use `coverage()` counts.
/// docs/conformance.md says which the bundled suite exercises.
pub const COVERAGE: [&str; 24] = [
    "ACK without INT: no feedback",
    "HPCC-5 first INT of a flow",
    "HPCC-5 path change (nHop or pathID)",
    "HPCC-7 NAK: ack.seq = PSN",
    "FNCC-1 ACK-carried INT used (Algorithm 1 ran)",
    "INT from more than one hop",
    "S2 most loaded hop is not the last hop (record 0)",
    "S2 tie between record 0 and another hop goes to record 0 (choice 3)",
    "S2 U_max = 0: no record contributed or all idle (choice 2)",
    "HPCC-2 INT ts delta across the 24-bit wrap",
    "HPCC-2 INT txBytes delta across the 20-bit wrap",
    "HPCC-3 a hop with a zero TS delta",
    "line 8 tau clamped to T",
    "S3 N absent at a loaded last hop: treated as 0, no speedup (choice 4)",
    "S3 N = 0 at a loaded last hop: no speedup",
    "S3 last hop, U_max = alpha exactly: no speedup (choice 6)",
    "S3 last-hop speedup fires: Wc = B0 T beta / N",
    "S3 speedup window clamped to [w_min, W_init] (choice 5)",
    "S4 speedup on an ACK within the RTT (Wc kept, not re-synchronised)",
    "line 22 Wc updated (once per RTT)",
    "line 12-13 MD: U >= eta",
    "line 12-13 MI: incStage >= maxStage, U < eta",
    "line 17 AI: incStage < maxStage",
    "HPCC-6 window clamped to [w_min, W_init]",
];

/// `u'` of one record (F5, Algorithm 1 lines 4-5), for the tie count only; 0 for an unmapped code.
fn hop_u(d: &Derived, now: &IntHop, prev: &IntHop, dts_ns: u64) -> f64 {
    let code = (now.b & 0xF) as usize;
    let b = d.b_bytes_per_ns[code];
    if b <= 0.0 {
        return 0.0;
    }
    let tx_rate = now.tx_bytes_delta(*prev) as f64 / dts_ns as f64;
    let qlen_bytes = now.qlen.min(prev.qlen) as u64 * QLEN_UNIT;
    qlen_bytes as f64 / d.b_t[code] + tx_rate / b
}

/// Which of [`COVERAGE`] one ACK exercises, from the flow's state before it, the ACK, the
/// outcome and whether the speedup fired (observed from outside, so counting cannot change a
/// decision; no allocation).
fn covered_by(
    d: &Derived,
    hook: &LastHopSpeedup,
    before: Option<&FlowState>,
    ack: &AckInfo,
    nak: bool,
    outcome: &AckOutcome,
    after: &FlowState,
) -> [bool; COVERAGE.len()] {
    let (alpha, applied, clamped) = (hook.alpha, hook.applied, hook.clamped);
    let mut c = [false; COVERAGE.len()];
    c[3] = nak;
    let Some(int) = ack.int.as_ref() else {
        c[0] = true;
        return c;
    };
    let had = before.filter(|b| b.has_int);
    let m = match outcome {
        AckOutcome::Stored => {
            c[1] = had.is_none();
            c[2] = had.is_some();
            return c;
        }
        AckOutcome::NoInt => {
            c[0] = true;
            return c;
        }
        AckOutcome::Updated(m) => m,
    };
    let b = had.expect("Updated needs a stored INT");
    c[4] = true;
    let hops = int.hops();
    c[5] = hops.len() > 1;
    c[6] = m.hop > 0;
    c[8] = m.u_max == 0.0;
    let mut rec0_u = None;
    for (i, (now, prev)) in hops.iter().zip(b.l_hops.iter()).enumerate() {
        c[9] |= now.ts < prev.ts;
        c[10] |= now.tx_bytes < prev.tx_bytes;
        let dts = now.ts_delta_ns(*prev);
        c[11] |= dts == 0;
        if i == 0 && dts > 0 {
            rec0_u = Some(hop_u(d, now, prev, dts));
        } else if i > 0 && dts > 0 && m.hop == 0 && m.u_max > 0.0 {
            c[7] |= rec0_u == Some(m.u_max) && hop_u(d, now, prev, dts) == m.u_max;
        }
    }
    c[12] = m.tau_clamped;
    // N decides only where the rest of line 11 holds (last hop, U_max > α): count it there.
    let n_decides = m.hop == 0 && m.u_max > alpha;
    c[13] = n_decides && ack.n.is_none();
    c[14] = n_decides && ack.n == Some(0);
    c[15] = m.hop == 0 && m.u_max == alpha;
    c[16] = applied;
    c[17] = applied && clamped;
    c[18] = applied && !m.update_wc;
    c[19] = m.update_wc;
    let mi_or_md = after.u >= d.eta || b.inc_stage >= d.max_stage;
    c[20] = after.u >= d.eta;
    c[21] = mi_or_md && after.u < d.eta;
    c[22] = !mi_or_md;
    c[23] = after.w_bytes == d.w_init || after.w_bytes == d.w_min;
    c
}

impl Fncc {
    /// A sender with these parameters, or the first invalid one.
    pub fn new(params: &Params) -> Result<Self, ParamError> {
        params.validate()?;
        Ok(Fncc {
            core: Core::new(params.hpcc().derive()?),
            hook: LastHopSpeedup {
                alpha: params.alpha,
                beta: params.beta,
                applied: false,
                clamped: false,
            },
            covered: [0; COVERAGE.len()],
        })
    }

    /// `W_init` in bytes (HPCC-1).
    pub fn w_init_bytes(&self) -> u64 {
        self.core.d.w_init
    }

    /// `w_min` in bytes (HPCC-6).
    pub fn w_min_bytes(&self) -> u64 {
        self.core.d.w_min
    }

    /// The state of a flow, if the model has seen it.
    pub fn flow(&self, flow: FlowId) -> Option<&FlowState> {
        self.core.flow(flow)
    }
}

impl Model for Fncc {
    fn name(&self) -> &'static str {
        "fncc"
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
        self.hook.applied = false;
        self.hook.clamped = false;
        let before = self.core.flow(ev.flow).copied();
        let (outcome, st) = self.core.on_ack(ev.flow, ack, nak, &mut self.hook);
        let after = *st;
        let (u_max, hop, tau) = match outcome {
            AckOutcome::Updated(m) => (m.u_max, m.hop as u64, m.tau_ns),
            _ => (0.0, 0, 0),
        };
        out.push(Decision {
            state: State::new(
                STATE_NAMES,
                &[
                    StateValue::U64(st.w_bytes),
                    StateValue::U64(st.wc_bytes),
                    StateValue::F64(st.u),
                    StateValue::U64(st.inc_stage as u64),
                    StateValue::U64(st.last_update_seq as u64),
                    StateValue::U64(st.snd_nxt as u64),
                    StateValue::F64(u_max),
                    StateValue::U64(hop),
                    StateValue::U64(tau),
                    StateValue::U64(ack.n.unwrap_or(0) as u64),
                    StateValue::Bool(self.hook.applied),
                ],
            ),
            ..Decision::rate_window(ev, st.rate_bps, st.w_bytes)
        });
        let c = covered_by(
            &self.core.d,
            &self.hook,
            before.as_ref(),
            ack,
            nak,
            &outcome,
            &after,
        );
        for (n, hit) in self.covered.iter_mut().zip(c) {
            *n += hit as u64;
        }
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn has_timers(&self) -> bool {
        false
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}
}

/// "No flow" in the receiver's active list.
const NIL: u32 = u32::MAX;

/// Names of the state in every FNCC receiver decision (C-6).
pub const RECEIVER_STATE_NAMES: &[&str] = &["N"];

/// The rules and branches of the FNCC receiver (FNCC-2, docs/models/fncc.md "Receiver")
/// whose use `coverage()` counts, once per `rx_data` decision. docs/conformance.md says which
/// the bundled suite exercises.
pub const RECEIVER_COVERAGE: [&str; 7] = [
    "FNCC-2 first data packet of a flow: it joins N",
    "FNCC-2 packet of an active flow: its age restarts",
    "FNCC-2 flow back after T_active without data: it joins N again",
    "FNCC-2 flows T_active or more ns old leave N",
    "FNCC-2 a flow exactly T_active old leaves N (window (t - T_active, t])",
    "FNCC-2 more than one flow leaves N on one packet",
    "wire.md 4 N above 65535: ack_n saturates at 65535",
];

/// The FNCC receiver (name `fncc-receiver`, FNCC-2): on every data packet, `N` = the number
/// of QPs (flows) whose last data packet arrived less than `T_active` ns ago, this packet's
/// flow included; `N` is written into the ACK (`ack_n`, saturating at 65535).
///
/// Active flows sit in a list ordered by their last arrival; expiring is a walk from the
/// oldest end, so each event costs O(1) amortised and nothing is allocated per packet.
/// Events are expected in time order (harness.md 2); a step back in time is not an error,
/// the list then simply stops expiring at the first flow that is not old enough.
#[derive(Clone, Debug)]
pub struct Receiver {
    t_active_ns: u64,
    last_rx_ns: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    active: Vec<bool>,
    /// Whether a flow has sent a packet (coverage: a first packet or a return).
    seen: Vec<bool>,
    head: u32,
    tail: u32,
    n_active: u32,
    /// How often each of [`RECEIVER_COVERAGE`] ran.
    covered: [u64; RECEIVER_COVERAGE.len()],
}

impl Receiver {
    /// A receiver with `T_active` from these parameters (FNCC-2).
    pub fn new(params: &Params) -> Result<Self, ParamError> {
        params.validate()?;
        Ok(Receiver {
            t_active_ns: params.t_active_ns(),
            last_rx_ns: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            active: Vec::new(),
            seen: Vec::new(),
            head: NIL,
            tail: NIL,
            n_active: 0,
            covered: [0; RECEIVER_COVERAGE.len()],
        })
    }

    /// The current `N`.
    pub fn n_active(&self) -> u32 {
        self.n_active
    }

    fn unlink(&mut self, f: u32) {
        let (p, n) = (self.prev[f as usize], self.next[f as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.active[f as usize] = false;
        self.n_active -= 1;
    }

    fn push_back(&mut self, f: u32) {
        self.prev[f as usize] = self.tail;
        self.next[f as usize] = NIL;
        if self.tail == NIL {
            self.head = f;
        } else {
            self.next[self.tail as usize] = f;
        }
        self.tail = f;
        self.active[f as usize] = true;
        self.n_active += 1;
    }

    /// FNCC-2: record a data packet of `flow` at `t_ns`; returns the new `N`.
    pub fn on_data(&mut self, flow: FlowId, t_ns: u64) -> u32 {
        self.receive(flow, t_ns).0
    }

    /// [`Receiver::on_data`], and which of [`RECEIVER_COVERAGE`] the packet exercised (the
    /// saturation, a property of the output, is left to the caller).
    fn receive(&mut self, flow: FlowId, t_ns: u64) -> (u32, [bool; RECEIVER_COVERAGE.len()]) {
        let mut c = [false; RECEIVER_COVERAGE.len()];
        if flow == NIL {
            return (self.n_active, c); // the sentinel id cannot be tracked (4G flows)
        }
        let i = flow as usize;
        if i >= self.active.len() {
            self.last_rx_ns.resize(i + 1, 0);
            self.prev.resize(i + 1, NIL);
            self.next.resize(i + 1, NIL);
            self.active.resize(i + 1, false);
            self.seen.resize(i + 1, false);
        }
        // Expire flows whose last packet is T_active or more ns old: window (t − T, t].
        let mut expired = 0u32;
        while self.head != NIL {
            let h = self.head;
            let age = t_ns.saturating_sub(self.last_rx_ns[h as usize]);
            if age < self.t_active_ns {
                break;
            }
            c[4] |= age == self.t_active_ns;
            expired += 1;
            self.unlink(h);
        }
        c[3] = expired > 0;
        c[5] = expired > 1;
        if self.active[i] {
            c[1] = true;
            self.unlink(flow);
        } else {
            c[0] = !self.seen[i];
            c[2] = self.seen[i];
        }
        self.seen[i] = true;
        self.last_rx_ns[i] = t_ns;
        self.push_back(flow);
        (self.n_active, c)
    }
}

impl Model for Receiver {
    fn name(&self) -> &'static str {
        "fncc-receiver"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        if !matches!(ev.kind, EventKind::RxData { .. }) {
            return;
        }
        let (n, mut c) = self.receive(ev.flow, ev.t_ns);
        c[6] = n > u32::from(u16::MAX);
        for (k, hit) in self.covered.iter_mut().zip(c) {
            *k += hit as u64;
        }
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                ack_n: Some(u16::try_from(n).unwrap_or(u16::MAX)),
                ..Outputs::default()
            },
            state: State::new(RECEIVER_STATE_NAMES, &[StateValue::U64(n as u64)]),
        });
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn has_timers(&self) -> bool {
        false
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}

    fn per_flow(&self) -> bool {
        false // N counts every flow of the receiver
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        RECEIVER_COVERAGE
            .iter()
            .copied()
            .zip(self.covered)
            .collect()
    }
}

/// Why a switch did not write its record into an ACK (FNCC-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// The ACK's input port has no All_INT_Table entry.
    #[error("ACK input port {port} is not a port of the switch (it has {n_ports})")]
    UnknownPort {
        /// The ACK's input port.
        port: usize,
        /// Number of ports (table entries).
        n_ports: usize,
    },
    /// The ACK's INT stack already holds `max_hops` records (wire.md 5.2).
    #[error("INT stack full: nHop = {n_hop}, max_hops = {max_hops}")]
    StackFull {
        /// nHop of the stack.
        n_hop: u8,
        /// The trace's max_hops.
        max_hops: u8,
    },
}

/// FNCC-3: push `data_egress` (the INT of the data direction's egress queue) into the ACK's
/// next free record, increment nHop and XOR `switch_id` into pathID (wire.md 5.2, 5.4).
pub fn insert_int(
    ack_int: &mut IntStack,
    switch_id: u16,
    data_egress: IntHop,
    max_hops: u8,
) -> Result<(), SwitchError> {
    if ack_int.push(switch_id, data_egress, max_hops) {
        Ok(())
    } else {
        Err(SwitchError::StackFull {
            n_hop: ack_int.n_hop(),
            max_hops,
        })
    }
}

/// An FNCC switch (seed 004 Algorithm 1, FNCC-3): its 12-bit ID and the All_INT_Table, the
/// latest INT of every egress port, indexed by port number.
#[derive(Clone, Debug)]
pub struct Switch {
    /// 12-bit switch ID XORed into pathID.
    pub switch_id: u16,
    /// Records a stack may hold (wire.md 5.2, default 5).
    pub max_hops: u8,
    all_int_table: Vec<IntHop>,
}

impl Switch {
    /// A switch with `n_ports` ports whose table entries start at zero.
    pub fn new(switch_id: u16, n_ports: usize, max_hops: u8) -> Self {
        Switch {
            switch_id,
            max_hops,
            all_int_table: vec![IntHop::default(); n_ports],
        }
    }

    /// All_INT_Table management (seed 004 4.1): the latest INT of egress `port`.
    pub fn set_port_int(&mut self, port: usize, hop: IntHop) -> Result<(), SwitchError> {
        let n_ports = self.all_int_table.len();
        let e = self
            .all_int_table
            .get_mut(port)
            .ok_or(SwitchError::UnknownPort { port, n_ports })?;
        *e = hop;
        Ok(())
    }

    /// Algorithm 1 lines 2-9: an ACK that arrived on `input_port` — the data direction's
    /// egress port — gets `All_INT_Table[input_port]` pushed into its INT stack.
    pub fn forward_ack(
        &self,
        input_port: usize,
        ack_int: &mut IntStack,
    ) -> Result<(), SwitchError> {
        let hop = *self
            .all_int_table
            .get(input_port)
            .ok_or(SwitchError::UnknownPort {
                port: input_port,
                n_ports: self.all_int_table.len(),
            })?;
        insert_int(ack_int, self.switch_id, hop, self.max_hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(b: u8, ts: u32, tx_bytes: u32, qlen: u16) -> IntHop {
        IntHop {
            b,
            ts,
            tx_bytes,
            qlen,
        }
    }

    fn ack_info(psn: u32, n: Option<u16>, path: u16, hops: &[IntHop]) -> AckInfo {
        AckInfo {
            psn,
            syndrome: 0,
            int: (!hops.is_empty()).then(|| IntStack::from_hops(path, hops).unwrap()),
            n,
            cwnd: None,
            rcc_flags: None,
            ts_ns: None,
        }
    }

    /// Every rule of [`COVERAGE`] on a hand-built two-flow stream, counts derived by hand.
    /// B = 25 Gbps (code 0: 3.125 B/ns), T = 8,000 ns: W_init 25,000 B, w_min 1,000 B,
    /// W_AI = 25000 × 0.05 / 100 = 12.5 B; α = 1 so U_max = α can be hit exactly; maxStage 1.
    /// A ΔTS of 1,024 ns with Δtx 25 units (3,200 B) is u' = 3.125/3.125 = 1.0; 50 units 2.0.
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let p = Params {
            line_rate_bps: 25_000_000_000,
            base_rtt_ns: 8_000,
            max_stage: 1,
            alpha: 1.0,
            ..Params::default()
        };
        let mut m = Fncc::new(&p).unwrap();
        let tx = |psn| EventKind::TxData {
            psn,
            bytes: 1000,
            opcode: 10,
        };
        let a = |psn, n, hops: &[IntHop]| EventKind::RxAck(ack_info(psn, n, 3, hops));
        let stream: Vec<(FlowId, EventKind)> = vec![
            (0, tx(0)),
            (0, tx(1)),
            // A1: first INT (two records), lastUpdateSeq = snd_nxt = 2.
            (0, a(0, Some(2), &[hop(0, 1000, 0, 0), hop(0, 1000, 0, 0)])),
            // A2: u' 1.0 / 2.0 -> hop 1 (not the last hop); seq 2: no update; MD.
            (
                0,
                a(1, Some(2), &[hop(0, 2024, 25, 0), hop(0, 2024, 50, 0)]),
            ),
            (0, tx(2)),
            // A3: u' 1.0 / 0.4 -> hop 0, U_max = α: no speedup; seq 3 > 2: update; MD.
            (
                0,
                a(2, Some(2), &[hop(0, 3048, 50, 0), hop(0, 3048, 60, 0)]),
            ),
            // A4: record 0 at 100 Gbps (B·T = 100,000), Δtx 200 units: u' 2.0, N = 1:
            // Wc = 100000 × 0.9 = 90,000 -> clamped to 25,000; within the RTT; MD.
            (
                0,
                a(2, Some(1), &[hop(2, 4072, 250, 0), hop(0, 4072, 60, 0)]),
            ),
            // A5: u' 1.0 / 1.0: tie -> record 0, U_max = α; N absent (decides nothing); MD.
            (0, a(2, None, &[hop(0, 5096, 275, 0), hop(0, 5096, 85, 0)])),
            // A6: no TS advanced: U_max = 0; N = 0 (decides nothing); MD (U unchanged).
            (
                0,
                a(2, Some(0), &[hop(0, 5096, 275, 0), hop(0, 5096, 85, 0)]),
            ),
            // A7: NAK, TS advanced but idle: U_max = 0; seq = 2: no update; MD.
            (
                0,
                EventKind::RxNak(ack_info(
                    2,
                    Some(2),
                    3,
                    &[hop(0, 6120, 275, 0), hop(0, 6120, 85, 0)],
                )),
            ),
            // A8: pathID 9: path change, stored.
            (
                0,
                EventKind::RxAck(ack_info(2, Some(2), 9, &[hop(0, 7000, 0, 0)])),
            ),
            // A9: no INT.
            (0, a(2, Some(2), &[])),
            (1, tx(0)),
            // B1: first INT of flow 1 near both wraps; lastUpdateSeq = 1.
            (1, a(0, Some(3), &[hop(0, 16_777_000, 1_048_570, 0)])),
            // B2: ΔTS 1,024 and Δtx 50 across the wraps: u' 2.0, N = 3:
            // Wc = 25000 × 0.9 / 3 = 7,500 (within the RTT); U 1.128: MD.
            (1, a(0, Some(3), &[hop(0, 808, 44, 0)])),
            (1, tx(1)),
            // B3: ΔTS 16,000 > T: τ clamped, U = u' = 0.00256; update; AI (incStage 0).
            (1, a(1, Some(3), &[hop(0, 16_808, 45, 0)])),
            (1, tx(2)),
            // B4: the same; incStage 1 = maxStage: MI, W clamped to W_init; update.
            (1, a(2, Some(3), &[hop(0, 32_808, 46, 0)])),
            // A10: flow 0 on path 9 (A8's record): ΔTS 1,024, Δtx 50: u' 2.0 > α at the
            // last hop, N absent: no speedup. U >= 0.95 after A7 (MD), so U = 0.872 U +
            // 0.128 × 2 >= 1.08: MD; seq 3, lastUpdateSeq 3 (A3): no update.
            (
                0,
                EventKind::RxAck(ack_info(2, None, 9, &[hop(0, 8_024, 50, 0)])),
            ),
            // A11: the same with N = 0: no speedup; MD, no update.
            (
                0,
                EventKind::RxAck(ack_info(2, Some(0), 9, &[hop(0, 9_048, 100, 0)])),
            ),
        ];
        let mut out = Vec::new();
        let mut index = [0u64; 2];
        for (i, (flow, kind)) in stream.into_iter().enumerate() {
            let ev = Event {
                t_ns: i as u64 * 100,
                flow,
                index: index[flow as usize],
                kind,
            };
            index[flow as usize] += 1;
            m.on_event(&ev, &mut out);
        }
        let expected: [u64; COVERAGE.len()] = [
            1,  // no INT: A9
            2,  // first INT: A1, B1
            1,  // path change: A8
            1,  // NAK: A7
            11, // Algorithm 1 ran: A2-A7, B2-B4, A10, A11
            6,  // two records: A2-A7
            1,  // hop 1: A2
            1,  // tie: A5
            2,  // U_max = 0: A6, A7
            1,  // ts wrap: B2
            1,  // txBytes wrap: B2
            1,  // zero ΔTS: A6
            2,  // τ clamped: B3, B4
            1,  // N absent at a loaded last hop: A10 (not A5: U_max = α)
            1,  // N = 0 at a loaded last hop: A11 (not A6: U_max = 0)
            2,  // U_max = α: A3, A5
            2,  // speedup: A4, B2
            1,  // speedup clamped: A4
            2,  // speedup within the RTT: A4, B2
            3,  // Wc updated: A3, B3, B4
            9,  // MD: A2-A7, B2, A10, A11
            1,  // MI: B4
            1,  // AI: B3
            1,  // window clamped: B4
        ];
        let got: Vec<(&str, u64)> = m.coverage();
        let want: Vec<(&str, u64)> = COVERAGE.iter().copied().zip(expected).collect();
        assert_eq!(got, want);
        // Spot checks of the hand arithmetic behind the counts.
        let w = |i: usize| out[i].outputs.window_bytes.unwrap();
        assert_eq!(out.len(), 15);
        assert_eq!(m.flow(0).unwrap().wc_bytes, 25_000); // A4's clamped speedup, kept
        assert_eq!(w(10), 6328); // B2: floor(7500 / (1.128/0.95) + 12.5)
        assert_eq!(w(11), 7512); // B3: 7500 + 12.5
        assert_eq!(w(12), 25_000); // B4: MI clamped to W_init
    }

    /// Every rule of [`RECEIVER_COVERAGE`] on a hand-built stream, T_active = 100 ns; the
    /// active list (oldest first) and N after each packet are in the comments.
    #[test]
    fn receiver_coverage_counts_every_rule_on_a_hand_stream() {
        let p = Params {
            t_active_ns: Some(100),
            ..Params::default()
        };
        let mut r = Receiver::new(&p).unwrap();
        let mut out = Vec::new();
        let mut feed = |r: &mut Receiver, flow: FlowId, t_ns: u64| {
            let ev = Event {
                t_ns,
                flow,
                index: 0,
                kind: EventKind::RxData {
                    psn: 0,
                    bytes: 1000,
                    opcode: 7,
                    ecn: 0,
                    send_ts_ns: None,
                },
            };
            r.on_event(&ev, &mut out);
        };
        let stream = [
            (0, 0),   // R1: first of flow 0; [0], N 1
            (1, 10),  // R2: first of flow 1; [0 1], N 2
            (0, 50),  // R3: flow 0 active, refreshed; [1 0], N 2
            (2, 110), // R4: flow 1 exactly 100 old leaves; first of flow 2; [0 2], N 2
            (1, 120), // R5: flow 1 back; [0 2 1], N 3
            (0, 400), // R6: 0, 2, 1 (350, 290, 280 old) leave at once; flow 0 back; [0], N 1
            (0, 450), // R7: flow 0 active; [0], N 1
        ];
        for (flow, t) in stream {
            feed(&mut r, flow, t);
        }
        // 65,537 first packets at t = 1000 (the first expires flow 0, 550 old): N reaches
        // 65,536 and 65,537, above the u16 field; then flow 3 again: N 65,537.
        for flow in 3..=65_539 {
            feed(&mut r, flow, 1000);
        }
        feed(&mut r, 3, 1050);
        let expected: [u64; RECEIVER_COVERAGE.len()] = [
            3 + 65_537, // first packet: R1, R2, R4, flows 3..=65539
            3,          // active: R3, R7, flow 3 at 1050
            2,          // back: R5, R6
            3,          // expiry: R4, R6, flow 3 at 1000
            1,          // exactly T_active: R4
            1,          // several at once: R6
            3,          // N > 65535: flows 65538 and 65539 at 1000, flow 3 at 1050
        ];
        let want: Vec<(&str, u64)> = RECEIVER_COVERAGE.iter().copied().zip(expected).collect();
        assert_eq!(r.coverage(), want);
        let n: Vec<u16> = out.iter().map(|d| d.outputs.ack_n.unwrap()).collect();
        assert_eq!(&n[..7], &[1, 2, 2, 2, 3, 1, 1]);
        assert_eq!(out.len(), 7 + 65_537 + 1);
        assert_eq!(n[7 + 65_534], 65_535); // the 65,535th flow at 1000: N fits
        assert_eq!(&n[7 + 65_535..], &[65_535; 3]); // saturated
        assert_eq!(r.n_active(), 65_537);
    }
}
