//! One aligned pair of decisions compared field by field: the options (`--tol`, `--state`),
//! the tolerances, the largest error per field, and the texts of what differs (docs/diff.md
//! "Counts"). Outputs are compared exactly unless a tolerance names the field; state values
//! only on request, f64 values bit for bit.

use ccreplay_reference_cc::{Decision, Outputs, State, StateValue};

use super::report::FieldDiff;

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
pub(super) struct Largest {
    field: String,
    abs: f64,
    rel: f64,
    seen: (u64, u32),
}

/// `largest` in order of first appearance, as the report lists it.
pub(super) fn largest_list(mut v: Vec<Largest>) -> Vec<(String, f64, f64)> {
    v.sort_by_key(|e| e.seen);
    v.into_iter().map(|e| (e.field, e.abs, e.rel)).collect()
}

/// Compares one aligned pair: counts its errors into `largest` and tells whether it differs;
/// with `out`, also writes what differs as text (only the first divergence needs it).
pub(super) struct Pair<'a, 'o> {
    pub(super) opts: &'o DiffOptions,
    pub(super) largest: &'a mut Vec<Largest>,
    pub(super) out: Option<&'a mut Vec<FieldDiff>>,
    pub(super) differs: bool,
    /// The reference decision's position in its flow.
    pub(super) pos: u64,
    /// Fields compared so far in this pair.
    pub(super) k: u32,
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
    pub(super) fn pair(&mut self, a: &Decision, b: &Decision) {
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

pub(super) fn present_missing() -> Vec<FieldDiff> {
    vec![FieldDiff {
        field: "decision".into(),
        reference: "present".into(),
        dut: "missing".into(),
        abs_err: None,
        rel_err: None,
    }]
}

pub(super) fn none_extra() -> Vec<FieldDiff> {
    vec![FieldDiff {
        field: "decision".into(),
        reference: "none".into(),
        dut: "extra".into(),
        abs_err: None,
        rel_err: None,
    }]
}
