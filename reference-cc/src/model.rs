//! The one trait every reference model (and every in-process DUT) implements.

use crate::event::{Decision, Event};

/// A congestion-control model at one capture point (a sender, a receiver, or a switch port).
///
/// Contract (algorithms.md C-1, C-5): the caller fires every timer due at or before the next
/// event's time, in deadline order, before feeding that event; timers first on ties.
pub trait Model {
    /// Model name as used on the command line and in golden file names (`hpcc`, `dcqcn`, ...).
    fn name(&self) -> &'static str;

    /// Feed one event; push any decisions it causes onto `out`.
    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>);

    /// Earliest pending timer deadline in ns, if any.
    fn next_timer_ns(&self) -> Option<u64>;

    /// Fire the timers due at `now_ns` (the value [`Model::next_timer_ns`] returned); push the
    /// decisions they cause onto `out`, in the order the spec lists the timers.
    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>);

    /// True when flows are independent (state is per flow), so a replay may split the events
    /// by flow and run flows in parallel.
    fn per_flow(&self) -> bool {
        true
    }

    /// How often each of the model's rules and branches ran since it was built, in a fixed
    /// order (`ccreplay check --coverage`, docs/conformance.md). Empty for a model that does not
    /// report it.
    fn coverage(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// A hint that the caller reads only the decisions' outputs (`ccreplay sim` for a host
    /// without a tap): the model may then leave each decision's `state` empty and stop
    /// counting [`Model::coverage`]. Outputs, timers and every later decision are the same
    /// either way. The default ignores it and does the whole work.
    fn outputs_only(&mut self, _on: bool) {}

    /// False for a model that never sets a timer ([`Model::next_timer_ns`] is always `None`):
    /// the caller need not ask after every event. The default: it may.
    fn has_timers(&self) -> bool {
        true
    }
}

/// A parameter rejected before any replay starts (C-7).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid parameter `{name}` = {value}: {reason}")]
pub struct ParamError {
    /// Parameter name as users know it.
    pub name: &'static str,
    /// The rejected value, as text.
    pub value: String,
    /// Why it is rejected and what is allowed.
    pub reason: &'static str,
}

impl ParamError {
    /// `name` = `value` is rejected because `reason`.
    pub fn new(name: &'static str, value: impl ToString, reason: &'static str) -> Self {
        ParamError {
            name,
            value: value.to_string(),
            reason,
        }
    }
}

/// Shorthand for [`ParamError::new`] in the models' parameter checks.
pub(crate) fn err(name: &'static str, value: impl ToString, reason: &'static str) -> ParamError {
    ParamError::new(name, value, reason)
}

/// Largest line rate a model accepts: 10 Tbps, so every rate is exact in f64 (< 2^53) and
/// rate sums stay far from u64 overflow.
pub const MAX_LINE_RATE_BPS: u64 = 10_000_000_000_000;

/// Check a model's `line_rate_bps`: 1..=[`MAX_LINE_RATE_BPS`].
pub(crate) fn check_line_rate(line_rate_bps: u64) -> Result<(), ParamError> {
    if line_rate_bps == 0 || line_rate_bps > MAX_LINE_RATE_BPS {
        return Err(err(
            "line_rate_bps",
            line_rate_bps,
            "must be in 1..=10^13 bps (10 Tbps)",
        ));
    }
    Ok(())
}
