//! The suite's worth is the bugs it catches (issue 17.3): every single-bug variant of the
//! example Python HPCC DUT (`examples/duts/hpcc_dut.py --bug NAME`, the mistakes of
//! docs/conformance.md) is caught by the bundled HPCC traces — `diff` exits 1 on at least one
//! of them — and the unmodified DUT conforms on all. A mutant that slips through fails this
//! test: the suite needs a trace that exercises its rule. The same for the Python DCQCN
//! reaction point (`examples/duts/dcqcn_dut.py`, both profiles) on roce_dcqcn and
//! dcqcn_increase, each mutant caught where its bug first acts (docs/conformance.md).

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The bundled traces replayed through `hpcc`.
const TRACES: [&str; 2] = ["traces/hpcc_dumbbell.toml", "traces/hpcc_chain.toml"];

/// The mutants and the traces expected to catch each (the rule each needs: one hop is enough
/// for most; the first-hop bug needs several; the INT wraps and maxStage need hpcc_chain's
/// switches; the PSN wrap and TS deltas longer than T are in both).
const MUTANTS: [(&str, &[&str]); 11] = [
    ("wai-twice", &["hpcc_dumbbell", "hpcc_chain"]),
    ("ts-nowrap", &["hpcc_chain"]),
    ("tx-nowrap", &["hpcc_chain"]),
    ("psn-nowrap", &["hpcc_dumbbell", "hpcc_chain"]),
    ("first-hop", &["hpcc_chain"]),
    ("qlen-now", &["hpcc_dumbbell", "hpcc_chain"]),
    ("no-tau-clamp", &["hpcc_dumbbell", "hpcc_chain"]),
    ("wc-every-ack", &["hpcc_dumbbell", "hpcc_chain"]),
    ("stage-off-by-one", &["hpcc_chain"]),
    ("round-window", &["hpcc_dumbbell", "hpcc_chain"]),
    ("txbytes-unit", &["hpcc_dumbbell", "hpcc_chain"]),
];

/// Where a diff first diverges: per flow, the event index of the first divergence's cause.
type FirstDivergences = BTreeMap<u64, u64>;

/// `ccreplay diff TRACE --dut DUT --format json`: the exit status and the first divergences.
/// `bug_log`: the file the Python DUT writes where its bug first acts (DUT_BUG_LOG).
fn diff_json(trace: &str, dut: &str, bug_log: Option<&PathBuf>) -> (i32, FirstDivergences) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ccreplay"));
    c.args(["diff", trace, "--dut", dut, "--format", "json", "-q"])
        .current_dir(repo());
    if let Some(log) = bug_log {
        c.env("DUT_BUG_LOG", log);
    }
    let out = c.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{dut} on {trace}: not JSON ({e}), exit {code}"));
    let mut first = FirstDivergences::new();
    for f in json["flows"].as_array().unwrap() {
        let div = &f["first_divergence"];
        if div.is_null() {
            continue;
        }
        let side = if div["reference"].is_null() {
            &div["dut"]
        } else {
            &div["reference"]
        };
        first.insert(
            f["flow"].as_u64().unwrap(),
            side["cause"]["index"].as_u64().unwrap(),
        );
    }
    (code, first)
}

/// What the Python DUT wrote to DUT_BUG_LOG: per flow, the first event where the mutant's
/// outputs differ from the correct DUT's beside it ("FLOW INDEX" lines).
fn first_acts(log: &PathBuf) -> FirstDivergences {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (f, i) = l.split_once(' ').unwrap();
            (f.parse().unwrap(), i.parse().unwrap())
        })
        .collect()
}

fn python_dut(bug: Option<&str>) -> String {
    match bug {
        Some(b) => format!("process:python3 examples/duts/hpcc_dut.py --bug {b}"),
        None => "process:python3 examples/duts/hpcc_dut.py".to_string(),
    }
}

fn trace_name(t: &str) -> String {
    t.trim_start_matches("traces/")
        .trim_end_matches(".toml")
        .to_string()
}

#[test]
fn every_mutant_of_the_python_hpcc_is_caught_by_the_bundled_traces() {
    // The list above is the DUT's own list.
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; sys.path.insert(0, 'examples/duts'); import hpcc_dut; print(' '.join(sorted(hpcc_dut.BUGS)))",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut ours: Vec<&str> = MUTANTS.iter().map(|m| m.0).collect();
    ours.sort();
    assert_eq!(listed, ours.join(" "), "examples/duts/hpcc_dut.py BUGS");

    for t in TRACES {
        assert_eq!(
            diff_json(t, &python_dut(None), None),
            (0, FirstDivergences::new()),
            "the correct DUT differs on {t}"
        );
    }
    let dir = common::Scratch::new("mutants-py");
    for (bug, expected) in MUTANTS {
        let mut caught = Vec::new();
        for t in TRACES {
            let log = dir.join(format!("{bug}.{}.log", trace_name(t)));
            let (code, first) = diff_json(t, &python_dut(Some(bug)), Some(&log));
            assert!(code == 0 || code == 1, "{bug} on {t}: exit {code}");
            // Caught where the bug first acts (the DUT's correct shadow says where), in every
            // flow it touches; a bug that never changes an output here is not caught here.
            assert_eq!(
                first,
                first_acts(&log),
                "{bug} on {t}: first divergence per flow"
            );
            if code == 1 {
                caught.push(trace_name(t));
            }
        }
        assert!(
            !caught.is_empty(),
            "mutant {bug} passes the whole bundled suite"
        );
        assert_eq!(
            caught,
            expected.to_vec(),
            "{bug}: caught by (docs/conformance.md)"
        );
    }
}

/// The same mutants of the C example DUT (`-DCCREPLAY_BUG_<NAME>`), through the C ABI: the
/// same traces catch them, each at the event where the Python mutant's bug first acts (the two
/// are independent implementations of the same mistakes).
#[test]
fn every_mutant_of_the_c_hpcc_is_caught_by_the_bundled_traces() {
    let dir = common::Scratch::new("mutants-c");
    let build = |bug: Option<&str>| -> PathBuf {
        let lib = dir.join(format!("lib_{}.so", bug.unwrap_or("ok")));
        let mut c = Command::new("gcc");
        c.args([
            "-std=c11",
            "-O2",
            "-fPIC",
            "-shared",
            "-ffp-contract=off",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(repo().join("harness/include"));
        if let Some(b) = bug {
            c.arg(format!(
                "-DCCREPLAY_BUG_{}",
                b.to_uppercase().replace('-', "_")
            ));
        }
        let out = c
            .arg(repo().join("examples/duts/hpcc_dut.c"))
            .arg("-o")
            .arg(&lib)
            .output()
            .expect("gcc (the C ABI tests need it too)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        lib
    };
    let cabi = |lib: &PathBuf| format!("cabi:{}", lib.display());
    let ok = build(None);
    for t in TRACES {
        assert_eq!(
            diff_json(t, &cabi(&ok), None),
            (0, FirstDivergences::new()),
            "the correct C DUT differs on {t}"
        );
    }
    for (bug, expected) in MUTANTS {
        let lib = build(Some(bug));
        let mut caught = Vec::new();
        for t in TRACES {
            let log = dir.join(format!("{bug}.{}.log", trace_name(t)));
            diff_json(t, &python_dut(Some(bug)), Some(&log));
            let (code, first) = diff_json(t, &cabi(&lib), None);
            assert_eq!(
                first,
                first_acts(&log),
                "C mutant {bug} on {t}: first divergence"
            );
            if code == 1 {
                caught.push(trace_name(t));
            }
        }
        assert_eq!(caught, expected.to_vec(), "C mutant {bug}: caught by");
    }
}

/// The bundled DCQCN traces; each names `dcqcn` (its closed loop) and `dcqcn-nic`.
const DCQCN_TRACES: [&str; 2] = ["roce_dcqcn", "dcqcn_increase"];

/// Each mutant of the Python DCQCN reaction point (`examples/duts/dcqcn_dut.py`: profile
/// `paper` for `dcqcn`, `nic` for `dcqcn-nic`), the bundled traces that catch it (`diff --state
/// all` exits 1) and whether the outputs alone catch it there (`rate_bps` or a decision
/// missing or extra, on some trace; else only the state shows it). What each needs of a trace
/// is in docs/conformance.md (DCQCN).
const DCQCN_MUTANTS: [(&str, &str, &[&str], bool); 32] = [
    (
        "paper",
        "alpha-per-period",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "alpha-timer-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "cut-new-alpha",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "timer-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    // dcqcn_increase's byte counter expires on every packet, reset or not: only its state shows.
    (
        "paper",
        "bc-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "rt-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "fr-off-by-one",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    ("paper", "ai-on-rc", &["roce_dcqcn", "dcqcn_increase"], true),
    ("paper", "g-unit", &["roce_dcqcn", "dcqcn_increase"], true),
    (
        "paper",
        "cut-round",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    // Hyper increase, the line rate, the floor, remainders, bytes before the first CNP: only
    // in dcqcn_increase.
    ("paper", "hai-step", &["dcqcn_increase"], true),
    ("paper", "hai-constant", &["dcqcn_increase"], true),
    ("paper", "no-line-clamp", &["dcqcn_increase"], true),
    ("paper", "no-min-clamp", &["dcqcn_increase"], true),
    ("paper", "bc-no-remainder", &["dcqcn_increase"], true),
    ("paper", "count-before-cnp", &["dcqcn_increase"], true),
    (
        "paper",
        "alpha-per-packet",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "stage-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "paper",
        "hyper-on-max",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    ("paper", "bc-multi-expiry", &["dcqcn_increase"], true),
    ("nic", "cut-on-cnp", &["roce_dcqcn", "dcqcn_increase"], true),
    // G = 0 in dcqcn_increase: 0 x alpha rounds to 0 either way.
    ("nic", "alpha-ceil", &["roce_dcqcn"], true),
    // 1024 instead of 1023 needs G = 0 (dcqcn_increase); there every cut is bounded by
    // rpg_min_dec_fac (40 % < alpha's ~50 %), so only alpha in the state differs.
    ("nic", "no-alpha-cap", &["dcqcn_increase"], false),
    ("nic", "min-dec-fac-ignored", &["dcqcn_increase"], true),
    (
        "nic",
        "cut-round-up",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    ("nic", "no-min-clamp", &["dcqcn_increase"], true),
    ("nic", "clamp-ignores-bytes", &["dcqcn_increase"], true),
    (
        "nic",
        "timer-not-reset",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    ("nic", "first-cnp-cuts", &["dcqcn_increase"], true),
    (
        "nic",
        "first-cnp-raises-alpha",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    (
        "nic",
        "timers-not-phased",
        &["roce_dcqcn", "dcqcn_increase"],
        true,
    ),
    ("nic", "increase-before-cut", &["dcqcn_increase"], true),
];

fn dcqcn_model(profile: &str) -> &'static str {
    if profile == "nic" {
        "dcqcn-nic"
    } else {
        "dcqcn"
    }
}

/// One `diff --state all --format json` of the Python DCQCN DUT on a bundled trace.
struct DcqcnDiff {
    code: i32,
    /// Some flow's outputs differ (`rate_bps`, or a decision missing or extra).
    outputs_differ: bool,
    /// The earliest of the flows' first divergences: (t, flow, the event index its cause
    /// names; None for a timer).
    first: Option<(u64, u64, Option<u64>)>,
    /// What the DUT wrote into DUT_BUG_LOG (the line it writes on stderr).
    log: String,
}

fn diff_dcqcn(trace: &str, profile: &str, bug: Option<&str>, log: &std::path::Path) -> DcqcnDiff {
    let bug_arg = bug.map_or(String::new(), |b| format!(" --bug {b}"));
    let dut = format!("process:python3 examples/duts/dcqcn_dut.py --profile {profile}{bug_arg}");
    let _ = std::fs::remove_file(log);
    // The DUT writes its stderr line into DUT_BUG_LOG too (the harness keeps its stderr).
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["diff", &format!("traces/{trace}.toml"), "--model"])
        .arg(dcqcn_model(profile))
        .args(["--dut", &dut, "--state", "all", "--format", "json", "-q"])
        .env("DUT_BUG_LOG", log)
        .current_dir(repo())
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{dut} on {trace}: not JSON ({e}), exit {code}"));
    let mut outputs_differ = false;
    for f in json["flows"].as_array().unwrap() {
        let count = |k: &str| f[k].as_u64().unwrap();
        let rate_err = f["largest_error"].as_array().is_some_and(|l| {
            l.iter()
                .any(|e| e["field"] == "rate_bps" && e["abs"].as_f64() > Some(0.0))
        });
        outputs_differ |= count("missing") + count("extra") > 0 || rate_err;
    }
    DcqcnDiff {
        code,
        outputs_differ,
        first: common::earliest_divergence(&json),
        log: std::fs::read_to_string(log).unwrap_or_default(),
    }
}

/// Every mutant of the Python DCQCN DUT (both profiles) is caught by the bundled suite, by
/// exactly the traces listed, and there at the event where its bug first acts: the DUT runs a
/// correct model beside the mutated one and names the first event whose reply differs; diff's
/// earliest first divergence is that event's reply (its own decision, or a timer's due after
/// the previous event and up to it) — also for the mutants that fire a timer early (the alpha
/// or rate-increase timer not restarted), whose early firing diff reports as an extra decision
/// where it fired (docs/diff.md). A trace on which the bug never acts conforms (and the DUT
/// says nothing). The correct DUT conforms on every trace.
#[test]
fn every_mutant_of_the_python_dcqcn_is_caught_by_the_bundled_traces_where_it_first_acts() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; sys.path.insert(0, 'examples/duts'); import dcqcn_dut as d; \
             print(' '.join(sorted(d.BUGS))); print(' '.join(sorted(d.NIC_BUGS)))",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let ours = |profile: &str| {
        let mut v: Vec<&str> = DCQCN_MUTANTS
            .iter()
            .filter(|m| m.0 == profile)
            .map(|m| m.1)
            .collect();
        v.sort();
        v.join(" ")
    };
    assert_eq!(
        listed,
        format!("{}\n{}\n", ours("paper"), ours("nic")),
        "examples/duts/dcqcn_dut.py BUGS, NIC_BUGS"
    );

    let dir = common::Scratch::new("mutants-dcqcn");
    // The events each trace gives the DUT, in the order it gets them.
    let events: BTreeMap<&str, Vec<serde_json::Value>> = DCQCN_TRACES
        .iter()
        .map(|t| {
            (
                *t,
                common::emitted_events(&format!("traces/{t}.toml"), &dir, t),
            )
        })
        .collect();

    for t in DCQCN_TRACES {
        for profile in ["paper", "nic"] {
            let d = diff_dcqcn(t, profile, None, &dir.join("ok.log"));
            assert_eq!(d.code, 0, "the correct DUT ({profile}) differs on {t}");
        }
    }
    let mut wrong = Vec::new();
    for (profile, bug, caught_by, by_outputs) in DCQCN_MUTANTS {
        let mut caught = Vec::new();
        let mut outputs = false;
        for t in DCQCN_TRACES {
            let log = dir.join(format!("{profile}.{bug}.{t}.log"));
            let d = diff_dcqcn(t, profile, Some(bug), &log);
            let evs = &events[t];
            let what = format!("{profile} {bug} on {t}");
            if common::judge(&what, d.code, &d.log, d.first, evs, &mut wrong) {
                caught.push(t);
                outputs |= d.outputs_differ;
            }
        }
        assert_eq!(caught, caught_by, "{profile} {bug}: caught by");
        assert_eq!(
            outputs, by_outputs,
            "{profile} {bug}: caught by its outputs"
        );
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
