//! DCQCN reference models against hand-computed and independently computed vectors
//! (algorithms.md DCQCN-1..4, seed 001 §3.1 eqs. 1-5).
//!
//! Every number below comes from the paper's equations evaluated by hand or by the Python
//! scripts quoted beside the tests (IEEE doubles for `alpha`, Python integers for rates),
//! never from this crate's output.

use ccreplay_reference_cc::dcqcn::cp::{
    RedParams, SplitMix64, UniformSource, marking_probability, should_mark,
};
use ccreplay_reference_cc::dcqcn::{NicParams, Np, NpParams, Rp, RpNic, RpParams};
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

// ---------------------------------------------------------------------------------------
// Replay driver (C-5): fire every timer due at or before the next event, timers first on
// ties, then the event; after the last event, timers up to `end_ns`.

fn replay(m: &mut dyn Model, events: &[Event], end_ns: u64) -> Vec<Decision> {
    let mut out = Vec::new();
    for ev in events {
        while let Some(d) = m.next_timer_ns() {
            if d > ev.t_ns {
                break;
            }
            m.on_timer(d, &mut out);
        }
        m.on_event(ev, &mut out);
    }
    while let Some(d) = m.next_timer_ns() {
        if d > end_ns {
            break;
        }
        m.on_timer(d, &mut out);
    }
    out
}

fn ev(t_ns: u64, flow: u32, index: u64, kind: EventKind) -> Event {
    Event {
        t_ns,
        flow,
        index,
        kind,
    }
}

fn cnp(t_ns: u64, index: u64) -> Event {
    ev(t_ns, 0, index, EventKind::RxCnp)
}

fn tx(t_ns: u64, index: u64, bytes: u32) -> Event {
    ev(
        t_ns,
        0,
        index,
        EventKind::TxData {
            psn: index as u32,
            bytes,
            opcode: 0x07,
        },
    )
}

fn rx(t_ns: u64, index: u64, ecn: u8) -> Event {
    ev(
        t_ns,
        0,
        index,
        EventKind::RxData {
            psn: index as u32,
            bytes: 1000,
            opcode: 0x07,
            ecn,
            send_ts_ns: None,
        },
    )
}

fn cause_name(d: &Decision) -> String {
    match d.cause {
        Cause::Event { kind, index } => format!("{kind}#{index}"),
        Cause::Timer { name } => format!("timer:{name}"),
    }
}

fn u64_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        other => panic!("state {name} is {other:?}"),
    }
}

fn f64_bits_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::F64(v)) => v.to_bits(),
        other => panic!("state {name} is {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// DCQCN-3, paper profile, default parameters: C = 40 Gbps, g = 1/256, K = T = 55 µs,
// B = 10^7 bytes, F = 5, R_AI = 40 Mbps, R_HAI = 400 Mbps.

/// One row: time, cause, Rc, Rt, alpha bits, timer stage, byte stage.
type RpRow = (u64, &'static str, u64, u64, u64, u64, u64);

/// Expected decisions, from `python3 /tmp/dcqcn_rp.py`, a from-the-spec re-implementation
/// (rates: Python ints with `//`; alpha: IEEE doubles; cut: `math.floor(rc*(1-a/2))`), e.g.:
///
/// ```text
/// rt=rc; rc=math.floor(rc*(1-a/2)); a=(1-g)*a+g        # eq. 1 on CNP
/// a=a*(1-g)                                            # eq. 2, alpha timer
/// hi,lo=max(ts,bs),min(ts,bs)                          # after ts+=1 or bs+=1
/// FR if hi<F; HI (rt+=(lo-F)*HAI) if lo>F; else AI (rt+=AI); rt=min(rt,L); rc=(rt+rc)//2
/// ```
///
/// Hand checks of the first rows:
/// - CNP 1 at 0: Rt = 40e9, Rc = 40e9 × (1 − 1/2) = 20e9, alpha = (255/256)·1 + 1/256 = 1.0.
/// - 55 µs: alpha = 255/256 = 0.99609375 (0x3FEFE00000000000); timer stage 1 < F: fast
///   recovery Rc = (40e9 + 20e9) / 2 = 30e9.
/// - CNP 2 at 60 µs: Rt = 30e9, Rc = 30e9 × (1 − 0.99609375/2) = 30e9 × 257/512 =
///   15 058 593 750; alpha = (255/256)² + 1/256 = 65281/65536 (0x3FEFE02000000000).
/// - timer stages 1..4: fast recovery, Rc = (30e9 + Rc) / 2 floored: 22 529 296 875,
///   26 264 648 437, 28 132 324 218, 29 066 162 109.
/// - stage 5 = F: additive, Rt = 30.04e9, Rc = floor((30.04e9 + 29 066 162 109) / 2) =
///   29 553 081 054; six byte expiries (stages (5, 1..6), min 5 not > F): additive each.
/// - timer stage 6 with byte stage 6: hyper, i = 6 − 5 = 1, Rt = 30.28e9 + 0.4e9.
/// - CNP 3 at 446 µs cuts with the decayed alpha.
const RP_EXPECTED: &[RpRow] = &[
    (
        0,
        "rx_cnp#1",
        20_000_000_000,
        40_000_000_000,
        0x3ff0000000000000,
        0,
        0,
    ),
    (
        55_000,
        "timer:alpha",
        20_000_000_000,
        40_000_000_000,
        0x3fefe00000000000,
        0,
        0,
    ),
    (
        55_000,
        "timer:rate_increase",
        30_000_000_000,
        40_000_000_000,
        0x3fefe00000000000,
        1,
        0,
    ),
    (
        60_000,
        "rx_cnp#2",
        15_058_593_750,
        30_000_000_000,
        0x3fefe02000000000,
        0,
        0,
    ),
    (
        115_000,
        "timer:alpha",
        15_058_593_750,
        30_000_000_000,
        0x3fefc03fe0000000,
        0,
        0,
    ),
    (
        115_000,
        "timer:rate_increase",
        22_529_296_875,
        30_000_000_000,
        0x3fefc03fe0000000,
        1,
        0,
    ),
    (
        170_000,
        "timer:alpha",
        22_529_296_875,
        30_000_000_000,
        0x3fefa07fa0200000,
        1,
        0,
    ),
    (
        170_000,
        "timer:rate_increase",
        26_264_648_437,
        30_000_000_000,
        0x3fefa07fa0200000,
        2,
        0,
    ),
    (
        225_000,
        "timer:alpha",
        26_264_648_437,
        30_000_000_000,
        0x3fef80df207fe000,
        2,
        0,
    ),
    (
        225_000,
        "timer:rate_increase",
        28_132_324_218,
        30_000_000_000,
        0x3fef80df207fe000,
        3,
        0,
    ),
    (
        280_000,
        "timer:alpha",
        28_132_324_218,
        30_000_000_000,
        0x3fef615e415f6020,
        3,
        0,
    ),
    (
        280_000,
        "timer:rate_increase",
        29_066_162_109,
        30_000_000_000,
        0x3fef615e415f6020,
        4,
        0,
    ),
    (
        335_000,
        "timer:alpha",
        29_066_162_109,
        30_000_000_000,
        0x3fef41fce31e00c0,
        4,
        0,
    ),
    (
        335_000,
        "timer:rate_increase",
        29_553_081_054,
        30_040_000_000,
        0x3fef41fce31e00c0,
        5,
        0,
    ),
    (
        340_000,
        "tx_data#4",
        29_816_540_527,
        30_080_000_000,
        0x3fef41fce31e00c0,
        5,
        1,
    ),
    (
        345_000,
        "tx_data#5",
        29_968_270_263,
        30_120_000_000,
        0x3fef41fce31e00c0,
        5,
        2,
    ),
    (
        350_000,
        "tx_data#6",
        30_064_135_131,
        30_160_000_000,
        0x3fef41fce31e00c0,
        5,
        3,
    ),
    (
        355_000,
        "tx_data#7",
        30_132_067_565,
        30_200_000_000,
        0x3fef41fce31e00c0,
        5,
        4,
    ),
    (
        360_000,
        "tx_data#8",
        30_186_033_782,
        30_240_000_000,
        0x3fef41fce31e00c0,
        5,
        5,
    ),
    (
        365_000,
        "tx_data#9",
        30_233_016_891,
        30_280_000_000,
        0x3fef41fce31e00c0,
        5,
        6,
    ),
    (
        390_000,
        "timer:alpha",
        30_233_016_891,
        30_280_000_000,
        0x3fef22bae63ae2bf,
        5,
        6,
    ),
    (
        390_000,
        "timer:rate_increase",
        30_456_508_445,
        30_680_000_000,
        0x3fef22bae63ae2bf,
        6,
        6,
    ),
    (
        391_000,
        "tx_data#10",
        30_768_254_222,
        31_080_000_000,
        0x3fef22bae63ae2bf,
        6,
        7,
    ),
    (
        445_000,
        "timer:alpha",
        30_768_254_222,
        31_080_000_000,
        0x3fef03982b54a7dc,
        6,
        7,
    ),
    (
        445_000,
        "timer:rate_increase",
        31_324_127_111,
        31_880_000_000,
        0x3fef03982b54a7dc,
        7,
        7,
    ),
    (
        446_000,
        "rx_cnp#11",
        16_144_630_983,
        31_324_127_111,
        0x3fef049493295334,
        0,
        0,
    ),
];

#[test]
fn rp_equations_through_fast_recovery_additive_and_hyper_increase() {
    let mut m = Rp::new(RpParams::default()).unwrap();
    let events = [
        tx(0, 0, 1_000_000), // before any CNP: unthrottled, nothing counted, no decision
        cnp(0, 1),
        cnp(60_000, 2),
        tx(338_000, 3, 4_000_000), // byte counter 4e6 < B: no decision
        tx(340_000, 4, 6_000_000), // reaches 10^7: expires with remainder 0
        tx(345_000, 5, 10_000_000),
        tx(350_000, 6, 10_000_000),
        tx(355_000, 7, 10_000_000),
        tx(360_000, 8, 10_000_000),
        tx(365_000, 9, 10_000_000),
        tx(391_000, 10, 10_000_000),
        cnp(446_000, 11),
    ];
    let out = replay(&mut m, &events, 446_000);
    let got: Vec<(u64, String, u64, u64, u64, u64, u64)> = out
        .iter()
        .map(|d| {
            assert_eq!(d.outputs.rate_bps, Some(u64_of(d, "Rc")), "rate_bps is Rc");
            assert_eq!(u64_of(d, "byte_counter"), 0);
            (
                d.t_ns,
                cause_name(d),
                u64_of(d, "Rc"),
                u64_of(d, "Rt"),
                f64_bits_of(d, "alpha"),
                u64_of(d, "timer_stage"),
                u64_of(d, "byte_stage"),
            )
        })
        .collect();
    let want: Vec<(u64, String, u64, u64, u64, u64, u64)> = RP_EXPECTED
        .iter()
        .map(|&(t, c, rc, rt, a, ts, bs)| (t, c.to_string(), rc, rt, a, ts, bs))
        .collect();
    assert_eq!(got, want);
    // After CNP 3 both timers restart from 446 µs: next deadline 446 + 55 = 501 µs.
    assert_eq!(m.next_timer_ns(), Some(501_000));
}

#[test]
fn rp_byte_counter_keeps_its_remainder_and_shows_it_in_state() {
    let mut m = Rp::new(RpParams::default()).unwrap();
    // CNP at 0 (Rc 20e9, Rt 40e9), then 2.5 × B in one packet: one expiry per packet, the
    // remainder 1.5e7 stays; byte stage 1 < F: fast recovery Rc = (40e9 + 20e9)/2 = 30e9.
    let out = replay(&mut m, &[cnp(0, 0), tx(1_000, 1, 25_000_000)], 1_000);
    assert_eq!(out.len(), 2);
    assert_eq!(u64_of(&out[1], "Rc"), 30_000_000_000);
    assert_eq!(u64_of(&out[1], "byte_counter"), 15_000_000);
    // The next packet, even of 0 bytes, expires the counter again: 1.5e7 − 1e7 = 5e6 left,
    // byte stage 2: Rc = (40e9 + 30e9)/2 = 35e9.
    let out = replay(&mut m, &[tx(2_000, 2, 0)], 2_000);
    assert_eq!(out.len(), 1);
    assert_eq!(u64_of(&out[0], "Rc"), 35_000_000_000);
    assert_eq!(u64_of(&out[0], "byte_counter"), 5_000_000);
}

#[test]
fn rp_clamps_rc_at_min_rate_and_alpha_timer_stops_at_zero() {
    // g = 1 makes alpha 1 after every CNP and 0 after one alpha period (eq. 2: (1−1)·1).
    let p = RpParams {
        dce_tcp_g: 1.0,
        rpg_min_rate: 15_000, // 15 Gbps
        ..RpParams::default()
    };
    let mut m = Rp::new(p).unwrap();
    // CNP 1: 40e9 → 20e9. CNP 2 (1 µs later, alpha still 1): 20e9 → 10e9, clamped to 15e9.
    let out = replay(&mut m, &[cnp(0, 0), cnp(1_000, 1)], 1_000);
    assert_eq!(u64_of(&out[1], "Rc"), 15_000_000_000);
    assert_eq!(u64_of(&out[1], "Rt"), 20_000_000_000);
    // At 56 µs alpha = 0 and the alpha timer stops; the increase timer keeps running.
    let out = replay(&mut m, &[], 56_000);
    assert_eq!(cause_name(&out[0]), "timer:alpha");
    assert_eq!(f64_bits_of(&out[0], "alpha"), 0);
    assert_eq!(m.next_timer_ns(), Some(56_000 + 55_000));
}

// ---------------------------------------------------------------------------------------
// DCQCN-2: CNP pacing, N = 50 µs.

#[rstest]
// Marks every 10 µs from 0 to 100 µs. CNP at 0 (none sent before). Marks at 10..40 µs are
// within 50 µs of it: one CNP when that interval ends (timer, 50 µs). The timer fires before
// the mark at 50 µs (C-5), so that mark and those at 60..90 fall in the interval [50, 100):
// CNP at 100 µs; the mark at 100 µs likewise gives the CNP at 150 µs.
#[case::every_10us(
    &[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    &[(0, "rx_data#0"), (50_000, "timer:cnp_interval"), (100_000, "timer:cnp_interval"),
      (150_000, "timer:cnp_interval")]
)]
// Marks at 0..40 µs, then one at 120 µs: 120 − 50 = 70 µs >= N since the last CNP, so it is
// sent at once.
#[case::gap_then_immediate(
    &[0, 10, 20, 30, 40, 120],
    &[(0, "rx_data#0"), (50_000, "timer:cnp_interval"), (120_000, "rx_data#5")]
)]
// A mark exactly N after the last CNP is not "in the last N": sent at once.
#[case::exactly_n_later(&[0, 50], &[(0, "rx_data#0"), (50_000, "rx_data#1")])]
fn np_paces_cnps(#[case] marks_us: &[u64], #[case] want: &[(u64, &str)]) {
    let mut m = Np::new(NpParams::default()).unwrap();
    let events: Vec<Event> = marks_us
        .iter()
        .enumerate()
        .map(|(i, &us)| rx(us * 1_000, i as u64, 3))
        .collect();
    let out = replay(&mut m, &events, 1_000_000);
    let got: Vec<(u64, String)> = out.iter().map(|d| (d.t_ns, cause_name(d))).collect();
    let want: Vec<(u64, String)> = want.iter().map(|&(t, c)| (t, c.to_string())).collect();
    assert_eq!(got, want);
    for d in &out {
        assert_eq!(d.outputs.send_cnp, Some(true));
        assert_eq!(u64_of(d, "last_cnp_ns"), d.t_ns);
    }
}

#[test]
fn np_ignores_unmarked_packets_and_keeps_flows_apart() {
    let mut m = Np::new(NpParams::default()).unwrap();
    let mark = |t, flow, i, ecn| {
        ev(
            t,
            flow,
            i,
            EventKind::RxData {
                psn: 0,
                bytes: 1000,
                opcode: 0x04,
                ecn,
                send_ts_ns: None,
            },
        )
    };
    // ECT(0) = 2 and ECT(1) = 1 are not marks; flow 1's mark does not delay flow 0's.
    let events = [
        mark(0, 0, 0, 2),
        mark(1_000, 0, 1, 1),
        mark(2_000, 0, 2, 3),
        mark(3_000, 1, 0, 3),
        mark(4_000, 0, 3, 3), // within 50 µs of flow 0's CNP at 2 µs: due at 52 µs
    ];
    let out = replay(&mut m, &events, 1_000_000);
    let got: Vec<(u64, u32, String)> = out
        .iter()
        .map(|d| (d.t_ns, d.flow, cause_name(d)))
        .collect();
    assert_eq!(
        got,
        vec![
            (2_000, 0, "rx_data#2".to_string()),
            (3_000, 1, "rx_data#0".to_string()),
            (52_000, 0, "timer:cnp_interval".to_string()),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// DCQCN-1: CP marking probability, Kmin 5000 B, Kmax 200 000 B, Pmax 0.01.

#[rstest]
#[case::empty(0, 0.0)]
#[case::at_kmin(5_000, 0.0)]
// (5001 − 5000) / 195000 × 0.01 = 5.128205128205128e-08 (python3: (1/195000)*0.01)
#[case::just_above_kmin(5_001, 5.128205128205128e-08)]
// (102500 − 5000) / 195000 = 0.5 exactly; × 0.01 = 0.005
#[case::midway(102_500, 0.005)]
#[case::at_kmax(200_000, 0.01)]
#[case::above_kmax(200_001, 1.0)]
fn cp_marking_probability(#[case] q: u64, #[case] p: f64) {
    assert_eq!(
        marking_probability(q, &RedParams::default()).to_bits(),
        p.to_bits()
    );
}

#[test]
fn cp_dctcp_cutoff_when_kmin_equals_kmax() {
    let red = RedParams {
        kmin_bytes: 40_000,
        kmax_bytes: 40_000,
        pmax: 1.0,
    };
    red.validate().unwrap();
    assert_eq!(marking_probability(40_000, &red), 0.0);
    assert_eq!(marking_probability(40_001, &red), 1.0);
}

/// A generator that replays fixed words, to pin the comparison.
struct Fixed(Vec<u32>);
impl UniformSource for Fixed {
    fn next_u32(&mut self) -> u32 {
        self.0.remove(0)
    }
}

#[test]
fn cp_mark_decision_uses_the_injected_generator() {
    let red = RedParams::default();
    // p = 0.005 at q = 102 500: marks iff u / 2^32 < 0.005, i.e. u <= 21474836
    // (0.005 × 2^32 = 21474836.48, python3: 0.005*2**32).
    let mut g = Fixed(vec![21_474_836, 21_474_837]);
    assert!(should_mark(102_500, &red, &mut g));
    assert!(!should_mark(102_500, &red, &mut g));
    // p = 0 and p = 1 draw nothing (the generator is empty and would panic if drawn).
    let mut empty = Fixed(vec![]);
    assert!(!should_mark(5_000, &red, &mut empty));
    assert!(should_mark(200_001, &red, &mut empty));
    // Seeded SplitMix64 is reproducible: the same seed gives the same marks.
    let marks = |seed| {
        let mut g = SplitMix64::new(seed);
        (0..64)
            .map(|i| should_mark(5_000 + i * 3_000, &red, &mut g))
            .collect::<Vec<_>>()
    };
    assert_eq!(marks(7), marks(7));
    // The boundary u / 2^32 = p itself does not mark ("marks when u / 2^32 < p"): at q = 2,000
    // between Kmin 1,000 and Kmax 3,000 with Pmax 1, p = 1,000 / 2,000 = 0.5 exactly, and
    // u = 2^31 gives u / 2^32 = 0.5; one less marks. (p = 0.005 above cannot tell `<` from
    // `<=`: 0.005 × 2^32 is not an integer. cargo-mutants, docs/conformance.md.)
    let half = RedParams {
        kmin_bytes: 1_000,
        kmax_bytes: 3_000,
        pmax: 1.0,
    };
    let mut g = Fixed(vec![1 << 31, (1 << 31) - 1]);
    assert!(!should_mark(2_000, &half, &mut g));
    assert!(should_mark(2_000, &half, &mut g));
}

// ---------------------------------------------------------------------------------------
// DCQCN-4, dcqcn-nic, NVIDIA defaults: line 100 Gbps, G = 1019, alpha period 1 µs,
// alpha0 1023, monitor period 4 µs, rpg_gd 11, min_dec_fac 50.

#[test]
fn nic_fixed_point_alpha_and_one_cut_per_monitor_period() {
    let mut m = RpNic::new(NicParams::default()).unwrap();
    // python3 /tmp/dcqcn_nic.py (integers only):
    //   aup(a, arrived) = min(((1019*a) >> 10) + 5, 1023) if arrived else (1019*a) >> 10
    //   cut(rc, a) = max(rc - min((rc*a) >> 11, rc*50//100), 1e6)
    // 1 µs: 1019 × 1023 = 1042437, >> 10 = 1018; 2 µs: 1013; 3 µs: 1008; 4 µs: 1003.
    // 4 µs cut (alpha before the cut, C-5 order): 100e9 × 1003 / 2048 = 48 974 609 375 <
    //   50e9 (min_dec_fac bound), Rc = 51 025 390 625; no increase yet, so Rt stays 100e9.
    // CNPs at 4.5, 6 and 7.5 µs, all in the period [4, 8) µs: one cut, at 8 µs.
    // 5 µs (CNP 4.5 flagged): (1019 × 1003 >> 10) + 5 = 998 + 5 = 1003; 6 µs (timer before
    //   the CNP at 6 µs): 998; 7 µs (flagged): 998; 8 µs (flagged): 998.
    // 8 µs cut: 51 025 390 625 × 998 >> 11 = 24 864 912 033, Rc = 26 160 478 592.
    let events = [cnp(0, 0), cnp(4_500, 1), cnp(6_000, 2), cnp(7_500, 3)];
    let out = replay(&mut m, &events, 8_000);
    let got: Vec<(u64, String, u64, u64, u64)> = out
        .iter()
        .map(|d| {
            (
                d.t_ns,
                cause_name(d),
                u64_of(d, "Rc"),
                u64_of(d, "Rt"),
                u64_of(d, "alpha"),
            )
        })
        .collect();
    let l = 100_000_000_000;
    let rc1 = 51_025_390_625;
    let want: Vec<(u64, String, u64, u64, u64)> = [
        (0, "rx_cnp#0", l, l, 1023),
        (1_000, "timer:alpha", l, l, 1018),
        (2_000, "timer:alpha", l, l, 1013),
        (3_000, "timer:alpha", l, l, 1008),
        (4_000, "timer:alpha", l, l, 1003),
        (4_000, "timer:rate_decrease", rc1, l, 1003),
        (4_500, "rx_cnp#1", rc1, l, 1003),
        (5_000, "timer:alpha", rc1, l, 1003), // value unchanged, flag cleared
        (6_000, "timer:alpha", rc1, l, 998),
        (6_000, "rx_cnp#2", rc1, l, 998),
        (7_000, "timer:alpha", rc1, l, 998),
        (7_500, "rx_cnp#3", rc1, l, 998),
        (8_000, "timer:alpha", rc1, l, 998),
        (8_000, "timer:rate_decrease", 26_160_478_592, l, 998),
    ]
    .iter()
    .map(|&(t, c, rc, rt, a)| (t, c.to_string(), rc, rt, a))
    .collect();
    assert_eq!(got, want);
    // Without further CNPs alpha decays from 998 to 0 in 461 periods (python3: count
    // a=(1019*a)>>10 from 998 until 0), the last at 8 + 461 = 469 µs, and its timer stops.
    // Meanwhile the increase timer (restarted by the 8 µs cut) fires at 308 µs. Afterwards
    // only the increase timer remains, next at 608 µs.
    let out = replay(&mut m, &[], 469_000);
    let alphas: Vec<&Decision> = out
        .iter()
        .filter(|d| cause_name(d) == "timer:alpha")
        .collect();
    assert_eq!(alphas.len(), 461);
    assert_eq!(alphas.last().unwrap().t_ns, 469_000);
    assert_eq!(u64_of(alphas.last().unwrap(), "alpha"), 0);
    let incs: Vec<u64> = out
        .iter()
        .filter(|d| cause_name(d) == "timer:rate_increase")
        .map(|d| d.t_ns)
        .collect();
    assert_eq!(incs, vec![308_000]);
    assert_eq!(m.next_timer_ns(), Some(608_000));
}

#[rstest]
// rate_to_set_on_first_cnp = 40 000 Mbps: Rc = Rt = 40e9 at the first CNP, which cuts no
// further (no rate_decrease at 4 µs).
#[case::rate_on_first_cnp(NicParams { rate_to_set_on_first_cnp: 40_000, ..NicParams::default() },
    40_000_000_000, None)]
// min_dec_fac 90: a cut keeps >= 90 % of Rc: 100e9 − min(48.97e9, 10e9) = 90e9.
#[case::min_dec_fac(NicParams { rpg_min_dec_fac: 90, ..NicParams::default() },
    100_000_000_000, Some(90_000_000_000))]
// rpg_gd 10 (cut = Rc × alpha / 1024): 100e9 × 1003 >> 10 = 97.9e9, bounded by 50 %: 50e9.
#[case::gd10(NicParams { rpg_gd: 10, ..NicParams::default() },
    100_000_000_000, Some(50_000_000_000))]
// rpg_gd 10 and min_dec_fac 0: 100e9 − 97 949 218 750 = 2 050 781 250.
#[case::gd10_fac0(NicParams { rpg_gd: 10, rpg_min_dec_fac: 0, ..NicParams::default() },
    100_000_000_000, Some(2_050_781_250))]
fn nic_first_cut_variants(
    #[case] p: NicParams,
    #[case] rc_after_cnp: u64,
    #[case] rc_after_cut: Option<u64>,
) {
    let mut m = RpNic::new(p).unwrap();
    let out = replay(&mut m, &[cnp(0, 0)], 4_000);
    assert_eq!(u64_of(&out[0], "Rc"), rc_after_cnp);
    let cut: Vec<u64> = out
        .iter()
        .filter(|d| cause_name(d) == "timer:rate_decrease")
        .map(|d| u64_of(d, "Rc"))
        .collect();
    assert_eq!(cut, rc_after_cut.into_iter().collect::<Vec<_>>());
}

#[test]
fn nic_increase_and_target_clamp() {
    // Defaults: F = 1, R_AI = 5 Mbps, T = 300 µs, clamp_tgt_rate_after_time_inc = true.
    let mut m = RpNic::new(NicParams::default()).unwrap();
    // First cut at 4 µs: Rc 51 025 390 625, Rt 100e9; increase timer restarted: 304 µs.
    let out = replay(&mut m, &[cnp(0, 0)], 304_000);
    let inc: Vec<&Decision> = out
        .iter()
        .filter(|d| cause_name(d) == "timer:rate_increase")
        .collect();
    assert_eq!(inc.len(), 1);
    assert_eq!(inc[0].t_ns, 304_000);
    // Timer stage 1, byte stage 0: max 1 = F, min 0: additive. Rt = min(100e9 + 5e6, 100e9)
    // = 100e9, Rc = floor((100e9 + 51 025 390 625) / 2) = 75 512 695 312.
    assert_eq!(u64_of(inc[0], "Rc"), 75_512_695_312);
    assert_eq!(u64_of(inc[0], "Rt"), 100_000_000_000);
    // A CNP at 305 µs is cut at the next monitor phase point, 308 µs. A timer increase
    // happened since the last cut, so Rt = Rc = 75 512 695 312 first.
    // alpha (python3, aup as above): 1023 decays without a flag at 1..305 µs (the 305 µs
    // timer precedes the CNP at 305 µs) to 161; 306 µs flagged: 165; 307: 164; 308: 163.
    // Cut: 75 512 695 312 × 163 >> 11 = 6 010 043 621 (< 50 %), Rc = 69 502 651 691.
    let out = replay(&mut m, &[cnp(305_000, 1)], 308_000);
    let cut = out
        .iter()
        .find(|d| cause_name(d) == "timer:rate_decrease")
        .unwrap();
    assert_eq!(cut.t_ns, 308_000);
    assert_eq!(u64_of(cut, "alpha"), 163);
    assert_eq!(u64_of(cut, "Rt"), 75_512_695_312);
    assert_eq!(u64_of(cut, "Rc"), 69_502_651_691);
}

// ---------------------------------------------------------------------------------------
// C-7: parameters.

#[rstest]
#[case::zero_line(RpParams { line_rate_bps: 0, ..RpParams::default() }, "line_rate_bps")]
#[case::huge_line(RpParams { line_rate_bps: u64::MAX, ..RpParams::default() }, "line_rate_bps")]
#[case::zero_t(RpParams { rpg_time_reset: 0, ..RpParams::default() }, "rpg_time_reset")]
#[case::zero_b(RpParams { rpg_byte_reset: 0, ..RpParams::default() }, "rpg_byte_reset")]
#[case::zero_f(RpParams { rpg_threshold: 0, ..RpParams::default() }, "rpg_threshold")]
#[case::ai_above_line(RpParams { rpg_ai_rate: 40_001, ..RpParams::default() }, "rpg_ai_rate")]
#[case::hai_above_line(RpParams { rpg_hai_rate: 1 << 60, ..RpParams::default() }, "rpg_hai_rate")]
#[case::zero_min(RpParams { rpg_min_rate: 0, ..RpParams::default() }, "rpg_min_rate")]
#[case::g_zero(RpParams { dce_tcp_g: 0.0, ..RpParams::default() }, "dce_tcp_g")]
#[case::g_nan(RpParams { dce_tcp_g: f64::NAN, ..RpParams::default() }, "dce_tcp_g")]
#[case::g_above_one(RpParams { dce_tcp_g: 1.5, ..RpParams::default() }, "dce_tcp_g")]
#[case::zero_k(RpParams { dce_tcp_rtt: 0, ..RpParams::default() }, "dce_tcp_rtt")]
#[case::alpha_neg(RpParams { initial_alpha_value: -0.1, ..RpParams::default() }, "initial_alpha_value")]
#[case::alpha_inf(RpParams { initial_alpha_value: f64::INFINITY, ..RpParams::default() }, "initial_alpha_value")]
fn rp_params_rejected(#[case] p: RpParams, #[case] name: &str) {
    let e = p.validate().unwrap_err();
    assert_eq!(e.name, name);
    assert!(Rp::new(p).is_err());
    assert!(e.to_string().contains(name), "{e}");
}

#[rstest]
#[case::g(NicParams { dce_tcp_g: 1024, ..NicParams::default() }, "dce_tcp_g")]
#[case::alpha_period(NicParams { dce_tcp_rtt: 0, ..NicParams::default() }, "dce_tcp_rtt")]
#[case::alpha0(NicParams { initial_alpha_value: 1024, ..NicParams::default() }, "initial_alpha_value")]
#[case::first(NicParams { rate_to_set_on_first_cnp: 100_001, ..NicParams::default() }, "rate_to_set_on_first_cnp")]
#[case::fac(NicParams { rpg_min_dec_fac: 101, ..NicParams::default() }, "rpg_min_dec_fac")]
#[case::min_rate(NicParams { rpg_min_rate: 0, ..NicParams::default() }, "rpg_min_rate")]
#[case::gd(NicParams { rpg_gd: 32, ..NicParams::default() }, "rpg_gd")]
#[case::monitor(NicParams { rate_reduce_monitor_period: 0, ..NicParams::default() }, "rate_reduce_monitor_period")]
#[case::byte_reset(NicParams { rpg_byte_reset: 0, ..NicParams::default() }, "rpg_byte_reset")]
#[case::threshold(NicParams { rpg_threshold: 0, ..NicParams::default() }, "rpg_threshold")]
#[case::time_reset(NicParams { rpg_time_reset: 2_000_000_000, ..NicParams::default() }, "rpg_time_reset")]
fn nic_params_rejected(#[case] p: NicParams, #[case] name: &str) {
    assert_eq!(p.validate().unwrap_err().name, name);
    assert!(RpNic::new(p).is_err());
}

#[test]
fn np_params_and_serde() {
    let e = NpParams {
        min_time_between_cnps: 2_000_000_000,
        ..NpParams::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.name, "min_time_between_cnps");
    assert!(
        NpParams {
            min_time_between_cnps: 0,
            ..NpParams::default()
        }
        .validate()
        .is_ok()
    );
    // Missing keys take the paper defaults; unknown keys are an error (C-7).
    let p: RpParams =
        serde_json::from_str(r#"{"rpg_time_reset": 300, "line_rate_bps": 100000000000}"#).unwrap();
    assert_eq!(p.rpg_time_reset, 300);
    assert_eq!(p.rpg_threshold, 5);
    assert_eq!(p.line_rate_bps, 100_000_000_000);
    assert!(serde_json::from_str::<RpParams>(r#"{"rpg_time_rest": 300}"#).is_err());
    assert!(
        serde_json::from_str::<NicParams>(r#"{"base_rtt_ns": 5000, "mtu_bytes": 1024}"#).is_ok()
    );
    assert!(serde_json::from_str::<NpParams>(r#"{"kmin": 1}"#).is_err());
    assert!(serde_json::from_str::<RedParams>(r#"{"pmax": 0.5}"#).is_ok());
    let bad = RedParams {
        kmin_bytes: 10,
        kmax_bytes: 5,
        pmax: 0.1,
    };
    assert_eq!(bad.validate().unwrap_err().name, "kmin_bytes");
    let bad = RedParams {
        pmax: 1.5,
        ..RedParams::default()
    };
    assert_eq!(bad.validate().unwrap_err().name, "pmax");
    assert_eq!(Rp::new(RpParams::default()).unwrap().name(), "dcqcn");
    assert_eq!(
        RpNic::new(NicParams::default()).unwrap().name(),
        "dcqcn-nic"
    );
    assert_eq!(Np::new(NpParams::default()).unwrap().name(), "dcqcn-np");
}
