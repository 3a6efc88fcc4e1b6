//! The DCQCN congestion point as a model of one switch port (DCQCN-1, seed 001 eq. 5): replayed
//! on a switch-port capture, it decides for every packet leaving the port whether RED/ECN marks
//! it, from the egress queue length the packet carries (its INT record), with the seeded
//! generator of [`super::cp`] — the same draws, in the same order, as the switch model owning it.
//!
//! Choices where the spec is silent: the queue length is the one the packet reports (the
//! port's INT `qLen` at egress, wire.md 5.1 — the paper marks at enqueue; a capture only sees
//! the egress side); a packet without a queue length gets no decision (nothing to decide on)
//! and draws no random number; the generator is per port (one model instance = one port), so
//! flows are not independent ([`Model::per_flow`] is false).

use serde::{Deserialize, Serialize};

use super::cp::{RedParams, SplitMix64, marking_probability, should_mark};
use crate::event::{Decision, Event, EventKind, Outputs, State, StateValue};
use crate::model::{Model, ParamError};

/// Parameters of `dcqcn-cp`: the RED ramp and the generator's seed (recorded in the trace's
/// manifest, DCQCN-1). `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` are accepted (the
/// harness fills them from the manifest) and unused.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpParams {
    /// `Kmin`, bytes (default 5 KB, seed 001 section 4).
    pub kmin_bytes: u64,
    /// `Kmax`, bytes (default 200 KB).
    pub kmax_bytes: u64,
    /// `Pmax` (default 1 %).
    pub pmax: f64,
    /// Seed of the port's SplitMix64 generator.
    pub seed: u64,
    /// Unused (manifest network parameter).
    pub line_rate_bps: u64,
    /// Unused (manifest network parameter).
    pub base_rtt_ns: u64,
    /// Unused (manifest network parameter).
    pub mtu_bytes: u64,
}

impl Default for CpParams {
    fn default() -> Self {
        let red = RedParams::default();
        CpParams {
            kmin_bytes: red.kmin_bytes,
            kmax_bytes: red.kmax_bytes,
            pmax: red.pmax,
            seed: 0,
            line_rate_bps: 0,
            base_rtt_ns: 0,
            mtu_bytes: 0,
        }
    }
}

/// State names of a `dcqcn-cp` decision: the queue length it decided on and `p`.
pub const CP_STATE_NAMES: &[&str] = &["q", "p"];

/// DCQCN-1 at one switch port (model `dcqcn-cp`).
#[derive(Clone, Debug)]
pub struct CpPort {
    red: RedParams,
    rng: SplitMix64,
}

impl CpPort {
    /// A port with these parameters, or the first invalid one.
    pub fn new(p: CpParams) -> Result<Self, ParamError> {
        let red = RedParams {
            kmin_bytes: p.kmin_bytes,
            kmax_bytes: p.kmax_bytes,
            pmax: p.pmax,
        };
        red.validate()?;
        Ok(CpPort {
            red,
            rng: SplitMix64::new(p.seed),
        })
    }
}

impl Model for CpPort {
    fn name(&self) -> &'static str {
        "dcqcn-cp"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let EventKind::Dequeue {
            qlen_bytes: Some(q),
            ..
        } = ev.kind
        else {
            return;
        };
        let p = marking_probability(q, &self.red);
        let mark = should_mark(q, &self.red, &mut self.rng);
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                mark_ce: Some(mark),
                ..Outputs::default()
            },
            state: State::new(CP_STATE_NAMES, &[StateValue::U64(q), StateValue::F64(p)]),
        });
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
    use super::*;
    use crate::event::Cause;

    fn dequeue(index: u64, q: Option<u64>) -> Event {
        Event {
            t_ns: 1000 * index,
            flow: 0,
            index,
            kind: EventKind::Dequeue {
                psn: index as u32,
                bytes: 1078,
                opcode: 7,
                ecn: 2,
                qlen_bytes: q,
            },
        }
    }

    #[test]
    fn marks_follow_red_and_the_seeded_draws() {
        // Kmin 5 000, Kmax 20 000, Pmax 1.0 (the bundled roce trace's ramp).
        let params = CpParams {
            kmin_bytes: 5_000,
            kmax_bytes: 20_000,
            pmax: 1.0,
            seed: 1,
            ..CpParams::default()
        };
        let mut port = CpPort::new(params).unwrap();
        let mut out = Vec::new();
        // q = 4 000 <= Kmin: p = 0, no mark, no draw.
        port.on_event(&dequeue(0, Some(4_000)), &mut out);
        // No queue length: no decision at all.
        port.on_event(&dequeue(1, None), &mut out);
        // q = 12 500: p = (12 500 - 5 000) / 15 000 × 1.0 = 0.5. The first SplitMix64 output for
        // seed 1 is 0x910A2DEC89025CC1 (Python: s = (1 + 0x9E3779B97F4A7C15) % 2**64; z = (s ^
        // s >> 30) * 0xBF58476D1CE4E5B9 % 2**64; z = (z ^ z >> 27) * 0x94D049BB133111EB % 2**64;
        // z ^ z >> 31); its high half 0x910A2DEC / 2^32 = 0.566 >= 0.5: not marked.
        port.on_event(&dequeue(2, Some(12_500)), &mut out);
        // q = 30 000 > Kmax: p = 1, marked without a draw.
        port.on_event(&dequeue(3, Some(30_000)), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].outputs.mark_ce, Some(false));
        assert_eq!(out[0].state.get("p"), Some(StateValue::F64(0.0)));
        assert_eq!(
            out[1].cause,
            Cause::Event {
                kind: "dequeue",
                index: 2
            }
        );
        assert_eq!(out[1].state.get("p"), Some(StateValue::F64(0.5)));
        assert_eq!(out[1].outputs.mark_ce, Some(false));
        assert_eq!(out[2].outputs.mark_ce, Some(true));
        assert_eq!(out[2].state.get("q"), Some(StateValue::U64(30_000)));
    }

    #[test]
    fn bad_ramp_is_rejected() {
        let p = CpParams {
            kmin_bytes: 10,
            kmax_bytes: 5,
            ..CpParams::default()
        };
        assert_eq!(CpPort::new(p).unwrap_err().name, "kmin_bytes");
    }
}
