//! The suite's worth is the bugs it catches (issue 17.3): every single-bug variant of the
//! example Python HPCC DUT (`examples/duts/hpcc_dut.py --bug NAME`, the mistakes of
//! docs/conformance.md) is caught by the bundled HPCC traces — `diff` exits 1 on at least one
//! of them — and the unmodified DUT conforms on all. A mutant that slips through fails this
//! test: the suite needs a trace that exercises its rule.

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

fn diff(trace: &str, bug: Option<&str>) -> i32 {
    let dut = match bug {
        Some(b) => format!("process:python3 examples/duts/hpcc_dut.py --bug {b}"),
        None => "process:python3 examples/duts/hpcc_dut.py".to_string(),
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["diff", trace, "--dut", &dut, "-q"])
        .current_dir(repo())
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
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
        assert_eq!(diff(t, None), 0, "the correct DUT differs on {t}");
    }
    let mut table: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (bug, expected) in MUTANTS {
        let mut caught = Vec::new();
        for t in TRACES {
            let code = diff(t, Some(bug));
            assert!(code == 0 || code == 1, "{bug} on {t}: exit {code}");
            if code == 1 {
                caught.push(
                    t.trim_start_matches("traces/")
                        .trim_end_matches(".toml")
                        .to_string(),
                );
            }
        }
        table.insert(bug, caught.clone());
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
/// same traces catch them.
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
    let run = |trace: &str, lib: &PathBuf| -> i32 {
        Command::new(env!("CARGO_BIN_EXE_ccreplay"))
            .args([
                "diff",
                trace,
                "--dut",
                &format!("cabi:{}", lib.display()),
                "-q",
            ])
            .current_dir(repo())
            .output()
            .unwrap()
            .status
            .code()
            .unwrap_or(-1)
    };
    let ok = build(None);
    for t in TRACES {
        assert_eq!(run(t, &ok), 0, "the correct C DUT differs on {t}");
    }
    for (bug, expected) in MUTANTS {
        let lib = build(Some(bug));
        let caught: Vec<String> = TRACES
            .iter()
            .filter(|t| run(t, &lib) == 1)
            .map(|t| {
                t.trim_start_matches("traces/")
                    .trim_end_matches(".toml")
                    .to_string()
            })
            .collect();
        assert_eq!(caught, expected.to_vec(), "C mutant {bug}: caught by");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
