//! Rule coverage of the FNCC sender (issue 17.1 for FNCC): `check --coverage` counts the rules
//! and branches of `fncc` (`reference_cc::fncc::COVERAGE`: FNCC-1, docs/models/fncc.md S1-S4
//! and choices 2-6, with the HPCC rules it inherits) that the bundled suite exercises. Its one
//! FNCC trace, fncc_dumbbell (scenarios/bundled/, traces/README.md), is an incast through one
//! switch: every ACK carries a single INT record (record 0, the last hop), N is always present
//! and positive, no switch counter wraps in its 1.5 ms, no packet is dropped. The rules that
//! needs, and the gaps it leaves, are listed here: a suite change either way fails this test,
//! and docs/conformance.md (FNCC section) changes with it.

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::process::Command;

/// `check ARGS --coverage --format json` of `fncc`: rule -> count.
fn coverage(args: &[&str]) -> BTreeMap<String, u64> {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .arg("check")
        .args(args)
        .args(["--coverage", "--format", "json", "-q"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["coverage"]["fncc"]["rules"]
        .as_array()
        .expect("fncc reports coverage")
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn count(c: &BTreeMap<String, u64>, prefix: &str) -> u64 {
    let hits: Vec<_> = c.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
    assert_eq!(hits.len(), 1, "{prefix}: {c:?}");
    *hits[0].1
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
    "S3 N = 0: no speedup",
    "S3 N absent: treated as 0 (choice 4)",
    // U_max is a computed double; it never equals alpha = 1.05 exactly.
    "S3 last hop, U_max = alpha exactly: no speedup (choice 6)",
    // B_0·T·β/N = 3.125 × 5,304 × 0.9 / N = 14,917.5 / N stays inside [1,000, 16,575].
    "S3 speedup window clamped to [w_min, W_init] (choice 5)",
];

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

/// The whole bundled suite: fncc_dumbbell is the only trace naming `fncc`, so the counts are
/// the same as on it alone.
#[test]
fn the_bundled_suite_counts_fncc_on_fncc_dumbbell_only() {
    assert_eq!(coverage(&[]), coverage(&["traces/fncc_dumbbell.toml"]));
}
