//! RCC receiver, `rcc-receiver` (seed 002 Algorithm 1; RCC-1..5).
//!
//! On every data packet (RxData) of flow `i` at time `t`, in Algorithm 1's order:
//! 1. line 3, RCC-2: one-way delay `rtt = t − send_ts` (0 if the timestamp is later than `t`;
//!    no sample without a timestamp);
//! 2. line 4, RCC-3: message count `N`, +1 at a message's first packet (FIRST / ONLY, or any
//!    packet of a flow not yet in a message: the capture began mid-message), −1 after its last
//!    (LAST / ONLY);
//! 3. line 5, RCC-3: `fair_share = floor(C × T / 8e9 / N)` bytes (`N` >= 1);
//! 4. lines 6-19, RCC-4/5: a flow in PID mode stays there: `cwnd = PID`; else if the last-hop
//!    test holds (`B_R > C × T × η`, bytes of all flows in the previous round of `T` ns):
//!    `cwnd = fair_share`; else if the last `n` delay samples of the flow all exceeded
//!    `base × (1 + δ)` (in-network congestion): the flow enters PID mode, `cwnd = PID`; else
//!    `cwnd = fair_share`.
//!
//! PID (RCC-5, eqs. 2-5): `target = base × (1 + δ/2)`, `E = (rtt − target) / 1e9` s,
//! `U = U_prev + Kp × E + Kd × (E − E_prev)`, `W = floor(W_prev × (1 − tanh(U)))` with
//! `libm::tanh`, then clamped to `[1 MTU, fair_share]` (the fair share wins if it is below one
//! MTU). `U` starts at 0 when the flow enters PID mode; `E_prev` is the error of the flow's
//! previous delay sample (0 before its first). `W_prev` is the last window assigned to the
//! flow (its fair share if none yet).
//!
//! Every RxData yields one decision (C-6) with `ack_cwnd`, `ack_n` (the `N` of this packet's
//! fair share) and `ack_flags` (bit 0: flow in PID mode; bit 1: in-network congestion detected
//! at this packet), and the state [`Receiver::STATE_NAMES`]. `N` and `B_R` are shared by all
//! flows, so `per_flow()` is false. No timers: rounds of `B_R` roll lazily on packet arrival.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::{Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};
use crate::rcc::opcode::{MessagePosition, message_position};
use crate::rcc::{BITS_NS_PER_BYTE_S, check_common, err};

/// `ack_flags` bit 0: the flow is in PID mode.
pub const FLAG_PID: u8 = 1 << 0;
/// `ack_flags` bit 1: in-network congestion detected at this packet.
pub const FLAG_IN_NETWORK: u8 = 1 << 1;

/// Largest `Kp` / `Kd` accepted: keeps `U` finite for any delay (C-3).
pub const MAX_GAIN: f64 = 1e12;

/// The rules and branches of the receiver (RCC-2..5, docs/models/rcc.md rows A1-A10, P1-P5 and
/// the numbered choices) whose use `coverage()` counts, once per `rx_data` that exercises
/// each. docs/conformance.md (RCC) says which the bundled suite exercises.
pub const COVERAGE: [&str; 30] = [
    "RCC-2 A1 delay sample: arrival - send timestamp",
    "A1 send timestamp after the arrival (clock skew): delay 0",
    "choice 5 no send timestamp: no delay sample",
    "RCC-3 A2 FIRST opens a message: N + 1",
    "RCC-3 A2 ONLY: one-packet message, N + 1 then - 1",
    "RCC-3 A2 LAST closes the message: N - 1",
    "choice 3 MIDDLE or LAST of a flow not in a message opens one",
    "choice 3 FIRST of a flow already in a message: not counted twice",
    "choice 3 other opcode: no message, N unchanged",
    "RCC-3 A3 fair share floored (C T / 8e9 / N not whole)",
    "choice 2 B_R round rolled: B_R = bytes of the round just ended",
    "choice 2 B_R round rolled past an empty round: B_R = 0",
    "RCC-4 A4 delay > base (1 + delta): consecutive + 1",
    "RCC-4 A4 delay <= base (1 + delta) ends a run: consecutive = 0",
    "RCC-4 A5 last-hop test holds: B_R > C T eta",
    "RCC-4 A5 B_R = C T eta exactly: not last hop (strict >)",
    "RCC-4 A6 n consecutive delays, last hop congested: no PID",
    "RCC-4 A9 in-network congestion: flow enters PID mode",
    "RCC-5 A7 flow in PID mode stays there: cwnd = PID",
    "RCC-5 A7 PID mode wins over the last-hop test (line 6)",
    "A8 last-hop congestion: cwnd = fair share",
    "A10 no congestion: cwnd = fair share",
    "choice 8 in-network detected again in PID mode (flag bit 1)",
    "RCC-5 P4 U > 0: window decreased",
    "RCC-5 P4 U < 0: window increased",
    "RCC-5 P4 C-3 PID window floored (not whole)",
    "RCC-5 P4 PID step from a window below the fair share",
    "RCC-5 P5 PID window clamped up to 1 MTU",
    "RCC-5 P5 PID window clamped down to the fair share",
    "choice 7 fair share below 1 MTU wins the clamp",
];

/// What one `rx_data` did, recorded around Algorithm 1 for [`covered_by`] only: the flow and
/// the shared counters before it, and what it computed. Nothing here feeds a decision.
#[derive(Clone, Copy)]
struct Step {
    t_ns: u64,
    send_ts_ns: Option<u64>,
    pos: MessagePosition,
    /// The flow before the packet (`None`: its first packet).
    before: Option<RxFlow>,
    /// The round start before [`Receiver::roll_rounds`], and after it.
    round_before: Option<u64>,
    round_after: Option<u64>,
    b_r: u64,
    n_used: u64,
    fair: u64,
    last_hop: bool,
    in_network: bool,
    /// The flow after the packet.
    after: RxFlow,
    /// The PID step, when one ran with a delay sample: `W_prev` and eq. 5's product
    /// `W_prev (1 - tanh U)` before the floor.
    pid: Option<(u64, f64)>,
}

/// Which of [`COVERAGE`] one `rx_data` exercised, from its [`Step`] (observed from outside the
/// algorithm, so counting cannot change a decision; no allocation).
fn covered_by(d: &Derived, s: &Step) -> [bool; COVERAGE.len()] {
    use MessagePosition::*;
    let mut c = [false; COVERAGE.len()];
    let was = s.before.unwrap_or(RxFlow::NEW);
    c[0] = s.send_ts_ns.is_some();
    c[1] = s.send_ts_ns.is_some_and(|ts| ts > s.t_ns);
    c[2] = s.send_ts_ns.is_none();
    c[3] = s.pos == First && !was.in_message;
    c[4] = s.pos == Only && !was.in_message;
    c[5] = s.pos == Last && was.in_message;
    c[6] = matches!(s.pos, Middle | Last) && !was.in_message;
    c[7] = s.pos == First && was.in_message;
    c[8] = s.pos == Other;
    c[9] = !d
        .c_times_t
        .is_multiple_of(BITS_NS_PER_BYTE_S * u128::from(s.n_used));
    if let (Some(a), Some(b)) = (s.round_before, s.round_after)
        && b != a
    {
        let rounds = (b - a) / d.round_ns;
        c[10] = rounds == 1;
        c[11] = rounds > 1;
    }
    // A sample above the threshold leaves the run at >= 1, one at or below it at 0 (A4).
    if s.send_ts_ns.is_some() {
        c[12] = s.after.consecutive > 0;
        c[13] = s.after.consecutive == 0 && was.consecutive > 0;
    }
    c[14] = s.last_hop;
    c[15] = s.b_r as f64 == d.last_hop_bytes;
    c[16] = !was.pid && s.last_hop && s.after.consecutive >= d.n;
    c[17] = !was.pid && s.after.pid;
    c[18] = was.pid;
    c[19] = was.pid && s.last_hop;
    c[20] = !was.pid && s.last_hop;
    c[21] = !was.pid && !s.last_hop && !s.in_network;
    c[22] = was.pid && s.in_network;
    if let Some((w_prev, product)) = s.pid {
        let u = s.after.u;
        c[23] = u > 0.0;
        c[24] = u < 0.0;
        c[25] = product.fract() != 0.0;
        c[26] = w_prev < s.fair;
        let w = product as u64;
        c[27] = s.fair >= d.mtu && w < d.mtu;
        c[28] = s.fair >= d.mtu && w.max(d.mtu) > s.fair;
    }
    c[29] = s.after.pid && s.fair < d.mtu;
    c
}

/// `rcc-receiver` parameters (C-7), defaults from seed 002 §III-F and §V-A.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReceiverParams {
    /// `C`: last-hop (receiver NIC) bandwidth, bps (default 100 Gbps, §V-A).
    pub line_rate_bps: u64,
    /// `T`: base RTT, ns; the fair-share window `C × T / N` and the `B_R` round (default
    /// 12 000, §V-A).
    pub base_rtt_ns: u64,
    /// MTU, bytes: the PID window's lower clamp (default 1000; the paper gives none).
    pub mtu_bytes: u64,
    /// Base one-way delay `RTT_i^base` of eqs. 1-2, ns; `None` = `base_rtt_ns`, as the paper's
    /// own numbers do (12 µs base, 13.2 µs target, §IV-C, §V-A).
    pub base_delay_ns: Option<u64>,
    /// `n`: consecutive delay samples above `base × (1 + δ)` that signal congestion (default 3).
    pub n: u32,
    /// `δ`: allowed queueing as a fraction of the base, in (0, 1) (default 0.2).
    pub delta: f64,
    /// `η`: expected last-hop utilisation, in (0, 1] (default 0.95).
    pub eta: f64,
    /// `Kp`: proportional gain, per second of error (default 1e4, §V-A).
    pub kp: f64,
    /// `Kd`: derivative gain, per second of error (default 1e5, §V-A).
    pub kd: f64,
}

impl Default for ReceiverParams {
    fn default() -> Self {
        ReceiverParams {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 12_000,
            mtu_bytes: 1000,
            base_delay_ns: None,
            n: 3,
            delta: 0.2,
            eta: 0.95,
            kp: 1e4,
            kd: 1e5,
        }
    }
}

/// Validated, precomputed parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Derived {
    /// `C × T` in bit·ns (the fair share is this / 8e9 / N).
    c_times_t: u128,
    round_ns: u64,
    mtu: u64,
    n: u32,
    /// `base × (1 + δ)`, ns (eq. 1).
    congested_above_ns: f64,
    /// `base × (1 + δ/2)`, ns (eq. 2).
    target_ns: f64,
    /// `C × T / 8e9 × η`, bytes (§III-C).
    last_hop_bytes: f64,
    kp: f64,
    kd: f64,
}

impl ReceiverParams {
    /// Reject values the model cannot run with, naming the parameter and why (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.derive().map(|_| ())
    }

    fn derive(&self) -> Result<Derived, ParamError> {
        check_common(self.line_rate_bps, self.base_rtt_ns, self.mtu_bytes)?;
        if self.n == 0 {
            return Err(err("n", 0, "must be >= 1 (consecutive delay samples)"));
        }
        if !(self.delta.is_finite() && self.delta > 0.0 && self.delta < 1.0) {
            return Err(err(
                "delta",
                self.delta,
                "must be in (0, 1) (seed 002 eq. 1)",
            ));
        }
        if !(self.eta.is_finite() && self.eta > 0.0 && self.eta <= 1.0) {
            return Err(err("eta", self.eta, "must be in (0, 1]"));
        }
        for (name, k) in [("kp", self.kp), ("kd", self.kd)] {
            if !(k.is_finite() && (0.0..=MAX_GAIN).contains(&k)) {
                return Err(err(name, k, "must be in [0, 1e12]"));
            }
        }
        let base = match self.base_delay_ns {
            Some(0) => return Err(err("base_delay_ns", 0, "must be > 0")),
            Some(b) => b,
            None => self.base_rtt_ns,
        };
        let base = base as f64;
        Ok(Derived {
            c_times_t: u128::from(self.line_rate_bps) * u128::from(self.base_rtt_ns),
            round_ns: self.base_rtt_ns,
            mtu: self.mtu_bytes,
            n: self.n,
            congested_above_ns: base * (1.0 + self.delta),
            target_ns: base * (1.0 + self.delta / 2.0),
            last_hop_bytes: self.line_rate_bps as f64 * self.base_rtt_ns as f64 / 8e9 * self.eta,
            kp: self.kp,
            kd: self.kd,
        })
    }
}

/// Receiver state of one flow (seed 002 Table I, receiver rows).
#[derive(Clone, Copy, Debug, PartialEq)]
struct RxFlow {
    /// A message of this flow is open (counted in `N`).
    in_message: bool,
    /// Consecutive delay samples above `base × (1 + δ)`.
    consecutive: u32,
    /// In PID mode (Algorithm 1 line 6: stays until the end).
    pid: bool,
    /// `U_i(t-1)`.
    u: f64,
    /// `E_i(t-1)`, s.
    e_prev: f64,
    /// Last window assigned, bytes (`None` before the first packet).
    cwnd: Option<u64>,
}

impl RxFlow {
    const NEW: RxFlow = RxFlow {
        in_message: false,
        consecutive: 0,
        pid: false,
        u: 0.0,
        e_prev: 0.0,
        cwnd: None,
    };
}

/// RCC receiver (`rcc-receiver`).
#[derive(Clone, Debug)]
pub struct Receiver {
    params: ReceiverParams,
    d: Derived,
    flows: BTreeMap<FlowId, RxFlow>,
    /// `N`: open messages.
    n_active: u64,
    /// Start of the current `B_R` round (first packet's time, then steps of `T`).
    round_start_ns: Option<u64>,
    /// Bytes received by all flows in the current round.
    round_bytes: u64,
    /// `B_R`: bytes received by all flows in the previous round.
    b_r: u64,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
}

impl Receiver {
    /// Decision state names, in order (C-6): `N` used for this packet, `fair_share` (bytes),
    /// the one-way delay `rtt_ns` (−1 without a timestamp), `consecutive` samples above the
    /// threshold, `B_R` (bytes), `pid` mode, `U`, `E` (s), and the assigned window `W`.
    pub const STATE_NAMES: &'static [&'static str] = &[
        "N",
        "fair_share",
        "rtt_ns",
        "consecutive",
        "B_R",
        "pid",
        "U",
        "E",
        "W",
    ];

    /// A model with validated parameters.
    pub fn new(params: ReceiverParams) -> Result<Self, ParamError> {
        let d = params.derive()?;
        Ok(Receiver {
            params,
            d,
            flows: BTreeMap::new(),
            n_active: 0,
            round_start_ns: None,
            round_bytes: 0,
            b_r: 0,
            covered: [0; COVERAGE.len()],
        })
    }

    /// The parameters this model runs with.
    pub fn params(&self) -> &ReceiverParams {
        &self.params
    }

    /// Roll the `B_R` rounds forward to the one holding `t_ns` (RCC-4, §III-C footnote 2:
    /// `B_R` is the bytes of the previous round; rounds of `T` ns from the first packet).
    fn roll_rounds(&mut self, t_ns: u64) {
        match self.round_start_ns {
            None => self.round_start_ns = Some(t_ns),
            Some(start) if t_ns >= start && t_ns - start >= self.d.round_ns => {
                let k = (t_ns - start) / self.d.round_ns;
                // The previous round is the one just ended, or an empty one if more passed.
                self.b_r = if k == 1 { self.round_bytes } else { 0 };
                self.round_bytes = 0;
                // start + k × T <= t_ns: no overflow.
                self.round_start_ns = Some(start + k * self.d.round_ns);
            }
            Some(_) => {}
        }
    }

    /// `floor(C × T / 8e9 / N)` bytes (RCC-3), exact in integers, saturated to u64.
    fn fair_share(&self, n: u64) -> u64 {
        let v = self.d.c_times_t / (BITS_NS_PER_BYTE_S * u128::from(n.max(1)));
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    fn on_data(&mut self, ev: &Event, bytes: u32, opcode: u8, send_ts_ns: Option<u64>) -> Decision {
        let t = ev.t_ns;
        let d = self.d;
        let round_before = self.round_start_ns;
        self.roll_rounds(t);
        self.round_bytes = self.round_bytes.saturating_add(u64::from(bytes));

        // Line 3, RCC-2: one-way delay (clocks assumed synchronised).
        let rtt_ns = send_ts_ns.map(|s| t.saturating_sub(s));

        // Line 4, RCC-3: message counting.
        let pos = message_position(opcode);
        let before = self.flows.get(&ev.flow).copied();
        let mut st = before.unwrap_or(RxFlow::NEW);
        if pos != MessagePosition::Other && !st.in_message {
            st.in_message = true;
            self.n_active += 1;
        }
        let n_used = self.n_active.max(1);

        // Line 5: explicit window assignment.
        let fair = self.fair_share(n_used);

        // RCC-4: n consecutive samples above base × (1 + δ) (eq. 1); last-hop test.
        let e_now = rtt_ns.map(|r| (r as f64 - d.target_ns) / 1e9); // eq. 3, seconds
        if let Some(r) = rtt_ns {
            st.consecutive = if r as f64 > d.congested_above_ns {
                st.consecutive.saturating_add(1)
            } else {
                0
            };
        }
        let last_hop = self.b_r as f64 > d.last_hop_bytes;
        let in_network = st.consecutive >= d.n && !last_hop;

        // Lines 6-19.
        let w_prev = st.cwnd.unwrap_or(fair);
        let mut product = None;
        let cwnd = if st.pid {
            pid_step(&mut st, e_now, w_prev, fair, &d, &mut product)
        } else if last_hop {
            fair
        } else if in_network {
            st.pid = true;
            st.u = 0.0;
            pid_step(&mut st, e_now, w_prev, fair, &d, &mut product)
        } else {
            fair
        };
        st.cwnd = Some(cwnd);
        if let Some(e) = e_now {
            st.e_prev = e;
        }

        // RCC-3: −1 after the message's last packet.
        if matches!(pos, MessagePosition::Last | MessagePosition::Only) && st.in_message {
            st.in_message = false;
            self.n_active -= 1;
        }
        self.flows.insert(ev.flow, st);

        let c = covered_by(
            &d,
            &Step {
                t_ns: t,
                send_ts_ns,
                pos,
                before,
                round_before,
                round_after: self.round_start_ns,
                b_r: self.b_r,
                n_used,
                fair,
                last_hop,
                in_network,
                after: st,
                pid: product.map(|p| (w_prev, p)),
            },
        );
        for (n, hit) in self.covered.iter_mut().zip(c) {
            *n += u64::from(hit);
        }

        let flags =
            if st.pid { FLAG_PID } else { 0 } | if in_network { FLAG_IN_NETWORK } else { 0 };
        let state = State::new(
            Self::STATE_NAMES,
            &[
                StateValue::U64(n_used),
                StateValue::U64(fair),
                StateValue::I64(rtt_ns.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX))),
                StateValue::U64(u64::from(st.consecutive)),
                StateValue::U64(self.b_r),
                StateValue::Bool(st.pid),
                StateValue::F64(st.u),
                StateValue::F64(st.e_prev),
                StateValue::U64(cwnd),
            ],
        );
        Decision {
            t_ns: t,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                ack_cwnd: Some(u32::try_from(cwnd).unwrap_or(u32::MAX)),
                ack_n: Some(u16::try_from(n_used).unwrap_or(u16::MAX)),
                ack_flags: Some(flags),
                ..Outputs::default()
            },
            state,
        }
    }
}

/// One PID step (RCC-5, eqs. 3-5) in the order the equations write it; without a delay sample
/// `U` is kept and the window only re-clamped. Returns the new window; `product` gets eq. 5's
/// product before the floor (for the coverage count only).
fn pid_step(
    st: &mut RxFlow,
    e_now: Option<f64>,
    w_prev: u64,
    fair: u64,
    d: &Derived,
    product: &mut Option<f64>,
) -> u64 {
    let w = match e_now {
        Some(e) => {
            // eq. 4: U = U_prev + Kp × E + Kd × (E − E_prev)
            st.u = st.u + d.kp * e + d.kd * (e - st.e_prev);
            // eq. 5: W = W_prev × (1 − tanh(U)), floored (C-3). tanh in [-1, 1] keeps the
            // product in [0, 2 × W_prev].
            let p = w_prev as f64 * (1.0 - libm::tanh(st.u));
            *product = Some(p);
            p.floor() as u64
        }
        None => w_prev,
    };
    // RCC-5 clamp [1 MTU, fair share]; the fair share is the hard upper bound.
    w.max(d.mtu).min(fair)
}

impl Model for Receiver {
    fn name(&self) -> &'static str {
        "rcc-receiver"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        if let EventKind::RxData {
            bytes,
            opcode,
            send_ts_ns,
            ..
        } = ev.kind
        {
            let d = self.on_data(ev, bytes, opcode, send_ts_ns);
            out.push(d);
        }
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}

    fn per_flow(&self) -> bool {
        false
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule of [`COVERAGE`] on a hand-built stream, counts derived by hand (below).
    /// C = 8 Gbps, T = 1 000 ns: C T / 8e9 = 1 000 B, fair shares 1000 / N = 1000, 500, 333.3,
    /// 250; MTU 300 (so N = 4 puts the fair share below it); eta 0.5: last hop when
    /// B_R > 500.0; n = 2; base 1 000 ns: above 1000 × 1.2 = 1 200.0 ns, target 1 100.0 ns;
    /// Kp = 1e6, Kd = 0: each sample adds (rtt − 1100) / 1000 to U. Rounds of 1 000 ns from
    /// t = 10 000. Opcodes (RC): FIRST 0x06, MIDDLE 0x07, LAST 0x08, ONLY 0x0A, READ request
    /// 0x0C (no message).
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let p = ReceiverParams {
            line_rate_bps: 8_000_000_000,
            base_rtt_ns: 1_000,
            mtu_bytes: 300,
            n: 2,
            eta: 0.5,
            kp: 1e6,
            kd: 0.0,
            ..ReceiverParams::default()
        };
        let mut m = Receiver::new(p).unwrap();
        // (t, flow, opcode, payload bytes, one-way delay; None: no timestamp, Some(-1): the
        // timestamp 100 ns after the arrival).
        let stream: [(u64, u32, u8, u32, Option<i64>); 18] = [
            // E1: ONLY opens and closes, N = 1, fair 1000; B_R 0; A10.
            (10_000, 0, 0x0A, 100, Some(1000)),
            // E2: FIRST, N = 1; 1300 > 1200: run 1; A10.
            (10_100, 1, 0x06, 400, Some(1300)),
            // E3: FIRST, N = 2, fair 500; A10. The round holds 600 B.
            (10_200, 2, 0x06, 100, Some(1100)),
            // E4: round rolled once, B_R = 600 > 500: last hop; run 2 but no PID (A6); A8.
            (11_000, 1, 0x07, 400, Some(1250)),
            // E5: the same (run 3). The round [11 000, 12 000) holds 500 B.
            (11_500, 1, 0x07, 100, Some(1300)),
            // E6: rolled once, B_R = 500 = C T eta: not last hop; run 4 >= n: flow 1 enters
            // PID: U = 0.2, W = floor(500 (1 - tanh 0.2)) = floor(401.3) = 401.
            (12_000, 1, 0x07, 100, Some(1300)),
            // E7: 700 ends the run; U = -0.2: W = floor(401 × 1.197) = 480, from below fair.
            (12_100, 1, 0x07, 100, Some(700)),
            // E8: U = -0.9: 480 × 1.716 = 823.8, clamped down to the fair share 500.
            (12_200, 1, 0x07, 100, Some(400)),
            // E9: flow 2 stamped 100 ns after the arrival: delay 0; A10.
            (12_300, 2, 0x07, 100, Some(-1)),
            // E10: a MIDDLE opens flow 3's message (N = 3, fair 333.3 floored); no timestamp.
            (12_400, 3, 0x07, 100, None),
            // E11: FIRST of flow 3, already in a message: N stays 3.
            (12_500, 3, 0x06, 100, Some(1000)),
            // E12: flow 1: 1300 (run 1), U = -0.7: 500 × 1.604 = 802.2, clamped to 333.
            (12_600, 1, 0x07, 100, Some(1300)),
            // E13: a READ request: no message, N = 3; A10.
            (12_700, 0, 0x0C, 100, Some(1000)),
            // E14: 2 500 ns later: rolled past an empty round, B_R = 0; flow 1's run 2 >= n
            // and not last hop: in-network again in PID mode; U = -0.5: 333 × 1.462 = 486.9,
            // clamped to 333; LAST closes: N = 2.
            (14_500, 1, 0x08, 100, Some(1300)),
            // E15: N = 2 (flows 2, 3), fair 500; the round [14 000, 15 000) reaches 600 B.
            (14_600, 2, 0x07, 500, Some(1000)),
            // E16: rolled once, B_R = 600: last hop, PID mode wins; a MIDDLE reopens flow 1
            // (N = 3, fair 333); 2100: U = 0.5: 333 × 0.538 = 179.1, clamped up to 300.
            (15_000, 1, 0x07, 100, Some(2100)),
            // E17: FIRST of flow 0: N = 4, fair 250; last hop: A8.
            (15_100, 0, 0x06, 100, Some(1000)),
            // E18: flow 1: 1150 ends its run of 3; U = 0.55: 300 × 0.4995 = 149.9; fair 250
            // below the 300-byte MTU wins: W = 250.
            (15_200, 1, 0x07, 100, Some(1150)),
        ];
        let mut out = Vec::new();
        let mut index = [0u64; 4];
        for (t, flow, opcode, bytes, delay) in stream {
            let send_ts_ns = delay.map(|d| if d < 0 { t + 100 } else { t - d as u64 });
            let ev = Event {
                t_ns: t,
                flow,
                index: index[flow as usize],
                kind: EventKind::RxData {
                    psn: 0,
                    bytes,
                    opcode,
                    ecn: 0,
                    send_ts_ns,
                },
            };
            index[flow as usize] += 1;
            m.on_event(&ev, &mut out);
        }
        let expected: [u64; COVERAGE.len()] = [
            17, // delay samples: all but E10
            1,  // skew: E9
            1,  // no timestamp: E10
            3,  // FIRST opens: E2, E3, E17
            1,  // ONLY: E1
            1,  // LAST closes: E14
            2,  // MIDDLE opens: E10, E16
            1,  // FIRST in a message: E11
            1,  // other opcode: E13
            6,  // fair share 333.3 floored: E10-E14, E16 (N = 3)
            3,  // rolled one round: E4, E6, E16
            1,  // past an empty round: E14
            7,  // above 1200: E2, E4, E5, E6, E12, E14, E16
            2,  // run ended: E7 (run 4), E18 (run 3)
            5,  // B_R > 500: E4, E5, E16, E17, E18
            8,  // B_R = 500: E6-E13
            2,  // run >= 2 with last hop, no PID: E4, E5
            1,  // enters PID: E6
            6,  // in PID: E7, E8, E12, E14, E16, E18
            2,  // PID and last hop: E16, E18
            3,  // A8: E4, E5, E17
            8,  // A10: E1, E2, E3, E9, E10, E11, E13, E15
            1,  // in-network in PID: E14
            3,  // U > 0: E6, E16, E18
            4,  // U < 0: E7, E8, E12, E14
            7,  // product not whole: every PID step
            2,  // from below the fair share: E7 (401 < 500), E8 (480 < 500)
            1,  // clamped up: E16
            3,  // clamped down: E8, E12, E14
            1,  // fair share below the MTU: E18
        ];
        let got: Vec<(&str, u64)> = m.coverage();
        let want: Vec<(&str, u64)> = COVERAGE.iter().copied().zip(expected).collect();
        assert_eq!(got, want);
        // The windows the comments derive, and the N written into the ACKs.
        let w: Vec<u32> = out.iter().map(|d| d.outputs.ack_cwnd.unwrap()).collect();
        assert_eq!(
            w,
            [
                1000, 1000, 500, 500, 500, 401, 480, 500, 500, 333, 333, 333, 333, 333, 500, 300,
                250, 250
            ]
        );
        let n: Vec<u16> = out.iter().map(|d| d.outputs.ack_n.unwrap()).collect();
        assert_eq!(n, [1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 2, 3, 4, 4]);
        // E6 enters PID with in-network congestion; E14 flags it again in PID mode.
        assert_eq!(out[5].outputs.ack_flags, Some(FLAG_PID | FLAG_IN_NETWORK));
        assert_eq!(out[13].outputs.ack_flags, Some(FLAG_PID | FLAG_IN_NETWORK));
        assert_eq!(out[15].outputs.ack_flags, Some(FLAG_PID));
    }

    #[test]
    fn libm_tanh_matches_python() {
        // python3: math.tanh(0.12799999999999997) = 0.12730550045073621 (0x3fc04b8bf084b6b1);
        // math.tanh(-0.06400000000000003) = -0.06391276159528166 (0xbfb05c9634d9499d).
        let u1 = f64::from_bits(0x3fc0624dd2f1a9fb);
        let u2 = f64::from_bits(0xbfb0624dd2f1a9fe);
        assert_eq!(libm::tanh(u1).to_bits(), 0x3fc04b8bf084b6b1);
        assert_eq!(libm::tanh(u2).to_bits(), 0xbfb05c9634d9499d);
    }
}
