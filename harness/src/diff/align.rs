//! How two sides' decisions pair, and which divergence of a flow is the first (docs/diff.md
//! "Pairing"): an event's decisions by (kind, index, ordinal), a timer's by (name, time,
//! ordinal) ([`Key`]); a flow's first divergence is the least [`Place`]. [`diff`] applies them
//! to two sides held whole ([`Side`]).

use std::collections::HashMap;

use ccreplay_reference_cc::{Cause, Decision};

use super::compare::{DiffOptions, Pair, largest_list, none_extra, present_missing};
use super::report::{DiffReport, Divergence, FlowDiff};

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
pub(super) enum Key<'a> {
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
pub(super) struct Place {
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
    pub(super) fn of(t_ns: u64, d: &Decision, extra: bool, pos: u64) -> Place {
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

/// Compare two sides flow by flow, each held whole ([`StreamDiff`](super::StreamDiff) gives the
/// same report holding only what it prints; this one serves the HTML report, which charts both
/// sides, and streams whose event order is broken).
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
