//! The FNCC suite's worth (issue 17.3 for FNCC): every single-bug variant of the example
//! Python FNCC sender (`examples/duts/fncc_dut.py --bug NAME`) is either caught by the bundled
//! FNCC trace (fncc_dumbbell: `diff --model fncc` exits 1) or a listed survivor with the rule
//! the trace lacks (docs/conformance.md, FNCC section). The unmodified DUT conforms. Every
//! survivor is then caught by a small hand-built events stream that has what fncc_dumbbell
//! lacks (two-record ACKs with the max on either record, U_max = alpha exactly, a speedup
//! window above W_init, switch counters across their wraps), so none is equivalent to the
//! correct sender. A survivor caught by the trace, or a caught mutant slipping through, fails.

mod common;

use common::repo;

use std::path::Path;
use std::process::Command;

/// The mutants and whether fncc_dumbbell catches each.
const MUTANTS: [(&str, bool); 12] = [
    ("no-speedup", true),
    ("n-ignored", true),
    ("speedup-per-rtt", true),
    ("speedup-ewma-u", true),
    ("round-speedup", true),
    ("wc-every-ack", true),
    // One switch: the most loaded record is always record 0 = the only record.
    ("speedup-any-hop", false),
    ("last-hop-is-last-record", false),
    // U_max never equals alpha = 1.05 exactly.
    ("alpha-ge", false),
    // B_0·T·β/N = 14,917.5 / N never leaves [w_min, W_init] = [1,000, 16,575].
    ("no-speedup-clamp", false),
    // No switch counter wraps in the 1.5 ms run.
    ("ts-nowrap", false),
    ("tx-nowrap", false),
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
fn the_python_fncc_conforms_and_its_mutants_are_caught_or_listed_survivors() {
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

    let trace = Path::new("traces/fncc_dumbbell.toml");
    assert_eq!(
        diff(trace, None),
        0,
        "the correct FNCC DUT differs on fncc_dumbbell"
    );
    let mut wrong = Vec::new();
    for (bug, caught) in MUTANTS {
        let code = diff(trace, Some(bug));
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
    let score = MUTANTS.iter().filter(|m| m.1).count();
    assert_eq!(
        (score, MUTANTS.len()),
        (6, 12),
        "the score in docs/conformance.md"
    );
}

/// One INT record in the events file: (b, ts, tx_bytes, qlen) in raw wire units.
type Hop = (u8, u32, u32, u16);

/// One event of the hand stream: (t ns, flow, kind "tx" or "ack", psn, N, pathID, records).
type HandEvent = (u64, u32, &'static str, u32, u16, u16, &'static [Hop]);

/// The survivors differ from the reference on a hand-built stream. B = 25 Gbps (code 0,
/// 3.125 B/ns), T = 8,000 ns: W_init 25,000 B; alpha = 1. A TS delta of 1,024 ns with a
/// txBytes delta of 25 units (3,200 B) is u' = 1.0 exactly, 50 units 2.0.
/// Flow 0, two records: ACK 1 stores; ACK 2 has record 1 most loaded (u' 2.0 > alpha):
/// `speedup-any-hop` and `last-hop-is-last-record` speed up, the reference does not; ACK 3
/// has record 0 at u' = 1.0 = alpha: `alpha-ge` speeds up; ACK 4 has record 0 at 100 Gbps
/// with u' 2.0 and N = 1: Wc = 100,000 × 0.9 = 90,000, clamped to 25,000, which
/// `no-speedup-clamp` keeps. Flow 1, one record starting 216 ns before the 24-bit TS wrap
/// and 6 units before the 20-bit txBytes wrap: its second ACK is u' 2.0 across both wraps.
#[test]
fn the_fncc_survivors_differ_on_a_stream_with_the_missing_rules() {
    let dir = std::env::temp_dir().join(format!("ccreplay-mutants-fncc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stream: [HandEvent; 10] = [
        (0, 0, "tx", 0, 0, 0, &[]),
        (10, 1, "tx", 0, 0, 0, &[]),
        (100, 0, "tx", 1, 0, 0, &[]),
        (
            1_000,
            0,
            "ack",
            0,
            2,
            3,
            &[(0, 1000, 0, 0), (0, 1000, 0, 0)],
        ),
        (1_500, 1, "ack", 0, 3, 5, &[(0, 16_777_000, 1_048_570, 0)]),
        (
            2_000,
            0,
            "ack",
            1,
            2,
            3,
            &[(0, 2024, 25, 0), (0, 2024, 50, 0)],
        ),
        (2_100, 0, "tx", 2, 0, 0, &[]),
        (2_500, 1, "ack", 0, 3, 5, &[(0, 808, 44, 0)]),
        (
            3_000,
            0,
            "ack",
            2,
            2,
            3,
            &[(0, 3048, 50, 0), (0, 3048, 60, 0)],
        ),
        (
            4_000,
            0,
            "ack",
            2,
            1,
            3,
            &[(2, 4072, 250, 0), (0, 4072, 60, 0)],
        ),
    ];
    let mut events = String::new();
    let mut index = [0u64; 2];
    for (t, flow, kind, psn, n, path, hops) in stream {
        let i = index[flow as usize];
        index[flow as usize] += 1;
        let line = if kind == "tx" {
            format!(
                r#"{{"t": {t}, "flow": {flow}, "index": {i}, "kind": "tx_data", "psn": {psn}, "bytes": 1000, "opcode": 10}}"#
            )
        } else {
            let recs: Vec<String> = hops
                .iter()
                .map(|(b, ts, tx, q)| {
                    format!(r#"{{"b": {b}, "ts": {ts}, "tx_bytes": {tx}, "qlen": {q}}}"#)
                })
                .collect();
            format!(
                r#"{{"t": {t}, "flow": {flow}, "index": {i}, "kind": "rx_ack", "psn": {psn}, "syndrome": 0, "int": {{"nhop": {}, "path_id": {path}, "hops": [{}]}}, "n": {n}}}"#,
                hops.len(),
                recs.join(", ")
            )
        };
        events.push_str(&line);
        events.push('\n');
    }
    std::fs::write(dir.join("hand.jsonl"), events).unwrap();
    std::fs::write(
        dir.join("hand.toml"),
        r#"events = "hand.jsonl"
dialect = "fncc"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 25000000000
base_rtt_ns = 8000
mtu_bytes = 1000
[[models]]
name = "fncc"
[models.params]
line_rate_bps = 25000000000
base_rtt_ns = 8000
alpha = 1.0
"#,
    )
    .unwrap();
    let manifest = dir.join("hand.toml");
    assert_eq!(
        diff(&manifest, None),
        0,
        "the correct FNCC DUT differs on the hand stream"
    );
    for (bug, caught) in MUTANTS {
        if !caught {
            assert_eq!(
                diff(&manifest, Some(bug)),
                1,
                "survivor {bug} on the hand stream"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
