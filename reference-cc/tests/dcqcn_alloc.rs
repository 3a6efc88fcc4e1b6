//! No allocation per event (project standard): once a flow exists, feeding the DCQCN models
//! events and firing their timers allocates nothing. A counting global allocator counts the
//! allocations made by this test's thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ccreplay_reference_cc::dcqcn::{NicParams, Np, NpParams, Rp, RpNic, RpParams};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model};

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

fn stream(from: u64, n: u64) -> Vec<Event> {
    (from..from + n)
        .map(|i| Event {
            t_ns: i * 100,
            flow: (i % 4) as u32,
            index: i,
            kind: match i % 3 {
                0 if i % 60 == 0 => EventKind::RxCnp,
                1 => EventKind::RxData {
                    psn: 0,
                    bytes: 1000,
                    opcode: 0x07,
                    ecn: if i % 2 == 0 { 3 } else { 2 },
                    send_ts_ns: None,
                },
                _ => EventKind::TxData {
                    psn: 0,
                    bytes: 4_000_000,
                    opcode: 0x07,
                },
            },
        })
        .collect()
}

fn replay(m: &mut dyn Model, events: &[Event], out: &mut Vec<Decision>) {
    for ev in events {
        while let Some(d) = m.next_timer_ns() {
            if d > ev.t_ns {
                break;
            }
            m.on_timer(d, out);
        }
        m.on_event(ev, out);
    }
}

#[test]
fn steady_state_allocates_nothing() {
    // The counter works: one allocation is seen.
    let before = allocs();
    std::hint::black_box(Vec::<u8>::with_capacity(8));
    assert_eq!(allocs() - before, 1);
    let warm = stream(0, 1_000);
    let hot = stream(1_000, 50_000);
    let mut models: Vec<Box<dyn Model>> = vec![
        Box::new(Rp::new(RpParams::default()).unwrap()),
        Box::new(RpNic::new(NicParams::default()).unwrap()),
        Box::new(Np::new(NpParams::default()).unwrap()),
    ];
    for m in &mut models {
        let mut out = Vec::new();
        replay(&mut **m, &warm, &mut out); // creates the 4 flows
        out.clear();
        out.reserve(1_000_000);
        let before = allocs();
        replay(&mut **m, &hot, &mut out);
        let n = allocs() - before;
        assert!(!out.is_empty(), "{}: the stream makes decisions", m.name());
        assert_eq!(
            n,
            0,
            "{}: {n} allocations for {} events",
            m.name(),
            hot.len()
        );
    }
}
