//! The streaming comparison ([`StreamDiff`]): the report of [`diff`](fn@super::diff) from the
//! two streams as they come, holding per flow only the decisions that wait for their
//! counterpart and what the report prints.

use std::collections::VecDeque;

use ccreplay_reference_cc::{Cause, Decision};

use super::align::Place;
use super::compare::{DiffOptions, Largest, Pair, largest_list, none_extra, present_missing};
use super::report::{DiffReport, Divergence, FieldDiff, FlowDiff};

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
    /// The n-th decision of its side and flow with the same [`Key`](super::align::Key): the same
    /// event and kind, or the same timer at the same ns.
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
    /// The first divergence so far (the least [`Place`], as [`diff`](fn@super::diff) finds it).
    first: Option<(Place, Box<Divergence>)>,
}

/// The comparison of two decision streams, one decision at a time: the report of
/// [`diff`](fn@super::diff), field for field, holding per flow only the decisions that wait for
/// their counterpart and what the report prints (counts, largest errors, the first divergence).
///
/// Decisions are aligned as [`diff`](fn@super::diff) aligns them: an event's by (flow, cause,
/// ordinal), a timer's by (flow, timer, time, ordinal). A decision waits until the other side makes
/// the same one, or can no longer make it: a side's decisions of a flow on events come in
/// event-index order (a replay feeds a flow's events in order, and a process or C-ABI DUT may only
/// answer the event it was sent), so once the other side has decided on a later event of the flow,
/// an earlier one of this side has no counterpart; a timer's firings come in time order (each
/// answer's timers are due by its event, in time order), so once the other side has fired that
/// timer later, an earlier firing of this side has none. So what is held is, per flow, the
/// decisions of the side that is ahead on that flow — the decisions of one event when the two are
/// fed in step (`diff --dut`), the skew between the golden file's order and the replay's for
/// `--golden` and `check` — and timer firings one side made and the other has not passed yet, at
/// most [`HOLD_LIMIT`] in all ([`StreamDiff::alignment_note`] says when that was too few).
///
/// A stream that breaks the index order or a timer's time order (a hand-made events or golden file,
/// a DUT firing a timer before one it already fired) is noticed ([`StreamDiff::in_order`]): its
/// ordinals may then differ from [`diff`](fn@super::diff)'s, and the callers compare such a pair
/// whole.
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

    /// False when a side's decisions of a flow went back to an earlier event index, or a timer's
    /// firings to an earlier time: then [`diff`](fn@super::diff)'s alignment may differ from this
    /// one's.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// Decisions counted as missing or extra because they waited past [`HOLD_LIMIT`].
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Decisions whose counterpart may have been among the dropped ones: [`diff`](fn@super::diff)
    /// could have paired them (0 unless the two streams were more than [`HOLD_LIMIT`] apart).
    pub fn uncertain(&self) -> u64 {
        self.uncertain
    }

    /// What to say when decisions were dropped at [`HOLD_LIMIT`] and some of the other
    /// side's came after them: the report may then differ from [`diff`](fn@super::diff)'s.
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
        let Some(oi) = self.flows[f].sides[o]
            .timers
            .iter()
            .position(|q| q.name == name)
        else {
            self.hold_timer_or_not(f, s, ti, pos, ordinal, d);
            return;
        };
        // This side fired the timer at `t`: the other side's held firings before `t` have no
        // counterpart (this side fires it only later now). Never uncertain: a firing (ht, n)
        // is held only while this side has made fewer than n + 1 firings at ht — one it made
        // and dropped was counted when the held one arrived (`past` below) — and any it made
        // after would have paired with it.
        while let Some(&slot) = self.flows[f].sides[o].timers[oi].held.front() {
            let ht = self.slab[slot as usize].d.t_ns;
            if ht >= t {
                break;
            }
            self.flows[f].sides[o].timers[oi].held.pop_front();
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

    /// The report: what [`diff`](fn@super::diff) gives for the same two streams.
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
