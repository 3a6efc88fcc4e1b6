//! The engine's event queue: a timing wheel for the near future over a binary heap for the
//! rest (a calendar queue in the sense of R. Brown, "Calendar queues", CACM 1988, with one
//! year and an overflow heap).
//!
//! Nearly every event a packet network schedules is a serialisation or a link delay ahead —
//! nanoseconds to a few microseconds — so they go into the wheel: `SLOTS` buckets of
//! `2^SLOT_SHIFT` ps each, a bitmap of the non-empty ones, the current bucket scanned for its
//! smallest key. Farther events (retransmission timeouts, model timers, samples) wait in the
//! heap and move into the wheel when it comes within reach. Against one `BinaryHeap` of every
//! pending event — thousands on a large network, each pop a chain of unpredictable branches
//! — a pop is a bitmap scan and a short bucket scan (docs/performance.md).
//!
//! Keys are unique and pop in exactly their order, so a run is the same event for event as
//! with any other priority queue. A key may be pushed below the last popped one (an earlier
//! event class at the current instant, engine.rs "Event classes"): it lands in the current
//! bucket, whose smallest key is taken next.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bucket width: 2^10 ps (about 1 ns).
const SLOT_SHIFT: u32 = 10;
/// Buckets: the wheel reaches 2^12 x 2^10 ps ≈ 4.2 µs ahead.
const SLOTS: usize = 1 << 12;
const WORDS: usize = SLOTS / 64;

/// A priority queue of `(time ps, order, value)` popping the smallest `(time, order)` first;
/// `(time, order)` must be unique and no push may be earlier than the bucket of the last pop.
pub(crate) struct EventQueue<V> {
    /// `buckets[i]`: entries whose time's bucket number is `≡ i (mod SLOTS)`, within reach.
    buckets: Vec<Vec<Entry<V>>>,
    /// Bit `i` set when `buckets[i]` is not empty.
    bits: [u64; WORDS],
    /// Bucket number (time >> SLOT_SHIFT) of the current bucket.
    cur: u64,
    /// Entries in the wheel.
    in_wheel: usize,
    /// Entries `SLOTS` or more buckets ahead of `cur`.
    far: BinaryHeap<Reverse<Entry<V>>>,
}

#[derive(Clone, Copy)]
struct Entry<V> {
    key: u128,
    v: V,
}

impl<V> PartialEq for Entry<V> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<V> Eq for Entry<V> {}
impl<V> PartialOrd for Entry<V> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<V> Ord for Entry<V> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

impl<V: Copy> EventQueue<V> {
    pub(crate) fn new() -> Self {
        EventQueue {
            buckets: (0..SLOTS).map(|_| Vec::new()).collect(),
            bits: [0; WORDS],
            cur: 0,
            in_wheel: 0,
            far: BinaryHeap::new(),
        }
    }

    /// Entries queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    #[inline]
    fn put(&mut self, e: Entry<V>) {
        let slot = ((e.key >> 64) as u64 >> SLOT_SHIFT) as usize & (SLOTS - 1);
        self.bits[slot / 64] |= 1 << (slot % 64);
        self.buckets[slot].push(e);
        self.in_wheel += 1;
    }

    /// Queue `v` at `t_ps` with tie-break `order`.
    #[inline]
    pub(crate) fn push(&mut self, t_ps: u64, order: u64, v: V) {
        let e = Entry {
            key: u128::from(t_ps) << 64 | u128::from(order),
            v,
        };
        if (t_ps >> SLOT_SHIFT) < self.cur + SLOTS as u64 {
            self.put(e);
        } else {
            self.far.push(Reverse(e));
        }
    }

    /// The first non-empty bucket at or after `cur`, circularly (the wheel is not empty).
    #[inline]
    fn next_bucket(&self) -> u64 {
        let start = (self.cur as usize) & (SLOTS - 1);
        let (w0, b0) = (start / 64, start % 64);
        let first = self.bits[w0] >> b0;
        if first != 0 {
            return self.cur + u64::from(first.trailing_zeros());
        }
        let mut dist = (64 - b0) as u64;
        for k in 1..=WORDS {
            let w = self.bits[(w0 + k) % WORDS];
            if w != 0 {
                return self.cur + dist + u64::from(w.trailing_zeros());
            }
            dist += 64;
        }
        unreachable!("next_bucket on an empty wheel")
    }

    /// Pop the entry with the smallest key: `(time ps, order, value)`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, u64, V)> {
        if self.in_wheel == 0 {
            let Reverse(e) = self.far.pop()?;
            self.cur = (e.key >> 64) as u64 >> SLOT_SHIFT;
            self.put(e);
            self.pull_far();
        } else {
            let b = self.next_bucket();
            if b != self.cur {
                self.cur = b;
                self.pull_far();
            }
        }
        let slot = (self.cur as usize) & (SLOTS - 1);
        let bucket = &mut self.buckets[slot];
        let mut m = 0;
        for i in 1..bucket.len() {
            if bucket[i].key < bucket[m].key {
                m = i;
            }
        }
        let e = bucket.swap_remove(m);
        if bucket.is_empty() {
            self.bits[slot / 64] &= !(1 << (slot % 64));
        }
        self.in_wheel -= 1;
        Some(((e.key >> 64) as u64, e.key as u64, e.v))
    }

    /// Move the far entries that the wheel now reaches into it. They are later than every
    /// bucket up to `cur + SLOTS`, so the current bucket's minimum is unchanged by them unless
    /// they fall in it.
    #[inline]
    fn pull_far(&mut self) {
        let reach = self.cur + SLOTS as u64;
        while let Some(Reverse(e)) = self.far.peek() {
            if ((e.key >> 64) as u64 >> SLOT_SHIFT) >= reach {
                break;
            }
            let Some(Reverse(e)) = self.far.pop() else {
                break;
            };
            self.put(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pops come out in key order whatever the pushes, against a sorted list: near and far
    /// times, wheel wrap-around, empty-wheel jumps, and keys pushed below the last popped one
    /// at the current instant.
    #[test]
    fn pops_in_key_order() {
        let mut s: u64 = 0x1234_5678_9ABC_DEF0;
        let mut next = || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            s >> 11
        };
        let mut q = EventQueue::new();
        // The oracle: an ordered set of the pending (time, order).
        let mut pending = std::collections::BTreeSet::new();
        let (mut seq, mut now, mut pops) = (0u64, 0u64, 0usize);
        let value = |t: u64, o: u64| (t ^ o) as u32;
        let mut check =
            |q: &mut EventQueue<u32>, pending: &mut std::collections::BTreeSet<(u64, u64)>| {
                let got = q.pop();
                let want = pending.pop_first().map(|(t, o)| (t, o, value(t, o)));
                assert_eq!(got, want, "pop {pops}");
                pops += 1;
                got
            };
        for round in 0..200_000 {
            for _ in 0..(next() % 3) {
                seq += 1;
                let dt = match next() % 10 {
                    0 => 0,
                    1 => next() % 1_000_000_000, // far: the heap
                    2 => (SLOTS as u64 - 1) << SLOT_SHIFT, // the wheel's last bucket
                    3 => (SLOTS as u64) << SLOT_SHIFT, // just beyond it
                    _ => next() % 3_000_000,     // within a few µs
                };
                // Class 0 at the present instant sorts below the last popped key.
                let class = u64::from(next() % 6 != 0);
                let (t, o) = (now + dt, class << 56 | seq);
                q.push(t, o, value(t, o));
                pending.insert((t, o));
            }
            if round % 2 == 0
                && let Some((t, _, _)) = check(&mut q, &mut pending)
            {
                now = t;
            }
        }
        while check(&mut q, &mut pending).is_some() {}
        assert_eq!(q.len(), 0);
        assert!(pops > 100_000);
    }
}
