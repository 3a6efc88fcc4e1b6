//! RCC sender, `rcc-sender` (RCC-1; seed 002 §III-B, §III-D).
//!
//! The sender's window is the last `cwnd` a receiver wrote into an ACK or NAK (wire.md 5.5:
//! both carry the RCC extension); it paces at `R = floor(cwnd × 8e9 / T)` bps (`cwnd` bytes,
//! `T = base_rtt_ns`), capped at the line rate (a NIC cannot pace faster). A flow starts at
//! line rate with the bandwidth-delay product `floor(C × T / 8e9)` as its window (§III-B).
//!
//! Every ACK / NAK carrying `cwnd` yields one decision with `window_bytes` and `rate_bps`
//! (C-6); ACKs without the extension and data events yield none.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::{Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};
use crate::rcc::{BITS_NS_PER_BYTE_S, bdp_bytes, check_common};

/// `rcc-sender` parameters (C-7).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SenderParams {
    /// `C`: the sender NIC's line rate, bps: the start rate and the pacing cap (default
    /// 100 Gbps).
    pub line_rate_bps: u64,
    /// `T`: base RTT, ns, the pacing period (default 12 000).
    pub base_rtt_ns: u64,
    /// MTU, bytes (validated; the sender applies the window as received).
    pub mtu_bytes: u64,
}

impl Default for SenderParams {
    fn default() -> Self {
        SenderParams {
            line_rate_bps: 100_000_000_000,
            base_rtt_ns: 12_000,
            mtu_bytes: 1000,
        }
    }
}

impl SenderParams {
    /// Reject values the model cannot run with (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        check_common(self.line_rate_bps, self.base_rtt_ns, self.mtu_bytes)
    }
}

/// RCC sender (`rcc-sender`).
#[derive(Clone, Debug)]
pub struct Sender {
    params: SenderParams,
    initial_window: u64,
    /// Per flow: the current window, bytes.
    flows: BTreeMap<FlowId, u64>,
}

impl Sender {
    /// Decision state names (C-6): the window `cwnd` (bytes).
    pub const STATE_NAMES: &'static [&'static str] = &["cwnd"];

    /// A model with validated parameters.
    pub fn new(params: SenderParams) -> Result<Self, ParamError> {
        params.validate()?;
        // Validated: the BDP fits in u32.
        let initial_window = bdp_bytes(params.line_rate_bps, params.base_rtt_ns) as u64;
        Ok(Sender {
            params,
            initial_window,
            flows: BTreeMap::new(),
        })
    }

    /// The parameters this model runs with.
    pub fn params(&self) -> &SenderParams {
        &self.params
    }

    /// A flow's window: the last `cwnd` received, or the start window.
    pub fn window_bytes(&self, flow: FlowId) -> u64 {
        self.flows
            .get(&flow)
            .copied()
            .unwrap_or(self.initial_window)
    }

    /// `R = floor(cwnd × 8e9 / T)` bps, capped at the line rate (RCC-1).
    pub fn pacing_rate_bps(&self, cwnd_bytes: u64) -> u64 {
        let r = u128::from(cwnd_bytes) * BITS_NS_PER_BYTE_S / u128::from(self.params.base_rtt_ns);
        u64::try_from(r)
            .unwrap_or(u64::MAX)
            .min(self.params.line_rate_bps)
    }
}

impl Model for Sender {
    fn name(&self) -> &'static str {
        "rcc-sender"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let (EventKind::RxAck(ack) | EventKind::RxNak(ack)) = ev.kind else {
            return;
        };
        let Some(cwnd) = ack.cwnd else { return };
        let w = u64::from(cwnd);
        self.flows.insert(ev.flow, w);
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                rate_bps: Some(self.pacing_rate_bps(w)),
                window_bytes: Some(w),
                ..Outputs::default()
            },
            state: State::new(Self::STATE_NAMES, &[StateValue::U64(w)]),
        });
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}
}
