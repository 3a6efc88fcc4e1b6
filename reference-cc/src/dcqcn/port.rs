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
//!
//! Rule coverage ([`COVERAGE`], `ccreplay check --coverage`): counted per `dequeue`, observed
//! from the queue length, `p` and the generator's state around the decision (counting decides
//! nothing and draws nothing).

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

/// The rules and branches of DCQCN-1 whose use `coverage()` counts, each named by the rule
/// or its row of docs/models/dcqcn.md (CP1, CP2; C-3): once per `dequeue` that exercises it.
/// The CP1 rows say where `q` sits on the ramp, the CP2 rows what `p` made of the draw;
/// docs/conformance.md says which the bundled suite exercises.
pub const COVERAGE: [&str; 11] = [
    "dequeue without a queue length: no decision, no draw",
    "DCQCN-1 CP1 q < Kmin: p = 0",
    "DCQCN-1 CP1 q = Kmin exactly: p = 0 (q <= Kmin)",
    "DCQCN-1 CP1 Kmin < q < Kmax: p on the ramp",
    "DCQCN-1 CP1 q = Kmax exactly: p = Pmax (q <= Kmax)",
    "DCQCN-1 CP1 q > Kmax: p = 1",
    "C-3 CP1 p in eq. 5's order differs from (q - Kmin) Pmax / (Kmax - Kmin)",
    "DCQCN-1 CP2 p = 0: not marked, no draw",
    "DCQCN-1 CP2 p = 1: marked, no draw",
    "DCQCN-1 CP2 0 < p < 1, u / 2^32 < p: one draw, marked",
    "DCQCN-1 CP2 0 < p < 1, u / 2^32 >= p: one draw, not marked",
];

/// Indices into [`COVERAGE`].
mod cov {
    pub const NO_QLEN: usize = 0;
    pub const BELOW_KMIN: usize = 1;
    pub const AT_KMIN: usize = 2;
    pub const RAMP: usize = 3;
    pub const AT_KMAX: usize = 4;
    pub const ABOVE_KMAX: usize = 5;
    pub const ORDER: usize = 6;
    pub const P0: usize = 7;
    pub const P1: usize = 8;
    pub const DRAW_MARKED: usize = 9;
    pub const DRAW_NOT_MARKED: usize = 10;
}

type Covered = [bool; COVERAGE.len()];

/// Which of [`COVERAGE`] one decision on queue length `q` exercised: `p` as decided, whether
/// the generator advanced (`drew`) and the mark.
fn covered_by(red: &RedParams, q: u64, p: f64, drew: bool, mark: bool) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let (kmin, kmax) = (red.kmin_bytes, red.kmax_bytes);
    c[cov::BELOW_KMIN] = q < kmin;
    c[cov::AT_KMIN] = q == kmin;
    c[cov::RAMP] = kmin < q && q < kmax;
    // With Kmin = Kmax, q = Kmax is q = Kmin: the p = 0 branch.
    c[cov::AT_KMAX] = kmin < q && q == kmax;
    c[cov::ABOVE_KMAX] = q > kmax;
    if kmin < q && q <= kmax {
        // eq. 5 multiplied last, as written; a DUT that scales first differs in the last bit.
        let scaled_first = (q - kmin) as f64 * red.pmax / (kmax - kmin) as f64;
        c[cov::ORDER] = scaled_first.to_bits() != p.to_bits();
    }
    c[cov::P0] = !drew && !mark;
    c[cov::P1] = !drew && mark;
    c[cov::DRAW_MARKED] = drew && mark;
    c[cov::DRAW_NOT_MARKED] = drew && !mark;
    c
}

/// DCQCN-1 at one switch port (model `dcqcn-cp`).
#[derive(Clone, Debug)]
pub struct CpPort {
    red: RedParams,
    rng: SplitMix64,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
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
            covered: [0; COVERAGE.len()],
        })
    }
}

impl Model for CpPort {
    fn name(&self) -> &'static str {
        "dcqcn-cp"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let EventKind::Dequeue { qlen_bytes, .. } = ev.kind else {
            return;
        };
        let Some(q) = qlen_bytes else {
            self.covered[cov::NO_QLEN] += 1;
            return;
        };
        let p = marking_probability(q, &self.red);
        let before = self.rng;
        let mark = should_mark(q, &self.red, &mut self.rng);
        let c = covered_by(&self.red, q, p, self.rng != before, mark);
        for (n, hit) in self.covered.iter_mut().zip(c) {
            *n += u64::from(hit);
        }
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

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
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

    /// Every rule of [`COVERAGE`] on a hand-built dequeue stream, counts tallied by hand from
    /// DCQCN-1 (eq. 5) and docs/models/dcqcn.md CP1-CP2. Kmin 4 000, Kmax 12 000, Pmax 0.3,
    /// seed 3. SplitMix64 seed 3, high words (python3, the algorithm of cp.rs's doc comment):
    /// 0x1D0B14E4 (/ 2^32 = 0.1135), 0xB3466F8A (0.7003), 0x9CEBE8A6 (0.6130).
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let params = CpParams {
            kmin_bytes: 4_000,
            kmax_bytes: 12_000,
            pmax: 0.3,
            seed: 3,
            ..CpParams::default()
        };
        let mut port = CpPort::new(params).unwrap();
        let mut out = Vec::new();
        for (i, q) in [
            None,         // no queue length: nothing decided, nothing drawn
            Some(0),      // q < Kmin: p = 0, no draw
            Some(4_000),  // q = Kmin: p = 0, no draw
            Some(12_000), // q = Kmax: p = 8000 / 8000 × 0.3 = 0.3; u 0.1135 < 0.3: marked
            Some(8_000),  // ramp: p = 4000 / 8000 × 0.3 = 0.15 (exact either order); u 0.7003: not
            Some(20_000), // q > Kmax: p = 1, marked, no draw
            // ramp: 3 / 8000 × 0.3 = 0x1.d7dbf487fcb92p-14, but 3 × 0.3 / 8000 =
            // 0x1.d7dbf487fcb91p-14 (python3 float.hex); u 0.6130: not marked
            Some(4_003),
        ]
        .into_iter()
        .enumerate()
        {
            port.on_event(&dequeue(i as u64, q), &mut out);
        }
        let marks: Vec<_> = out.iter().map(|d| d.outputs.mark_ce).collect();
        let want_marks = [false, false, true, false, true, false].map(Some);
        assert_eq!(marks, want_marks);
        assert_eq!(
            out[5].state.get("p"),
            Some(StateValue::F64(f64::from_bits(0x3F1D_7DBF_487F_CB92)))
        );
        let counts: Vec<u64> = port.coverage().iter().map(|c| c.1).collect();
        #[rustfmt::skip]
        let want = [
            1, // no queue length
            1, 1, 2, 1, 1, // q < Kmin, = Kmin, ramp (8 000, 4 003), = Kmax, > Kmax
            1, // eq. 5's order matters: 4 003
            2, 1, // p = 0 (0, 4 000); p = 1 (20 000)
            1, 2, // drew and marked (12 000); drew, not marked (8 000, 4 003)
        ];
        assert_eq!(counts, want);
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
