//! The FNCC suite's worth (issue 17.3 for FNCC): every single-bug variant of the example
//! Python FNCC sender (`examples/duts/fncc_dut.py --bug NAME`) is caught by the bundled suite
//! (`diff --model fncc` exits 1) on exactly the FNCC traces listed, and the unmodified DUT
//! conforms on both. fncc_dumbbell (one switch) catches 6; fncc_chain
//! (scenarios/bundled/fncc_chain.toml: three switches, wrapping counters, a last-hop incast
//! that clamps the speedup window and hits U_max = alpha exactly) catches all but
//! `round-speedup`, whose only difference — a speedup window rounded, not floored — needs a
//! window that is not clamped (in fncc_chain every one is: N = 5 gives 948.8 B < w_min), which
//! fncc_dumbbell has. A mutant slipping through the suite, or caught elsewhere than listed,
//! fails (docs/conformance.md, FNCC, changes with it).

mod common;

use common::repo;

use std::path::Path;
use std::process::Command;

/// The bundled traces naming `fncc`.
const TRACES: [&str; 2] = ["fncc_dumbbell", "fncc_chain"];

/// The mutants and the traces that catch each.
const MUTANTS: [(&str, &[&str]); 12] = [
    ("no-speedup", &["fncc_dumbbell", "fncc_chain"]),
    ("n-ignored", &["fncc_dumbbell", "fncc_chain"]),
    ("speedup-per-rtt", &["fncc_dumbbell", "fncc_chain"]),
    ("speedup-ewma-u", &["fncc_dumbbell", "fncc_chain"]),
    // fncc_chain's speedup windows are all clamped: floor and round agree there.
    ("round-speedup", &["fncc_dumbbell"]),
    ("wc-every-ack", &["fncc_dumbbell", "fncc_chain"]),
    // One switch gives one record: the hop tests need fncc_chain's three.
    ("speedup-any-hop", &["fncc_chain"]),
    ("last-hop-is-last-record", &["fncc_chain"]),
    // U_max = alpha = 1.05 exactly: 42 txBytes units in 4,096 ns at 10 Gbps, no queue.
    ("alpha-ge", &["fncc_chain"]),
    // B_0·T·β/N = 1.25 × 4,217 × 0.9 / 5 = 948.8 B < w_min = 1,000 B.
    ("no-speedup-clamp", &["fncc_chain"]),
    // fncc_chain's switch counters start near their wraps.
    ("ts-nowrap", &["fncc_chain"]),
    ("tx-nowrap", &["fncc_chain"]),
];

fn dut(bug: Option<&str>) -> String {
    match bug {
        Some(b) => format!("process:python3 examples/duts/fncc_dut.py --bug {b}"),
        None => "process:python3 examples/duts/fncc_dut.py".to_string(),
    }
}

/// `ccreplay diff MANIFEST --model fncc --dut ...`: the exit code.
fn diff(manifest: &Path, bug: Option<&str>) -> i32 {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .arg("diff")
        .arg(manifest)
        .args(["--model", "fncc", "--dut", &dut(bug), "-q"])
        .current_dir(repo())
        .output()
        .unwrap()
        .status
        .code()
        .unwrap_or(-1)
}

#[test]
fn the_python_fncc_conforms_and_every_mutant_is_caught_by_the_bundled_suite() {
    // The list above is the DUT's own list.
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; sys.path.insert(0, 'examples/duts'); import fncc_dut; print(' '.join(sorted(fncc_dut.BUGS)))",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut ours: Vec<&str> = MUTANTS.iter().map(|m| m.0).collect();
    ours.sort();
    assert_eq!(listed, ours.join(" "), "examples/duts/fncc_dut.py BUGS");

    let manifest = |t: &str| format!("traces/{t}.toml");
    for t in TRACES {
        assert_eq!(
            diff(Path::new(&manifest(t)), None),
            0,
            "the correct FNCC DUT differs on {t}"
        );
    }
    let mut wrong = Vec::new();
    for (bug, expected) in MUTANTS {
        let mut caught = Vec::new();
        for t in TRACES {
            let code = diff(Path::new(&manifest(t)), Some(bug));
            assert!(code == 0 || code == 1, "{bug} on {t}: exit {code}");
            if code == 1 {
                caught.push(t);
            }
        }
        if caught.is_empty() || caught != expected {
            wrong.push(format!(
                "{bug}: caught by {caught:?} (docs/conformance.md says {expected:?})"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
