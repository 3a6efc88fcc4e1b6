//! Unit tests of `hpcc-ns3` (ns3/hpcc.rs).

use super::*;
use ccreplay_codecs::shim::int::IntStack;

/// An INT record: line-rate code `b` (2: 100 Gbps, the NIC's rate), TS ns, txBytes and
/// qLen units.
fn rec(b: u8, ts: u32, tx_bytes: u32, qlen: u16) -> IntHop {
    IntHop {
        b,
        ts,
        tx_bytes,
        qlen,
    }
}

fn tx(psn: u32) -> EventKind {
    EventKind::TxData {
        psn,
        bytes: 1000,
        opcode: 0x07,
    }
}

fn ack(psn: u32, hops: Option<&[IntHop]>, nak: bool) -> EventKind {
    let a = AckInfo {
        psn,
        syndrome: if nak { 0x60 } else { 0x1F },
        int: hops.map(|h| IntStack::from_hops(0, h).unwrap()),
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    if nak {
        EventKind::RxNak(a)
    } else {
        EventKind::RxAck(a)
    }
}

/// Feed `(flow, kind)` in order (1 µs apart) and return the coverage counts.
fn counts(p: &HpccNs3Params, stream: Vec<(FlowId, EventKind)>) -> Vec<u64> {
    let mut m = HpccNs3::new(p).unwrap();
    let mut out = Vec::new();
    for (i, (flow, kind)) in stream.into_iter().enumerate() {
        let ev = Event {
            t_ns: 1000 * (i as u64 + 1),
            flow,
            index: i as u64,
            kind,
        };
        m.on_event(&ev, &mut out);
    }
    m.coverage().iter().map(|c| c.1).collect()
}

/// `outputs_only` (the simulator's hosts without a tap): the same decisions — time, flow,
/// cause, rate, window — on a stream that moves the rate every way (first ACK, fast
/// react, committed MD / AI, a NAK, a path change), with empty state records and no
/// coverage counted; the full model's records are not empty and its counts not zero.
#[test]
fn outputs_only_keeps_every_output() {
    let a = |ts, tx, q| rec(2, ts, tx, q);
    let stream = [
        tx(0),
        tx(1),
        tx(2),
        ack(0, Some(&[a(0, 0, 0)]), false),
        ack(1, Some(&[a(10_000, 500, 0)]), false),
        ack(2, Some(&[a(20_000, 1500, 2000)]), false),
        tx(3),
        tx(4),
        ack(3, Some(&[a(30_000, 1500, 2000), a(5_000, 0, 0)]), false),
        ack(4, Some(&[a(40_000, 1500, 0), a(15_000, 1000, 0)]), true),
        ack(4, None, false),
    ];
    for multi_rate in [false, true] {
        let p = HpccNs3Params {
            base_rtt_ns: 10_000,
            multi_rate,
            ..HpccNs3Params::default()
        };
        let (mut full, mut lean) = (HpccNs3::new(&p).unwrap(), HpccNs3::new(&p).unwrap());
        lean.outputs_only(true);
        let (mut a_out, mut b_out) = (Vec::new(), Vec::new());
        for (i, kind) in stream.iter().enumerate() {
            let ev = Event {
                t_ns: 1000 * (i as u64 + 1),
                flow: 0,
                index: i as u64,
                kind: *kind,
            };
            full.on_event(&ev, &mut a_out);
            lean.on_event(&ev, &mut b_out);
        }
        assert_eq!(a_out.len(), 6, "one decision per rx_ack / rx_nak");
        for (a, b) in a_out.iter().zip(&b_out) {
            assert_eq!(
                (a.t_ns, a.flow, a.cause, a.outputs),
                (b.t_ns, b.flow, b.cause, b.outputs)
            );
            assert_ne!(a.state.fields().count(), 0);
            assert_eq!(b.state.fields().count(), 0);
        }
        assert_eq!(a_out.len(), b_out.len());
        assert!(full.coverage().iter().any(|c| c.1 > 0));
        assert!(lean.coverage().iter().all(|c| c.1 == 0));
        assert!(!lean.has_timers() && lean.next_timer_ns().is_none());
    }
}

/// Every rule of [`COVERAGE`] on hand-built streams, counted by hand from
/// docs/models/ns3.md N1-N14. Setting: M = 100 Gbps, T = 10,000 ns, m_win = 1e11 × 1e4 /
/// 1e9 / 8 = 125,000 B, η 0.95, RATE_AI 5e7. Hops are at 100 Gbps (= M), so a hop's
/// `u = d·128·8 / (tau·1e-9) / 1e11 + 80·qmin / 125,000` (d txBytes units, qmin the smaller
/// qLen in units): with tau = 10,000 ns, u = 1.024e-3·d + 6.4e-4·qmin. With tau >= T the
/// EWMA takes u whole (`(U·0 + u·T)/T`); every U below is far from η (c = U/η vs 1).
#[test]
fn coverage_counts_every_rule_on_hand_streams() {
    let a = |ts, tx, q| rec(2, ts, tx, q);
    // Single rate, fast react, VAR_WIN, MI_THRESH 1, MIN_RATE 50 Gbps.
    let single = HpccNs3Params {
        base_rtt_ns: 10_000,
        multi_rate: false,
        mi_thresh: 1,
        min_rate: 50_000_000_000,
        ..HpccNs3Params::default()
    };
    let six = [a(0, 0, 0); 6];
    let stream = vec![
        (0, tx(0)),
        (0, tx(1)),
        (0, tx(2)), // snd_nxt 3
        // first: lastUpdateSeq = 3, stores [A]
        (0, ack(0, Some(&[a(0, 0, 0)]), false)),
        // fast (seq 2 <= 3): u = 0.512 (d 500) = U, c 0.54, stage 0 < 1: AI, 1e11 + 5e7 > M
        (0, ack(1, Some(&[a(10_000, 500, 0)]), false)),
        // fast: u = 1.024 (d 1000; qmin = min(2000, 0) = 0): MD, 1e11/1.078 + 5e7 = 92.8e9
        (0, ack(2, Some(&[a(20_000, 1500, 2000)]), false)),
        (0, tx(3)),
        (0, tx(4)), // snd_nxt 5
        // committed (seq 4 > 3), path 1 -> 2 hops: A u = 6.4e-4·2000 = 1.28, B (vs the
        // empty record, tau 5,000) u = 0: MD from hop 0, Rc = 1e11/1.347 + 5e7 = 74.27e9
        (
            0,
            ack(3, Some(&[a(30_000, 1500, 2000), a(5_000, 0, 0)]), false),
        ),
        // fast: A u = 0 (qmin = min(0, 2000)), B u = 1.024 (d 1000): the max is hop 1; MD
        (
            0,
            ack(4, Some(&[a(40_000, 1500, 0), a(15_000, 1000, 0)]), false),
        ),
        (0, tx(5)), // snd_nxt 6
        // committed: tau 20,000 > T on both; A u = 500·1024/2e-5/1e11 = 0.256, B 0:
        // U = 0.256, stage 0 < 1: AI, Rc = 74.27e9 + 5e7; incStage 1
        (
            0,
            ack(5, Some(&[a(60_000, 2000, 0), a(35_000, 1000, 0)]), false),
        ),
        (0, tx(6)), // snd_nxt 7
        // committed: A u = 0.512, B 0: c 0.54, stage 1 >= 1: MI, 74.32e9/0.54 > M
        (
            0,
            ack(6, Some(&[a(70_000, 2500, 0), a(45_000, 1000, 0)]), false),
        ),
        (0, tx(7)), // snd_nxt 8
        // NAK of 7 (seq 7, not after 7): fast; both u = 0 (d 0, qmin 0): U stays 0.512,
        // stage 0: AI, 1e11 + 5e7 > M
        (
            0,
            ack(7, Some(&[a(80_000, 2500, 5000), a(55_000, 1000, 0)]), true),
        ),
        // Flow 1: PSNs across the wrap, counters across theirs.
        (1, tx(0xFF_FFFD)),
        (1, tx(0xFF_FFFE)), // snd_nxt 0xFFFFFF
        // first: lastUpdateSeq = 0xFFFFFF
        (
            1,
            ack(0xFF_FFFD, Some(&[a(16_772_216, 1_048_476, 3000)]), false),
        ),
        (1, tx(0xFF_FFFF)),
        (1, tx(0)), // snd_nxt 1
        // seq 1: serially after 0xFFFFFF, not as integers: committed. ts 5,000 = 2^24 -
        // 5,000 + 10,000 (tau 10,000), txBytes 400 = 2^20 - 100 + 500 (d 500): u = 0.512 +
        // 6.4e-4·3000 = 2.432, c 2.56: MD, 1e11/2.56 + 5e7 = 39.1e9 < 50e9: MIN_RATE
        (1, ack(0, Some(&[a(5_000, 400, 3000)]), false)),
        // fast (seq 1 = lastUpdateSeq 1): tau 0, then a code without a rate: skipped
        (1, ack(0, Some(&[a(5_000, 400, 3000)]), false)),
        (1, ack(0, Some(&[rec(8, 15_000, 400, 3000)]), false)),
        // fast, no INT; fast, 6 hops
        (1, ack(0, None, false)),
        (1, ack(0, Some(&six), false)),
    ];
    #[rustfmt::skip]
    let want = [
        1, // no INT: flow 1
        2, 4, 8, 0, // first (2 flows), committed, fast, ignored
        1, 1, 1, // PSN wrap, NAK, 6 hops
        5, 1, // more than one hop (4 ACKs of flow 0 and its NAK), path change (1 -> 2 hops)
        1, 1, 2, 0, // ts wrap, txBytes wrap, skipped hops (tau 0, code 8), sampled out
        8, 1, 1, // single-rate updates, max not the first, tau clamped
        0, 0, 0, // per-hop rates
        4, 1, 3, // MD, MI, AI
        1, 3, // MIN_RATE, line rate
        14, 0, // VAR_WIN on every ACK
    ];
    assert_eq!(counts(&single, stream), want);

    // Per-hop rates, SAMPLE_FEEDBACK, fixed window, MI_THRESH 1, MIN_RATE 1e8. With
    // tau = T a hop's u_i takes its u whole.
    let multi = HpccNs3Params {
        base_rtt_ns: 10_000,
        mi_thresh: 1,
        multi_rate: true,
        sample_feedback: true,
        var_win: false,
        ..HpccNs3Params::default()
    };
    let stream = vec![
        (0, tx(0)),
        (0, tx(1)),
        (0, tx(2)),                                            // snd_nxt 3
        (0, ack(0, Some(&[a(0, 0, 10), a(0, 0, 10)]), false)), // first, lastUpdateSeq 3
        // fast: A u = 1.024 + 6.4e-4·10 = 1.0304, c 1.085: MD, 92.2e9 + 5e7; B qLen 0:
        // sampled out, its Rc 1e11 is no bound. R from hop 0
        (
            0,
            ack(1, Some(&[a(10_000, 1000, 10), a(10_000, 0, 0)]), false),
        ),
        (0, tx(3)), // snd_nxt 4
        // committed: A u = 0.0064 (d 0, qmin 10), stage 0: AI, 1e11 + 5e7 > M. B against
        // its first record (tau 20,000 > T): u = 2000·1024/2e-5/1e11 + 0.0064 = 1.0304:
        // MD, 92.25e9: R from hop 1. Rc0 1e11 (incStage 1), Rc1 92.25e9
        (
            0,
            ack(3, Some(&[a(20_000, 1000, 10), a(20_000, 2000, 50)]), false),
        ),
        // fast: A u = 0.0064, stage 1: MI, > M; B sampled out: its Rc1 92.25e9 bounds R
        (
            0,
            ack(3, Some(&[a(30_000, 1000, 10), a(30_000, 2000, 0)]), false),
        ),
    ];
    #[rustfmt::skip]
    let want = [
        0, 1, 1, 2, 0, // no INT; first, committed, fast, ignored
        0, 0, 0, // PSN wrap, NAK, 6 hops
        3, 0, // more than one hop, path change
        0, 0, 0, 2, // wraps, skipped, sampled out (two fast ACKs)
        0, 0, 1, // single rate; tau clamped (hop 1 of the committed update)
        3, 2, 1, // per-hop updates, R from hop 1 (committed, last fast), R from a stale Rc
        2, 1, 1, // MD (hop 0 first fast, hop 1 committed), MI, AI
        0, 2, // MIN_RATE, line rate (committed hop 0, last hop 0)
        0, 4, // fixed window
    ];
    assert_eq!(counts(&multi, stream), want);

    // FAST_REACT 0: ACKs inside the RTT are ignored.
    let slow = HpccNs3Params {
        fast_react: false,
        ..HpccNs3Params::default()
    };
    let stream = vec![
        (0, tx(0)),
        (0, tx(1)),                                   // snd_nxt 2
        (0, ack(0, Some(&[a(0, 0, 0)]), false)),      // first, lastUpdateSeq 2
        (0, ack(0, Some(&[a(1_000, 10, 0)]), false)), // seq 1 <= 2: ignored
        (0, ack(1, Some(&[a(2_000, 20, 0)]), false)), // seq 2 <= 2: ignored
    ];
    let mut want = [0u64; COVERAGE.len()];
    want[cov::FIRST] = 1;
    want[cov::IGNORED] = 2;
    want[cov::VAR_WIN] = 3;
    assert_eq!(counts(&slow, stream), want);
}

#[test]
fn default_window_is_third_cc_bdp() {
    // 100e9 × 13000 / 1e9 / 8 = 1,300,000 / 8 = 162,500 bytes
    let p = HpccNs3Params::default();
    assert_eq!(p.window_bytes(), 162_500);
    // 25e9 × 8_333 / 1e9 = 208,325 → / 8 = 26,040 (floor of 26,040.625)
    let p = HpccNs3Params {
        line_rate_bps: 25_000_000_000,
        base_rtt_ns: 8_333,
        ..HpccNs3Params::default()
    };
    assert_eq!(p.window_bytes(), 26_040);
}

#[test]
fn qlen_wraps_like_uint32() {
    let h = IntHop {
        b: 2,
        ts: 0,
        tx_bytes: 0,
        qlen: 0xFFFF,
    };
    // 65535 × 80 = 5,242,800; × 1000 = 5,242,800,000 mod 2^32 = 947,832,704
    //   python3 -c "print(65535*80*1000 % 2**32)" -> 947832704
    assert_eq!(get_qlen(&h, 1000), 947_832_704);
    assert_eq!(get_qlen(&h, 1), 5_242_800);
}
