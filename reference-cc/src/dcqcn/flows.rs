//! Per-flow state with timers, for the DCQCN models.
//!
//! Flows live in a `BTreeMap` (allocation only when a flow first appears; any flow id is
//! safe, sparse or huge). The earliest deadline over all flows is cached so that
//! `next_timer_ns` is O(1); an event that moves its flow's deadline updates the cache in O(1)
//! unless it pushed back the current minimum, and firing timers rescans (O(flows)).

use std::collections::BTreeMap;

use crate::event::{Cause, Decision, Event, EventKind, FlowId};

/// A flow's state that exposes its earliest pending timer deadline.
pub(crate) trait Timed {
    /// Earliest pending deadline of this flow, ns.
    fn next_deadline_ns(&self) -> Option<u64>;
}

/// What the per-flow state of a DCQCN reaction point (paper or NIC profile) offers the event
/// loop both profiles share ([`rp_on_event`]; each profile's `on_timer` runs
/// [`FlowTable::fire_next`] with its flows' timers observed for rule coverage).
pub(crate) trait ReactionPoint: Timed {
    /// The profile's derived configuration.
    type Config;
    /// A flow's state at its first event (line rate).
    fn start(cfg: &Self::Config) -> Self;
    /// A CNP arrived (DCQCN-3 / DCQCN-4 rate decrease).
    fn cnp(&mut self, t_ns: u64, cfg: &Self::Config);
    /// Bytes were sent; true when they completed a byte-counter cycle (an increase: decide).
    fn bytes_sent(&mut self, bytes: u64, cfg: &Self::Config) -> bool;
    /// The decision record after a change.
    fn record(&self, t_ns: u64, flow: FlowId, cause: Cause) -> Decision;
}

/// The reaction points' `Model::on_event`: a CNP cuts the rate and decides; sent bytes advance
/// the byte counter and decide when a cycle completes; nothing else concerns a sender's rate.
pub(crate) fn rp_on_event<S: ReactionPoint>(
    flows: &mut FlowTable<S>,
    cfg: &S::Config,
    ev: &Event,
    out: &mut Vec<Decision>,
) {
    let cause = ev.cause();
    match ev.kind {
        EventKind::RxCnp => flows.with_flow(
            ev.flow,
            || S::start(cfg),
            |f| {
                f.cnp(ev.t_ns, cfg);
                out.push(f.record(ev.t_ns, ev.flow, cause));
            },
        ),
        EventKind::TxData { bytes, .. } => flows.with_flow(
            ev.flow,
            || S::start(cfg),
            |f| {
                if f.bytes_sent(u64::from(bytes), cfg) {
                    out.push(f.record(ev.t_ns, ev.flow, cause));
                }
            },
        ),
        EventKind::RxAck(_)
        | EventKind::RxNak(_)
        | EventKind::RxData { .. }
        | EventKind::Dequeue { .. } => {}
    }
}

/// Flow id -> state, with the earliest deadline cached.
#[derive(Clone, Debug, Default)]
pub(crate) struct FlowTable<S> {
    flows: BTreeMap<FlowId, S>,
    next_ns: Option<u64>,
}

impl<S: Timed> FlowTable<S> {
    pub(crate) fn new() -> Self {
        FlowTable {
            flows: BTreeMap::new(),
            next_ns: None,
        }
    }

    /// Earliest deadline over all flows.
    #[inline]
    pub(crate) fn next_deadline_ns(&self) -> Option<u64> {
        self.next_ns
    }

    /// Run `f` on `flow`'s state (created with `init` on first use) and keep the cache right.
    pub(crate) fn with_flow<R>(
        &mut self,
        flow: FlowId,
        init: impl FnOnce() -> S,
        f: impl FnOnce(&mut S) -> R,
    ) -> R {
        let st = self.flows.entry(flow).or_insert_with(init);
        let before = st.next_deadline_ns();
        let r = f(st);
        let after = st.next_deadline_ns();
        if before != after {
            match (after, self.next_ns) {
                (Some(a), Some(n)) if a <= n => self.next_ns = Some(a),
                (Some(a), None) => self.next_ns = Some(a),
                _ => {
                    if before.is_some() && before == self.next_ns {
                        self.rescan();
                    }
                }
            }
        }
        r
    }

    /// Fire the timers of every flow whose deadline is the earliest one, if that is at or
    /// before `now_ns`: `f(flow, state, deadline)` in flow-id order (C-5: deadline order
    /// across flows; the caller orders timers within a flow).
    pub(crate) fn fire_next(&mut self, now_ns: u64, mut f: impl FnMut(FlowId, &mut S, u64)) {
        let Some(d) = self.next_ns else { return };
        if d > now_ns {
            return;
        }
        for (id, st) in self.flows.iter_mut() {
            if st.next_deadline_ns() == Some(d) {
                f(*id, st, d);
            }
        }
        self.rescan();
    }

    /// Read-only access to a flow's state.
    pub(crate) fn get(&self, flow: FlowId) -> Option<&S> {
        self.flows.get(&flow)
    }

    fn rescan(&mut self) {
        self.next_ns = self
            .flows
            .values()
            .filter_map(Timed::next_deadline_ns)
            .min();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, Default)]
    struct T(Option<u64>);
    impl Timed for T {
        fn next_deadline_ns(&self) -> Option<u64> {
            self.0
        }
    }

    #[test]
    fn cache_follows_updates() {
        let mut t: FlowTable<T> = FlowTable::new();
        t.with_flow(1, T::default, |s| s.0 = Some(50));
        t.with_flow(2, T::default, |s| s.0 = Some(30));
        assert_eq!(t.next_deadline_ns(), Some(30));
        // Pushing back the minimum rescans.
        t.with_flow(2, T::default, |s| s.0 = Some(70));
        assert_eq!(t.next_deadline_ns(), Some(50));
        t.with_flow(1, T::default, |s| s.0 = None);
        assert_eq!(t.next_deadline_ns(), Some(70));
        // A huge sparse id is fine.
        t.with_flow(u32::MAX, T::default, |s| s.0 = Some(70));
        let mut fired = Vec::new();
        t.fire_next(69, |id, _, d| fired.push((id, d)));
        assert!(fired.is_empty());
        t.fire_next(70, |id, s, d| {
            fired.push((id, d));
            s.0 = None;
        });
        assert_eq!(fired, vec![(2, 70), (u32::MAX, 70)]);
        assert_eq!(t.next_deadline_ns(), None);
    }
}
