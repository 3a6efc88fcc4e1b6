//! The result of a comparison ([`DiffReport`]: per flow the counts, the largest errors and the
//! first [`Divergence`] with the events that led to it) and its two renderings, text for
//! people ([`render_text`]) and one JSON document ([`render_json`]).

use std::collections::HashMap;
use std::fmt::Write as _;

use ccreplay_reference_cc::{Cause, Decision, Event};

/// One field that differs in one decision.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDiff {
    /// Field name (`rate_bps`, `state.W`, ...).
    pub field: String,
    /// Reference value, as text (`absent` when missing).
    pub reference: String,
    /// DUT value.
    pub dut: String,
    /// Absolute difference, when both are numbers.
    pub abs_err: Option<f64>,
    /// Difference relative to the reference, when both are numbers and the reference is not 0.
    pub rel_err: Option<f64>,
}

/// The first point where a flow's streams part.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The reference decision (None: the DUT made a decision the reference did not).
    pub reference: Option<Decision>,
    /// The DUT's decision paired with it (None: missing).
    pub dut: Option<Decision>,
    /// The differing fields.
    pub fields: Vec<FieldDiff>,
    /// The causing event and the ones just before it, filled in by [`attach_events`].
    pub events: Vec<Event>,
}

/// Per-flow result.
#[derive(Clone, Debug)]
pub struct FlowDiff {
    /// Flow id.
    pub flow: u32,
    /// Decisions on each side.
    pub reference_count: u64,
    /// Decisions of the DUT.
    pub dut_count: u64,
    /// Aligned decisions that differ.
    pub mismatches: u64,
    /// Reference decisions the DUT did not make.
    pub missing: u64,
    /// DUT decisions the reference did not make.
    pub extra: u64,
    /// Largest errors per field: (field, largest abs, largest rel).
    pub largest: Vec<(String, f64, f64)>,
    /// The first divergence: the earliest in time ([`Place`](super::align::Place)).
    pub first: Option<Divergence>,
}

impl FlowDiff {
    /// True when the flow conforms.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.missing == 0 && self.extra == 0
    }
}

/// The whole comparison.
#[derive(Clone, Debug, Default)]
pub struct DiffReport {
    /// One entry per flow either side has, ordered by flow.
    pub flows: Vec<FlowDiff>,
    /// The first decision's time on either side, ns: the text gives times relative to it, in
    /// µs, as the HTML report does.
    pub t0_ns: Option<u64>,
}

impl DiffReport {
    /// True when every flow conforms.
    pub fn ok(&self) -> bool {
        self.flows.iter().all(FlowDiff::ok)
    }
    /// Total aligned decisions that differ.
    pub fn mismatches(&self) -> u64 {
        self.flows.iter().map(|f| f.mismatches).sum()
    }
    /// Total reference decisions.
    pub fn reference_count(&self) -> u64 {
        self.flows.iter().map(|f| f.reference_count).sum()
    }
    /// Total missing and extra decisions.
    pub fn missing_extra(&self) -> (u64, u64) {
        (
            self.flows.iter().map(|f| f.missing).sum(),
            self.flows.iter().map(|f| f.extra).sum(),
        )
    }
}

/// The event index a divergence points at (its causing event, or for a timer the event after).
pub fn divergence_event(div: &Divergence) -> Option<(u32, u64)> {
    let d = div.reference.as_ref().or(div.dut.as_ref())?;
    match d.cause {
        Cause::Event { index, .. } => Some((d.flow, index)),
        Cause::Timer { .. } => None,
    }
}

/// Fill each first divergence with its causing event and up to `before` events of the same
/// flow just before it, from a stream of the trace's events.
pub fn attach_events(
    report: &mut DiffReport,
    before: u64,
    events: impl IntoIterator<Item = Event>,
) {
    let wanted: HashMap<u32, u64> = report
        .flows
        .iter()
        .filter_map(|f| f.first.as_ref().and_then(divergence_event))
        .collect();
    if wanted.is_empty() {
        return;
    }
    let mut found: HashMap<u32, Vec<Event>> = HashMap::new();
    for ev in events {
        if let Some(&idx) = wanted.get(&ev.flow)
            && ev.index + before >= idx
            && ev.index <= idx
        {
            found.entry(ev.flow).or_default().push(ev);
        }
    }
    for f in &mut report.flows {
        if let (Some(div), Some(evs)) = (f.first.as_mut(), found.remove(&f.flow)) {
            div.events = evs;
        }
    }
}

fn decision_line(d: &Decision) -> String {
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    crate::protocol::write_decision(&mut buf, d, &mut scratch);
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

fn event_line(e: &Event) -> String {
    let mut buf = Vec::new();
    crate::protocol::write_event(&mut buf, e);
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

/// `+12.345 µs`: `t_ns` after the report's first decision (the absolute ns stay in the
/// JSON that follows).
pub(super) fn since(report: &DiffReport, t_ns: u64) -> String {
    let t0 = report.t0_ns.unwrap_or(t_ns);
    // Events before the first decision are negative.
    let (sign, d) = if t_ns >= t0 {
        ('+', t_ns - t0)
    } else {
        ('-', t0 - t_ns)
    };
    format!("{sign}{}.{:03} µs", d / 1_000, d % 1_000)
}

/// Human-readable report.
pub fn render_text(report: &DiffReport, reference_name: &str, dut_name: &str) -> String {
    let mut s = String::new();
    if let Some(t0) = report.t0_ns {
        let _ = writeln!(
            s,
            "times: µs since the first decision (t0 = {t0} ns); the JSON lines keep absolute ns"
        );
    }
    for f in &report.flows {
        let verdict = if f.ok() { "ok" } else { "DIFFERS" };
        let _ = writeln!(
            s,
            "flow {}: {verdict} — {} {reference_name} decisions, {} {dut_name}; {} mismatched, {} missing, {} extra",
            f.flow, f.reference_count, f.dut_count, f.mismatches, f.missing, f.extra
        );
        for (field, abs, rel) in &f.largest {
            let _ = writeln!(s, "  largest error in {field}: {abs} (relative {rel:.3e})");
        }
        if let Some(div) = &f.first {
            let d = div.reference.as_ref().or(div.dut.as_ref());
            if let Some(d) = d {
                let cause = match d.cause {
                    Cause::Event { kind, index } => format!("{kind} #{index}"),
                    Cause::Timer { name } => format!("timer {name}"),
                };
                let _ = writeln!(
                    s,
                    "  first divergence at {} (t = {} ns), caused by {cause}:",
                    since(report, d.t_ns),
                    d.t_ns
                );
            }
            for fd in &div.fields {
                let _ = writeln!(
                    s,
                    "    {:<16} {reference_name} {:>24}   {dut_name} {:>24}",
                    fd.field, fd.reference, fd.dut
                );
            }
            if !div.events.is_empty() {
                let _ = writeln!(s, "  events (the last is the cause):");
                for e in &div.events {
                    let _ = writeln!(s, "    {:>14}  {}", since(report, e.t_ns), event_line(e));
                }
            }
            if let Some(r) = &div.reference {
                let _ = writeln!(
                    s,
                    "  {reference_name} {}: {}",
                    since(report, r.t_ns),
                    decision_line(r)
                );
            }
            if let Some(d) = &div.dut {
                let _ = writeln!(
                    s,
                    "  {dut_name} {}: {}",
                    since(report, d.t_ns),
                    decision_line(d)
                );
            }
        }
    }
    let (missing, extra) = report.missing_extra();
    let _ = writeln!(
        s,
        "{}: {} flows, {} decisions, {} mismatched, {} missing, {} extra",
        if report.ok() {
            "CONFORMANT"
        } else {
            "DIFFERENCES FOUND"
        },
        report.flows.len(),
        report.reference_count(),
        report.mismatches(),
        missing,
        extra
    );
    s
}

/// Machine-readable report (one JSON document).
pub fn render_json(report: &DiffReport) -> serde_json::Value {
    use serde_json::json;
    let parse = |line: String| {
        serde_json::from_str::<serde_json::Value>(&line).unwrap_or(serde_json::Value::Null)
    };
    let flows: Vec<_> = report
        .flows
        .iter()
        .map(|f| {
            json!({
                "flow": f.flow,
                "ok": f.ok(),
                "reference_decisions": f.reference_count,
                "dut_decisions": f.dut_count,
                "mismatches": f.mismatches,
                "missing": f.missing,
                "extra": f.extra,
                "largest_error": f.largest.iter().map(|(k, a, r)| json!({"field": k, "abs": a, "rel": r})).collect::<Vec<_>>(),
                "first_divergence": f.first.as_ref().map(|d| json!({
                    "fields": d.fields.iter().map(|x| json!({"field": x.field, "reference": x.reference, "dut": x.dut, "abs_err": x.abs_err, "rel_err": x.rel_err})).collect::<Vec<_>>(),
                    "reference": d.reference.as_ref().map(|r| parse(decision_line(r))),
                    "dut": d.dut.as_ref().map(|r| parse(decision_line(r))),
                    "events": d.events.iter().map(|e| parse(event_line(e))).collect::<Vec<_>>(),
                })),
            })
        })
        .collect();
    let (missing, extra) = report.missing_extra();
    json!({
        "ok": report.ok(),
        "flows": flows,
        "decisions": report.reference_count(),
        "mismatches": report.mismatches(),
        "missing": missing,
        "extra": extra,
    })
}
