//! Differences between two decision streams (harness.md 5): the reference (or a golden file)
//! and a DUT (or a fresh replay).
//!
//! Decisions are aligned per flow: an event's decisions by (cause, ordinal), the n-th decision
//! a flow made for that event (the DUT's answer to the same event); a timer's by (timer, time,
//! ordinal): a firing pairs only with the other side's firing of that timer at the same ns, so
//! a timer that fires early or late is an extra decision where it fired and a missing one where
//! the reference fired (docs/diff.md). Outputs are compared exactly unless a tolerance is given
//! for the field (absolute or relative to the reference); state is compared only on request,
//! f64 values bit for bit unless a tolerance names them. A flow's first divergence is the
//! earliest in time ([`Place`](align::Place)).
//!
//! [`diff`] aligns two sides held whole; [`StreamDiff`] gives the same report from the two
//! streams as they come, holding per flow what the report prints and the decisions waiting
//! for their counterpart (`diff` and `check` use it; the HTML report, which charts every
//! decision, holds both sides).
//!
//! Role: the comparison behind `diff`, `check`, `bless`'s golden files, the `observed` DUT and
//! the reports. It may use the reference models' decision and event types and
//! [`crate::protocol`]'s writers (the decision and event lines of a report); it reads no file,
//! runs no replay and prints nothing. The files, by what they decide:
//! - `align.rs`: how decisions pair and which divergence is first; [`diff`] over two sides
//!   held whole ([`Side`]);
//! - `stream.rs`: the same from two streams ([`StreamDiff`]);
//! - `compare.rs`: one aligned pair field by field, with the tolerances ([`DiffOptions`]);
//! - `report.rs`: what a comparison found ([`DiffReport`]), and its text and JSON renderings;
//! - `tests.rs`: the unit tests ([`diff`] and [`StreamDiff`] agree on each).

mod align;
mod compare;
mod report;
mod stream;
#[cfg(test)]
mod tests;

pub use align::{Side, diff};
pub use compare::{DiffOptions, StateCompare, Tolerance};
pub use report::{
    DiffReport, Divergence, FieldDiff, FlowDiff, attach_events, divergence_event, render_json,
    render_text,
};
pub use stream::{HOLD_LIMIT, StreamDiff, Which};
