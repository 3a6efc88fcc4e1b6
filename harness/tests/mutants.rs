//! The suite's worth is the bugs it catches (issue 17.3): every single-bug variant of the
//! example Python HPCC DUT (`examples/duts/hpcc_dut.py --bug NAME`, the mistakes of
//! docs/conformance.md) is caught by the bundled HPCC traces — `diff` exits 1 on at least one
//! of them — and the unmodified DUT conforms on all. A mutant that slips through fails this
//! test: the suite needs a trace that exercises its rule. The same for the Python DCQCN
//! reaction point (`examples/duts/dcqcn_dut.py`) on roce_dcqcn, whose known survivors are
//! listed with the trace they lack (docs/conformance.md): a survivor caught, or a caught
//! mutant slipping through, fails the test.

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
    let dir = std::env::temp_dir().join(format!("ccreplay-mutants-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same mutants of the C example DUT (`-DCCREPLAY_BUG_<NAME>`), through the C ABI: the
/// same traces catch them, each at the event where the Python mutant's bug first acts (the two
/// are independent implementations of the same mistakes).
#[test]
fn every_mutant_of_the_c_hpcc_is_caught_by_the_bundled_traces() {
    let dir = std::env::temp_dir().join(format!("ccreplay-mutants-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// The DCQCN mutants and whether roce_dcqcn catches each (`diff --model dcqcn` exits 1). The
/// survivors are not equivalent to the correct sender (each differs on other inputs:
/// docs/conformance.md); the bundled trace lacks what would expose them.
const DCQCN_MUTANTS: [(&str, bool); 16] = [
    ("alpha-per-period", true),
    ("alpha-timer-not-reset", true),
    ("cut-new-alpha", true),
    ("timer-not-reset", true),
    ("bc-not-reset", true),
    ("rt-not-reset", true),
    ("fr-off-by-one", true),
    ("ai-on-rc", true),
    ("g-unit", true),
    ("cut-round", true),
    // No hyper increase: the byte stage never passes F = 5 between two cuts.
    ("hai-step", false),
    ("hai-constant", false),
    // No rate climbs back to the 25 Gbps line rate.
    ("no-line-clamp", false),
    // The lowest cut (32 Mbps) stays above rpg_min_rate = 1 Mbps.
    ("no-min-clamp", false),
    // rpg_byte_reset = 100,000 B is a multiple of the 1,000 B payloads: no remainder.
    ("bc-no-remainder", false),
    // No flow sends 100,000 B before its first CNP (46 to 56 KB).
    ("count-before-cnp", false),
];

fn diff_dcqcn(bug: Option<&str>) -> i32 {
    let dut = match bug {
        Some(b) => format!("process:python3 examples/duts/dcqcn_dut.py --bug {b}"),
        None => "process:python3 examples/duts/dcqcn_dut.py".to_string(),
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args([
            "diff",
            "traces/roce_dcqcn.toml",
            "--model",
            "dcqcn",
            "--dut",
            &dut,
            "-q",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

#[test]
fn the_python_dcqcn_conforms_and_its_mutants_are_caught_or_listed_survivors() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; sys.path.insert(0, 'examples/duts'); import dcqcn_dut; print(' '.join(sorted(dcqcn_dut.BUGS)))",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut ours: Vec<&str> = DCQCN_MUTANTS.iter().map(|m| m.0).collect();
    ours.sort();
    assert_eq!(listed, ours.join(" "), "examples/duts/dcqcn_dut.py BUGS");

    assert_eq!(
        diff_dcqcn(None),
        0,
        "the correct DCQCN DUT differs on roce_dcqcn"
    );
    let mut wrong = Vec::new();
    for (bug, caught) in DCQCN_MUTANTS {
        let code = diff_dcqcn(Some(bug));
        assert!(code == 0 || code == 1, "{bug}: exit {code}");
        if (code == 1) != caught {
            wrong.push(format!(
                "{bug}: {} (docs/conformance.md says {})",
                if code == 1 { "caught" } else { "survives" },
                if caught { "caught" } else { "survives" }
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let score = DCQCN_MUTANTS.iter().filter(|m| m.1).count();
    assert_eq!(
        (score, DCQCN_MUTANTS.len()),
        (10, 16),
        "the score in docs/conformance.md"
    );
}

/// The survivors are real bugs, not equivalent mutants: each differs from the reference on a
/// hand-built stream (the one of `dcqcn::rp::tests::coverage_counts_every_rule_on_a_hand_stream`
/// with two packets before the first CNP) that has what roce_dcqcn lacks: hyper increase with
/// i = 1 and 2, Rt clamped at the line rate, a cut clamped at the minimum rate, byte-counter
/// remainders, bytes before the first CNP. The correct DUT conforms on it.
#[test]
fn the_dcqcn_survivors_differ_on_a_stream_with_the_missing_rules() {
    let dir = std::env::temp_dir().join(format!("ccreplay-mutants-dcqcn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // (t ns, kind, tx bytes)
    let stream: [(u64, &str, u32); 15] = [
        (0, "tx_data", 1000),
        (500, "tx_data", 1000), // 2,000 B before the first CNP: count-before-cnp expires
        (1_000, "rx_cnp", 0),
        (2_000, "rx_cnp", 0), // 2.5e8 bps: clamped to the 4e8 minimum
        (3_000, "tx_data", 1500),
        (23_000, "tx_data", 3000), // 1,500 B remainder
        (24_000, "tx_data", 1),    // expires on it
        (33_000, "tx_data", 1499),
        (42_100, "tx_data", 1500), // hyper i = 2, Rt clamped at the line rate
        (42_200, "tx_data", 1500),
        (42_300, "tx_data", 1500),
        (42_500, "tx_data", 100),
        (43_000, "rx_cnp", 0),
        (44_000, "rx_cnp", 0),
        (60_000, "rx_ack", 0),
    ];
    let mut events = String::new();
    for (i, (t, kind, bytes)) in stream.iter().enumerate() {
        let extra = match *kind {
            "tx_data" => format!(r#", "psn": {i}, "bytes": {bytes}, "opcode": 10"#),
            "rx_ack" => r#", "psn": 0, "syndrome": 0"#.to_string(),
            _ => String::new(),
        };
        events.push_str(&format!(
            r#"{{"t": {t}, "flow": 0, "index": {i}, "kind": "{kind}"{extra}}}"#
        ));
        events.push('\n');
    }
    std::fs::write(dir.join("hand.jsonl"), events).unwrap();
    std::fs::write(
        dir.join("hand.toml"),
        r#"events = "hand.jsonl"
dialect = "roce"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 1000000000
base_rtt_ns = 5000
mtu_bytes = 1000
[[models]]
name = "dcqcn"
[models.params]
line_rate_bps = 1000000000
rpg_time_reset = 10
rpg_byte_reset = 1500
rpg_threshold = 2
rpg_ai_rate = 10
rpg_hai_rate = 100
rpg_min_rate = 400
dce_tcp_g = 1.0
dce_tcp_rtt = 10
"#,
    )
    .unwrap();
    let diff = |bug: Option<&str>| -> i32 {
        let dut = match bug {
            Some(b) => format!("process:python3 examples/duts/dcqcn_dut.py --bug {b}"),
            None => "process:python3 examples/duts/dcqcn_dut.py".to_string(),
        };
        Command::new(env!("CARGO_BIN_EXE_ccreplay"))
            .arg("diff")
            .arg(dir.join("hand.toml"))
            .args(["--dut", &dut, "-q"])
            .current_dir(repo())
            .output()
            .unwrap()
            .status
            .code()
            .unwrap_or(-1)
    };
    assert_eq!(
        diff(None),
        0,
        "the correct DCQCN DUT differs on the hand stream"
    );
    for (bug, caught) in DCQCN_MUTANTS {
        if !caught {
            assert_eq!(diff(Some(bug)), 1, "survivor {bug} on the hand stream");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
