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
        self.roll_rounds(t);
        self.round_bytes = self.round_bytes.saturating_add(u64::from(bytes));

        // Line 3, RCC-2: one-way delay (clocks assumed synchronised).
        let rtt_ns = send_ts_ns.map(|s| t.saturating_sub(s));

        // Line 4, RCC-3: message counting.
        let pos = message_position(opcode);
        let mut st = *self.flows.entry(ev.flow).or_insert(RxFlow::NEW);
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
        let cwnd = if st.pid {
            pid_step(&mut st, e_now, w_prev, fair, &d)
        } else if last_hop {
            fair
        } else if in_network {
            st.pid = true;
            st.u = 0.0;
            pid_step(&mut st, e_now, w_prev, fair, &d)
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
/// `U` is kept and the window only re-clamped. Returns the new window.
fn pid_step(st: &mut RxFlow, e_now: Option<f64>, w_prev: u64, fair: u64, d: &Derived) -> u64 {
    let w = match e_now {
        Some(e) => {
            // eq. 4: U = U_prev + Kp × E + Kd × (E − E_prev)
            st.u = st.u + d.kp * e + d.kd * (e - st.e_prev);
            // eq. 5: W = W_prev × (1 − tanh(U)), floored (C-3). tanh in [-1, 1] keeps the
            // product in [0, 2 × W_prev].
            (w_prev as f64 * (1.0 - libm::tanh(st.u))).floor() as u64
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
}

#[cfg(test)]
mod tests {
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
