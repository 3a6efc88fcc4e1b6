//! Devices under test (harness.md 4): anything that turns events into decisions.
//!
//! - [`ModelDut`]: an in-process [`Model`] — every reference model, or a user's own Rust model.
//!   The harness fires its timers (algorithms.md C-5).
//! - [`process::ProcessDut`]: an external program speaking JSON Lines on stdin/stdout.
//! - [`cabi::CAbiDut`]: a shared library with the C ABI of `harness/include/ccreplay_dut.h`.
//!
//! External DUTs fire their own timers: decisions from timers due before an event come first in
//! the reply to that event, tagged with their cause.

pub mod cabi;
pub mod process;
pub mod wire;

use std::net::IpAddr;

use ccreplay_reference_cc::{Decision, Event, FlowId, Model};

/// A flow as an external DUT is told about it before the first event (harness.md 1: a flow at
/// a sender is local IP, local QP, remote IP, remote QP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DutFlow {
    /// The harness's dense flow id: the `flow` of events and decisions.
    pub id: FlowId,
    /// The capture point's side: its IP.
    pub local_ip: IpAddr,
    /// The capture point's QP.
    pub local_qp: u32,
    /// The peer's IP.
    pub remote_ip: IpAddr,
    /// The peer's QP.
    pub remote_qp: u32,
}

/// What an external DUT is told before the first event: the `hello` of the process protocol,
/// the `ccreplay_setup` of the C ABI (docs/dut.md).
#[derive(Clone, Debug, PartialEq)]
pub struct DutSetup {
    /// The model the DUT is to behave as (`hpcc`, `dcqcn`, ...).
    pub model: String,
    /// The model's parameters, a JSON object with the reference model's names (C-7).
    pub params: serde_json::Value,
    /// The flows known before the replay starts (may be empty).
    pub flows: Vec<DutFlow>,
    /// Capture point kind: `sender` or `receiver` (the manifest's `capture_point.kind`).
    pub capture_point: String,
}

/// What stopped a DUT (exit status 3).
#[derive(Debug, Clone, thiserror::Error)]
#[error("DUT `{dut}` failed{}: {what}{}{}{}",
    .event.as_ref().map(|e| format!(" at {e}")).unwrap_or_default(),
    .last_reply.as_ref().map(|r| format!("\n  last reply: {r}")).unwrap_or_default(),
    if .stderr_tail.is_empty() { String::new() } else { format!("\n  stderr (last lines):\n{}", indent(.stderr_tail)) },
    .hint.as_ref().map(|h| format!("\n  hint: {h}")).unwrap_or_default())]
pub struct DutError {
    /// The DUT's name or command.
    pub dut: String,
    /// What happened: could not start, crashed, timed out, broke the protocol.
    pub what: String,
    /// The event being processed (its JSON), if any.
    pub event: Option<String>,
    /// The last reply received, if any.
    pub last_reply: Option<String>,
    /// The last lines the DUT wrote to stderr.
    pub stderr_tail: String,
    /// What to do about it.
    pub hint: Option<String>,
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A device under test.
// `DutError` is large (the context of a failure), but returned at most once per run.
#[allow(clippy::result_large_err)]
pub trait Dut {
    /// Name for reports.
    fn name(&self) -> &str;

    /// Feed one event (events come in trace order); push the decisions it gives back — those of
    /// timers due before the event first — onto `out`.
    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError>;

    /// The trace ended at `t_end_ns`: push the decisions of timers due up to then.
    fn finish(&mut self, t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError>;

    /// After [`Dut::event`]: the DUT's answer to `ev` cannot be seen (`wire`: a data packet a
    /// correct NIC answers with no packet), so the reference's decisions caused by `ev` are
    /// not compared (docs/dut.md "`--dut wire`").
    fn unobservable(&self, _ev: &Event) -> bool {
        false
    }

    /// After the run: what became of the DUT's inputs, as a line of text and as JSON
    /// (`wire`: every packet the host sent and every data packet), printed after the verdict.
    fn accounting(&self) -> Option<(String, serde_json::Value)> {
        None
    }
}

/// An in-process model as a DUT: fires every timer due at or before an event's time, in
/// deadline order, before the event (C-5: timers first on ties).
pub struct ModelDut<M: ?Sized> {
    model: Box<M>,
}

impl<M: Model + ?Sized> ModelDut<M> {
    /// Wrap a model.
    pub fn new(model: Box<M>) -> Self {
        ModelDut { model }
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    fn fire_until(&mut self, t_ns: u64, out: &mut Vec<Decision>) {
        // A model that keeps reporting a past deadline would loop forever; the bound is far
        // above any real number of timers between two events.
        let mut guard = 0u32;
        while let Some(deadline) = self.model.next_timer_ns() {
            if deadline > t_ns || guard == 1_000_000 {
                break;
            }
            self.model.on_timer(deadline, out);
            guard += 1;
        }
    }
}

impl<M: Model + ?Sized> Dut for ModelDut<M> {
    fn name(&self) -> &str {
        self.model.name()
    }

    #[inline]
    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError> {
        self.fire_until(ev.t_ns, out);
        self.model.on_event(ev, out);
        Ok(())
    }

    fn finish(&mut self, t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError> {
        self.fire_until(t_end_ns, out);
        Ok(())
    }
}
