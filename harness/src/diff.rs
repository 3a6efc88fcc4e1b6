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
//! earliest in time ([`Place`]).
//!
//! [`diff`] aligns two sides held whole; [`StreamDiff`] gives the same report from the two
//! streams as they come, holding per flow what the report prints and the decisions waiting
//! for their counterpart (`diff` and `check` use it; the HTML report, which charts every
//! decision, holds both sides).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use ccreplay_reference_cc::{Cause, Decision, Event, Outputs, State, StateValue};

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
    /// The first divergence: the earliest in time ([`Place`]).
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

/// What a decision pairs on (with its ordinal among its side's decisions of the same key).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    /// An event's decisions: the answers to the same event (kind, index).
    Event(&'a str, u64),
    /// A timer's firing at a time (name, t): a firing at another ns is another decision, so a
    /// timer that fires early is an extra decision at that ns, not the reference's next firing.
    Timer(&'a str, u64),
}

fn key(d: &Decision) -> Key<'_> {
    match d.cause {
        Cause::Event { kind, index } => Key::Event(kind, index),
        Cause::Timer { name } => Key::Timer(name, d.t_ns),
    }
}

/// Where a divergence lies in its flow; a flow's first divergence is the least. First the
/// time at which the two streams stop agreeing (the earlier of a pair's two times: an event's
/// decisions are paired whatever their times), then, at one ns, timers before events (C-5:
/// they are due first) and events by index, then the reference's decisions before the DUT's
/// extra ones, each side's in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    t_ns: u64,
    /// 0 for a timer, 1 + index for an event.
    cause: u64,
    /// A DUT decision the reference did not make.
    extra: bool,
    /// Its position among its side's decisions of the flow.
    pos: u64,
}

impl Place {
    /// `d` (the reference's decision, or the DUT's when `extra`), diverging at `t_ns`.
    fn of(t_ns: u64, d: &Decision, extra: bool, pos: u64) -> Place {
        let cause = match d.cause {
            Cause::Timer { .. } => 0,
            Cause::Event { index, .. } => index.saturating_add(1),
        };
        Place {
            t_ns,
            cause,
            extra,
            pos,
        }
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

/// A compared field, named without allocating: an output (`rate_bps`, `t`) or a state value
/// (`state.W`).
#[derive(Clone, Copy)]
enum Field<'a> {
    Out(&'static str),
    State(&'a str),
}

impl Field<'_> {
    /// True when `name` (as a report or a tolerance writes it) is this field.
    fn is(&self, name: &str) -> bool {
        match self {
            Field::Out(f) => *f == name,
            Field::State(s) => name.strip_prefix("state.") == Some(*s),
        }
    }

    fn name(&self) -> String {
        match self {
            Field::Out(f) => (*f).to_string(),
            Field::State(s) => format!("state.{s}"),
        }
    }
}

/// The largest error of one field over a flow, and where it first appeared: (reference
/// position of the pair, order within the pair). The report lists fields in that order, which
/// a streaming comparison (pairs in arrival order) recovers by sorting.
struct Largest {
    field: String,
    abs: f64,
    rel: f64,
    seen: (u64, u32),
}

/// `largest` in order of first appearance, as the report lists it.
fn largest_list(mut v: Vec<Largest>) -> Vec<(String, f64, f64)> {
    v.sort_by_key(|e| e.seen);
    v.into_iter().map(|e| (e.field, e.abs, e.rel)).collect()
}

/// Compares one aligned pair: counts its errors into `largest` and tells whether it differs;
/// with `out`, also writes what differs as text (only the first divergence needs it).
struct Pair<'a, 'o> {
    opts: &'o DiffOptions,
    largest: &'a mut Vec<Largest>,
    out: Option<&'a mut Vec<FieldDiff>>,
    differs: bool,
    /// The reference decision's position in its flow.
    pos: u64,
    /// Fields compared so far in this pair.
    k: u32,
}

impl Pair<'_, '_> {
    fn tol(&self, field: Field<'_>) -> Option<&Tolerance> {
        self.opts.tolerances.iter().find(|t| field.is(&t.field))
    }

    fn differ(
        &mut self,
        field: Field<'_>,
        texts: impl FnOnce() -> (String, String),
        abs_err: Option<f64>,
        rel_err: Option<f64>,
    ) {
        self.differs = true;
        if let Some(out) = self.out.as_deref_mut() {
            let (reference, dut) = texts();
            out.push(FieldDiff {
                field: field.name(),
                reference,
                dut,
                abs_err,
                rel_err,
            });
        }
    }

    fn num(
        &mut self,
        field: Field<'_>,
        r: Option<f64>,
        d: Option<f64>,
        texts: impl FnOnce() -> (String, String),
    ) {
        let k = self.k;
        self.k += 1;
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
                let seen = (self.pos, k);
                match self.largest.iter_mut().find(|e| field.is(&e.field)) {
                    Some(e) => {
                        e.abs = e.abs.max(abs);
                        if rel.is_finite() {
                            e.rel = e.rel.max(rel);
                        }
                        e.seen = e.seen.min(seen);
                    }
                    None => self.largest.push(Largest {
                        field: field.name(),
                        abs,
                        rel: if rel.is_finite() { rel } else { 0.0 },
                        seen,
                    }),
                }
                let ok = self.tol(field).is_some_and(|t| {
                    t.abs.is_some_and(|x| abs <= x) || t.rel.is_some_and(|x| rel <= x)
                });
                if !ok {
                    self.differ(field, texts, Some(abs), rel.is_finite().then_some(rel));
                }
            }
            (None, None) => {}
            _ => self.differ(field, texts, None, None),
        }
    }

    fn outputs(&mut self, r: &Outputs, d: &Outputs) {
        fn t<T: ToString>(v: Option<T>) -> String {
            v.map_or_else(|| "absent".into(), |v| v.to_string())
        }
        macro_rules! field {
            ($name:literal, $f:ident) => {
                self.num(
                    Field::Out($name),
                    r.$f.map(|v| v as f64),
                    d.$f.map(|v| v as f64),
                    || (t(r.$f), t(d.$f)),
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
            self.differ(
                Field::Out("send_cnp"),
                || (t(r.send_cnp), t(d.send_cnp)),
                None,
                None,
            );
        }
        if r.ack_n != d.ack_n {
            field!("ack_n", ack_n);
        }
        if r.ack_cwnd != d.ack_cwnd {
            field!("ack_cwnd", ack_cwnd);
        }
        if r.mark_ce != d.mark_ce {
            self.differ(
                Field::Out("mark_ce"),
                || (t(r.mark_ce), t(d.mark_ce)),
                None,
                None,
            );
        }
        if r.ack_flags != d.ack_flags {
            self.differ(
                Field::Out("ack_flags"),
                || (t(r.ack_flags), t(d.ack_flags)),
                None,
                None,
            );
        }
    }

    /// The state values `--state` names: every name of the reference's decision then the
    /// DUT's others (`all`), or the list, in its order.
    fn state(&mut self, r: &Decision, d: &Decision) {
        let opts = self.opts;
        // The same names and values, bit for bit (most pairs): nothing can differ.
        if !matches!(opts.state, StateCompare::None) && same_state(&r.state, &d.state) {
            return;
        }
        match &opts.state {
            StateCompare::None => {}
            StateCompare::All => {
                for (name, _) in r.state.fields() {
                    self.state_value(name, r, d);
                }
                for (j, (name, _)) in d.state.fields().enumerate() {
                    if !r.state.fields().any(|(n, _)| n == name)
                        && !d.state.fields().take(j).any(|(n, _)| n == name)
                    {
                        self.state_value(name, r, d);
                    }
                }
            }
            StateCompare::Fields(f) => {
                for name in f {
                    self.state_value(name, r, d);
                }
            }
        }
    }

    fn state_value(&mut self, name: &str, r: &Decision, d: &Decision) {
        let (a, b) = (r.state.get(name), d.state.get(name));
        if a == b && a.is_none_or(|v| !matches!(v, StateValue::F64(_))) {
            return;
        }
        // The same f64 bit for bit: nothing to count (what `num` would find).
        if let (Some(StateValue::F64(x)), Some(StateValue::F64(y))) = (a, b)
            && x.to_bits() == y.to_bits()
        {
            return;
        }
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
            self.num(Field::State(name), num(a), num(b), || (text(a), text(b)));
        }
    }

    /// Compare the time, the outputs and (on request) the state.
    fn pair(&mut self, a: &Decision, b: &Decision) {
        if a.t_ns != b.t_ns {
            self.differ(
                Field::Out("t"),
                || (a.t_ns.to_string(), b.t_ns.to_string()),
                Some((a.t_ns as f64 - b.t_ns as f64).abs()),
                None,
            );
        }
        self.outputs(&a.outputs, &b.outputs);
        self.state(a, b);
    }
}

/// The same names in the same order, and values equal bit for bit.
fn same_state(a: &State, b: &State) -> bool {
    let (mut x, mut y) = (a.fields(), b.fields());
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some((n, v)), Some((m, w))) => {
                let same = match (v, w) {
                    (StateValue::F64(p), StateValue::F64(q)) => p.to_bits() == q.to_bits(),
                    _ => v == w,
                };
                if n != m || !same {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

fn present_missing() -> Vec<FieldDiff> {
    vec![FieldDiff {
        field: "decision".into(),
        reference: "present".into(),
        dut: "missing".into(),
        abs_err: None,
        rel_err: None,
    }]
}

fn none_extra() -> Vec<FieldDiff> {
    vec![FieldDiff {
        field: "decision".into(),
        reference: "none".into(),
        dut: "extra".into(),
        abs_err: None,
        rel_err: None,
    }]
}

/// Compare two sides flow by flow, each held whole ([`StreamDiff`] gives the same report
/// holding only what it prints; this one serves the HTML report, which charts both sides, and
/// streams whose event order is broken).
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
        let mut largest = Vec::new();
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
        let mut first: Option<Place> = None;
        for (i, j) in pairs {
            fields.clear();
            let place = match (i.map(|i| &r[i]), j.map(|j| &d[j])) {
                (Some(a), Some(b)) => {
                    let pos = i.unwrap_or(0) as u64;
                    let mut p = Pair {
                        opts,
                        largest: &mut largest,
                        out: Some(&mut fields),
                        differs: false,
                        pos,
                        k: 0,
                    };
                    p.pair(a, b);
                    if !p.differs {
                        continue;
                    }
                    fd.mismatches += 1;
                    Place::of(a.t_ns.min(b.t_ns), a, false, pos)
                }
                (Some(a), None) => {
                    fd.missing += 1;
                    fields = present_missing();
                    Place::of(a.t_ns, a, false, i.unwrap_or(0) as u64)
                }
                (None, Some(b)) => {
                    fd.extra += 1;
                    fields = none_extra();
                    Place::of(b.t_ns, b, true, j.unwrap_or(0) as u64)
                }
                (None, None) => continue,
            };
            if first.is_none_or(|p| place < p) {
                first = Some(place);
                fd.first = Some(Divergence {
                    reference: i.map(|i| r[i]),
                    dut: j.map(|j| d[j]),
                    fields: fields.clone(),
                    events: Vec::new(),
                });
            }
        }
        fd.largest = largest_list(largest);
        report.flows.push(fd);
    }
    report
}

// ---------------------------------------------------------------------------------------
// Streaming

/// Which stream a decision comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The reference (or, in `check`, the golden file).
    Reference = 0,
    /// The DUT (or the golden file of `diff --golden`, or `check`'s replay).
    Dut = 1,
}

/// Decisions a [`StreamDiff`] holds at most, both sides and all flows together, while they
/// wait for their counterpart (≈ 330 bytes each: 43 MB). Past it the oldest are counted as
/// missing or extra ([`StreamDiff::uncertain`] counts the ones whose counterpart came later).
pub const HOLD_LIMIT: usize = 1 << 17;

/// A decision waiting for its counterpart.
#[derive(Clone, Copy)]
struct Held {
    /// Arrival order, both sides: the oldest go first at the hold limit.
    seq: u64,
    /// Its position in its side's decisions of the flow.
    pos: u64,
    /// The n-th decision of its side and flow with the same [`Key`]: the same event and kind,
    /// or the same timer at the same ns.
    ordinal: u64,
    d: Decision,
}

fn event_index(d: &Decision) -> u64 {
    match d.cause {
        Cause::Event { index, .. } => index,
        Cause::Timer { .. } => 0,
    }
}

/// One timer's firings on one side of a flow, which come in time order.
struct TimerQ {
    name: &'static str,
    /// The latest firing's time, and how many firings this side made at it.
    last: Option<u64>,
    at_last: u64,
    /// Firings the other side has not matched yet (slab slots), in time order.
    held: VecDeque<u32>,
    /// Times of firings dropped at the hold limit.
    dropped: Option<(u64, u64)>,
}

/// One side of one flow.
#[derive(Default)]
struct SideFlow {
    count: u64,
    /// Largest event index so far: a side's event decisions come in index order.
    cur: Option<u64>,
    /// Decisions per kind at `cur` (ordinals).
    at_cur: Vec<(&'static str, u64)>,
    timers: Vec<TimerQ>,
    /// Held event decisions (slab slots), in arrival order, which is index order.
    events: VecDeque<u32>,
    /// Event indices of decisions dropped at the hold limit.
    dropped: Option<(u64, u64)>,
}

/// What a flow's report needs, accumulated as pairs are compared.
struct FlowAcc {
    flow: u32,
    sides: [SideFlow; 2],
    mismatches: u64,
    missing: u64,
    extra: u64,
    largest: Vec<Largest>,
    /// The first divergence so far (the least [`Place`], as [`diff`] finds it).
    first: Option<(Place, Box<Divergence>)>,
}

/// The comparison of two decision streams, one decision at a time: the report of [`diff`],
/// field for field, holding per flow only the decisions that wait for their counterpart and
/// what the report prints (counts, largest errors, the first divergence).
///
/// Decisions are aligned as [`diff`] aligns them: an event's by (flow, cause, ordinal), a
/// timer's by (flow, timer, time, ordinal). A decision waits until the other side makes the
/// same one, or can no longer make it: a side's decisions of a flow on events come in
/// event-index order (a replay feeds a flow's events in order, and a process or C-ABI DUT may
/// only answer the event it was sent), so once the other side has decided on a later event of
/// the flow, an earlier one of this side has no counterpart; a timer's firings come in time
/// order (each answer's timers are due by its event, in time order), so once the other side
/// has fired that timer later, an earlier firing of this side has none. So what is held is,
/// per flow, the decisions of the side that is ahead on that flow — the decisions of one event
/// when the two are fed in step (`diff --dut`), the skew between the golden file's order and
/// the replay's for `--golden` and `check` — and timer firings one side made and the other
/// has not passed yet, at most [`HOLD_LIMIT`] in all ([`StreamDiff::alignment_note`] says
/// when that was too few).
///
/// A stream that breaks the index order or a timer's time order (a hand-made events or golden
/// file, a DUT firing a timer before one it already fired) is noticed
/// ([`StreamDiff::in_order`]): its ordinals may then differ from [`diff`]'s, and the callers
/// compare such a pair whole.
pub struct StreamDiff<'o> {
    opts: &'o DiffOptions,
    flows: Vec<FlowAcc>,
    slot_of: rustc_hash::FxHashMap<u32, u32>,
    slab: Vec<Held>,
    free: Vec<u32>,
    held: [usize; 2],
    max_held: usize,
    seq: u64,
    t0_ns: Option<u64>,
    in_order: bool,
    closed: [bool; 2],
    dropped: u64,
    uncertain: u64,
    fields: Vec<FieldDiff>,
}

impl<'o> StreamDiff<'o> {
    /// An empty comparison.
    pub fn new(opts: &'o DiffOptions) -> Self {
        StreamDiff {
            opts,
            flows: Vec::new(),
            slot_of: Default::default(),
            slab: Vec::new(),
            free: Vec::new(),
            held: [0; 2],
            max_held: 0,
            seq: 0,
            t0_ns: None,
            in_order: true,
            closed: [false; 2],
            dropped: 0,
            uncertain: 0,
            fields: Vec::new(),
        }
    }

    /// Decisions pushed on one side.
    pub fn count(&self, which: Which) -> u64 {
        self.flows
            .iter()
            .map(|f| f.sides[which as usize].count)
            .sum()
    }

    /// Decisions of one side held now, waiting for the other's.
    pub fn held(&self, which: Which) -> usize {
        self.held[which as usize]
    }

    /// True once [`StreamDiff::close`] was called for the side.
    pub fn is_closed(&self, which: Which) -> bool {
        self.closed[which as usize]
    }

    /// The most decisions held at once (both sides).
    pub fn max_held(&self) -> usize {
        self.max_held
    }

    /// False when a side's decisions of a flow went back to an earlier event index, or a
    /// timer's firings to an earlier time: then [`diff`]'s alignment may differ from this
    /// one's.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// Decisions counted as missing or extra because they waited past [`HOLD_LIMIT`].
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Decisions whose counterpart may have been among the dropped ones: [`diff`] could have
    /// paired them (0 unless the two streams were more than [`HOLD_LIMIT`] apart).
    pub fn uncertain(&self) -> u64 {
        self.uncertain
    }

    /// What to say when decisions were dropped at [`HOLD_LIMIT`] and some of the other
    /// side's came after them: the report may then differ from [`diff`]'s.
    pub fn alignment_note(&self) -> Option<String> {
        (self.uncertain > 0).then(|| {
            format!(
                "the two streams' decisions were more than {HOLD_LIMIT} apart: {} waited longer \
                 and were counted as missing or extra, and {} of the other side's came after \
                 them (compared whole, some may have paired)",
                self.dropped, self.uncertain
            )
        })
    }

    fn flow_slot(&mut self, flow: u32) -> usize {
        if let Some(&i) = self.slot_of.get(&flow) {
            return i as usize;
        }
        let i = self.flows.len();
        self.slot_of.insert(flow, i as u32);
        self.flows.push(FlowAcc {
            flow,
            sides: Default::default(),
            mismatches: 0,
            missing: 0,
            extra: 0,
            largest: Vec::new(),
            first: None,
        });
        i
    }

    /// Add one decision of one side.
    pub fn push(&mut self, which: Which, d: &Decision) {
        self.t0_ns = Some(self.t0_ns.map_or(d.t_ns, |t| t.min(d.t_ns)));
        let f = self.flow_slot(d.flow);
        let s = which as usize;
        let sf = &mut self.flows[f].sides[s];
        let pos = sf.count;
        sf.count += 1;
        match d.cause {
            Cause::Event { kind, index } => self.push_event(f, s, pos, kind, index, d),
            Cause::Timer { name } => self.push_timer(f, s, pos, name, d),
        }
        if self.held[0] + self.held[1] > HOLD_LIMIT {
            self.drop_oldest();
        }
    }

    /// The side will push nothing more: the other side's decisions waiting for it have no
    /// counterpart.
    pub fn close(&mut self, which: Which) {
        let o = 1 - which as usize;
        self.closed[which as usize] = true;
        for f in 0..self.flows.len() {
            self.retire_all(f, o);
        }
    }

    fn push_event(
        &mut self,
        f: usize,
        s: usize,
        pos: u64,
        kind: &'static str,
        index: u64,
        d: &Decision,
    ) {
        let o = 1 - s;
        let me = &mut self.flows[f].sides[s];
        match me.cur {
            Some(c) if index == c => {}
            Some(c) if index < c => {
                self.in_order = false;
                me.cur = Some(index);
                me.at_cur.clear();
            }
            _ => {
                me.cur = Some(index);
                me.at_cur.clear();
            }
        }
        let ordinal = match me.at_cur.iter_mut().find(|(k, _)| *k == kind) {
            Some(e) => {
                e.1 += 1;
                e.1 - 1
            }
            None => {
                me.at_cur.push((kind, 1));
                0
            }
        };
        // This side is past the other's held decisions of earlier events: they have no
        // counterpart.
        while let Some(&slot) = self.flows[f].sides[o].events.front() {
            if event_index(&self.slab[slot as usize].d) >= index {
                break;
            }
            self.flows[f].sides[o].events.pop_front();
            self.check_lost(f, s, slot);
            self.unmatched_slot(f, o, slot);
        }
        // Its counterpart, among the other side's held decisions of this event (at the front).
        let q = &self.flows[f].sides[o].events;
        let found = q
            .iter()
            .take_while(|&&sl| event_index(&self.slab[sl as usize].d) == index)
            .position(|&sl| {
                let h = &self.slab[sl as usize];
                h.ordinal == ordinal
                    && matches!(h.d.cause, Cause::Event { kind: k, .. } if k == kind)
            });
        if let Some(slot) = found.and_then(|i| self.flows[f].sides[o].events.remove(i)) {
            self.matched(f, s, pos, d, slot);
            return;
        }
        let other = &self.flows[f].sides[o];
        if self.closed[o] || other.cur.is_some_and(|c| c > index) {
            // The other side is past this event, or done.
            if other
                .dropped
                .is_some_and(|(lo, hi)| lo <= index && index <= hi)
            {
                self.uncertain += 1;
            }
            self.unmatched(f, s, pos, d);
        } else {
            let slot = self.hold(s, pos, ordinal, d);
            self.flows[f].sides[s].events.push_back(slot);
        }
    }

    fn push_timer(&mut self, f: usize, s: usize, pos: u64, name: &'static str, d: &Decision) {
        let o = 1 - s;
        let t = d.t_ns;
        let sides = &mut self.flows[f].sides;
        let ti = match sides[s].timers.iter().position(|q| q.name == name) {
            Some(i) => i,
            None => {
                sides[s].timers.push(TimerQ {
                    name,
                    last: None,
                    at_last: 0,
                    held: VecDeque::new(),
                    dropped: None,
                });
                sides[s].timers.len() - 1
            }
        };
        // The ordinal among this side's firings of the timer at `t`.
        let me = &mut sides[s].timers[ti];
        let ordinal = match me.last {
            Some(l) if l == t => me.at_last,
            Some(l) if l > t => {
                self.in_order = false;
                0
            }
            _ => 0,
        };
        me.last = Some(t);
        me.at_last = ordinal + 1;
        let mine_dropped = me.dropped;
        let Some(oi) = self.flows[f].sides[o]
            .timers
            .iter()
            .position(|q| q.name == name)
        else {
            self.hold_timer_or_not(f, s, ti, pos, ordinal, d);
            return;
        };
        // This side fired the timer at `t`: the other side's held firings before `t` have no
        // counterpart (this side fires it only later now).
        while let Some(&slot) = self.flows[f].sides[o].timers[oi].held.front() {
            let ht = self.slab[slot as usize].d.t_ns;
            if ht >= t {
                break;
            }
            self.flows[f].sides[o].timers[oi].held.pop_front();
            if mine_dropped.is_some_and(|(lo, hi)| lo <= ht && ht <= hi) {
                self.uncertain += 1;
            }
            self.unmatched_slot(f, o, slot);
        }
        // Its counterpart: the other side's held firing at `t` with the same ordinal.
        let q = &self.flows[f].sides[o].timers[oi];
        let found = q
            .held
            .iter()
            .take_while(|&&sl| self.slab[sl as usize].d.t_ns == t)
            .position(|&sl| self.slab[sl as usize].ordinal == ordinal);
        if let Some(slot) = found.and_then(|i| self.flows[f].sides[o].timers[oi].held.remove(i)) {
            self.matched(f, s, pos, d, slot);
            return;
        }
        // The other side fired it later, or as often at `t`: it will not make this firing
        // (it made it and dropped it if its dropped firings span `t`).
        let q = &self.flows[f].sides[o].timers[oi];
        let past = q
            .last
            .is_some_and(|l| l > t || (l == t && q.at_last > ordinal));
        if past {
            if q.dropped.is_some_and(|(lo, hi)| lo <= t && t <= hi) {
                self.uncertain += 1;
            }
            self.unmatched(f, s, pos, d);
            return;
        }
        self.hold_timer_or_not(f, s, ti, pos, ordinal, d);
    }

    /// A firing the other side may still make: held, unless that side is done.
    fn hold_timer_or_not(
        &mut self,
        f: usize,
        s: usize,
        ti: usize,
        pos: u64,
        ordinal: u64,
        d: &Decision,
    ) {
        if self.closed[1 - s] {
            self.unmatched(f, s, pos, d);
            return;
        }
        let slot = self.hold(s, pos, ordinal, d);
        self.flows[f].sides[s].timers[ti].held.push_back(slot);
    }

    fn hold(&mut self, s: usize, pos: u64, ordinal: u64, d: &Decision) -> u32 {
        let h = Held {
            seq: self.seq,
            pos,
            ordinal,
            d: *d,
        };
        self.seq += 1;
        self.held[s] += 1;
        self.max_held = self.max_held.max(self.held[0] + self.held[1]);
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = h;
                i
            }
            None => {
                self.slab.push(h);
                (self.slab.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, s: usize, slot: u32) -> Held {
        self.held[s] -= 1;
        self.free.push(slot);
        self.slab[slot as usize]
    }

    /// A held event decision of side `1 - s` retired for want of a counterpart: side `s` may
    /// have made it and dropped it at the hold limit.
    fn check_lost(&mut self, f: usize, s: usize, slot: u32) {
        if let Some((lo, hi)) = self.flows[f].sides[s].dropped {
            let i = event_index(&self.slab[slot as usize].d);
            if lo <= i && i <= hi {
                self.uncertain += 1;
            }
        }
    }

    /// `d` of side `s` pairs with the held decision in `slot` (the other side's).
    fn matched(&mut self, f: usize, s: usize, pos: u64, d: &Decision, slot: u32) {
        let h = self.release(1 - s, slot);
        if s == 0 {
            self.compare(f, d, pos, &h.d);
        } else {
            self.compare(f, &h.d, h.pos, d);
        }
    }

    fn compare(&mut self, f: usize, r: &Decision, rpos: u64, d: &Decision) {
        let acc = &mut self.flows[f];
        // Texts only for a pair that would be the first divergence so far.
        let place = Place::of(r.t_ns.min(d.t_ns), r, false, rpos);
        let candidate = acc.first.as_ref().is_none_or(|(k, _)| place < *k);
        self.fields.clear();
        let mut p = Pair {
            opts: self.opts,
            largest: &mut acc.largest,
            out: candidate.then_some(&mut self.fields),
            differs: false,
            pos: rpos,
            k: 0,
        };
        p.pair(r, d);
        if p.differs {
            acc.mismatches += 1;
            if candidate {
                acc.first = Some((
                    place,
                    Box::new(Divergence {
                        reference: Some(*r),
                        dut: Some(*d),
                        fields: std::mem::take(&mut self.fields),
                        events: Vec::new(),
                    }),
                ));
            }
        }
    }

    /// `d` of side `s` has no counterpart: missing (a reference decision) or extra.
    fn unmatched(&mut self, f: usize, s: usize, pos: u64, d: &Decision) {
        let acc = &mut self.flows[f];
        let key = Place::of(d.t_ns, d, s == 1, pos);
        if s == 0 {
            acc.missing += 1;
        } else {
            acc.extra += 1;
        }
        if acc.first.as_ref().is_none_or(|(k, _)| key < *k) {
            let div = if s == 0 {
                Divergence {
                    reference: Some(*d),
                    dut: None,
                    fields: present_missing(),
                    events: Vec::new(),
                }
            } else {
                Divergence {
                    reference: None,
                    dut: Some(*d),
                    fields: none_extra(),
                    events: Vec::new(),
                }
            };
            acc.first = Some((key, Box::new(div)));
        }
    }

    fn unmatched_slot(&mut self, f: usize, s: usize, slot: u32) {
        let h = self.release(s, slot);
        self.unmatched(f, s, h.pos, &h.d);
    }

    /// Every decision side `s` holds in flow slot `f` has no counterpart.
    fn retire_all(&mut self, f: usize, s: usize) {
        while let Some(slot) = self.flows[f].sides[s].events.pop_front() {
            self.check_lost(f, 1 - s, slot);
            self.unmatched_slot(f, s, slot);
        }
        for t in 0..self.flows[f].sides[s].timers.len() {
            while let Some(slot) = self.flows[f].sides[s].timers[t].held.pop_front() {
                self.unmatched_slot(f, s, slot);
            }
        }
    }

    /// Past [`HOLD_LIMIT`]: count the oldest held decisions as missing or extra, down to three
    /// quarters of it (one scan of the queues per `HOLD_LIMIT / 4` decisions).
    #[cold]
    fn drop_oldest(&mut self) {
        use std::cmp::Reverse;
        // (seq, flow slot, side, queue: u32::MAX for events, else the timer).
        let mut fronts = std::collections::BinaryHeap::new();
        let front = |slab: &[Held], q: &VecDeque<u32>| q.front().map(|&s| slab[s as usize].seq);
        for (f, acc) in self.flows.iter().enumerate() {
            for (s, side) in acc.sides.iter().enumerate() {
                if let Some(seq) = front(&self.slab, &side.events) {
                    fronts.push(Reverse((seq, f, s, u32::MAX)));
                }
                for (t, tq) in side.timers.iter().enumerate() {
                    if let Some(seq) = front(&self.slab, &tq.held) {
                        fronts.push(Reverse((seq, f, s, t as u32)));
                    }
                }
            }
        }
        while self.held[0] + self.held[1] > HOLD_LIMIT / 4 * 3 {
            let Some(Reverse((_, f, s, q))) = fronts.pop() else {
                break;
            };
            let side = &mut self.flows[f].sides[s];
            let queue = if q == u32::MAX {
                &mut side.events
            } else {
                &mut side.timers[q as usize].held
            };
            let Some(slot) = queue.pop_front() else {
                continue;
            };
            if let Some(&next) = queue.front() {
                fronts.push(Reverse((self.slab[next as usize].seq, f, s, q)));
            }
            let span = |r: Option<(u64, u64)>, i: u64| {
                Some(r.map_or((i, i), |(lo, hi)| (lo.min(i), hi.max(i))))
            };
            if q == u32::MAX {
                side.dropped = span(side.dropped, event_index(&self.slab[slot as usize].d));
            } else {
                let tq = &mut side.timers[q as usize];
                tq.dropped = span(tq.dropped, self.slab[slot as usize].d.t_ns);
            }
            self.dropped += 1;
            self.unmatched_slot(f, s, slot);
        }
    }

    /// The report: what [`diff`] gives for the same two streams.
    pub fn finish(mut self) -> DiffReport {
        for f in 0..self.flows.len() {
            for s in 0..2 {
                self.retire_all(f, s);
            }
        }
        let mut flows: Vec<FlowDiff> = self
            .flows
            .into_iter()
            .map(|a| FlowDiff {
                flow: a.flow,
                reference_count: a.sides[0].count,
                dut_count: a.sides[1].count,
                mismatches: a.mismatches,
                missing: a.missing,
                extra: a.extra,
                largest: largest_list(a.largest),
                first: a.first.map(|(_, d)| *d),
            })
            .collect();
        flows.sort_unstable_by_key(|f| f.flow);
        DiffReport {
            flows,
            t0_ns: self.t0_ns,
        }
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

    /// [`diff`] of the two sides, checked against [`StreamDiff`] fed them in turn, a decision
    /// of each: the same report, field for field.
    fn both(r: &[Decision], d: &[Decision], opts: &DiffOptions) -> DiffReport {
        let whole = diff(&side(r), &side(d), opts);
        let mut sd = StreamDiff::new(opts);
        for i in 0..r.len().max(d.len()) {
            if let Some(x) = r.get(i) {
                sd.push(Which::Reference, x);
            }
            if let Some(x) = d.get(i) {
                sd.push(Which::Dut, x);
            }
        }
        assert!(sd.in_order());
        assert_eq!(format!("{:?}", sd.finish()), format!("{whole:?}"));
        whole
    }

    #[test]
    fn identical_streams_conform() {
        let a = [
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1100, 0.25),
            dec(1, 0, 900, 1.0),
        ];
        let r = both(
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
        let r = [
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1100, 0.25),
            dec(0, 2, 1200, 0.25),
        ];
        // The DUT gets event 1 wrong by 80 bytes, skips event 2 and answers an event 3.
        let d = [
            dec(0, 0, 1000, 0.5),
            dec(0, 1, 1180, 0.25),
            dec(0, 3, 1300, 0.25),
        ];
        let rep = both(&r, &d, &DiffOptions::default());
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

    /// A DCQCN reaction point's decision: rate `rc` (and Rc = rc as state).
    fn rp(t_ns: u64, cause: Cause, rc: u64) -> Decision {
        Decision {
            t_ns,
            flow: 0,
            cause,
            outputs: Outputs {
                rate_bps: Some(rc),
                ..Outputs::default()
            },
            state: State::new(&["Rc"], &[StateValue::U64(rc)]),
        }
    }

    fn ev(kind: &'static str, index: u64) -> Cause {
        Cause::Event { kind, index }
    }

    const RI: Cause = Cause::Timer {
        name: "rate_increase",
    };

    #[test]
    fn a_timer_firing_early_is_the_first_divergence_where_it_fires() {
        // Events: CNP #0 at 1,000 ns, ACK #1 at 1,100, CNP #2 at 1,130, ACK #3 at 1,170, ACK #4
        // at 1,250. Both cut on a CNP (Rc / 2, Rt = Rc before it) and raise Rc to (Rc + Rt) / 2
        // (floored) on the rate-increase timer, every 55 ns; the reference restarts the timer
        // on a cut (R1, R3), the DUT does not (`timer-not-reset`).
        //   cut at 1,000: Rt = 10,000, Rc = 5,000; timer at 1,055: 7,500; 1,110: 8,750.
        //   cut at 1,130: Rt = 8,750, Rc = 4,375. The reference's timer then fires at
        //   1,130 + 55 = 1,185: (4,375 + 8,750) / 2 = 6,562; 1,240: (6,562 + 8,750) / 2 =
        //   7,656. The DUT's keeps its phase: 1,165 (6,562) and 1,220 (7,656).
        //   ACK #3 at 1,170: the reference's Rc is still 4,375, the DUT's already 6,562.
        let common = [
            rp(1_000, ev("rx_cnp", 0), 5_000),
            rp(1_055, RI, 7_500),
            rp(1_100, ev("rx_ack", 1), 7_500),
            rp(1_110, RI, 8_750),
            rp(1_130, ev("rx_cnp", 2), 4_375),
        ];
        let mut r = common.to_vec();
        r.extend([
            rp(1_170, ev("rx_ack", 3), 4_375),
            rp(1_185, RI, 6_562),
            rp(1_240, RI, 7_656),
            rp(1_250, ev("rx_ack", 4), 7_656),
        ]);
        let mut d = common.to_vec();
        d.extend([
            rp(1_165, RI, 6_562),
            rp(1_170, ev("rx_ack", 3), 6_562),
            rp(1_220, RI, 7_656),
            rp(1_250, ev("rx_ack", 4), 7_656),
        ]);
        let opts = DiffOptions {
            state: StateCompare::All,
            ..Default::default()
        };
        let rep = both(&r, &d, &opts);
        let f = &rep.flows[0];
        // Firings pair only at the same ns: 1,055 and 1,110 pair; the reference's 1,185 and
        // 1,240 are missing, the DUT's 1,165 and 1,220 extra. ACK #3 pairs with ACK #3 and
        // differs (4,375 against 6,562); the rest agree.
        assert_eq!((f.mismatches, f.missing, f.extra), (1, 2, 2));
        // The earliest of those, 1,165 (before ACK #3 at 1,170 and 1,185): the DUT's extra
        // firing, where the bug first acts. Paired n-th with n-th, its 3rd firing would have
        // matched the reference's 3rd (1,185) and the first divergence would be ACK #3.
        let div = f.first.as_ref().unwrap();
        assert!(div.reference.is_none());
        let dut = div.dut.unwrap();
        assert_eq!((dut.t_ns, dut.cause), (1_165, RI));
        assert_eq!(
            (div.fields[0].reference.as_str(), div.fields[0].dut.as_str()),
            ("none", "extra")
        );
        // The largest error is ACK #3's, the only pair that differs: 6,562 - 4,375 = 2,187,
        // relative 2,187 / 4,375.
        assert_eq!(
            f.largest[0],
            ("rate_bps".into(), 2_187.0, 2_187.0 / 4_375.0)
        );
        // No event points at a timer divergence.
        assert_eq!(divergence_event(div), None);
    }

    #[test]
    fn divergences_at_one_ns_timers_first_then_events_by_index() {
        // At 2,000 ns the reference decides ACK #5 (rate 100) and ACK #6 (100); the DUT answers
        // ACK #5 with 101, makes an extra NAK decision on event 4 and fires `alpha`, which the
        // reference does not. Every divergence is at 2,000: the timer first (C-5), then the
        // event with the smallest index (the extra on #4, before the mismatch on #5), as a
        // protocol stream orders them.
        let r = [
            rp(2_000, ev("rx_ack", 5), 100),
            rp(2_000, ev("rx_ack", 6), 100),
        ];
        let alpha = Cause::Timer { name: "alpha" };
        let d = [
            rp(2_000, alpha, 100),
            rp(2_000, ev("rx_nak", 4), 100),
            rp(2_000, ev("rx_ack", 5), 101),
            rp(2_000, ev("rx_ack", 6), 100),
        ];
        let rep = both(&r, &d, &DiffOptions::default());
        let f = &rep.flows[0];
        assert_eq!((f.mismatches, f.missing, f.extra), (1, 0, 2));
        assert_eq!(f.first.as_ref().unwrap().dut.unwrap().cause, alpha);
        // Without the timer: the extra on event 4.
        let rep = both(&r, &d[1..], &DiffOptions::default());
        let first = rep.flows[0].first.as_ref().unwrap();
        assert_eq!(first.dut.unwrap().cause, ev("rx_nak", 4));
        assert!(first.reference.is_none());
        // Without it either: the mismatch on #5 (rate 100 against 101).
        let rep = both(&r, &d[2..], &DiffOptions::default());
        let first = rep.flows[0].first.as_ref().unwrap();
        assert_eq!(first.reference.unwrap().cause, ev("rx_ack", 5));
        assert_eq!(first.fields[0].abs_err, Some(1.0));
    }

    #[test]
    fn tolerances_and_state_on_request() {
        let r = [dec(0, 0, 1000, 0.5)];
        let d = [dec(0, 0, 1001, 0.5000000000000001)];
        // Outputs differ by 1 byte (0.1 %) and 8 bps; U by one ulp.
        let strict = both(&r, &d, &DiffOptions::default());
        assert_eq!(strict.mismatches(), 1);
        let opts = DiffOptions {
            tolerances: vec![
                "window_bytes=abs:1".parse().unwrap(),
                "rate_bps=rel:0.001".parse().unwrap(),
            ],
            state: StateCompare::None,
        };
        assert!(both(&r, &d, &opts).ok());
        let opts = DiffOptions {
            state: StateCompare::Fields(vec!["U".into()]),
            ..opts
        };
        let rep = both(&r, &d, &opts);
        assert_eq!(
            rep.flows[0].first.as_ref().unwrap().fields[0].field,
            "state.U"
        );
        assert!("rate_bps=rel".parse::<Tolerance>().is_err());
        assert!("rate_bps=abs:-1".parse::<Tolerance>().is_err());
    }
}
