//! RCC reference models against hand-computed and independently computed vectors
//! (algorithms.md RCC-1..5, seed 002 Algorithm 1, eqs. 1-5).
//!
//! Defaults: C = 100 Gbps, T = base = 12 µs, δ = 0.2, η = 0.95, n = 3, Kp = 1e4, Kd = 1e5,
//! MTU 1000. Hence BDP = 100e9 × 12000 / 8e9 = 150 000 bytes; the congestion threshold
//! base × (1 + δ) = 12000 × 1.2 = 14400.0 (python3: 12000.0*(1+0.2)); the target
//! base × (1 + δ/2) = 13200.000000000002 (python3: 12000.0*(1+0.2/2)); the last-hop bound
//! C × T / 8e9 × η = 142500.0 (python3: 100e9*12000/8e9*0.95).

use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::rcc::receiver::{FLAG_IN_NETWORK, FLAG_PID};
use ccreplay_reference_cc::rcc::{Receiver, ReceiverParams, Sender, SenderParams};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

const BASE: u64 = 12_000;

/// Receive times are offset by this, so that every send time is positive.
const T0: u64 = 1_000_000;

/// A data packet of `flow` received at `T0 + t_ns`, sent `delay_ns` earlier.
fn data(t_ns: u64, flow: u32, opcode: u8, bytes: u32, delay_ns: Option<u64>) -> Event {
    let t_ns = T0 + t_ns;
    Event {
        t_ns,
        flow,
        index: 0,
        kind: EventKind::RxData {
            psn: 0,
            bytes,
            opcode,
            ecn: 2,
            send_ts_ns: delay_ns.map(|d| t_ns - d),
        },
    }
}

fn run(m: &mut dyn Model, events: &[Event]) -> Vec<Decision> {
    let mut out = Vec::new();
    for e in events {
        assert_eq!(m.next_timer_ns(), None);
        m.on_event(e, &mut out);
    }
    out
}

fn st(d: &Decision, name: &str) -> StateValue {
    d.state.get(name).unwrap()
}

fn f64_bits(d: &Decision, name: &str) -> u64 {
    match st(d, name) {
        StateValue::F64(v) => v.to_bits(),
        v => panic!("{name} = {v:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// RCC-3: message counting and the fair-share window C × T / N.

#[test]
fn flow_counting_across_opcodes() {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    // (flow, opcode, N for this packet's fair share, fair share = floor(150000 / N)).
    // Delays equal the base (no congestion) and 1000-byte packets 1 µs apart keep B_R far
    // below 142 500: every window is the fair share.
    let rows: &[(u32, u8, u16, u32)] = &[
        (0, 0x06, 1, 150_000), // f0 RDMA WRITE First: +1 -> 1
        (1, 0x04, 2, 75_000),  // f1 SEND Only: +1 -> 2, then -1 -> 1
        (0, 0x07, 1, 150_000), // f0 WRITE Middle
        (2, 0x00, 2, 75_000),  // f2 SEND First -> 2
        (3, 0x0D, 3, 50_000),  // f3 READ response First -> 3
        (0, 0x09, 3, 50_000),  // f0 WRITE Last with Immediate, then -> 2
        (2, 0x01, 2, 75_000),  // f2 SEND Middle
        (4, 0x2B, 3, 50_000),  // f4 UC WRITE Only with Immediate, then -> 2
        (2, 0x16, 2, 75_000),  // f2 SEND Last with Invalidate, then -> 1
        (5, 0x07, 2, 75_000),  // f5 WRITE Middle without its First: opens a message -> 2
        (1, 0x11, 2, 75_000),  // f1 ACK opcode: not a message packet, N unchanged
        (3, 0x0F, 2, 75_000),  // f3 READ response Last, then -> 1
        (5, 0x08, 1, 150_000), // f5 WRITE Last, then -> 0
        (6, 0x0C, 1, 150_000), // f6 READ Request with no message open: N = max(0, 1)
        (0, 0x06, 1, 150_000), // f0 WRITE First again
        (0, 0x06, 1, 150_000), // ... retransmitted First: still one message
        (0, 0x05, 1, 150_000), // f0 SEND Only with Immediate while open: closes it -> 0
        (1, 0x0A, 1, 150_000), // f1 WRITE Only: +1, -1
    ];
    let events: Vec<Event> = rows
        .iter()
        .enumerate()
        .map(|(i, &(flow, op, _, _))| {
            let t = 100_000 + i as u64 * 1_000;
            data(t, flow, op, 1000, Some(BASE))
        })
        .collect();
    let out = run(&mut m, &events);
    assert_eq!(out.len(), rows.len());
    for (i, (d, &(flow, op, n, w))) in out.iter().zip(rows).enumerate() {
        assert_eq!(d.flow, flow);
        assert_eq!(d.outputs.ack_n, Some(n), "row {i} opcode {op:#04x}");
        assert_eq!(d.outputs.ack_cwnd, Some(w), "row {i} opcode {op:#04x}");
        assert_eq!(d.outputs.ack_flags, Some(0));
    }
}

#[test]
fn fair_share_is_floored() {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    // Seven open messages: floor(150000 / 7) = floor(21428.57) = 21428 (python3: 150000//7).
    let events: Vec<Event> = (0..7)
        .map(|f| data(f as u64 * 1_000, f, 0x00, 1000, Some(BASE)))
        .collect();
    let out = run(&mut m, &events);
    assert_eq!(out[6].outputs.ack_n, Some(7));
    assert_eq!(out[6].outputs.ack_cwnd, Some(21_428));
    assert_eq!(st(&out[6], "fair_share"), StateValue::U64(21_428));
}

// ---------------------------------------------------------------------------------------
// RCC-4/5: n-consecutive detection and the PID step.

#[test]
fn pid_step_with_kp_1e4_kd_1e5() {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    // One message of flow 0, 1000-byte packets 1 µs apart, delays 12, 15, 15, 16, 14 µs.
    let delays = [12_000, 15_000, 15_000, 16_000, 14_000];
    let events: Vec<Event> = delays
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let op = if i == 0 { 0x06 } else { 0x07 };
            data(100_000 + i as u64 * 1_000, 0, op, 1000, Some(d))
        })
        .collect();
    let out = run(&mut m, &events);
    let flags: Vec<u8> = out.iter().map(|d| d.outputs.ack_flags.unwrap()).collect();
    let cwnd: Vec<u32> = out.iter().map(|d| d.outputs.ack_cwnd.unwrap()).collect();
    // Samples 2 and 3 exceed 14 400 ns (consecutive 1, 2): explicit assignment, 150 000.
    // Sample 4 (16 µs) is the 3rd in a row and B_R <= 12 000 < 142 500: in-network
    // congestion, the flow enters PID mode:
    //   E_prev = (15000 − 13200.000000000002) / 1e9 = 1.7999999999999982e-06
    //   E      = (16000 − 13200.000000000002) / 1e9 = 2.799999999999998e-06
    //   U = 0 + 1e4 × E + 1e5 × (E − E_prev) ≈ 0.028 + 0.1 = 0.12799999999999997
    //     (python3, IEEE doubles: 0x3fc0624dd2f1a9fb)
    //   tanh(U) = 0.12730550045073621 (python3 math.tanh)
    //   W = floor(150000 × (1 − 0.12730550045073621)) = floor(130904.17…) = 130904.
    // Sample 5 (14 µs <= 14 400: consecutive resets) stays in PID mode:
    //   E = (14000 − 13200.000000000002) / 1e9 = 7.999999999999982e-07
    //   U = 0.128 + 1e4 × 8e-7 + 1e5 × (8e-7 − 2.8e-6) ≈ 0.128 + 0.008 − 0.2 = −0.064
    //     (python3: -0.06400000000000003, 0xbfb0624dd2f1a9fe)
    //   W = floor(130904 × (1 + 0.06391276159528166)) = floor(139270.4…) = 139270.
    assert_eq!(flags, vec![0, 0, 0, FLAG_PID | FLAG_IN_NETWORK, FLAG_PID]);
    assert_eq!(cwnd, vec![150_000, 150_000, 150_000, 130_904, 139_270]);
    assert_eq!(f64_bits(&out[3], "U"), 0x3fc0624dd2f1a9fb);
    assert_eq!(f64_bits(&out[4], "U"), 0xbfb0624dd2f1a9fe);
    assert_eq!(st(&out[3], "consecutive"), StateValue::U64(3));
    assert_eq!(st(&out[4], "consecutive"), StateValue::U64(0));
    assert_eq!(st(&out[3], "rtt_ns"), StateValue::I64(16_000));
}

#[test]
fn n_consecutive_samples_are_needed() {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    // Delays 15, 15, 12, 15, 15, 15, 12 µs: the low sample resets the run, so congestion is
    // detected only at the 6th packet (3rd of the second run).
    let delays = [15_000, 15_000, 12_000, 15_000, 15_000, 15_000, 12_000];
    let events: Vec<Event> = delays
        .iter()
        .enumerate()
        .map(|(i, &d)| data(i as u64 * 1_000, 0, 0x07, 1000, Some(d)))
        .collect();
    let out = run(&mut m, &events);
    let flags: Vec<u8> = out.iter().map(|d| d.outputs.ack_flags.unwrap()).collect();
    let cwnd: Vec<u32> = out.iter().map(|d| d.outputs.ack_cwnd.unwrap()).collect();
    let runs: Vec<StateValue> = out.iter().map(|d| st(d, "consecutive")).collect();
    assert_eq!(
        runs,
        [1, 2, 0, 1, 2, 3, 0].map(StateValue::U64).to_vec(),
        "consecutive samples above 14 400 ns"
    );
    assert_eq!(flags, vec![0, 0, 0, 0, 0, 3, 1]);
    // 6th: E = E_prev = 1.8e-6 s, U = 1e4 × 1.8e-6 = 0.018 (python3: 0.01799999999999998),
    //   W = floor(150000 × (1 − tanh(0.018))) = floor(150000 × 0.98200194…) = 147300.
    // 7th: E = −1.2e-6, U = 0.018 − 0.012 + 1e5 × (−3e-6) = −0.294 (python3:
    //   -0.29400000000000004), W = floor(147300 × 1.2858…) = 189400 -> clamped to the fair
    //   share 150000 (RCC-5).
    assert_eq!(
        cwnd,
        vec![150_000; 5]
            .into_iter()
            .chain([147_300, 150_000])
            .collect::<Vec<_>>()
    );
    assert_eq!(f64_bits(&out[5], "U"), 0x3f926e978d4fdf36);
    assert_eq!(f64_bits(&out[6], "U"), 0xbfd2d0e560418938);
}

#[rstest]
// Round 0 (from the first packet, 12 µs long) receives 142 500 bytes: B_R = 142 500 is not
// > 142 500, the last-hop test fails, three delays > 14.4 µs mean in-network congestion:
// PID. U = 1e4 × 1.8e-6 = 0.018, W = 147300 (as in `n_consecutive_samples_are_needed`).
#[case::at_bound_in_network(142_500, 12_000, 142_500, 147_300, FLAG_PID | FLAG_IN_NETWORK)]
// 142 501 bytes: the last hop is saturated (last-hop congestion): explicit fair share, no PID.
#[case::above_bound_last_hop(142_501, 12_000, 142_501, 150_000, 0)]
// Saturated round 0, but the packets arrive two rounds later: round 1 was empty, B_R = 0.
#[case::stale_round(142_501, 24_000, 0, 147_300, FLAG_PID | FLAG_IN_NETWORK)]
fn last_hop_test(
    #[case] round0_bytes: u32,
    #[case] start_ns: u64,
    #[case] b_r: u64,
    #[case] third_cwnd: u32,
    #[case] third_flags: u8,
) {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    let mut events = vec![data(0, 0, 0x04, round0_bytes, Some(BASE))];
    for i in 0..3 {
        let op = if i == 0 { 0x06 } else { 0x07 };
        events.push(data(start_ns + i * 1_000, 1, op, 1000, Some(15_000)));
    }
    let out = run(&mut m, &events);
    let third = &out[3];
    assert_eq!(st(third, "B_R"), StateValue::U64(b_r));
    assert_eq!(third.outputs.ack_cwnd, Some(third_cwnd));
    assert_eq!(third.outputs.ack_flags, Some(third_flags));
    assert_eq!(
        st(third, "pid"),
        StateValue::Bool(third_flags & FLAG_PID != 0)
    );
}

#[test]
fn missing_timestamp_takes_no_sample() {
    let mut m = Receiver::new(ReceiverParams::default()).unwrap();
    let events = [
        data(0, 0, 0x06, 1000, Some(15_000)),
        data(1_000, 0, 0x07, 1000, None), // no sample: the run of 1 is kept
        data(2_000, 0, 0x07, 1000, Some(15_000)),
        data(3_000, 0, 0x07, 1000, Some(15_000)), // 3rd sample above: PID, W = 147300
        data(4_000, 0, 0x07, 1000, None),         // PID mode, no sample: W and U kept
        // A timestamp after the arrival (clock skew) counts as zero delay.
        data(5_000, 0, 0x07, 1000, Some(0)),
    ];
    let mut evs = events.to_vec();
    if let EventKind::RxData { send_ts_ns, .. } = &mut evs[5].kind {
        *send_ts_ns = Some(T0 + 9_000);
    }
    let out = run(&mut m, &evs);
    assert_eq!(st(&out[1], "rtt_ns"), StateValue::I64(-1));
    assert_eq!(st(&out[1], "consecutive"), StateValue::U64(1));
    assert_eq!(out[3].outputs.ack_cwnd, Some(147_300));
    assert_eq!(out[4].outputs.ack_cwnd, Some(147_300));
    assert_eq!(f64_bits(&out[4], "U"), f64_bits(&out[3], "U"));
    assert_eq!(st(&out[5], "rtt_ns"), StateValue::I64(0));
    assert_eq!(st(&out[5], "consecutive"), StateValue::U64(0));
}

// ---------------------------------------------------------------------------------------
// RCC-1: the sender applies the window and paces at cwnd × 8 / T.

fn ack(t_ns: u64, flow: u32, cwnd: Option<u32>, nak: bool) -> Event {
    let info = AckInfo {
        psn: 0,
        syndrome: 0,
        int: None,
        n: Some(1),
        cwnd,
        rcc_flags: Some(0),
        ts_ns: Some(t_ns),
    };
    Event {
        t_ns,
        flow,
        index: 0,
        kind: if nak {
            EventKind::RxNak(info)
        } else {
            EventKind::RxAck(info)
        },
    }
}

#[rstest]
// R = floor(cwnd × 8e9 / 12000) (python3: c*8_000_000_000//12000), capped at 100 Gbps.
#[case::half(75_000, 50_000_000_000)]
#[case::bdp(150_000, 100_000_000_000)]
#[case::above_bdp_capped(200_000, 100_000_000_000)]
#[case::one_mtu(1_000, 666_666_666)]
#[case::one_byte(1, 666_666)]
fn sender_paces_at_cwnd_over_t(#[case] cwnd: u32, #[case] rate: u64) {
    let mut m = Sender::new(SenderParams::default()).unwrap();
    assert_eq!(
        m.window_bytes(0),
        150_000,
        "starts with the BDP (line rate)"
    );
    let out = run(&mut m, &[ack(1_000, 0, Some(cwnd), false)]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].outputs.window_bytes, Some(u64::from(cwnd)));
    assert_eq!(out[0].outputs.rate_bps, Some(rate));
    assert_eq!(m.window_bytes(0), u64::from(cwnd));
}

#[test]
fn sender_ignores_acks_without_cwnd_and_applies_naks() {
    let mut m = Sender::new(SenderParams::default()).unwrap();
    let tx = Event {
        t_ns: 0,
        flow: 0,
        index: 0,
        kind: EventKind::TxData {
            psn: 0,
            bytes: 1000,
            opcode: 0x06,
        },
    };
    let out = run(
        &mut m,
        &[tx, ack(1, 0, None, false), ack(2, 0, Some(30_000), true)],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].outputs.window_bytes, Some(30_000));
    assert_eq!(out[0].outputs.rate_bps, Some(20_000_000_000)); // 30000 × 8e9 / 12000
    assert!(m.per_flow());
    assert_eq!(m.name(), "rcc-sender");
}

// ---------------------------------------------------------------------------------------
// C-7: parameters.

#[rstest]
#[case::zero_c(ReceiverParams { line_rate_bps: 0, ..ReceiverParams::default() }, "line_rate_bps")]
#[case::zero_t(ReceiverParams { base_rtt_ns: 0, ..ReceiverParams::default() }, "base_rtt_ns")]
#[case::bdp_too_big(ReceiverParams { base_rtt_ns: u64::MAX, ..ReceiverParams::default() }, "base_rtt_ns")]
#[case::zero_mtu(ReceiverParams { mtu_bytes: 0, ..ReceiverParams::default() }, "mtu_bytes")]
#[case::zero_n(ReceiverParams { n: 0, ..ReceiverParams::default() }, "n")]
#[case::delta_zero(ReceiverParams { delta: 0.0, ..ReceiverParams::default() }, "delta")]
#[case::delta_one(ReceiverParams { delta: 1.0, ..ReceiverParams::default() }, "delta")]
#[case::eta_zero(ReceiverParams { eta: 0.0, ..ReceiverParams::default() }, "eta")]
#[case::eta_nan(ReceiverParams { eta: f64::NAN, ..ReceiverParams::default() }, "eta")]
#[case::kp_neg(ReceiverParams { kp: -1.0, ..ReceiverParams::default() }, "kp")]
#[case::kd_huge(ReceiverParams { kd: 1e13, ..ReceiverParams::default() }, "kd")]
#[case::kd_inf(ReceiverParams { kd: f64::INFINITY, ..ReceiverParams::default() }, "kd")]
#[case::base_zero(ReceiverParams { base_delay_ns: Some(0), ..ReceiverParams::default() }, "base_delay_ns")]
fn receiver_params_rejected(#[case] p: ReceiverParams, #[case] name: &str) {
    let e = p.validate().unwrap_err();
    assert_eq!(e.name, name, "{e}");
    assert!(Receiver::new(p).is_err());
}

#[test]
fn sender_params_and_serde() {
    let bad = SenderParams {
        base_rtt_ns: 0,
        ..SenderParams::default()
    };
    assert_eq!(bad.validate().unwrap_err().name, "base_rtt_ns");
    let p: ReceiverParams = serde_json::from_str(
        r#"{"line_rate_bps": 25000000000, "base_rtt_ns": 8000, "mtu_bytes": 1024, "n": 5}"#,
    )
    .unwrap();
    assert_eq!((p.n, p.kp, p.delta), (5, 1e4, 0.2));
    assert!(serde_json::from_str::<ReceiverParams>(r#"{"ki": 1.0}"#).is_err());
    assert!(serde_json::from_str::<SenderParams>(r#"{"eta": 0.9}"#).is_err());
    let r = Receiver::new(ReceiverParams::default()).unwrap();
    assert_eq!(r.name(), "rcc-receiver");
    assert!(!r.per_flow());
}

#[test]
fn base_delay_overrides_base_rtt_for_the_delay_tests() {
    // base_delay 6 µs (one-way): threshold 6000 × 1.2 = 7200 ns; 7.5 µs delays congest.
    let p = ReceiverParams {
        base_delay_ns: Some(6_000),
        ..ReceiverParams::default()
    };
    let mut m = Receiver::new(p).unwrap();
    let events: Vec<Event> = (0..3)
        .map(|i| data(i * 1_000, 0, 0x07, 1000, Some(7_500)))
        .collect();
    let out = run(&mut m, &events);
    assert_eq!(out[2].outputs.ack_flags, Some(FLAG_PID | FLAG_IN_NETWORK));
}
