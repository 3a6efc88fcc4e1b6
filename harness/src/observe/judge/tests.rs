//! Unit tests of the observed judge (observe/judge.rs).

use super::*;
use ccreplay_reference_cc::event::AckInfo;

// 1,058-byte frames: 846.4 ns at 10 Gbps, 1,692.8 ns at 5 Gbps. The reference halves the
// rate at 1,000 ns. The gap from 0 began before the step; the gap from 1,100 after it, but
// at 10 Gbps, above the 7.5 Gbps midpoint; the gap from 1,946 is the first at 5 Gbps:
// delay 946 ns. It and the next 7 settle at 1,058 × 8 × 8 / (8 × 1,693) ns = 4.9988 Gbps:
// 0.99976 of the new rate.
#[test]
fn reaction_delay_and_settled_rate() {
    let mut r = Reactions::default();
    r.decision(1_000, 10e9, 5e9);
    r.gap(0, 846, 1058.0);
    r.gap(1_100, 1_946, 1058.0);
    assert!(r.delays_ns.is_empty());
    let mut t = 1_946;
    for _ in 0..9 {
        r.gap(t, t + 1_693, 1058.0);
        t += 1_693;
    }
    assert_eq!(r.delays_ns, vec![946]);
    assert_eq!(r.settled.len(), 1);
    let want = 1058.0 * 8.0 * 8.0 / (8.0 * 1693.0) * 1e9 / 5e9;
    assert!((r.settled[0] - want).abs() < 1e-12, "{}", r.settled[0]);
    // The settled rate is over all 8 gaps, not the first: after a step back up to 10 Gbps
    // at 30,000 ns, a first gap of 846 ns (10.005 Gbps: the reaction, delay 0) then 7 of
    // 900: 8 × 1,058 B over 7,146 ns = 9.47551 Gbps, 0.947551 of the new rate.
    r.decision(30_000, 5e9, 10e9);
    let mut t = 30_000;
    for gap in [846, 900, 900, 900, 900, 900, 900, 900, 900] {
        r.gap(t, t + gap, 1058.0);
        t += gap;
    }
    assert_eq!(r.delays_ns, vec![946, 0]);
    let want = 8.0 * 1058.0 * 8.0 / 7_146.0 * 1e9 / 10e9;
    assert!((r.settled[1] - want).abs() < 1e-12, "{}", r.settled[1]);
    // A step under 10 % is no step.
    r.decision(40_000, 10e9, 10.9e9);
    assert_eq!(r.steps, 2);
}

// The edges of a step. A gap that begins at the step's very instant is after it: at
// 5 Gbps (1,058 B over 1,693 ns, below the 7.5 Gbps midpoint) it is the reaction, delay 0.
// A gap that begins 1 ns before it is not. And a rate from 0 is no step (the relative
// change would divide by 0).
#[test]
fn a_gap_at_the_steps_instant_follows_it_and_a_rate_from_zero_is_no_step() {
    let mut r = Reactions::default();
    r.decision(1_000, 10e9, 5e9);
    r.gap(999, 999 + 1_693, 1058.0);
    assert!(r.delays_ns.is_empty());
    r.gap(1_000, 1_000 + 1_693, 1058.0);
    assert_eq!(r.delays_ns, vec![0]);

    let mut r = Reactions::default();
    r.decision(1_000, 0.0, 5e9);
    assert_eq!((r.steps, r.pending.is_some()), (0, false));
}

// A step up, 5 → 10 Gbps at 1,000 ns (midpoint 7.5 Gbps): a gap at 5 Gbps (1,058 B over
// 1,693 ns) is not the reaction; 750 B over 800 ns is exactly 7.5 Gbps (6,000 × 10^9 /
// 800, exact in binary), the midpoint, not past it; 1,058 B over 846 ns (10.005 Gbps) is:
// delay 3,493 − 1,000 = 2,493 ns. The same exact-midpoint gap is not a reaction to a step
// down either.
#[test]
fn a_step_up_is_followed_past_the_midpoint_not_at_it() {
    let mut r = Reactions::default();
    r.decision(1_000, 5e9, 10e9);
    r.gap(1_000, 2_693, 1058.0);
    r.gap(2_693, 3_493, 750.0);
    assert!(r.delays_ns.is_empty());
    r.gap(3_493, 4_339, 1058.0);
    assert_eq!(r.delays_ns, vec![2_493]);

    let mut r = Reactions::default();
    r.decision(1_000, 10e9, 5e9);
    r.gap(1_000, 1_800, 750.0);
    assert!(r.delays_ns.is_empty());
}

/// A judge of a windowed model's sender on a 10 Gbps link, default allowances (window
/// slack one 1,000-byte MTU), 1 ns timestamps.
fn judge() -> Judge {
    judge_with(Allowances::default(), Pauses::default())
}

/// [`judge`] with these allowances and PFC pauses.
fn judge_with(allow: Allowances, pauses: Pauses) -> Judge {
    Judge::new(allow, Dialect::Roce, 10_000_000_000, 1_000, 1, pauses, true)
}

/// Flow 0's data packet: RDMA WRITE MIDDLE (0x07), 1,000 bytes (a 1,058-byte frame).
fn tx(j: &mut Judge, t_ns: u64, psn: u32) -> Event {
    tx_of(j, 0, t_ns, psn)
}

/// [`tx`] of another flow of the host.
fn tx_of(j: &mut Judge, flow: u32, t_ns: u64, psn: u32) -> Event {
    let ev = Event {
        t_ns,
        flow,
        index: 0,
        kind: EventKind::TxData {
            psn,
            bytes: 1_000,
            opcode: 0x07,
        },
    };
    j.event(&ev);
    ev
}

fn reply(j: &mut Judge, t_ns: u64, psn: u32, nak: bool) {
    let a = AckInfo {
        psn,
        syndrome: if nak { 0x60 } else { 0 },
        int: None,
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    let kind = if nak {
        EventKind::RxNak(a)
    } else {
        EventKind::RxAck(a)
    };
    j.event(&Event {
        t_ns,
        flow: 0,
        index: 0,
        kind,
    });
}

/// Bytes in flight the judge holds for flow 0 as `ev` leaves (what `report diff` charts).
fn inflight(j: &Judge, ev: &Event) -> Option<u64> {
    j.observed_decision(ev)?.outputs.window_bytes
}

// Window 3,000 B (+ 1,000 slack: bound 4,000). PSNs 0-3 leave 1 µs apart (in flight with
// each: -, 2,000, 3,000, 4,000 — none over). A NAK naming 2 acknowledges 0 and 1: in
// flight 2,000, so PSN 4 leaves with 3,000 — within the window. Had the NAK acknowledged
// nothing, 5,000 > 4,000: a window failure.
#[test]
fn a_nak_acknowledges_what_precedes_its_psn() {
    let mut j = judge();
    decide(&mut j, 0, 10_000_000_000, Some(3_000));
    for k in 0..4 {
        tx(&mut j, 1_000 * u64::from(k), k);
    }
    reply(&mut j, 3_500, 2, true);
    let ev = tx(&mut j, 4_000, 4);
    assert_eq!(inflight(&j, &ev), Some(3_000));
    let facts = &j.finish()[0].1;
    let counts = (facts.packets, facts.acks, facts.decisions, facts.lost);
    assert_eq!((counts, facts.by_check), ((5, 1, 1, 0), [0, 0, 0]));
}

// Go-back-N without the NAK in the capture: PSNs 0-3 in flight (4,000 B), then PSN 1 again
// takes back 1, 2 and 3 (what follows it is sent again) and is itself in flight: 2,000.
#[test]
fn a_retransmission_takes_back_what_follows_it() {
    let mut j = judge();
    for k in 0..4 {
        tx(&mut j, 1_000 * u64::from(k), k);
    }
    let ev = tx(&mut j, 4_000, 1);
    assert_eq!(inflight(&j, &ev), Some(2_000));
}

// Packets the tap missed: a PSN run skipped forwards was sent all the same. PSN 0, then 11
// at 11 µs: 10 lost, 12,000 B in flight, and 11 frames of 1,058 B sent in the gap — at
// the lowest allowed 9.8 Gbps 13,475 B were owed, 1,837 short, within the 8,192-byte
// burst (counting only the frame seen, 12,417 short: too slow). A run of 4,096 (MAX_LOST_RUN) is still counted; one more
// starts a new sequence (nothing counted, what was in flight forgotten). A PSN exactly half
// the PSN space ahead (2^23) is not ahead: a retransmission, which takes back nothing here.
#[test]
fn psn_runs_the_tap_missed() {
    let mut j = judge();
    tx(&mut j, 0, 0);
    let ev = tx(&mut j, 11_000, 11);
    assert_eq!(inflight(&j, &ev), Some(12_000));
    // An ACK of 5 acknowledges the missed 1-5 too: 6-11 in flight.
    reply(&mut j, 11_500, 5, false);
    assert_eq!(inflight(&j, &ev), Some(6_000));
    let facts = &j.finish()[0].1;
    assert_eq!((facts.lost, facts.by_check), (10, [0, 0, 0]));

    let mut j = judge();
    tx(&mut j, 0, 0);
    tx(&mut j, 10_000_000, 4_097);
    assert_eq!(j.finish()[0].1.lost, 4_096);

    let mut j = judge();
    tx(&mut j, 0, 0);
    let ev = tx(&mut j, 10_000_000, 4_098);
    assert_eq!(inflight(&j, &ev), Some(1_000));
    assert_eq!(j.finish()[0].1.lost, 0);

    let mut j = judge();
    tx(&mut j, 0, 0);
    let ev = tx(&mut j, 10_000_000, PSN_HALF);
    assert_eq!(inflight(&j, &ev), Some(2_000));
    assert_eq!(j.finish()[0].1.lost, 0);
}

/// A reference decision for flow 0 at `t_ns`: a rate and maybe a window.
fn decide(j: &mut Judge, t_ns: u64, rate_bps: u64, window_bytes: Option<u64>) {
    j.decision(&Decision {
        t_ns,
        flow: 0,
        cause: Cause::Event {
            kind: "rx_ack",
            index: 0,
        },
        outputs: Outputs {
            rate_bps: Some(rate_bps),
            window_bytes,
            ..Outputs::default()
        },
        state: State::default(),
    });
}

// Too fast. The reference sets 5 Gbps at 0; from 10 µs on (past the 5 µs reaction
// allowance, the link's 10 Gbps no longer in force) the sender sends 1,058-byte frames
// 847 ns apart. At 5.1 Gbps (5 × 1.02) a frame is 1,659.6078 ns: packet k (from 0) is
// k × 812.6078 ns early, and the allowance is 8,192 B at 5.1 Gbps (12,850.196 ns) plus
// 2 × (1 + 200) ns: 13,252.196 ns. k = 16 is 13,001.7 ns early (within), k = 17 is
// 13,814.3 ns: too fast by 562 ns.
#[test]
fn too_fast_past_the_burst_at_the_highest_allowed_rate() {
    let run = |n: u32| {
        let mut j = judge();
        decide(&mut j, 0, 5_000_000_000, None);
        for k in 0..n {
            tx(&mut j, 10_000 + 847 * u64::from(k), k);
        }
        j.finish().remove(0)
    };
    let (diff, facts) = run(17);
    assert_eq!(facts.by_check, [0, 0, 0]);
    // The largest earliness reported: packet 16's, of the allowance.
    let (_, abs, rel) = diff.largest.iter().find(|l| l.0 == "tx_early_ns").unwrap();
    let early = 16.0 * (1058.0 * 8.0 / 5.1 - 847.0);
    let allowed = 8192.0 * 8.0 / 5.1 + 402.0;
    assert_eq!(*abs, 13_002.0);
    assert!((rel - early / allowed).abs() < 1e-9, "{rel}");
    // The observed rate, charted: the frames before the last of the last 9 packets over
    // their span — packets at 0, then 1,000 and every 847 ns after: 8,464 B in 6,929 ns
    // at the 9th, 9.7723 Gbps; at the 10th the window has moved past the longer first
    // gap: 8,464 B in 6,776 ns.
    let mut j = judge();
    tx(&mut j, 0, 0);
    for k in 1..10 {
        let ev = tx(&mut j, 153 + 847 * u64::from(k), k);
        let rate = j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps);
        match k {
            8 => assert_eq!(rate, Some(9_772_261_509)),
            9 => assert_eq!(rate, Some(9_992_916_174)),
            _ => {}
        }
    }
    let (diff, facts) = run(18);
    assert_eq!(facts.by_check, [1, 0, 0]);
    let first = diff.first.expect("a first failure");
    assert_eq!(first.fields[0].reference, "≤ 5100000000 bps");
    assert_eq!(first.fields[0].dut, "too_fast: 562 ns early");
    // The divergence charted at the packet that broke it (10,000 + 17 × 847 ns): the
    // reference's decision in force, the rate observed (9.9929 Gbps over the last 8
    // frames) and the 17 packets before it in flight.
    let reference = first.reference.expect("the decision in force");
    assert_eq!(
        (reference.t_ns, reference.outputs.rate_bps),
        (24_399, Some(5_000_000_000))
    );
    let dut = first.dut.expect("what the capture shows").outputs;
    assert_eq!(
        (dut.rate_bps, dut.window_bytes),
        (Some(9_992_916_174), Some(17_000))
    );
}

// Too slow, and PFC pauses. The host is paused from 0 to 10 µs; from 20 µs it sends a
// 1,058-byte frame every 2 µs though the link's 10 Gbps is required (no decision): at 9.8
// Gbps each gap owes 2,450 B, 1,392 more than it sent; the allowance is 8,192 B plus 9.8
// Gbps over 402 ns (492.45 B): 8,684.45 B. After 6 gaps 8,352 B (within), after 7 9,744
// B: too slow. The pause before the first packet is not time it could have sent in any
// later gap.
#[test]
fn too_slow_past_the_burst_and_pauses_before_the_gap_do_not_count() {
    let run = |n: u32| {
        let pauses = Pauses::from_frames(&[(0, 10_000)]);
        let mut j = judge_with(Allowances::default(), pauses);
        for k in 0..n {
            tx(&mut j, 20_000 + 2_000 * u64::from(k), k);
        }
        j.finish().remove(0)
    };
    assert_eq!(run(7).1.by_check, [0, 0, 0]);
    assert_eq!(run(8).1.by_check, [0, 1, 0]);
    // The largest deficit reported: 8,352 B after 6 gaps, of the 8,684.45 allowed.
    let largest = run(7).0.largest;
    let (_, abs, rel) = largest
        .iter()
        .find(|l| l.0 == "rate_deficit_bytes")
        .unwrap();
    assert_eq!(*abs, 8_352.0);
    assert!((rel - 8_352.0 / 8_684.45).abs() < 1e-12, "{rel}");
}

// Window-blocked time is not time the sender could send, but a next packet that exactly
// fills the window is not blocked (the engine's NIC sends while in flight + the packet
// ≤ the window): window 2,000 B, PSN 0, then PSN 1 10 µs later — 12,250 B owed at 9.8
// Gbps, 1,058 sent: too slow.
#[test]
fn a_packet_that_exactly_fills_the_window_is_not_blocked() {
    let mut j = judge();
    decide(&mut j, 0, 10_000_000_000, Some(2_000));
    tx(&mut j, 0, 0);
    tx(&mut j, 10_000, 1);
    assert_eq!(j.finish()[0].1.by_check, [0, 1, 0]);
}

// Window failures and the ACKs that confirm them (window 3,000 B + 1,000: bound 4,000;
// packets 1 µs apart, ACK 0 covers one packet: the least any ACK covers). PSN 5 leaves
// with 5,000 B in flight; the next ACK covers 1 and 2 — more packets than any before: the
// tap lost ACK 1, which the NIC had when it sent, so the failure is dropped. Then: a
// duplicate ACK (covering nothing) does not decide it either; the ACK of one packet
// after it does.
#[test]
fn a_window_failure_waits_for_an_ack_that_covers_no_more_than_any_before() {
    let start = || {
        let mut j = judge();
        decide(&mut j, 0, 10_000_000_000, Some(3_000));
        tx(&mut j, 0, 0);
        tx(&mut j, 1_000, 1);
        reply(&mut j, 1_500, 0, false);
        for k in 2..6 {
            tx(&mut j, 1_000 * u64::from(k), k);
        }
        j
    };
    let mut j = start();
    reply(&mut j, 5_500, 2, false);
    assert_eq!(j.finish()[0].1.by_check, [0, 0, 0]);

    let mut j = start();
    reply(&mut j, 5_200, 0, false);
    reply(&mut j, 5_500, 1, false);
    tx(&mut j, 6_000, 6);
    reply(&mut j, 6_500, 2, false);
    assert_eq!(j.finish()[0].1.by_check, [0, 0, 2]);
}

// The host's other flows hold its link: that is not time a flow could send. Two flows
// each send a 1,058-byte frame every 4 µs, interleaved (2 µs apart), 10 Gbps required:
// each gap of a flow held 846.4 ns of the other's frame, so it could send for 3,153.6 ns
// — 3,863.16 B owed at 9.8 Gbps, 2,805.16 more than sent. After 3 gaps 8,415.48 B
// (within 8,684.45), after 4 11,220.64: too slow — for each flow.
#[test]
fn the_other_flows_frames_are_not_time_the_flow_could_send() {
    let run = |n: u32| {
        let mut j = judge();
        for k in 0..n {
            tx_of(&mut j, 0, 4_000 * u64::from(k), k);
            tx_of(&mut j, 1, 4_000 * u64::from(k) + 2_000, k);
        }
        let out = j.finish();
        [out[0].1.by_check, out[1].1.by_check]
    };
    assert_eq!(run(4), [[0, 0, 0]; 2]);
    assert_eq!(run(5), [[0, 1, 0]; 2]);
}

// Nothing in flight is never window-blocked, even under a window smaller than a packet
// (500 B): PSN 0, its ACK at 500 ns, PSN 1 at 10 µs — blocked only until the ACK, so
// 9,500 ns it could send: 11,637.5 B owed at 9.8 Gbps, 1,058 sent: too slow.
#[test]
fn nothing_in_flight_is_never_window_blocked() {
    let mut j = judge();
    decide(&mut j, 0, 10_000_000_000, Some(500));
    tx(&mut j, 0, 0);
    reply(&mut j, 500, 0, false);
    tx(&mut j, 10_000, 1);
    assert_eq!(j.finish()[0].1.by_check, [0, 1, 0]);
}

// The reaction counts the frames the tap missed: after a step up to 10 Gbps at 10 µs, PSN
// 7 then PSN 9 1,693 ns later — two frames (PSN 8 unseen) in that gap, 9.999 Gbps, past
// the 7.5 Gbps midpoint: delay 11,851 − 10,000 = 1,851 ns. One packet alone has no rate.
#[test]
fn the_reaction_counts_frames_the_tap_missed() {
    let mut j = judge();
    decide(&mut j, 0, 5_000_000_000, None);
    let ev = tx(&mut j, 0, 0);
    assert_eq!(
        j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps),
        None
    );
    for k in 1..8u32 {
        tx(&mut j, 1_693 * u64::from(k), k);
    }
    decide(&mut j, 10_000, 10_000_000_000, None);
    tx(&mut j, 1_693 * 8, 9);
    let facts = j.finish().remove(0).1;
    assert_eq!((facts.lost, facts.reactions.delays_ns), (1, vec![0, 1_851]));
}

// Coarse timestamps: two packets with one timestamp span no time, so no rate (not an
// infinite one).
#[test]
fn packets_at_one_timestamp_have_no_rate() {
    let mut j = judge();
    tx(&mut j, 1_000, 0);
    let ev = tx(&mut j, 1_000, 1);
    assert_eq!(
        j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps),
        None
    );
}

// A packet sent with nothing in flight may always go, whatever the window (the reference
// models send one packet whatever theirs): window 0, no slack; PSN 0, its ACK, PSN 1.
#[test]
fn a_packet_with_nothing_in_flight_may_always_go() {
    let allow = Allowances {
        window_slack_bytes: Some(0),
        ..Allowances::default()
    };
    let mut j = judge_with(allow, Pauses::default());
    decide(&mut j, 0, 10_000_000_000, Some(0));
    tx(&mut j, 0, 0);
    reply(&mut j, 500, 0, false);
    tx(&mut j, 1_000, 1);
    assert_eq!(j.finish()[0].1.by_check, [0, 0, 0]);
}

// The window check, confirmed by the next ACK. Window 3,000 B + 1,000 slack: bound 4,000.
// PSN 0, 1; ACK 0 (one packet: the least any ACK covers); PSN 2, 3, 4 — PSN 4 leaves with
// 4,000 B in flight, at the bound, not over; ACK 1; PSN 5 (4,000 again), PSN 6 with 5,000:
// 1,000 over, 0.25 of the bound, confirmed by ACK 2 (one packet again).
#[test]
fn window_over_its_bound_confirmed_by_the_next_ack() {
    let mut j = judge();
    decide(&mut j, 0, 10_000_000_000, Some(3_000));
    for k in 0..7u32 {
        tx(&mut j, 1_000 * u64::from(k), k);
        if k == 1 || k == 4 {
            reply(&mut j, 1_000 * u64::from(k) + 500, k / 4, false);
        }
    }
    reply(&mut j, 6_500, 2, false);
    let (diff, facts) = j.finish().remove(0);
    assert_eq!(facts.by_check, [0, 0, 1]);
    let first = diff.first.expect("a first failure");
    assert_eq!(first.fields[0].reference, "≤ 4000 B in flight");
    assert_eq!(first.fields[0].dut, "window: 1000 bytes over");
    let w = &first.fields[1];
    let row = (w.field.as_str(), w.reference.as_str(), w.dut.as_str());
    assert_eq!(row, ("window_bytes", "3000", "5000"));
    let largest = diff
        .largest
        .iter()
        .find(|l| l.0 == "inflight_over_window_bytes");
    assert_eq!(
        largest,
        Some(&("inflight_over_window_bytes".to_string(), 1_000.0, 0.25))
    );
}

// The reaction measured on the judge's own packets: the reference steps from the link's
// 10 Gbps down to 5 at 0 and up to 10 at 20 µs. The sender spaces its 1,058-byte frames
// by 1,693 ns (5 Gbps) from 0 — its first gap already below the 7.5 Gbps midpoint: delay
// 0 — and by 847 ns (10 Gbps) after its packet at 28,781 ns: delay 8,781 ns.
#[test]
fn reactions_to_steps_down_and_up() {
    let mut j = judge();
    decide(&mut j, 0, 5_000_000_000, None);
    let mut t = 0;
    for k in 0..28u32 {
        if k == 12 {
            decide(&mut j, 20_000, 10_000_000_000, None);
        }
        tx(&mut j, t, k);
        t += if t < 28_781 { 1_693 } else { 847 };
    }
    let facts = j.finish().remove(0).1;
    assert_eq!(facts.reactions.steps, 2);
    assert_eq!(facts.reactions.delays_ns, vec![0, 8_781]);
}

// The medians reported: the middle value, the upper of the two middle ones for an even
// count, none without values.
#[test]
fn medians_of_the_reaction_facts() {
    let mut f = ReactionFacts {
        steps: 4,
        delays_ns: vec![100, 200, 300],
        settled: vec![0.9, 0.95, 1.1],
    };
    assert_eq!(
        (f.median_delay_ns(), f.median_settled()),
        (Some(200), Some(0.95))
    );
    f.delays_ns.push(400);
    f.settled.push(1.2);
    assert_eq!(
        (f.median_delay_ns(), f.median_settled()),
        (Some(300), Some(1.1))
    );
    let none = ReactionFacts::default();
    assert_eq!(
        (none.median_delay_ns(), none.median_settled()),
        (None, None)
    );
}
