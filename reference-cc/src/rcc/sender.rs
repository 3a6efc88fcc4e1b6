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

/// The rules and branches of the sender (RCC-1, docs/models/rcc.md "Sender" and choices 7 and
/// 9) whose use `coverage()` counts, once per `rx_ack` / `rx_nak` that exercises each.
/// docs/conformance.md (RCC) says which the bundled suite exercises.
pub const COVERAGE: [&str; 8] = [
    "RCC-1 ACK carrying cwnd: window = cwnd",
    "RCC-1 NAK carrying cwnd: window = cwnd",
    "ACK or NAK without the RCC extension: no decision",
    "RCC-1 window shrinks (cwnd < the flow's window)",
    "RCC-1 window grows (cwnd > the flow's window)",
    "RCC-1 pacing rate floored (cwnd 8e9 / T not whole)",
    "choice 9 pacing rate capped at the line rate",
    "choice 7 window below 1 MTU applied as received",
];

/// Which of [`COVERAGE`] one ACK or NAK exercised: from the flow's window before it, the ACK's
/// `cwnd` and the decided rate (observed from outside, so counting cannot change a decision).
fn covered_by(
    p: &SenderParams,
    nak: bool,
    before: u64,
    cwnd: Option<u64>,
    rate_bps: u64,
) -> [bool; COVERAGE.len()] {
    let mut c = [false; COVERAGE.len()];
    let Some(w) = cwnd else {
        c[2] = true;
        return c;
    };
    c[0] = !nak;
    c[1] = nak;
    c[3] = w < before;
    c[4] = w > before;
    c[5] = !(u128::from(w) * BITS_NS_PER_BYTE_S).is_multiple_of(u128::from(p.base_rtt_ns));
    c[6] = rate_bps == p.line_rate_bps
        && u128::from(w) * BITS_NS_PER_BYTE_S
            > u128::from(p.line_rate_bps) * u128::from(p.base_rtt_ns);
    c[7] = w < p.mtu_bytes;
    c
}

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
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
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
            covered: [0; COVERAGE.len()],
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

    /// Add one ACK's [`covered_by`] to the counts.
    fn count(&mut self, nak: bool, before: u64, cwnd: Option<u64>, rate_bps: u64) {
        let c = covered_by(&self.params, nak, before, cwnd, rate_bps);
        for (n, hit) in self.covered.iter_mut().zip(c) {
            *n += u64::from(hit);
        }
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
        let nak = matches!(ev.kind, EventKind::RxNak(_));
        let before = self.window_bytes(ev.flow);
        let Some(cwnd) = ack.cwnd else {
            self.count(nak, before, None, 0);
            return;
        };
        let w = u64::from(cwnd);
        self.flows.insert(ev.flow, w);
        let rate_bps = self.pacing_rate_bps(w);
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                rate_bps: Some(rate_bps),
                window_bytes: Some(w),
                ..Outputs::default()
            },
            state: State::new(Self::STATE_NAMES, &[StateValue::U64(w)]),
        });
        self.count(nak, before, Some(w), rate_bps);
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }

    fn next_timer_ns(&self) -> Option<u64> {
        None
    }

    fn on_timer(&mut self, _now_ns: u64, _out: &mut Vec<Decision>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::AckInfo;

    /// Every rule of [`COVERAGE`] on a hand-built stream. C = 8 Gbps, T = 3 000 ns: the start
    /// window is 8e9 × 3000 / 8e9 = 3 000 B; R = cwnd × 8e9 / 3000 = cwnd × 8e6 / 3, whole only
    /// when 3 divides cwnd, above C when cwnd > 3 000; MTU 300.
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let mut m = Sender::new(SenderParams {
            line_rate_bps: 8_000_000_000,
            base_rtt_ns: 3_000,
            mtu_bytes: 300,
        })
        .unwrap();
        let ack = |cwnd| AckInfo {
            psn: 0,
            syndrome: 0,
            int: None,
            n: None,
            cwnd,
            rcc_flags: None,
            ts_ns: None,
        };
        let stream = [
            // S1: 1000 < 3000 shrinks; 8e12 / 3000 = 2 666 666 666.7, floored.
            (0, EventKind::RxAck(ack(Some(1000)))),
            // S2: 3300 grows; 8.8 Gbps capped at 8 Gbps (3300 = 3 × 1100: whole).
            (0, EventKind::RxAck(ack(Some(3300)))),
            // S3: a NAK's 200 < 300 = 1 MTU, applied; 533 333 333.3 floored; shrinks.
            (0, EventKind::RxNak(ack(Some(200)))),
            // S4, S6: no RCC extension: no decision.
            (1, EventKind::RxAck(ack(None))),
            // S5: 3000 = the start window (neither grows nor shrinks); 8e9 exactly: not capped.
            (1, EventKind::RxAck(ack(Some(3000)))),
            (1, EventKind::RxNak(ack(None))),
        ];
        let mut out = Vec::new();
        for (i, (flow, kind)) in stream.into_iter().enumerate() {
            let ev = Event {
                t_ns: i as u64 * 100,
                flow,
                index: i as u64,
                kind,
            };
            m.on_event(&ev, &mut out);
        }
        let expected: [u64; COVERAGE.len()] = [
            3, // ACK: S1, S2, S5
            1, // NAK: S3
            2, // no extension: S4, S6
            2, // shrinks: S1, S3
            1, // grows: S2
            2, // floored: S1, S3
            1, // capped: S2
            1, // below 1 MTU: S3
        ];
        let got: Vec<(&str, u64)> = m.coverage();
        let want: Vec<(&str, u64)> = COVERAGE.iter().copied().zip(expected).collect();
        assert_eq!(got, want);
        let r: Vec<u64> = out.iter().map(|d| d.outputs.rate_bps.unwrap()).collect();
        assert_eq!(
            r,
            [2_666_666_666, 8_000_000_000, 533_333_333, 8_000_000_000]
        );
        let w: Vec<u64> = out
            .iter()
            .map(|d| d.outputs.window_bytes.unwrap())
            .collect();
        assert_eq!(w, [1000, 3300, 200, 3000]);
    }
}
