//! The bundled ns-3 traces against single-bug variants of an example DUT (issue 17.3): every
//! mutant of `examples/duts/ns3_dut.py` (`--model hpcc-ns3` or `dcqcn-ns3`, `--bug NAME`) is
//! caught (`diff --state all` exits 1) by exactly the `ns3_*` traces listed below, each at the
//! event where its bug first acts, and the unmodified DUT conforms on every trace of its model.
//! "Where the bug first acts" is the DUT's own word: with `--bug` it runs a correct model beside
//! the mutated one and writes the first request whose replies differ into DUT_BUG_LOG (as
//! `dcqcn_dut.py` does; docs/conformance.md). A trace on which the bug never acts conforms.
//!
//! Which traces catch a mutant follows from their manifests and docs/conformance.md's rule
//! coverage of `hpcc-ns3` / `dcqcn-ns3`: a mutant can only be caught where its rule runs.
//! ns3_hpcc_single: MULTI_RATE 0, FAST_REACT 1, VAR_WIN 1, SAMPLE_FEEDBACK 0, MI_THRESH 3;
//! ns3_hpcc_multi: MULTI_RATE 1, FAST_REACT 1, VAR_WIN 0, SAMPLE_FEEDBACK 1, MI_THRESH 2;
//! ns3_hpcc_nofast: MULTI_RATE 0, FAST_REACT 0, VAR_WIN 1, SAMPLE_FEEDBACK 0, MI_THRESH 5;
//! ns3_hpcc_intmulti: ns3_hpcc_single's flags with INT_MULTI 2;
//! ns3_hpcc_reordered: 204 events of ns3_hpcc_single (50 µs), its first NAK delivered after the
//! next ACK of its flow: MD steps only, no MI, AI or clamp;
//! ns3_dcqcn: CLAMP_TARGET_RATE 0, FAST_RECOVERY_TIMES 1; ns3_dcqcn_clamp: 1 and 2;
//! dcqcn_ns3 (the profile closed loop in `ccreplay sim`, a capture): CLAMP_TARGET_RATE 0,
//! RATE_ON_FIRST_CNP 0.5, no cut reaching MIN_RATE.

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const HPCC: [&str; 5] = [
    "ns3_hpcc_single",
    "ns3_hpcc_multi",
    "ns3_hpcc_nofast",
    "ns3_hpcc_intmulti",
    "ns3_hpcc_reordered",
];
const DCQCN: [&str; 3] = ["ns3_dcqcn", "ns3_dcqcn_clamp", "dcqcn_ns3"];
/// The simulator's own DCQCN runs.
const DCQCN_RUNS: &[&str] = &["ns3_dcqcn", "ns3_dcqcn_clamp"];
const ALL_HPCC: &[&str] = &HPCC;
/// The `hpcc-ns3` simulator runs (ns3_hpcc_reordered is 50 µs of one: too short for MI steps
/// or clamps).
const RUNS: &[&str] = &[
    "ns3_hpcc_single",
    "ns3_hpcc_multi",
    "ns3_hpcc_nofast",
    "ns3_hpcc_intmulti",
];
/// The `hpcc-ns3` traces with MULTI_RATE 0 and VAR_WIN 1 (all but ns3_hpcc_multi).
const NOT_MULTI: &[&str] = &[
    "ns3_hpcc_single",
    "ns3_hpcc_nofast",
    "ns3_hpcc_intmulti",
    "ns3_hpcc_reordered",
];
const ALL_DCQCN: &[&str] = &DCQCN;

/// `hpcc-ns3` mutants: the traces that catch each and whether the outputs alone (`rate_bps`,
/// `window_bytes`) show it on some trace. The coverage counts quoted are docs/conformance.md's
/// (single / multi / nofast / intmulti / reordered).
const HPCC_MUTANTS: [(&str, &[&str], bool); 13] = [
    // N5 txBytes across the 20-bit wrap: 3 / 3 / 3 / 3 / 1; ts across the 24-bit wrap:
    // 6 / 5 / 4 / 5 / 1 (reordered: the late NAK's INT is older than the stored records, so
    // both of its deltas wrap).
    ("tx-nowrap", ALL_HPCC, true),
    ("ts-nowrap", ALL_HPCC, true),
    // Every trace queues (N9 MD runs 389 / 331 / 26 / 343 / 63 times): min(qLen) > 0
    // somewhere.
    ("qlen-bytes", ALL_HPCC, true),
    // MULTI_RATE 1 only in ns3_hpcc_multi.
    ("multi-rate-ignored", &["ns3_hpcc_multi"], true),
    // Each flow's second ACK is inside its first RTT: a fast react (FAST_REACT 1) or ignored
    // (FAST_REACT 0), a committed update for the mutant.
    ("update-every-ack", ALL_HPCC, true),
    // MI runs 79 / 50 / 8 / 89 / 0 times, and the first MI of a run of AI steps is at
    // incStage = MI_THRESH exactly (incStage grows by 1 from 0), where `>` still takes AI.
    ("stage-off-by-one", RUNS, true),
    // FAST_REACT 1 in all but nofast.
    (
        "fast-react-ignored",
        &[
            "ns3_hpcc_single",
            "ns3_hpcc_multi",
            "ns3_hpcc_intmulti",
            "ns3_hpcc_reordered",
        ],
        true,
    ),
    // SAMPLE_FEEDBACK 1 only in multi.
    ("sample-feedback-always", &["ns3_hpcc_multi"], true),
    // N9 rate clamped to MIN_RATE: 11 / 2 / 2 / 2 / 0.
    ("no-min-clamp", RUNS, true),
    // VAR_WIN 1 in all but multi (multi's window is m_win by design).
    ("fixed-window", NOT_MULTI, true),
    // N7 the most loaded hop is not the first: 350 / 0 (MULTI_RATE 1) / 19 / 353 / 63.
    ("first-hop", NOT_MULTI, true),
    // N7 N8 tau clamped to T: 24 / 55 / 108 / 5 / 3.
    ("no-tau-clamp", ALL_HPCC, true),
    // NAKs: 4 / 7 / 4 / 3 / 1. snd_nxt is in the state only with MULTI_RATE 0, and the go-back-N
    // retransmissions (`tx_data`) set it again before the next committed update reads it, so
    // only the state shows the bug, and not in multi's record.
    ("nak-keeps-snd-nxt", NOT_MULTI, false),
];

/// `dcqcn-ns3` mutants, as above (coverage counts: ns3_dcqcn / ns3_dcqcn_clamp / dcqcn_ns3).
const DCQCN_MUTANTS: [(&str, &[&str], bool); 13] = [
    // D3 alpha updates with a CNP: 101 / 77 / 7 (and the cuts that follow read alpha).
    ("alpha-not-rescheduled", ALL_DCQCN, true),
    ("gain-complement", ALL_DCQCN, true),
    // D2 cuts: 43 / 32 / 10; the first check 1 ns early moves every cut's decision by 1 ns.
    ("decrease-no-1ns", ALL_DCQCN, true),
    ("timer-not-restarted", ALL_DCQCN, true),
    // D5 additive increase at timer_stage = F: 3 / 2 / 9 (fast recovery or hyper in the mutants).
    ("fr-times-off-by-one", ALL_DCQCN, true),
    ("hyper-at-threshold", ALL_DCQCN, true),
    // D4 Rt = Rc on CLAMP_TARGET_RATE alone: 0 / 30 / 0.
    ("clamp-ignored", &["ns3_dcqcn_clamp"], true),
    // D7 cut clamped to MIN_RATE: 29 / 28 / 0.
    ("no-min-clamp", DCQCN_RUNS, true),
    // C-3 truncated cuts 14 / 4 / 10 and odd halves 9 / 6 / 24: some with a fraction >= 0.5.
    ("cut-round", ALL_DCQCN, true),
    ("half-round", ALL_DCQCN, true),
    // Rt clamped at the line rate: 8 / 11 / 20.
    ("no-line-clamp", ALL_DCQCN, true),
    // D4 cut after a round (timer_stage != 0): 3 / 2 / 7.
    ("stage-not-reset", ALL_DCQCN, true),
    // D7 first CNP with RATE_ON_FIRST_CNP < 1: 0 / 0 / 3 (the simulator runs keep 1).
    ("first-cnp-full-rate", &["dcqcn_ns3"], true),
];

fn dut(model: &str, bug: Option<&str>) -> String {
    let bug_arg = bug.map_or(String::new(), |b| format!(" --bug {b}"));
    format!("process:python3 examples/duts/ns3_dut.py --model {model}{bug_arg}")
}

/// One `diff --state all --format json` of the DUT on a bundled trace.
struct Diff {
    code: i32,
    /// Some flow's outputs differ (`rate_bps`, `window_bytes`, or a decision missing or extra).
    outputs_differ: bool,
    /// The earliest of the flows' first divergences: (t, flow, the event index its cause
    /// names; None for a timer).
    first: Option<(u64, u64, Option<u64>)>,
    /// What the DUT wrote into DUT_BUG_LOG.
    log: String,
}

fn diff(trace: &str, model: &str, bug: Option<&str>, log: &Path) -> Diff {
    let _ = std::fs::remove_file(log);
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["diff", &format!("traces/{trace}.toml"), "--model", model])
        .args(["--dut", &dut(model, bug), "--state", "all"])
        .args(["--format", "json", "-q"])
        .env("DUT_BUG_LOG", log)
        .current_dir(repo())
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{model} {bug:?} on {trace}: not JSON ({e}), exit {code}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut outputs_differ = false;
    for f in json["flows"].as_array().unwrap() {
        let count = |k: &str| f[k].as_u64().unwrap();
        let out_err = f["largest_error"].as_array().is_some_and(|l| {
            l.iter().any(|e| {
                (e["field"] == "rate_bps" || e["field"] == "window_bytes")
                    && e["abs"].as_f64() > Some(0.0)
            })
        });
        outputs_differ |= count("missing") + count("extra") > 0 || out_err;
    }
    Diff {
        code,
        outputs_differ,
        first: common::earliest_divergence(&json),
        log: std::fs::read_to_string(log).unwrap_or_default(),
    }
}

/// Every mutant of `model` is caught by exactly its listed traces, where it first acts; the
/// correct DUT conforms on all of them; the list is the DUT's own (`bugs_var` in the script).
fn run_model(model: &str, traces: &[&str], bugs_var: &str, mutants: &[(&str, &[&str], bool)]) {
    let out = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sys; sys.path.insert(0, 'examples/duts'); import ns3_dut as d; \
                 print(' '.join(sorted(d.{bugs_var})))"
            ),
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let mut ours: Vec<&str> = mutants.iter().map(|m| m.0).collect();
    ours.sort();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        ours.join(" "),
        "examples/duts/ns3_dut.py {bugs_var}"
    );

    let dir = common::Scratch::new(&format!("mutants-{model}"));
    let evs: BTreeMap<&str, Vec<serde_json::Value>> = traces
        .iter()
        .map(|t| {
            (
                *t,
                common::emitted_events(&format!("traces/{t}.toml"), &dir, t),
            )
        })
        .collect();
    for t in traces {
        let d = diff(t, model, None, &dir.join("ok.log"));
        assert_eq!(
            (d.code, d.first),
            (0, None),
            "the correct DUT differs on {t}"
        );
    }
    let mut wrong = Vec::new();
    for &(bug, caught_by, by_outputs) in mutants {
        let mut caught = Vec::new();
        let mut outputs = false;
        for &t in traces {
            let d = diff(t, model, Some(bug), &dir.join(format!("{bug}.{t}.log")));
            let what = format!("{model} {bug} on {t}");
            if common::judge(&what, d.code, &d.log, d.first, &evs[t], &mut wrong) {
                caught.push(t);
                outputs |= d.outputs_differ;
            }
        }
        assert_eq!(caught, caught_by, "{model} {bug}: caught by");
        assert_eq!(outputs, by_outputs, "{model} {bug}: caught by its outputs");
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn every_hpcc_ns3_mutant_is_caught_where_it_first_acts() {
    run_model("hpcc-ns3", &HPCC, "HPCC_BUGS", &HPCC_MUTANTS);
}

#[test]
fn every_dcqcn_ns3_mutant_is_caught_where_it_first_acts() {
    run_model("dcqcn-ns3", &DCQCN, "DCQCN_BUGS", &DCQCN_MUTANTS);
}

/// The DUT refuses a bug of the other model and a hello for a model it was not started as.
#[test]
fn the_dut_refuses_a_bug_or_model_it_does_not_have() {
    let out = Command::new("python3")
        .args(["examples/duts/ns3_dut.py", "--model", "hpcc-ns3", "--bug"])
        .arg("cut-round") // a dcqcn-ns3 bug
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "argparse's usage error");
    let (code, _, err) = common::run(
        &repo(),
        &[
            "diff",
            "traces/ns3_dcqcn.toml",
            "--dut",
            &dut("hpcc-ns3", None),
            "-q",
        ],
    );
    assert_eq!(code, 3, "a DUT that refuses the model fails the run: {err}");
    assert!(err.contains("not `dcqcn-ns3`"), "{err}");
}
