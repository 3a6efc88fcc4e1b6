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

/// DCQCN receiver CNP generation (`dcqcn-np`, DCQCN-2).
#[derive(Clone, Debug)]
pub struct Np {
    params: NpParams,
    n_ns: u64,
    flows: FlowTable<NpFlow>,
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
        if let EventKind::RxData { ecn: ECN_CE, .. } = ev.kind {
            let cause = ev.cause();
            let n_ns = self.n_ns;
            self.flows.with_flow(ev.flow, NpFlow::default, |f| {
                f.on_mark(ev.t_ns, n_ns, ev.flow, cause, out)
            });
        }
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.flows.next_deadline_ns()
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.flows.fire_next(now_ns, |flow, f, d| {
            if f.pending {
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
}
