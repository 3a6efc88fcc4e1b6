//! Rule coverage of FNCC (issue 17 for FNCC): `check --coverage` counts the rules and branches
//! of the sender `fncc` (`reference_cc::fncc::COVERAGE`: FNCC-1, docs/models/fncc.md S1-S4 and
//! choices 2-6, with the HPCC rules it inherits) and of the receiver `fncc-receiver`
//! (`RECEIVER_COVERAGE`: FNCC-2) that the bundled suite exercises. fncc_dumbbell is an incast
//! through one switch (one INT record per ACK, N always present and positive, no wrap, no
//! drop); fncc_chain (scenarios/bundled/fncc_chain.toml) was built for what it lacks, and its
//! receiver tap fncc_chain_receiver is the suite's `fncc-receiver` trace. Every count is
//! derived here from the traces' events and golden decisions (int_coverage), and every rule
//! must run at least three times but those no capture can hold: a suite change either way
//! fails this test, and docs/conformance.md (FNCC section) changes with it.

mod common;
mod int_coverage;

use common::count;

use std::collections::BTreeMap;

/// `check ARGS --coverage --format json` of `fncc`: rule -> count.
fn coverage(args: &[&str]) -> BTreeMap<String, u64> {
    common::coverage("fncc", args).into_iter().collect()
}

/// The rules fncc_dumbbell exercises: Algorithm 1 on ACK-carried INT, the speedup (inside an
/// RTT too, where Wc keeps its value), the once-per-RTT update, MD, MI and AI, tau clamped,
/// idle ACKs (U_max = 0) and one window clamp.
const EXERCISED: [&str; 11] = [
    "HPCC-5 first INT of a flow",
    "FNCC-1 ACK-carried INT used",
    "S2 U_max = 0",
    "line 8 tau clamped to T",
    "S3 last-hop speedup fires",
    "S4 speedup on an ACK within the RTT",
    "line 22 Wc updated",
    "line 12-13 MD",
    "line 12-13 MI",
    "line 17 AI",
    "HPCC-6 window clamped",
];

/// The known gaps of the bundled suite for `fncc` (docs/conformance.md, FNCC section).
const NEVER: [&str; 13] = [
    // Every ACK of the capture carries INT, on a fixed one-switch route.
    "ACK without INT: no feedback",
    "HPCC-5 path change (nHop or pathID)",
    // Every ACK's record advanced the switch timestamp.
    "HPCC-3 a hop with a zero TS delta",
    // No drop, so no NAK.
    "HPCC-7 NAK: ack.seq = PSN",
    // No switch counter wraps in the 1.5 ms run.
    "HPCC-2 INT ts delta across the 24-bit wrap",
    "HPCC-2 INT txBytes delta across the 20-bit wrap",
    // One switch: one record per ACK, so the max is always record 0 and nothing can tie.
    "INT from more than one hop",
    "S2 most loaded hop is not the last hop (record 0)",
    "S2 tie between record 0 and another hop goes to record 0 (choice 3)",
    // The receiver always counts the ACKed flow itself: N >= 1 on every ACK.
    "S3 N = 0 at a loaded last hop: no speedup",
    "S3 N absent at a loaded last hop: treated as 0, no speedup (choice 4)",
    // U_max is a computed double; it never equals alpha = 1.05 exactly.
    "S3 last hop, U_max = alpha exactly: no speedup (choice 6)",
    // B_0·T·β/N = 3.125 × 5,304 × 0.9 / N = 14,917.5 / N stays inside [1,000, 16,575].
    "S3 speedup window clamped to [w_min, W_init] (choice 5)",
];

/// fncc_dumbbell alone: one switch, so its gaps (kept as the reason fncc_chain exists).
#[test]
fn fncc_dumbbell_exercises_the_speedup_and_leaves_the_listed_gaps() {
    let c = coverage(&["traces/fncc_dumbbell.toml"]);
    assert_eq!(c.len(), 24, "{c:?}");
    for rule in EXERCISED {
        assert!(count(&c, rule) > 0, "{rule} not exercised: {c:?}");
    }
    let never: Vec<&str> = c
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| k.as_str())
        .collect();
    let mut expected = NEVER.to_vec();
    expected.sort();
    assert_eq!(never, expected);
    assert_eq!(EXERCISED.len() + NEVER.len(), c.len());
    // One decision per ACK: 1,256 ACKs, 3 of them each flow's first INT (stored only).
    assert_eq!(count(&c, "HPCC-5 first INT"), 3);
    assert_eq!(count(&c, "FNCC-1 ACK-carried INT used"), 1253);
    // Every Algorithm 1 run is exactly one of MD, MI, AI.
    assert_eq!(
        count(&c, "line 12-13 MD") + count(&c, "line 12-13 MI") + count(&c, "line 17 AI"),
        1253
    );
}

/// Every `fncc` count of the bundled suite, derived from fncc_dumbbell's and fncc_chain's
/// events and golden decisions (Algorithm 1's measurement and Algorithm 2's hop choice
/// recomputed per ACK), equals what `check --coverage` reports; so does each trace's alone.
/// (The suite's total also says no other trace names `fncc`.)
#[test]
fn fncc_counts_follow_from_the_events_and_decisions() {
    let dumbbell = int_coverage::sender_counts("fncc_dumbbell", true);
    let chain = int_coverage::sender_counts("fncc_chain", true);
    let got = coverage(&[]);
    assert_eq!(
        got,
        int_coverage::with_zeros(int_coverage::sum(&dumbbell, &chain), &got)
    );
    let got = coverage(&["traces/fncc_dumbbell.toml"]);
    assert_eq!(got, int_coverage::with_zeros(dumbbell, &got));
    let got = coverage(&["traces/fncc_chain.toml"]);
    assert_eq!(got, int_coverage::with_zeros(chain, &got));
}

/// Every `fncc` rule runs at least three times over the bundled suite, but the two no capture
/// can hold: in the `fncc` dialect every ACK carries N and an INT stack after its AETH
/// (docs/wire.md 4; an ACK without them does not decode), so an ACK read from a capture always
/// has both — a receiver NIC without FNCC-2 writes N = 0 ("unknown", fncc_chain's h4), and no
/// INT switch on the path leaves nHop = 0, which Algorithm 1 runs on (choice 2). `int` or `n`
/// absent comes only from an events file.
#[test]
fn the_bundled_suite_exercises_every_fncc_rule_three_times_but_the_absent_fields() {
    let c = coverage(&[]);
    assert_eq!(c.len(), 24);
    let thin: Vec<(&str, u64)> = c
        .iter()
        .filter(|(_, n)| **n < 3)
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    assert_eq!(
        thin,
        [
            ("ACK without INT: no feedback", 0),
            (
                "S3 N absent at a loaded last hop: treated as 0, no speedup (choice 4)",
                0
            ),
        ]
    );
}

/// `fncc-receiver` over the bundled suite (fncc_chain_receiver is its only trace): every count
/// derived from the `rx_data` events by rescanning the window (t − T_active, t] per packet, N
/// checked against the golden decisions; every rule at least three times but the u16
/// saturation, which needs more than 65,535 flows within T_active = 4,232 ns.
#[test]
fn fncc_receiver_counts_follow_from_the_events_and_decisions() {
    let got = int_coverage::reported("fncc-receiver", &[]);
    assert_eq!(got.len(), 7);
    let want = int_coverage::receiver_counts("fncc_chain_receiver");
    assert_eq!(got, int_coverage::with_zeros(want, &got));
    let thin: Vec<(&str, u64)> = got
        .iter()
        .filter(|(_, n)| **n < 3)
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    assert_eq!(
        thin,
        [("wire.md 4 N above 65535: ack_n saturates at 65535", 0)]
    );
}
