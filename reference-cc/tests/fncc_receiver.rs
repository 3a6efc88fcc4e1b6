//! FNCC receiver (seed 004 3.2.3; algorithms.md FNCC-2): N = number of QPs with data
//! received in the last T_active ns, written into every ACK. A flow counts while the age
//! of its last data packet is < T_active (the window (t − T_active, t]).

use ccreplay_reference_cc::fncc::{self, Receiver};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};

fn data(t_ns: u64, flow: u32) -> Event {
    Event {
        t_ns,
        flow,
        index: 0,
        kind: EventKind::RxData {
            psn: 0,
            bytes: 1000,
            opcode: 0x01,
            ecn: 0,
            send_ts_ns: None,
        },
    }
}

fn receiver(t_active_ns: Option<u64>) -> Receiver {
    Receiver::new(&fncc::Params {
        base_rtt_ns: 12_000,
        t_active_ns,
        ..fncc::Params::default()
    })
    .unwrap()
}

/// T_active defaults to the base RTT, 12,000 ns. Ages are worked out per line.
#[test]
fn n_follows_flows_entering_and_leaving_the_window() {
    let mut r = receiver(None);
    assert_eq!(r.name(), "fncc-receiver");
    assert!(!r.per_flow());
    let steps: [(u64, u32, u16, &str); 9] = [
        (0, 0, 1, "f0 enters"),
        (1000, 1, 2, "f1 enters"),
        (5000, 2, 3, "f2 enters"),
        (11_999, 0, 3, "f0 refreshed; f1 age 10999, f2 age 6999"),
        (
            13_000,
            1,
            3,
            "f1 age 12000 = T expired, then re-enters; f0 1001, f2 8000",
        ),
        (16_999, 3, 4, "f3 enters; f2 age 11999 < T still counts"),
        (17_000, 3, 3, "f2 age 12000 leaves; f0 5000, f1 4000, f3"),
        (24_000, 1, 2, "f0 age 12001 leaves; f3 7000, f1"),
        (
            40_000,
            0,
            1,
            "f3 age 23000, f1 age 16000 leave; f0 re-enters",
        ),
    ];
    let mut out: Vec<Decision> = Vec::new();
    for (t, flow, n, why) in steps {
        out.clear();
        r.on_event(&data(t, flow), &mut out);
        assert_eq!(out.len(), 1, "one decision per data packet");
        assert_eq!(out[0].outputs.ack_n, Some(n), "t={t}: {why}");
        assert_eq!(out[0].state.get("N"), Some(StateValue::U64(n as u64)));
        assert_eq!(out[0].flow, flow);
        assert_eq!(out[0].outputs.window_bytes, None);
    }
}

/// A configured T_active; non-data events are ignored.
#[test]
fn explicit_t_active_and_other_events() {
    let mut r = receiver(Some(100));
    let mut out = Vec::new();
    r.on_event(&data(0, 0), &mut out);
    r.on_event(&data(99, 1), &mut out); // f0 age 99 < 100: N = 2
    r.on_event(&data(100, 2), &mut out); // f0 age 100 leaves; f1 age 1: N = 2
    r.on_event(
        &Event {
            kind: EventKind::RxCnp,
            ..data(150, 0)
        },
        &mut out,
    );
    let n: Vec<_> = out.iter().map(|d| d.outputs.ack_n.unwrap()).collect();
    assert_eq!(n, [1, 2, 2]);
}

/// N is a u16 on the wire (wire.md 5.4): 70,000 concurrent flows write 65,535.
#[test]
fn n_saturates_at_u16_max() {
    let mut r = receiver(None);
    let mut out = Vec::new();
    for f in 0..70_000u32 {
        out.clear();
        r.on_event(&data(5, f), &mut out);
    }
    assert_eq!(r.n_active(), 70_000);
    assert_eq!(out[0].outputs.ack_n, Some(u16::MAX));
    assert_eq!(out[0].state.get("N"), Some(StateValue::U64(70_000)));
}

/// Time stepping back does not panic; the result stays deterministic.
#[test]
fn time_going_back_does_not_panic() {
    let mut r = receiver(Some(10));
    let mut out = Vec::new();
    for (t, f) in [(100, 0), (50, 1), (0, 2), (200, 0), (5, 3)] {
        r.on_event(&data(t, f), &mut out);
    }
    assert_eq!(out.len(), 5);
    // t=200: f0 (100) age 100 leaves; f1 (50) 150, f2 (0) 200: all gone before f0 -> 1.
    assert_eq!(out[3].outputs.ack_n, Some(1));
}
