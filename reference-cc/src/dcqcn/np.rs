//! DCQCN notification point (receiver), `dcqcn-np` (DCQCN-2; seed 001 §3.1, Figure 6).
//!
//! Per flow: on a CE-marked data packet (`ecn == 3`), send a CNP at once if none was sent for
//! the flow in the last `N` ns (`t − last_cnp >= N`, or none ever); otherwise remember the mark
//! and send one CNP when the `N`-ns interval that began with the last CNP ends (timer
//! `cnp_interval`, due at `last_cnp + N`). A CNP sent by the timer starts a new interval.
//!
//! Decisions (C-6): exactly one per CNP sent, with `send_cnp = Some(true)` and the state
//! [`Np::STATE_NAMES`]; a mark that is only remembered, or an unmarked packet, yields none.
//! With C-5 (timers before events at the same ns) a mark arriving exactly when a pending
//! interval ends falls into the new interval that the timer's CNP opened.
//!
//! Rule coverage ([`COVERAGE`], `ccreplay check --coverage`): counted per `rx_data` and per
//! timer firing, observed from the flow's state before and after (counting decides nothing).

use serde::{Deserialize, Serialize};

use crate::dcqcn::flows::{FlowTable, Timed};
use crate::dcqcn::{check_line_rate, time_us_to_ns};
use crate::event::{Cause, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
use crate::model::{Model, ParamError};

/// ECN codepoint CE (RFC 3168).
pub const ECN_CE: u8 = 3;

/// `dcqcn-np` parameters. `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` are accepted because
/// the harness fills them for every model; the NP uses none of them.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NpParams {
    /// Line rate, bps (validated, unused; default 40 Gbps).
    pub line_rate_bps: u64,
    /// Base RTT, ns (accepted, unused).
    pub base_rtt_ns: u64,
    /// MTU, bytes (accepted, unused).
    pub mtu_bytes: u64,
    /// `N`, the least time between two CNPs of one flow, µs (default 50, seed 001 §3.1);
    /// 0 sends a CNP for every marked packet.
    pub min_time_between_cnps: u64,
}

impl Default for NpParams {
    fn default() -> Self {
        NpParams {
            line_rate_bps: 40_000_000_000,
            base_rtt_ns: 0,
            mtu_bytes: 0,
            min_time_between_cnps: 50,
        }
    }
}

impl NpParams {
    /// Reject values the model cannot run with (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        self.interval_ns().map(|_| ())
    }

    fn interval_ns(&self) -> Result<u64, ParamError> {
        check_line_rate(self.line_rate_bps)?;
        time_us_to_ns("min_time_between_cnps", self.min_time_between_cnps, 0)
    }
}

/// One flow at the NP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NpFlow {
    /// When the last CNP was sent.
    last_cnp_ns: Option<u64>,
    /// A marked packet arrived since, within the interval.
    pending: bool,
    /// End of the interval with a pending mark.
    deadline_ns: Option<u64>,
    /// The last CNP was sent by the `cnp_interval` timer (read only by rule coverage).
    cnp_by_timer: bool,
}

impl Timed for NpFlow {
    fn next_deadline_ns(&self) -> Option<u64> {
        self.deadline_ns
    }
}

impl NpFlow {
    fn send(&mut self, t_ns: u64, flow: FlowId, cause: Cause, out: &mut Vec<Decision>) {
        self.last_cnp_ns = Some(t_ns);
        self.pending = false;
        self.deadline_ns = None;
        self.cnp_by_timer = matches!(cause, Cause::Timer { .. });
        out.push(Decision {
            t_ns,
            flow,
            cause,
            outputs: Outputs {
                send_cnp: Some(true),
                ..Outputs::default()
            },
            state: State::new(
                Np::STATE_NAMES,
                &[StateValue::U64(t_ns), StateValue::Bool(self.pending)],
            ),
        });
    }

    /// A CE-marked packet at `t_ns` (DCQCN-2).
    fn on_mark(
        &mut self,
        t_ns: u64,
        n_ns: u64,
        flow: FlowId,
        cause: Cause,
        out: &mut Vec<Decision>,
    ) {
        match self.last_cnp_ns {
            // A packet earlier than the last CNP (out-of-order input) is inside its interval.
            Some(last) if t_ns < last || t_ns - last < n_ns => {
                self.pending = true;
                // An interval ending beyond u64 time never ends: the mark is dropped.
                self.deadline_ns = last.checked_add(n_ns);
            }
            _ => self.send(t_ns, flow, cause, out),
        }
    }
}

/// The rules and branches of DCQCN-2 whose use `coverage()` counts, each named by the rule
/// (algorithms.md DCQCN-2, C-5) or its row of docs/models/dcqcn.md (NP table, choice 13):
/// once per `rx_data` or timer firing that exercises it. docs/conformance.md says which the
/// bundled suite exercises.
pub const COVERAGE: [&str; 11] = [
    "DCQCN-2 CE-marked rx_data, no CNP yet for the flow: CNP at once",
    "DCQCN-2 CE-marked rx_data, t - last CNP > N: CNP at once",
    "DCQCN-2 CE-marked rx_data, t - last CNP = N exactly: CNP at once (>=)",
    "DCQCN-2 CE-marked rx_data within N of the last CNP: remembered, timer at last CNP + N",
    "DCQCN-2 CE-marked rx_data within N, a mark already pending: no second CNP",
    "DCQCN-2 timer cnp_interval with a mark pending: one CNP at last CNP + N",
    "C-5 CE-marked rx_data at the ns the timer's CNP went: inside the new interval",
    "DCQCN-2 rx_data not CE-marked: no CNP",
    "DCQCN-2 rx_data not CE-marked while a mark is pending: the mark stays",
    "CE-marked rx_data before the last CNP (out-of-order input): inside its interval",
    "choice 13 interval ending beyond u64 time: the mark is dropped",
];

/// Indices into [`COVERAGE`].
mod cov {
    pub const FIRST: usize = 0;
    pub const AFTER_N: usize = 1;
    pub const AT_N: usize = 2;
    pub const REMEMBERED: usize = 3;
    pub const ALREADY_PENDING: usize = 4;
    pub const TIMER_CNP: usize = 5;
    pub const AT_TIMER_CNP: usize = 6;
    pub const NOT_CE: usize = 7;
    pub const NOT_CE_PENDING: usize = 8;
    pub const OUT_OF_ORDER: usize = 9;
    pub const NEVER_ENDS: usize = 10;
}

type Covered = [bool; COVERAGE.len()];

/// Which of [`COVERAGE`] one CE-marked `rx_data` at `t_ns` exercised, from its flow before
/// (`None`: the flow's first mark) and after [`NpFlow::on_mark`].
fn covered_by_mark(n_ns: u64, t_ns: u64, before: Option<NpFlow>, after: &NpFlow) -> Covered {
    let mut c = [false; COVERAGE.len()];
    let b = before.unwrap_or_default();
    match b.last_cnp_ns {
        None => c[cov::FIRST] = true,
        Some(last) if t_ns < last => c[cov::OUT_OF_ORDER] = true,
        Some(last) => {
            let since = t_ns - last;
            c[cov::AFTER_N] = since > n_ns;
            c[cov::AT_N] = since == n_ns;
            if since < n_ns {
                c[cov::REMEMBERED] = !b.pending;
                c[cov::ALREADY_PENDING] = b.pending;
                // C-5: the timer fired first at this ns and opened the interval.
                c[cov::AT_TIMER_CNP] = since == 0 && b.cnp_by_timer;
            }
        }
    }
    // Remembered (the flow sent nothing now) with no deadline: choice 13.
    c[cov::NEVER_ENDS] = after.pending && after.deadline_ns.is_none();
    c
}

#[inline]
fn count(into: &mut [u64; COVERAGE.len()], c: Covered) {
    for (n, hit) in into.iter_mut().zip(c) {
        *n += u64::from(hit);
    }
}

/// DCQCN receiver CNP generation (`dcqcn-np`, DCQCN-2).
#[derive(Clone, Debug)]
pub struct Np {
    params: NpParams,
    n_ns: u64,
    flows: FlowTable<NpFlow>,
    /// How often each of [`COVERAGE`] ran.
    covered: [u64; COVERAGE.len()],
}

impl Np {
    /// Decision state names (C-6): when this CNP was sent (ns) and whether a mark is still
    /// pending (always false right after a CNP).
    pub const STATE_NAMES: &'static [&'static str] = &["last_cnp_ns", "pending_mark"];

    /// A model with validated parameters.
    pub fn new(params: NpParams) -> Result<Self, ParamError> {
        let n_ns = params.interval_ns()?;
        Ok(Np {
            params,
            n_ns,
            flows: FlowTable::new(),
            covered: [0; COVERAGE.len()],
        })
    }

    /// The parameters this model runs with.
    pub fn params(&self) -> &NpParams {
        &self.params
    }
}

impl Model for Np {
    fn name(&self) -> &'static str {
        "dcqcn-np"
    }

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let EventKind::RxData { ecn, .. } = ev.kind else {
            return; // not an NP input
        };
        let before = self.flows.get(ev.flow).copied();
        if ecn != ECN_CE {
            self.covered[cov::NOT_CE] += 1;
            self.covered[cov::NOT_CE_PENDING] += u64::from(before.is_some_and(|f| f.pending));
            return;
        }
        let cause = ev.cause();
        let n_ns = self.n_ns;
        let after = self.flows.with_flow(ev.flow, NpFlow::default, |f| {
            f.on_mark(ev.t_ns, n_ns, ev.flow, cause, out);
            *f
        });
        count(
            &mut self.covered,
            covered_by_mark(n_ns, ev.t_ns, before, &after),
        );
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.flows.next_deadline_ns()
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        let covered = &mut self.covered;
        self.flows.fire_next(now_ns, |flow, f, d| {
            if f.pending {
                covered[cov::TIMER_CNP] += 1;
                f.send(
                    d,
                    flow,
                    Cause::Timer {
                        name: "cnp_interval",
                    },
                    out,
                );
            } else {
                f.deadline_ns = None;
            }
        });
    }

    fn coverage(&self) -> Vec<(&'static str, u64)> {
        COVERAGE.iter().copied().zip(self.covered).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rule of [`COVERAGE`] on hand-built flows, counts tallied by hand from DCQCN-2,
    /// C-5 and choice 13 (docs/models/dcqcn.md, NP). N = 10 µs; timers fire before an event
    /// at or after their deadline (C-5). Flow 0 (times in ns):
    /// - 1 000 ECT(0): not CE, no flow yet.
    /// - 2 000 CE: the flow's first mark: CNP at once (CNP 1).
    /// - 5 000 CE: 3 000 < N after it: remembered, timer at 12 000; 6 000 CE: already pending.
    /// - 7 000 ECT(0): not CE, a mark pending (it stays).
    /// - timer 12 000: CNP 2. 12 000 CE: 0 ns after the timer's CNP: remembered, timer 22 000.
    /// - timer 22 000: CNP 3. 32 000 CE: exactly N after it: CNP 4 at once.
    /// - 50 000 CE: 18 000 > N: CNP 5 at once.
    /// - 40 000 CE (out of order, before CNP 5): inside its interval, timer 60 000: CNP 6.
    ///
    /// Flow 1, at the end of u64 time: u64::MAX − 5 000 CE: its first, CNP 7; u64::MAX − 1 000
    /// CE: remembered, but last + N overflows: no timer, the mark dropped; u64::MAX CE: already
    /// pending, still no timer.
    #[test]
    fn coverage_counts_every_rule_on_a_hand_stream() {
        let params = NpParams {
            min_time_between_cnps: 10,
            ..NpParams::default()
        };
        let mut m = Np::new(params).unwrap();
        let rx = |ecn| EventKind::RxData {
            psn: 0,
            bytes: 1000,
            opcode: 0x07,
            ecn,
            send_ts_ns: None,
        };
        let end = u64::MAX;
        let stream = [
            (1_000, 0, rx(2)),
            (2_000, 0, rx(ECN_CE)),
            (5_000, 0, rx(ECN_CE)),
            (6_000, 0, rx(ECN_CE)),
            (7_000, 0, rx(2)),
            (12_000, 0, rx(ECN_CE)),
            (32_000, 0, rx(ECN_CE)),
            (50_000, 0, rx(ECN_CE)),
            (40_000, 0, rx(ECN_CE)),
            (end - 5_000, 1, rx(ECN_CE)),
            (end - 1_000, 1, rx(ECN_CE)),
            (end, 1, rx(ECN_CE)),
        ];
        let mut out = Vec::new();
        for (i, (t_ns, flow, kind)) in stream.into_iter().enumerate() {
            while let Some(d) = m.next_timer_ns().filter(|&d| d <= t_ns) {
                m.on_timer(d, &mut out);
            }
            let ev = Event {
                t_ns,
                flow,
                index: i as u64,
                kind,
            };
            m.on_event(&ev, &mut out);
        }
        assert_eq!(m.next_timer_ns(), None);
        let sent: Vec<(u64, FlowId)> = out.iter().map(|d| (d.t_ns, d.flow)).collect();
        let cnps = [
            (2_000, 0),
            (12_000, 0),
            (22_000, 0),
            (32_000, 0),
            (50_000, 0),
            (60_000, 0),
            (end - 5_000, 1),
        ];
        assert_eq!(sent, cnps);
        let counts: Vec<u64> = m.coverage().iter().map(|c| c.1).collect();
        #[rustfmt::skip]
        let want = [
            2, // first mark of a flow: 2 000 (flow 0), u64::MAX − 5 000 (flow 1)
            1, 1, // > N (50 000); = N (32 000)
            3, 2, // remembered: 5 000, 12 000, u64::MAX − 1 000; already pending: 6 000, u64::MAX
            3, // timer CNPs: 12 000, 22 000, 60 000
            1, // C-5: the mark at 12 000
            2, 1, // not CE: 1 000, 7 000; with a mark pending: 7 000
            1, // out of order: 40 000
            2, // never-ending interval: u64::MAX − 1 000, u64::MAX
        ];
        assert_eq!(counts, want);
    }
}
