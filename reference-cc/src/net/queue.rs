//! The engine's event queue: a timing wheel for the near future over a binary heap for the
//! rest (a calendar queue in the sense of R. Brown, "Calendar queues", CACM 1988, with one
//! year and an overflow heap).
//!
//! Nearly every event a packet network schedules is a serialisation or a link delay ahead —
//! nanoseconds to a few microseconds — so they go into the wheel: `SLOTS` buckets of
//! `2^SLOT_SHIFT` ps each, a bitmap of the non-empty ones, each bucket a list kept in key
//! order. Farther events (retransmission timeouts, model timers, samples) wait in the
//! heap and move into the wheel when it comes within reach. Against one `BinaryHeap` of every
//! pending event — thousands on a large network, each pop a chain of unpredictable branches
//! — a pop is a bitmap scan and a list's head (docs/performance.md).
//!
//! Keys are unique and pop in exactly their order, so a run is the same event for event as
//! with any other priority queue. A key may be pushed below the last popped one (an earlier
//! event class at the current instant, engine/mod.rs "Event classes"): it lands in the current
//! bucket, in its place by key, and is taken next.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bucket width: 2^8 ps (a quarter ns). With 2^10 ps the k = 8 fat tree's synchronised hosts
/// put events of many different ps in one bucket, and half the pushes walked its list (a
/// walk of ~40 nodes: 12 % of the run's instructions); a quarter of the width leaves
/// nearly every push an append (k = 8 6.48 G -> 5.99 G instructions, 2^6 ps no better).
const SLOT_SHIFT: u32 = 8;
/// Buckets: the wheel reaches 2^14 x 2^8 ps ≈ 4.2 µs ahead.
const SLOTS: usize = 1 << 14;
const WORDS: usize = SLOTS / 64;

/// A priority queue of `(time ps, order, value)` popping the smallest `(time, order)` first;
/// `(time, order)` must be unique and no push may be earlier than the bucket of the last pop.
pub(crate) struct EventQueue<V> {
    /// `ends[i]`: the first and last node (index in `pool`) of the list, in key order, of the
    /// entries whose time's bucket number is `≡ i (mod SLOTS)`, within reach; `NIL` when
    /// empty. Sorted intrusive lists in one pool rather than a `Vec` per bucket scanned for
    /// its minimum: a pop takes the head, and a push appends at the tail in the usual case (a
    /// key after every other of its bucket) — the synchronised hosts of a large fat tree
    /// put a hundred events in one bucket, which the scan made quadratic. A push touches the
    /// 128 KB of ends and a node the free list just gave back (still in cache), not a bucket's
    /// own allocation somewhere.
    ends: Vec<(u32, u32)>,
    /// Every wheel entry, linked through `next`; free nodes form a list from `free`.
    pool: Vec<Node<V>>,
    free: u32,
    /// Bit `i` set when bucket `i` is not empty.
    bits: [u64; WORDS],
    /// Bucket number (time >> SLOT_SHIFT) of the current bucket.
    cur: u64,
    /// Entries in the wheel.
    in_wheel: usize,
    /// Entries `SLOTS` or more buckets ahead of `cur`.
    far: BinaryHeap<Reverse<Entry<V>>>,
    /// The bucket number of `far`'s first entry (`u64::MAX`: none), so that moving to the
    /// next bucket does not look into the heap.
    far_next: u64,
    /// The order of the entry popped last (with its time, the key of the event under way).
    last_order: u64,
}

/// End of a list.
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node<V> {
    // The entry's fields, not an `Entry`: its padding (28 bytes to 32) plus the link would
    // make the node 40 bytes.
    t: u64,
    order: u64,
    v: V,
    next: u32,
}

/// Time and order as two words, not one `u128` key: a `u128` aligns the node to 16 bytes,
/// and a node of the engine's 12-byte events was 48 bytes instead of 32 (two per cache line).
#[derive(Clone, Copy)]
struct Entry<V> {
    t: u64,
    order: u64,
    v: V,
}

impl<V> Entry<V> {
    /// The key: entries pop in this order.
    #[inline(always)]
    fn key(&self) -> (u64, u64) {
        (self.t, self.order)
    }
}

impl<V> Node<V> {
    /// The key of the node's entry.
    #[inline(always)]
    fn key(&self) -> (u64, u64) {
        (self.t, self.order)
    }
}

impl<V> PartialEq for Entry<V> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
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
        self.key().cmp(&o.key())
    }
}

impl<V: Copy> EventQueue<V> {
    pub(crate) fn new() -> Self {
        EventQueue {
            ends: vec![(NIL, NIL); SLOTS],
            pool: Vec::with_capacity(1024),
            free: NIL,
            bits: [0; WORDS],
            cur: 0,
            in_wheel: 0,
            far: BinaryHeap::new(),
            far_next: u64::MAX,
            last_order: 0,
        }
    }

    /// The order of the entry popped last.
    #[inline]
    pub(crate) fn last_order(&self) -> u64 {
        self.last_order
    }

    /// Entries queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    #[inline(always)]
    fn put(&mut self, e: Entry<V>) {
        let slot = (e.t >> SLOT_SHIFT) as usize & (SLOTS - 1);
        self.bits[slot / 64] |= 1 << (slot % 64);
        let key = e.key();
        // The most recently freed node first (LIFO): it is the one in cache.
        let node = Node {
            t: e.t,
            order: e.order,
            v: e.v,
            next: NIL,
        };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.pool[i as usize].next;
            self.pool[i as usize] = node;
            i
        } else {
            self.pool.push(node);
            (self.pool.len() - 1) as u32
        };
        self.in_wheel += 1;
        let (head, tail) = self.ends[slot];
        if head == NIL {
            self.ends[slot] = (i, i);
        } else if key > self.pool[tail as usize].key() {
            self.pool[tail as usize].next = i;
            self.ends[slot].1 = i;
        } else if key < self.pool[head as usize].key() {
            self.pool[i as usize].next = head;
            self.ends[slot].0 = i;
        } else {
            // Between the two: after the last smaller key (keys are unique).
            let mut at = head;
            loop {
                let next = self.pool[at as usize].next;
                if self.pool[next as usize].key() > key {
                    self.pool[i as usize].next = next;
                    self.pool[at as usize].next = i;
                    break;
                }
                at = next;
            }
        }
    }

    /// Queue `v` at `t_ps` with tie-break `order`.
    #[inline(always)]
    pub(crate) fn push(&mut self, t_ps: u64, order: u64, v: V) {
        let e = Entry { t: t_ps, order, v };
        let bucket = t_ps >> SLOT_SHIFT;
        if bucket < self.cur + SLOTS as u64 {
            self.put(e);
        } else {
            self.far_next = self.far_next.min(bucket);
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

    /// The value of the entry after the last popped one when it is in the same bucket (the
    /// usual case on a busy network), without looking further: for prefetching its data.
    #[inline(always)]
    pub(crate) fn next_in_bucket(&self) -> Option<&V> {
        let head = self.ends[(self.cur as usize) & (SLOTS - 1)].0;
        self.pool.get(head as usize).map(|n| &n.v)
    }

    /// Pop the entry with the smallest key: `(time ps, order, value)`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, u64, V)> {
        if self.in_wheel == 0 {
            let Reverse(e) = self.far.pop()?;
            self.cur = e.t >> SLOT_SHIFT;
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
        // The bucket's smallest key is its head.
        let head = self.ends[slot].0;
        let Node { t, order, v, next } = self.pool[head as usize];
        if next == NIL {
            self.ends[slot] = (NIL, NIL);
            self.bits[slot / 64] &= !(1 << (slot % 64));
        } else {
            self.ends[slot].0 = next;
        }
        self.pool[head as usize].next = self.free;
        self.free = head;
        self.in_wheel -= 1;
        self.last_order = order;
        Some((t, order, v))
    }

    /// Move the far entries that the wheel now reaches into it. They are later than every
    /// bucket up to `cur + SLOTS`, so the current bucket's minimum is unchanged by them unless
    /// they fall in it.
    #[inline]
    fn pull_far(&mut self) {
        let reach = self.cur + SLOTS as u64;
        if self.far_next >= reach {
            return;
        }
        while let Some(Reverse(e)) = self.far.peek() {
            if (e.t >> SLOT_SHIFT) >= reach {
                break;
            }
            let Some(Reverse(e)) = self.far.pop() else {
                break;
            };
            self.put(e);
        }
        self.far_next = self
            .far
            .peek()
            .map_or(u64::MAX, |Reverse(e)| e.t >> SLOT_SHIFT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of a 12-byte value (the engine's `Ev`: a 4-byte tag and two `u32`) is time 8 +
    /// order 8 + value 12 + link 4 = 32 bytes at 8-byte alignment: two per cache line (a
    /// `u128` key made it 48).
    #[test]
    fn a_node_of_an_engine_event_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Node<[u32; 3]>>(), 32);
    }

    /// One bucket filled out of order: a key after every other (appended), before every other
    /// (put first), and between two (walked to): the pops are 1 to 5 by hand.
    #[test]
    fn one_bucket_kept_in_key_order() {
        let mut q = EventQueue::new();
        // Times 100..=104 ps: all in bucket 0 (256 ps wide); values name the order.
        for (t, v) in [(102, 3u32), (104, 5), (100, 1), (103, 4), (101, 2)] {
            q.push(t, 0, v);
        }
        let popped: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, _, v)| v)).collect();
        assert_eq!(popped, [1, 2, 3, 4, 5]);
        // Same time, order breaking the tie, pushed backwards.
        for o in (1..=3u64).rev() {
            q.push(2_000, o, o as u32);
        }
        let popped: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, _, v)| v)).collect();
        assert_eq!(popped, [1, 2, 3]);
    }

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
