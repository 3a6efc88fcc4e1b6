//! Unit tests of the comparison: [`diff`] and [`StreamDiff`] give the same report on each
//! hand-made pair of streams ([`both`]).

use ccreplay_reference_cc::{Cause, Decision, Outputs, State, StateValue};

use super::report::since;
use super::*;

#[test]
fn text_times_are_microseconds_since_the_first_decision() {
    let r = DiffReport {
        flows: Vec::new(),
        t0_ns: Some(1_735_689_600_000_005_366),
    };
    // 1735689600000006246 - 1735689600000005366 = 880 ns; 5285 is 81 ns before t0;
    // 1 s + 2 ns after it is 1,000,000.002 µs.
    assert_eq!(since(&r, 1_735_689_600_000_006_246), "+0.880 µs");
    assert_eq!(since(&r, 1_735_689_600_000_005_285), "-0.081 µs");
    assert_eq!(since(&r, 1_735_689_601_000_005_368), "+1000000.002 µs");
    assert_eq!(since(&r, 1_735_689_600_000_005_366), "+0.000 µs");
}

const NAMES: &[&str] = &["W", "U"];

fn dec(flow: u32, index: u64, window: u64, u: f64) -> Decision {
    Decision {
        t_ns: 100 * index,
        flow,
        cause: Cause::Event {
            kind: "rx_ack",
            index,
        },
        outputs: Outputs {
            window_bytes: Some(window),
            rate_bps: Some(window * 8),
            ..Outputs::default()
        },
        state: State::new(NAMES, &[StateValue::U64(window), StateValue::F64(u)]),
    }
}

fn side(ds: &[Decision]) -> Side {
    let mut s = Side::default();
    for d in ds {
        s.push(d);
    }
    s
}

/// [`diff`] of the two sides, checked against [`StreamDiff`] fed them in turn, a decision
/// of each: the same report, field for field.
fn both(r: &[Decision], d: &[Decision], opts: &DiffOptions) -> DiffReport {
    let whole = diff(&side(r), &side(d), opts);
    let mut sd = StreamDiff::new(opts);
    for i in 0..r.len().max(d.len()) {
        if let Some(x) = r.get(i) {
            sd.push(Which::Reference, x);
        }
        if let Some(x) = d.get(i) {
            sd.push(Which::Dut, x);
        }
    }
    assert!(sd.in_order());
    assert_eq!(format!("{:?}", sd.finish()), format!("{whole:?}"));
    whole
}

#[test]
fn identical_streams_conform() {
    let a = [
        dec(0, 0, 1000, 0.5),
        dec(0, 1, 1100, 0.25),
        dec(1, 0, 900, 1.0),
    ];
    let r = both(
        &a,
        &a,
        &DiffOptions {
            state: StateCompare::All,
            ..Default::default()
        },
    );
    assert!(r.ok());
    assert_eq!(r.flows.len(), 2);
    assert_eq!(r.reference_count(), 3);
}

#[test]
fn first_divergence_missing_and_extra() {
    let r = [
        dec(0, 0, 1000, 0.5),
        dec(0, 1, 1100, 0.25),
        dec(0, 2, 1200, 0.25),
    ];
    // The DUT gets event 1 wrong by 80 bytes, skips event 2 and answers an event 3.
    let d = [
        dec(0, 0, 1000, 0.5),
        dec(0, 1, 1180, 0.25),
        dec(0, 3, 1300, 0.25),
    ];
    let rep = both(&r, &d, &DiffOptions::default());
    let f = &rep.flows[0];
    assert_eq!((f.mismatches, f.missing, f.extra), (1, 1, 1));
    let div = f.first.as_ref().unwrap();
    assert_eq!(
        div.reference.unwrap().cause,
        Cause::Event {
            kind: "rx_ack",
            index: 1
        }
    );
    // window 1100 vs 1180: abs 80, rel 80/1100; rate 8800 vs 9440: abs 640.
    assert_eq!(div.fields[0].field, "rate_bps");
    assert_eq!(div.fields[0].abs_err, Some(640.0));
    assert_eq!(div.fields[1].field, "window_bytes");
    assert_eq!(div.fields[1].rel_err, Some(80.0 / 1100.0));
    assert!(!rep.ok());
}

/// A DCQCN reaction point's decision: rate `rc` (and Rc = rc as state).
fn rp(t_ns: u64, cause: Cause, rc: u64) -> Decision {
    Decision {
        t_ns,
        flow: 0,
        cause,
        outputs: Outputs {
            rate_bps: Some(rc),
            ..Outputs::default()
        },
        state: State::new(&["Rc"], &[StateValue::U64(rc)]),
    }
}

fn ev(kind: &'static str, index: u64) -> Cause {
    Cause::Event { kind, index }
}

const RI: Cause = Cause::Timer {
    name: "rate_increase",
};

#[test]
fn a_timer_firing_early_is_the_first_divergence_where_it_fires() {
    // Events: CNP #0 at 1,000 ns, ACK #1 at 1,100, CNP #2 at 1,130, ACK #3 at 1,170, ACK #4
    // at 1,250. Both cut on a CNP (Rc / 2, Rt = Rc before it) and raise Rc to (Rc + Rt) / 2
    // (floored) on the rate-increase timer, every 55 ns; the reference restarts the timer
    // on a cut (R1, R3), the DUT does not (`timer-not-reset`).
    //   cut at 1,000: Rt = 10,000, Rc = 5,000; timer at 1,055: 7,500; 1,110: 8,750.
    //   cut at 1,130: Rt = 8,750, Rc = 4,375. The reference's timer then fires at
    //   1,130 + 55 = 1,185: (4,375 + 8,750) / 2 = 6,562; 1,240: (6,562 + 8,750) / 2 =
    //   7,656. The DUT's keeps its phase: 1,165 (6,562) and 1,220 (7,656).
    //   ACK #3 at 1,170: the reference's Rc is still 4,375, the DUT's already 6,562.
    let common = [
        rp(1_000, ev("rx_cnp", 0), 5_000),
        rp(1_055, RI, 7_500),
        rp(1_100, ev("rx_ack", 1), 7_500),
        rp(1_110, RI, 8_750),
        rp(1_130, ev("rx_cnp", 2), 4_375),
    ];
    let mut r = common.to_vec();
    r.extend([
        rp(1_170, ev("rx_ack", 3), 4_375),
        rp(1_185, RI, 6_562),
        rp(1_240, RI, 7_656),
        rp(1_250, ev("rx_ack", 4), 7_656),
    ]);
    let mut d = common.to_vec();
    d.extend([
        rp(1_165, RI, 6_562),
        rp(1_170, ev("rx_ack", 3), 6_562),
        rp(1_220, RI, 7_656),
        rp(1_250, ev("rx_ack", 4), 7_656),
    ]);
    let opts = DiffOptions {
        state: StateCompare::All,
        ..Default::default()
    };
    let rep = both(&r, &d, &opts);
    let f = &rep.flows[0];
    // Firings pair only at the same ns: 1,055 and 1,110 pair; the reference's 1,185 and
    // 1,240 are missing, the DUT's 1,165 and 1,220 extra. ACK #3 pairs with ACK #3 and
    // differs (4,375 against 6,562); the rest agree.
    assert_eq!((f.mismatches, f.missing, f.extra), (1, 2, 2));
    // The earliest of those, 1,165 (before ACK #3 at 1,170 and 1,185): the DUT's extra
    // firing, where the bug first acts. Paired n-th with n-th, its 3rd firing would have
    // matched the reference's 3rd (1,185) and the first divergence would be ACK #3.
    let div = f.first.as_ref().unwrap();
    assert!(div.reference.is_none());
    let dut = div.dut.unwrap();
    assert_eq!((dut.t_ns, dut.cause), (1_165, RI));
    assert_eq!(
        (div.fields[0].reference.as_str(), div.fields[0].dut.as_str()),
        ("none", "extra")
    );
    // The largest error is ACK #3's, the only pair that differs: 6,562 - 4,375 = 2,187,
    // relative 2,187 / 4,375.
    assert_eq!(
        f.largest[0],
        ("rate_bps".into(), 2_187.0, 2_187.0 / 4_375.0)
    );
    // No event points at a timer divergence.
    assert_eq!(divergence_event(div), None);
}

#[test]
fn divergences_at_one_ns_timers_first_then_events_by_index() {
    // At 2,000 ns the reference decides ACK #5 (rate 100) and ACK #6 (100); the DUT answers
    // ACK #5 with 101, makes an extra NAK decision on event 4 and fires `alpha`, which the
    // reference does not. Every divergence is at 2,000: the timer first (C-5), then the
    // event with the smallest index (the extra on #4, before the mismatch on #5), as a
    // protocol stream orders them.
    let r = [
        rp(2_000, ev("rx_ack", 5), 100),
        rp(2_000, ev("rx_ack", 6), 100),
    ];
    let alpha = Cause::Timer { name: "alpha" };
    let d = [
        rp(2_000, alpha, 100),
        rp(2_000, ev("rx_nak", 4), 100),
        rp(2_000, ev("rx_ack", 5), 101),
        rp(2_000, ev("rx_ack", 6), 100),
    ];
    let rep = both(&r, &d, &DiffOptions::default());
    let f = &rep.flows[0];
    assert_eq!((f.mismatches, f.missing, f.extra), (1, 0, 2));
    assert_eq!(f.first.as_ref().unwrap().dut.unwrap().cause, alpha);
    // Without the timer: the extra on event 4.
    let rep = both(&r, &d[1..], &DiffOptions::default());
    let first = rep.flows[0].first.as_ref().unwrap();
    assert_eq!(first.dut.unwrap().cause, ev("rx_nak", 4));
    assert!(first.reference.is_none());
    // Without it either: the mismatch on #5 (rate 100 against 101).
    let rep = both(&r, &d[2..], &DiffOptions::default());
    let first = rep.flows[0].first.as_ref().unwrap();
    assert_eq!(first.reference.unwrap().cause, ev("rx_ack", 5));
    assert_eq!(first.fields[0].abs_err, Some(1.0));
}

#[test]
fn tolerances_and_state_on_request() {
    let r = [dec(0, 0, 1000, 0.5)];
    let d = [dec(0, 0, 1001, 0.5000000000000001)];
    // Outputs differ by 1 byte (0.1 %) and 8 bps; U by one ulp.
    let strict = both(&r, &d, &DiffOptions::default());
    assert_eq!(strict.mismatches(), 1);
    let opts = DiffOptions {
        tolerances: vec![
            "window_bytes=abs:1".parse().unwrap(),
            "rate_bps=rel:0.001".parse().unwrap(),
        ],
        state: StateCompare::None,
    };
    assert!(both(&r, &d, &opts).ok());
    let opts = DiffOptions {
        state: StateCompare::Fields(vec!["U".into()]),
        ..opts
    };
    let rep = both(&r, &d, &opts);
    assert_eq!(
        rep.flows[0].first.as_ref().unwrap().fields[0].field,
        "state.U"
    );
    assert!("rate_bps=rel".parse::<Tolerance>().is_err());
    assert!("rate_bps=abs:-1".parse::<Tolerance>().is_err());
}

/// `--state all`: the reference's names, then the DUT's names the reference does not have,
/// each once however often the DUT repeats it; a name only one side has is "absent" on the
/// other and differs.
#[test]
fn state_all_compares_the_duts_own_names_once() {
    const DUT_NAMES: &[&str] = &["W", "U", "V", "Q", "V"];
    let r = [dec(0, 0, 1000, 0.5)];
    let mut d = dec(0, 0, 1000, 0.5);
    d.state = State::new(
        DUT_NAMES,
        &[
            StateValue::U64(1000),
            StateValue::F64(0.5),
            StateValue::U64(7),
            StateValue::U64(9),
            StateValue::U64(8),
        ],
    );
    let opts = DiffOptions {
        state: StateCompare::All,
        ..Default::default()
    };
    let rep = both(&r, &[d], &opts);
    let first = rep.flows[0].first.as_ref().unwrap();
    let fields: Vec<(&str, &str, &str)> = first
        .fields
        .iter()
        .map(|f| (f.field.as_ref(), f.reference.as_str(), f.dut.as_str()))
        .collect();
    assert_eq!(
        fields,
        [("state.V", "absent", "7"), ("state.Q", "absent", "9")]
    );
    // Without `--state`, the same pair conforms (the outputs agree).
    assert!(both(&r, &[d], &DiffOptions::default()).ok());
}

/// State values are compared bit for bit (docs/diff.md): 0.0 and -0.0 are equal as numbers but
/// not the same value, so `--state` reports them (abs error 0); equal integers are not.
#[test]
fn state_floats_differ_by_their_bits() {
    let r = [dec(0, 0, 1000, 0.0)];
    let d = [dec(0, 0, 1000, -0.0)];
    let opts = DiffOptions {
        state: StateCompare::Fields(vec!["W".into(), "U".into()]),
        ..Default::default()
    };
    let rep = both(&r, &d, &opts);
    let f = &rep.flows[0].first.as_ref().unwrap().fields;
    assert_eq!(f.len(), 1);
    assert_eq!(
        (
            f[0].field.as_ref(),
            f[0].reference.as_str(),
            f[0].dut.as_str()
        ),
        ("state.U", "0.0", "-0.0")
    );
    assert_eq!(f[0].abs_err, Some(0.0));
}

/// A decision of the same event at another time: the `t` field differs by the gap, in ns.
#[test]
fn a_time_difference_is_its_gap() {
    let r = [dec(0, 3, 1000, 0.5)];
    let mut d = dec(0, 3, 1000, 0.5);
    d.t_ns = r[0].t_ns + 250;
    let rep = both(&r, &[d], &DiffOptions::default());
    let f = &rep.flows[0].first.as_ref().unwrap().fields;
    assert_eq!(
        (
            f[0].field.as_ref(),
            f[0].reference.as_str(),
            f[0].dut.as_str()
        ),
        ("t", "300", "550")
    );
    assert_eq!((f[0].abs_err, f[0].rel_err), (Some(250.0), None));
}

/// States of the same length and values under other names are not the same state: each name
/// one side lacks is "absent" there.
#[test]
fn state_names_count_not_only_values() {
    const OTHER: &[&str] = &["W", "X"];
    let r = [dec(0, 0, 1000, 0.5)];
    let mut d = dec(0, 0, 1000, 0.5);
    d.state = State::new(OTHER, &[StateValue::U64(1000), StateValue::F64(0.5)]);
    let opts = DiffOptions {
        state: StateCompare::All,
        ..Default::default()
    };
    let rep = both(&r, &[d], &opts);
    let f = &rep.flows[0].first.as_ref().unwrap().fields;
    let got: Vec<(&str, &str, &str)> = f
        .iter()
        .map(|f| (f.field.as_ref(), f.reference.as_str(), f.dut.as_str()))
        .collect();
    assert_eq!(
        got,
        [("state.U", "0.5", "absent"), ("state.X", "absent", "0.5")]
    );
}

/// A first divergence that is a decision the DUT did not make names it so.
#[test]
fn a_missing_first_divergence_says_so() {
    let r = [dec(0, 0, 1000, 0.5), dec(0, 1, 1100, 0.5)];
    let d = [dec(0, 1, 1100, 0.5)];
    let rep = both(&r, &d, &DiffOptions::default());
    let first = rep.flows[0].first.as_ref().unwrap();
    assert!(first.dut.is_none());
    let f: Vec<(&str, &str, &str)> = first
        .fields
        .iter()
        .map(|f| (f.field.as_ref(), f.reference.as_str(), f.dut.as_str()))
        .collect();
    assert_eq!(f, [("decision", "present", "missing")]);
}

/// `--state all` on a pair whose outputs agree: an integer state value that differs, and
/// states whose every name differs (the values alike), are each reported.
#[test]
fn state_all_reports_integers_and_renamed_values() {
    const RENAMED: &[&str] = &["A", "B"];
    let opts = DiffOptions {
        state: StateCompare::All,
        ..Default::default()
    };
    let fields = |d: Decision| {
        let rep = both(&[dec(0, 0, 1000, 0.5)], &[d], &opts);
        let first = rep.flows[0].first.clone().unwrap();
        first
            .fields
            .iter()
            .map(|f| format!("{} {} {}", f.field, f.reference, f.dut))
            .collect::<Vec<_>>()
    };
    let mut w = dec(0, 0, 1000, 0.5);
    w.state = State::new(NAMES, &[StateValue::U64(1001), StateValue::F64(0.5)]);
    assert_eq!(fields(w), ["state.W 1000 1001"]);
    let mut renamed = dec(0, 0, 1000, 0.5);
    renamed.state = State::new(RENAMED, &[StateValue::U64(1000), StateValue::F64(0.5)]);
    assert_eq!(
        fields(renamed),
        [
            "state.W 1000 absent",
            "state.U 0.5 absent",
            "state.A absent 1000",
            "state.B absent 0.5"
        ]
    );
}
