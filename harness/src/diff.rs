//! Differences between two decision streams (harness.md 5): the reference (or a golden file)
//! and a DUT (or a fresh replay).
//!
//! Decisions are aligned by (flow, cause, ordinal): the n-th decision a flow made for a given
//! event (or the n-th firing of a given timer). Outputs are compared exactly unless a tolerance
//! is given for the field (absolute or relative to the reference); state is compared only on
//! request, f64 values bit for bit unless a tolerance names them.

use std::collections::HashMap;
use std::fmt::Write as _;

use ccreplay_reference_cc::{Cause, Decision, Event, Outputs, StateValue};

/// A tolerance on one field: `rate_bps`, `window_bytes`, `ack_cwnd`, ... or `state.NAME`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// Field name.
    pub field: String,
    /// Largest absolute difference accepted.
    pub abs: Option<f64>,
    /// Largest difference relative to the reference value accepted.
    pub rel: Option<f64>,
}

impl std::str::FromStr for Tolerance {
    type Err = String;
    /// `FIELD=abs:X` or `FIELD=rel:X` (e.g. `rate_bps=rel:0.001`, `state.U=abs:1e-9`).
    fn from_str(s: &str) -> Result<Self, String> {
        let (field, spec) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected FIELD=abs:X or FIELD=rel:X"))?;
        let (kind, x) = spec
            .split_once(':')
            .ok_or_else(|| format!("`{s}`: expected abs:X or rel:X after `=`"))?;
        let x: f64 = x
            .parse()
            .map_err(|_| format!("`{s}`: `{x}` is not a number"))?;
        if !(x >= 0.0 && x.is_finite()) {
            return Err(format!("`{s}`: a tolerance must be a finite number >= 0"));
        }
        match kind {
            "abs" => Ok(Tolerance {
                field: field.into(),
                abs: Some(x),
                rel: None,
            }),
            "rel" => Ok(Tolerance {
                field: field.into(),
                abs: None,
                rel: Some(x),
            }),
            _ => Err(format!("`{s}`: `{kind}` is neither abs nor rel")),
        }
    }
}

/// Which state values to compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StateCompare {
    /// Outputs only (the default).
    #[default]
    None,
    /// Every state value both sides report.
    All,
    /// These names.
    Fields(Vec<String>),
}

/// How to compare.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Per-field tolerances.
    pub tolerances: Vec<Tolerance>,
    /// State comparison.
    pub state: StateCompare,
}

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
    /// The DUT's decision for the same (cause, ordinal) (None: missing).
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
    /// The first divergence in reference order.
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

/// Collects decisions per flow for one side.
#[derive(Default)]
pub struct Side {
    flows: Vec<Vec<Decision>>,
}

impl Side {
    /// Add a decision.
    pub fn push(&mut self, d: &Decision) {
        let f = d.flow as usize;
        if self.flows.len() <= f {
            self.flows.resize_with(f + 1, Vec::new);
        }
        self.flows[f].push(*d);
    }

    /// Decisions of a flow.
    pub fn flow(&self, f: usize) -> &[Decision] {
        self.flows.get(f).map_or(&[], Vec::as_slice)
    }

    /// Number of flows seen.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True when no decision was added.
    pub fn is_empty(&self) -> bool {
        self.flows.iter().all(Vec::is_empty)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    Event(&'a str, u64),
    Timer(&'a str),
}

fn key(d: &Decision) -> Key<'_> {
    match d.cause {
        Cause::Event { kind, index } => Key::Event(kind, index),
        Cause::Timer { name } => Key::Timer(name),
    }
}

/// The (cause, ordinal) keys of a flow's decisions.
fn keyed(ds: &[Decision]) -> Vec<(Key<'_>, u32)> {
    let mut seen: HashMap<Key<'_>, u32> = HashMap::new();
    ds.iter()
        .map(|d| {
            let k = key(d);
            let n = seen.entry(k).or_insert(0);
            *n += 1;
            (k, *n - 1)
        })
        .collect()
}

struct Cmp<'o> {
    opts: &'o DiffOptions,
    largest: Vec<(String, f64, f64)>,
}

impl Cmp<'_> {
    fn tol(&self, field: &str) -> Option<&Tolerance> {
        self.opts.tolerances.iter().find(|t| t.field == field)
    }

    fn num(
        &mut self,
        field: &str,
        r: Option<f64>,
        d: Option<f64>,
        rtext: String,
        dtext: String,
        out: &mut Vec<FieldDiff>,
    ) {
        match (r, d) {
            (Some(a), Some(b)) => {
                if a.to_bits() == b.to_bits() {
                    return;
                }
                let abs = (a - b).abs();
                let rel = if a != 0.0 {
                    abs / a.abs()
                } else {
                    f64::INFINITY
                };
                match self.largest.iter_mut().find(|(f, _, _)| f == field) {
                    Some(e) => {
                        e.1 = e.1.max(abs);
                        if rel.is_finite() {
                            e.2 = e.2.max(rel);
                        }
                    }
                    None => self.largest.push((
                        field.to_string(),
                        abs,
                        if rel.is_finite() { rel } else { 0.0 },
                    )),
                }
                let ok = self.tol(field).is_some_and(|t| {
                    t.abs.is_some_and(|x| abs <= x) || t.rel.is_some_and(|x| rel <= x)
                });
                if !ok {
                    out.push(FieldDiff {
                        field: field.to_string(),
                        reference: rtext,
                        dut: dtext,
                        abs_err: Some(abs),
                        rel_err: rel.is_finite().then_some(rel),
                    });
                }
            }
            (None, None) => {}
            _ => out.push(FieldDiff {
                field: field.to_string(),
                reference: rtext,
                dut: dtext,
                abs_err: None,
                rel_err: None,
            }),
        }
    }

    fn outputs(&mut self, r: &Outputs, d: &Outputs, out: &mut Vec<FieldDiff>) {
        fn t<T: ToString>(v: Option<T>) -> String {
            v.map_or_else(|| "absent".into(), |v| v.to_string())
        }
        macro_rules! field {
            ($name:literal, $f:ident) => {
                self.num(
                    $name,
                    r.$f.map(|v| v as f64),
                    d.$f.map(|v| v as f64),
                    t(r.$f),
                    t(d.$f),
                    out,
                )
            };
        }
        // u64 outputs compared as integers first: f64 loses exactness above 2^53.
        if r.rate_bps != d.rate_bps {
            field!("rate_bps", rate_bps);
        }
        if r.window_bytes != d.window_bytes {
            field!("window_bytes", window_bytes);
        }
        if r.send_cnp != d.send_cnp {
            out.push(FieldDiff {
                field: "send_cnp".into(),
                reference: t(r.send_cnp),
                dut: t(d.send_cnp),
                abs_err: None,
                rel_err: None,
            });
        }
        if r.ack_n != d.ack_n {
            field!("ack_n", ack_n);
        }
        if r.ack_cwnd != d.ack_cwnd {
            field!("ack_cwnd", ack_cwnd);
        }
        if r.mark_ce != d.mark_ce {
            out.push(FieldDiff {
                field: "mark_ce".into(),
                reference: t(r.mark_ce),
                dut: t(d.mark_ce),
                abs_err: None,
                rel_err: None,
            });
        }
        if r.ack_flags != d.ack_flags {
            out.push(FieldDiff {
                field: "ack_flags".into(),
                reference: t(r.ack_flags),
                dut: t(d.ack_flags),
                abs_err: None,
                rel_err: None,
            });
        }
    }

    fn state(&mut self, r: &Decision, d: &Decision, out: &mut Vec<FieldDiff>) {
        let names: Vec<&str> = match &self.opts.state {
            StateCompare::None => return,
            StateCompare::All => {
                let mut n: Vec<&str> = r.state.fields().map(|(k, _)| k).collect();
                for (k, _) in d.state.fields() {
                    if !n.contains(&k) {
                        n.push(k);
                    }
                }
                n
            }
            StateCompare::Fields(f) => f.iter().map(String::as_str).collect(),
        };
        for name in names {
            let (a, b) = (r.state.get(name), d.state.get(name));
            if a == b && a.is_none_or(|v| !matches!(v, StateValue::F64(_))) {
                continue;
            }
            let field = format!("state.{name}");
            let text = |v: Option<StateValue>| match v {
                None => "absent".to_string(),
                Some(StateValue::U64(x)) => x.to_string(),
                Some(StateValue::I64(x)) => x.to_string(),
                Some(StateValue::F64(x)) => format!("{x:?}"),
                Some(StateValue::Bool(x)) => x.to_string(),
            };
            let num = |v: Option<StateValue>| match v {
                Some(StateValue::U64(x)) => Some(x as f64),
                Some(StateValue::I64(x)) => Some(x as f64),
                Some(StateValue::F64(x)) => Some(x),
                Some(StateValue::Bool(x)) => Some(x as u8 as f64),
                None => None,
            };
            let integer_equal =
                matches!((a, b), (Some(StateValue::U64(x)), Some(StateValue::U64(y))) if x == y);
            if !integer_equal {
                self.num(&field, num(a), num(b), text(a), text(b), out);
            }
        }
    }
}

/// Compare two sides flow by flow.
pub fn diff(reference: &Side, dut: &Side, opts: &DiffOptions) -> DiffReport {
    let n = reference.len().max(dut.len());
    let mut report = DiffReport {
        t0_ns: (0..n)
            .flat_map(|f| reference.flow(f).iter().chain(dut.flow(f)))
            .map(|d| d.t_ns)
            .min(),
        ..DiffReport::default()
    };
    let mut fields = Vec::new();
    for f in 0..n {
        let (r, d) = (reference.flow(f), dut.flow(f));
        if r.is_empty() && d.is_empty() {
            continue;
        }
        let mut cmp = Cmp {
            opts,
            largest: Vec::new(),
        };
        let mut fd = FlowDiff {
            flow: f as u32,
            reference_count: r.len() as u64,
            dut_count: d.len() as u64,
            mismatches: 0,
            missing: 0,
            extra: 0,
            largest: Vec::new(),
            first: None,
        };
        // Fast path: both sides made the same decisions in the same order.
        let same_order = r.len() == d.len() && r.iter().zip(d).all(|(a, b)| key(a) == key(b));
        let pairs: Vec<(Option<usize>, Option<usize>)> = if same_order {
            (0..r.len()).map(|i| (Some(i), Some(i))).collect()
        } else {
            let rk = keyed(r);
            let dk = keyed(d);
            let index: HashMap<(Key<'_>, u32), usize> =
                dk.iter().enumerate().map(|(i, k)| (*k, i)).collect();
            let mut used = vec![false; d.len()];
            let mut v: Vec<(Option<usize>, Option<usize>)> = rk
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let j = index.get(k).copied();
                    if let Some(j) = j {
                        used[j] = true;
                    }
                    (Some(i), j)
                })
                .collect();
            v.extend(
                used.iter()
                    .enumerate()
                    .filter(|(_, u)| !**u)
                    .map(|(j, _)| (None, Some(j))),
            );
            v
        };
        for (i, j) in pairs {
            fields.clear();
            match (i.map(|i| &r[i]), j.map(|j| &d[j])) {
                (Some(a), Some(b)) => {
                    if a.t_ns != b.t_ns {
                        fields.push(FieldDiff {
                            field: "t".into(),
                            reference: a.t_ns.to_string(),
                            dut: b.t_ns.to_string(),
                            abs_err: Some((a.t_ns as f64 - b.t_ns as f64).abs()),
                            rel_err: None,
                        });
                    }
                    cmp.outputs(&a.outputs, &b.outputs, &mut fields);
                    cmp.state(a, b, &mut fields);
                    if !fields.is_empty() {
                        fd.mismatches += 1;
                    }
                }
                (Some(_), None) => {
                    fd.missing += 1;
                    fields.push(FieldDiff {
                        field: "decision".into(),
                        reference: "present".into(),
                        dut: "missing".into(),
                        abs_err: None,
                        rel_err: None,
                    });
                }
                (None, Some(_)) => {
                    fd.extra += 1;
                    fields.push(FieldDiff {
                        field: "decision".into(),
                        reference: "none".into(),
                        dut: "extra".into(),
                        abs_err: None,
                        rel_err: None,
                    });
                }
                (None, None) => {}
            }
            if !fields.is_empty() && fd.first.is_none() {
                fd.first = Some(Divergence {
                    reference: i.map(|i| r[i]),
                    dut: j.map(|j| d[j]),
                    fields: fields.clone(),
                    events: Vec::new(),
                });
            }
        }
        fd.largest = cmp.largest;
        report.flows.push(fd);
    }
    report
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

/// Human-readable report.
/// `+12.345 µs`: `t_ns` after the report's first decision (the absolute ns stay in the
/// JSON that follows).
fn since(report: &DiffReport, t_ns: u64) -> String {
    let t0 = report.t0_ns.unwrap_or(t_ns);
    // Events before the first decision are negative.
    let (sign, d) = if t_ns >= t0 {
        ('+', t_ns - t0)
    } else {
        ('-', t0 - t_ns)
    };
    format!("{sign}{}.{:03} µs", d / 1_000, d % 1_000)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_times_are_microseconds_since_the_first_decision() {
        let r = DiffReport {
            flows: Vec::new(),
            t0_ns: Some(1_735_689_600_000_005_366),
        };
        // 1735689600000006246 - 1735689600000005366 = 880 ns; 5285 is 81 ns before t0;
        // 1 s + 2 ns after it is 1,000,000.002 µs.
        assert_eq!(since(&r, 1_735_689_600_000_006_246), "+0.880 µs");
        assert_eq!(since(&r, 1_735_689_600_000_005_285), "-0.081 µs");
        assert_eq!(since(&r, 1_735_689_601_000_005_368), "+1000000.002 µs");
        assert_eq!(since(&r, 1_735_689_600_000_005_366), "+0.000 µs");
    }
    use ccreplay_reference_cc::State;

    const NAMES: &[&str] = &["W", "U"];

    fn dec(flow: u32, index: u64, window: u64, u: f64) -> Decision {
        Decision {
            t_ns: 100 * index,
            flow,
            cause: Cause::Event {
                kind: "rx_ack",
                index,
            },
            outputs: Outputs {
                window_bytes: Some(window),
                rate_bps: Some(window * 8),
                ..Outputs::default()
            },
            state: State::new(NAMES, &[StateValue::U64(window), StateValue::F64(u)]),
        }
    }

    fn side(ds: &[Decision]) -> Side {
        let mut s = Side::default();
        for d in ds {
            s.push(d);
        }
        s
    }

    #[test]
    fn identical_streams_conform() {
        let a = side(&[
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1100, 0.25),
            dec(1, 0, 900, 1.0),
        ]);
        let r = diff(
            &a,
            &a,
            &DiffOptions {
                state: StateCompare::All,
                ..Default::default()
            },
        );
        assert!(r.ok());
        assert_eq!(r.flows.len(), 2);
        assert_eq!(r.reference_count(), 3);
    }

    #[test]
    fn first_divergence_missing_and_extra() {
        let r = side(&[
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1100, 0.25),
            dec(0, 2, 1200, 0.25),
        ]);
        // The DUT gets event 1 wrong by 80 bytes, skips event 2 and answers an event 3.
        let d = side(&[
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1180, 0.25),
            dec(0, 3, 1300, 0.25),
        ]);
        let rep = diff(&r, &d, &DiffOptions::default());
        let f = &rep.flows[0];
        assert_eq!((f.mismatches, f.missing, f.extra), (1, 1, 1));
        let div = f.first.as_ref().unwrap();
        assert_eq!(
            div.reference.unwrap().cause,
            Cause::Event {
                kind: "rx_ack",
                index: 1
            }
        );
        // window 1100 vs 1180: abs 80, rel 80/1100; rate 8800 vs 9440: abs 640.
        assert_eq!(div.fields[0].field, "rate_bps");
        assert_eq!(div.fields[0].abs_err, Some(640.0));
        assert_eq!(div.fields[1].field, "window_bytes");
        assert_eq!(div.fields[1].rel_err, Some(80.0 / 1100.0));
        assert!(!rep.ok());
    }

    #[test]
    fn tolerances_and_state_on_request() {
        let r = side(&[dec(0, 0, 1000, 0.5)]);
        let d = side(&[dec(0, 0, 1001, 0.5000000000000001)]);
        // Outputs differ by 1 byte (0.1 %) and 8 bps; U by one ulp.
        let strict = diff(&r, &d, &DiffOptions::default());
        assert_eq!(strict.mismatches(), 1);
        let opts = DiffOptions {
            tolerances: vec![
                "window_bytes=abs:1".parse().unwrap(),
                "rate_bps=rel:0.001".parse().unwrap(),
            ],
            state: StateCompare::None,
        };
        assert!(diff(&r, &d, &opts).ok());
        let opts = DiffOptions {
            state: StateCompare::Fields(vec!["U".into()]),
            ..opts
        };
        let rep = diff(&r, &d, &opts);
        assert_eq!(
            rep.flows[0].first.as_ref().unwrap().fields[0].field,
            "state.U"
        );
        assert!("rate_bps=rel".parse::<Tolerance>().is_err());
        assert!("rate_bps=abs:-1".parse::<Tolerance>().is_err());
    }
}
