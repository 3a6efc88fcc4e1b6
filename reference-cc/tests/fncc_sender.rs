//! FNCC sender (seed 004 Algorithms 2 and 3; algorithms.md FNCC-1): HPCC on ACK-carried INT
//! plus the last-hop congestion speedup.
//!
//! Setting: B_NIC = 100 Gbps, T = 12,000 ns, η = 0.95, W_AI = 80 B, α = 1.05, β = 0.9.
//!   W_init = 100e9 × 12000 / 8e9 = 150,000 B; B (code 2) = 12.5 B/ns; B·T = 150,000 B.
//! In an ACK's stack record 0 is the data path's LAST hop (wire.md 5.4).
//! Per-hop u' used below (ΔTS = 12,800 ns so τ = T and U = max u'):
//!   qLen 1875 units (150,000 B) -> 150000/150000 = 1.0;  Δtx 1250 units -> 12.5/12.5 = 1.0;
//!   Δtx 625 units -> 0.5.

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::fncc::{self, Fncc};
use ccreplay_reference_cc::hpcc::Hpcc;
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

fn params() -> fncc::Params {
    fncc::Params {
        base_rtt_ns: 12_000,
        w_ai_bytes: Some(80.0),
        ..fncc::Params::default()
    }
}

fn hop(b: u8, ts: u32, tx: u32, q: u16) -> IntHop {
    IntHop {
        b,
        ts,
        tx_bytes: tx,
        qlen: q,
    }
}

fn ack(index: u64, psn: u32, n: Option<u16>, hops: &[IntHop]) -> Event {
    Event {
        t_ns: index * 1000,
        flow: 0,
        index,
        kind: EventKind::RxAck(AckInfo {
            psn,
            syndrome: 0,
            int: Some(IntStack::from_hops(7, hops).unwrap()),
            n,
            cwnd: None,
            rcc_flags: None,
            ts_ns: None,
        }),
    }
}

fn tx(index: u64, psn: u32) -> Event {
    Event {
        t_ns: index * 1000,
        flow: 0,
        index,
        kind: EventKind::TxData {
            psn,
            bytes: 1000,
            opcode: 7,
        },
    }
}

fn get(d: &Decision, name: &str) -> StateValue {
    d.state.get(name).unwrap_or_else(|| panic!("no {name}"))
}

/// Events: tx 0..10 (snd_nxt 10), ACK 0 stores both records, then ACK `psn` with
/// (Δtx, qLen) per record; qLen is the same in both ACKs so min(qLen) = qLen.
fn script(psn: u32, n: Option<u16>, b0: u8, r0: (u32, u16), r1: (u32, u16)) -> Vec<Event> {
    let mut v: Vec<Event> = (0..10).map(|i| tx(i, i as u32)).collect();
    v.push(ack(10, 0, n, &[hop(b0, 0, 0, r0.1), hop(2, 0, 0, r1.1)]));
    if psn >= 10 {
        v.push(tx(11, 10)); // snd_nxt 11: ACK 10 (seq 11) is after lastUpdateSeq 10
    }
    v.push(ack(
        12,
        psn,
        n,
        &[hop(b0, 12_800, r0.0, r0.1), hop(2, 12_800, r1.0, r1.1)],
    ));
    v
}

fn run<M: Model>(m: &mut M, evs: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    for e in evs {
        m.on_event(e, &mut out);
    }
    out
}

/// FNCC-1 table. Expected windows:
///   speedup: Wc = B·T·β/N = 150000 × 0.9 / 4 = 33,750; W = floor(33750/(2/0.95) + 80)
///     = floor(16111.25) = 16,111   (python3 -c "print(150000*0.9/4, 33750/(2.0/0.95)+80.0)")
///   no speedup, U = 2: W = floor(150000/(2/0.95) + 80) = 71,330 (python: 71330.0)
///   no speedup, U = 1: W = floor(150000/(1/0.95) + 80) = 142,580 (python: 142580.0)
///   400G last hop, N = 1: u'0 = 5242800/600000 + 12.5/50 = 8.988 > α; Wc = 50 × 12000 × 0.9
///     / 1 = 540,000 -> clamped to W_init 150,000; W = floor(150000/(8.988/0.95) + 80) = 15,934
///     (python3 -c "u=0xFFFF*80/600000.0+12.5/50;print(u,150000/(u/0.95)+80.0)")
#[rstest]
#[case::last_hop_speedup(2, (1250, 1875), (625, 0), Some(4), 1.05, (33_750, 16_111, true, 0))]
#[case::max_hop_not_record_0(2, (1250, 0), (1250, 1875), Some(4), 1.05, (150_000, 71_330, false, 1))]
#[case::u_max_below_alpha(2, (1250, 0), (625, 0), Some(4), 1.05, (150_000, 142_580, false, 0))]
#[case::u_max_equal_alpha(2, (1250, 1875), (625, 0), Some(4), 2.0, (150_000, 71_330, false, 0))]
#[case::n_zero_disables(2, (1250, 1875), (625, 0), Some(0), 1.05, (150_000, 71_330, false, 0))]
#[case::n_absent_disables(2, (1250, 1875), (625, 0), None, 1.05, (150_000, 71_330, false, 0))]
#[case::tie_goes_to_record_0(2, (1250, 1875), (1250, 1875), Some(4), 1.05, (33_750, 16_111, true, 0))]
#[case::clamped_to_w_init(4, (1250, 0xFFFF), (625, 0), Some(1), 1.05, (150_000, 15_934, true, 0))]
fn last_hop_speedup(
    #[case] b0: u8,
    #[case] r0: (u32, u16),
    #[case] r1: (u32, u16),
    #[case] n: Option<u16>,
    #[case] alpha: f64,
    #[case] (wc, w, lhcs, hop_idx): (u64, u64, bool, u64),
) {
    let p = fncc::Params { alpha, ..params() };
    let mut m = Fncc::new(&p).unwrap();
    // psn 1: seq 2 is not after lastUpdateSeq 10, so Wc keeps what the speedup set.
    let out = run(&mut m, &script(1, n, b0, r0, r1));
    assert_eq!(out.len(), 2, "one decision per ACK");
    let d = out[1];
    assert_eq!(get(&d, "Wc"), StateValue::U64(wc));
    assert_eq!(d.outputs.window_bytes, Some(w));
    assert_eq!(get(&d, "lhcs"), StateValue::Bool(lhcs));
    assert_eq!(get(&d, "hop"), StateValue::U64(hop_idx));
    assert_eq!(get(&d, "N"), StateValue::U64(n.unwrap_or(0) as u64));
    assert_eq!(get(&d, "incStage"), StateValue::U64(0));
}

/// Algorithm 3 order: UpdateWc (line 30) runs before W is computed, and on a Wc-update ACK
/// line 34 then sets Wc = W: W = Wc = floor(33750/(2/0.95) + 80) = 16,111;
/// R = floor(16111 × 8e9 / 12000) = 10,740,666,666 (16111 × 2e6 / 3 = 10740666666.7).
#[test]
fn speedup_then_wc_sync_on_update_ack() {
    let mut m = Fncc::new(&params()).unwrap();
    let out = run(&mut m, &script(10, Some(4), 2, (1250, 1875), (625, 0)));
    let d = out[1];
    assert_eq!(get(&d, "lhcs"), StateValue::Bool(true));
    assert_eq!(get(&d, "Wc"), StateValue::U64(16_111));
    assert_eq!(d.outputs.window_bytes, Some(16_111));
    assert_eq!(d.outputs.rate_bps, Some(10_740_666_666));
    assert_eq!(get(&d, "lastUpdateSeq"), StateValue::U64(11));
}

/// The same ACKs through HPCC: no speedup, Wc stays W_init, W = 71,330 (see table).
#[test]
fn hpcc_on_the_same_acks_does_not_speed_up() {
    let mut m = Hpcc::new(&params().hpcc()).unwrap();
    let out = run(&mut m, &script(1, Some(4), 2, (1250, 1875), (625, 0)));
    assert_eq!(out[1].outputs.window_bytes, Some(71_330));
    assert_eq!(out[1].state.get("Wc"), Some(StateValue::U64(150_000)));
}

/// FNCC reuses HPCC's Algorithm 1: with a speedup that cannot fire (α = 1e300) the shared
/// state and outputs equal HPCC's on a longer mixed sequence (wraps, path change, NAK).
#[test]
fn without_speedup_fncc_is_hpcc() {
    let p = fncc::Params {
        alpha: 1e300,
        ..params()
    };
    let mut evs = Vec::new();
    let mut i = 0u64;
    let mut ts = 0xFF_F000u32;
    let mut txb = 0xF_FF00u32;
    for k in 0..200u32 {
        evs.push(tx(i, k));
        i += 1;
        ts = (ts + 700 + (k * 37) % 5000) & 0xFF_FFFF;
        txb = (txb + (k * 53) % 700) & 0xF_FFFF;
        let q = ((k * 97) % 3000) as u16;
        let path = if k < 120 { 1 } else { 2 };
        let mut e = ack(
            i,
            k.saturating_sub(3),
            Some(4),
            &[hop(2, ts, txb, q), hop(3, ts / 2, txb / 3, q / 2)],
        );
        if let EventKind::RxAck(a) = &mut e.kind {
            a.int.as_mut().unwrap().header.path_id = path;
            if k % 17 == 0 {
                e.kind = EventKind::RxNak(*a);
            }
        }
        evs.push(e);
        i += 1;
    }
    let f = run(&mut Fncc::new(&p).unwrap(), &evs);
    let h = run(&mut Hpcc::new(&p.hpcc()).unwrap(), &evs);
    assert_eq!(f.len(), 200);
    assert_eq!(f.len(), h.len());
    for (a, b) in f.iter().zip(&h) {
        assert_eq!(a.outputs, b.outputs);
        for name in [
            "W",
            "Wc",
            "U",
            "incStage",
            "lastUpdateSeq",
            "snd_nxt",
            "tau",
        ] {
            assert_eq!(a.state.get(name), b.state.get(name), "{name}");
        }
        assert_eq!(a.state.get("Umax"), b.state.get("u"));
    }
    // And the sequence is not trivial: the window moved.
    assert!(h.iter().any(|d| d.outputs.window_bytes != Some(150_000)));
}

/// FNCC-3 then FNCC-1 end to end: three switches fill the ACK on its way back; the
/// receiver-side switch (last hop of the data path) writes record 0, so congestion there
/// triggers the speedup.
#[test]
fn switches_fill_the_ack_and_record_0_is_the_last_hop() {
    // ACK path: receiver -> S3 -> S2 -> S1 -> sender. ACK input port = data egress port.
    let mut s3 = fncc::Switch::new(0x003, 4, 5);
    let mut s2 = fncc::Switch::new(0x050, 4, 5);
    let mut s1 = fncc::Switch::new(0x700, 4, 5);
    let mut ack_stack = |t: u32, q3: u16, tx3: u32| {
        s3.set_port_int(1, hop(2, t, tx3, q3)).unwrap();
        s2.set_port_int(2, hop(2, t, tx3 / 2, 0)).unwrap();
        s1.set_port_int(0, hop(2, t, tx3 / 4, 0)).unwrap();
        let mut st = IntStack::new();
        s3.forward_ack(1, &mut st).unwrap();
        s2.forward_ack(2, &mut st).unwrap();
        s1.forward_ack(0, &mut st).unwrap();
        st
    };
    let first = ack_stack(0, 1875, 0);
    assert_eq!(first.n_hop(), 3);
    assert_eq!(first.path_id(), 0x753); // 0x003 ^ 0x050 ^ 0x700
    assert_eq!(
        first.hops()[0],
        hop(2, 0, 0, 1875),
        "record 0 = S3, the last hop"
    );
    let second = ack_stack(12_800, 1875, 1250);
    let mk = |index: u64, psn: u32, st: IntStack| Event {
        t_ns: index,
        flow: 0,
        index,
        kind: EventKind::RxAck(AckInfo {
            psn,
            syndrome: 0,
            int: Some(st),
            n: Some(4),
            cwnd: None,
            rcc_flags: None,
            ts_ns: None,
        }),
    };
    let mut evs: Vec<Event> = (0..10).map(|i| tx(i, i as u32)).collect();
    evs.push(mk(10, 0, first));
    evs.push(mk(11, 1, second));
    let out = run(&mut Fncc::new(&params()).unwrap(), &evs);
    // Record 0: u' = 1.0 + 1.0 = 2 > α; record 1: Δtx 625 -> 0.5; record 2: Δtx 312 ->
    // 312·128/12800/12.5 = 0.2496. Wc = 33,750, W = 16,111 (see the table above).
    assert_eq!(out[1].state.get("Wc"), Some(StateValue::U64(33_750)));
    assert_eq!(out[1].outputs.window_bytes, Some(16_111));
}

#[test]
fn switch_errors() {
    let mut s = fncc::Switch::new(0x001, 2, 2);
    assert_eq!(
        s.set_port_int(2, IntHop::default()),
        Err(fncc::SwitchError::UnknownPort {
            port: 2,
            n_ports: 2
        })
    );
    let mut st = IntStack::new();
    assert_eq!(
        s.forward_ack(5, &mut st),
        Err(fncc::SwitchError::UnknownPort {
            port: 5,
            n_ports: 2
        })
    );
    s.forward_ack(0, &mut st).unwrap();
    fncc::insert_int(&mut st, 0x002, IntHop::default(), 2).unwrap();
    assert_eq!(
        s.forward_ack(1, &mut st),
        Err(fncc::SwitchError::StackFull {
            n_hop: 2,
            max_hops: 2
        })
    );
    assert_eq!(st.path_id(), 0x003); // 0x001 ^ 0x002; the refused push changed nothing
}

#[test]
fn names_and_state() {
    let m = Fncc::new(&params()).unwrap();
    assert_eq!(m.name(), "fncc");
    assert_eq!(m.next_timer_ns(), None);
    assert!(m.per_flow());
    assert_eq!(
        fncc::STATE_NAMES,
        &[
            "W",
            "Wc",
            "U",
            "incStage",
            "lastUpdateSeq",
            "snd_nxt",
            "Umax",
            "hop",
            "tau",
            "N",
            "lhcs"
        ]
    );
}
