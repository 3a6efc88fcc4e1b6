//! The DCQCN notification and congestion points' suite worth (issue 17.3 for `dcqcn-np` and
//! `dcqcn-cp`): the example Python DUT `examples/duts/dcqcn_np_cp_dut.py` (`--model np|cp`)
//! conforms on the bundled trace of its model (traces/dcqcn_np, a receiver tap; traces/dcqcn_cp,
//! a switch egress mirror), and each of its single-bug variants is caught there — `diff --state
//! all` exits 1 — with diff's earliest first divergence in the reply where the DUT says its bug
//! first acts (it runs a correct model beside the mutated one and writes `bug first acts at
//! event N (flow F, index I)` into DUT_BUG_LOG, as examples/duts/dcqcn_dut.py does), or is
//! listed as surviving the bundled trace, with why, and then caught on a hand-built events
//! stream whose decisions are derived below. A mutant caught elsewhere than listed, or a
//! survivor the trace starts catching, fails (the table of /tmp/reports/h7-conformance.md,
//! meant for docs/conformance.md, changes with it).

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mutant: its name (the DUT's `--bug`), whether the bundled trace of its model catches it,
/// and whether the outputs alone (`send_cnp` / `mark_ce`, a decision missing or extra: what
/// `check` and a plain `diff` compare) catch it there too.
struct Mutant {
    bug: &'static str,
    caught: bool,
    by_outputs: bool,
}

const fn m(bug: &'static str, caught: bool, by_outputs: bool) -> Mutant {
    Mutant {
        bug,
        caught,
        by_outputs,
    }
}

/// `NP_BUGS` of the DUT over traces/dcqcn_np (N = `min_time_between_cnps` = 2 µs; 900 rx_data,
/// 281 CE, the rest ECT(0); coverage rows: 12 marks exactly N after a CNP, 51 at the ns of a
/// timer's CNP, 160 unmarked packets while a mark is pending — docs/conformance.md).
const NP: [Mutant; 11] = [
    m("interval-gt", true, true),
    // 2 ms: the run is 749 µs, so only each flow's first mark sends a CNP.
    m("interval-ms", true, true),
    m("first-mark-waits", true, true),
    m("timer-forgets-mark", true, true),
    m("cnp-per-mark", true, true),
    // 619 ECT(0) packets: the first (event 0) is taken for a mark.
    m("ce-any-ect", true, true),
    // Survives: no packet of the trace is ECT(1) (ECN 2 or 3 only), and ECT(0) & 1 = 0.
    m("ce-ect1", false, false),
    m("timer-from-mark", true, true),
    // Survives: the three flows' marks fall in disjoint stretches (flow 0 from 19.7 to
    // 153.7 µs, flow 1 from 315.2 to 452.2 µs, flow 2 from 619.7 to 753.2 µs after the
    // capture's start), so no flow marks within N of another's CNP.
    m("interval-per-host", false, false),
    m("timer-cnp-no-interval", true, true),
    m("unmarked-clears", true, true),
];

/// `CP_BUGS` of the DUT over traces/dcqcn_cp (Kmin 1,040 B, Kmax 6,560 B, Pmax 0.7; 453
/// dequeues: 36 at q = Kmin, 9 at q = Kmax, 43 above it, 6 where eq. 5's order shows in p's
/// last bit — docs/conformance.md).
const CP: [Mutant; 10] = [
    m("kmin-lt", true, true),
    m("kmax-lt", true, true),
    // Only p's last bit differs (C-3): the state shows it, no mark flips on this trace.
    m("p-scaled-first", true, false),
    m("draw-always", true, true),
    m("draw-at-p1", true, true),
    m("rng-per-flow", true, true),
    m("thresholds-kb", true, true),
    m("no-pmax", true, true),
    m("u-low-bits", true, true),
    m("qlen-with-packet", true, true),
];

fn dut(model: &str, bug: Option<&str>) -> String {
    let bug = bug.map_or(String::new(), |b| format!(" --bug {b}"));
    format!("process:python3 examples/duts/dcqcn_np_cp_dut.py --model {model}{bug}")
}

/// Where a divergence lies: (t, flow, the event index its cause names; None for a timer).
use common::At;

/// One `diff` of the DUT.
struct Diff {
    code: i32,
    /// The earliest first divergence over the flows, either side.
    first: Option<At>,
    /// What the DUT wrote into DUT_BUG_LOG.
    log: String,
}

/// `ccreplay diff TRACE --dut ... --format json [--state all] [--events FILE]`.
fn diff(
    trace: &str,
    model: &str,
    bug: Option<&str>,
    state: bool,
    events: Option<&Path>,
    log: &Path,
) -> Diff {
    let _ = std::fs::remove_file(log);
    let mut c = Command::new(env!("CARGO_BIN_EXE_ccreplay"));
    c.args([
        "diff",
        trace,
        "--dut",
        &dut(model, bug),
        "--format",
        "json",
        "-q",
    ])
    .env("DUT_BUG_LOG", log)
    .current_dir(repo());
    if state {
        c.args(["--state", "all"]);
    }
    if let Some(e) = events {
        c.arg("--events").arg(e);
    }
    let out = c.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{model} {bug:?} on {trace}: not JSON ({e}), exit {code}"));
    let first = common::earliest_divergence(&json);
    Diff {
        code,
        first,
        log: std::fs::read_to_string(log).unwrap_or_default(),
    }
}

/// The DUT's own list (`NP_BUGS` or `CP_BUGS`), sorted.
fn dut_list(name: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sys; sys.path.insert(0, 'examples/duts'); import dcqcn_np_cp_dut as d; \
                 print(' '.join(sorted(d.{name})))"
            ),
        ])
        .current_dir(repo())
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ccreplay-mutants-np-cp-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn check_model(model: &str, trace: &str, mutants: &[Mutant], list: &str) {
    let mut ours: Vec<&str> = mutants.iter().map(|m| m.bug).collect();
    ours.sort();
    assert_eq!(
        dut_list(list),
        ours.join(" "),
        "examples/duts/dcqcn_np_cp_dut.py {list}"
    );
    let dir = scratch(model);
    let log = dir.join("bug.log");
    let evs = common::emitted_events(trace, &dir, "trace");

    for state in [false, true] {
        let d = diff(trace, model, None, state, None, &log);
        assert_eq!(d.code, 0, "the correct {model} DUT differs on {trace}");
        assert_eq!(d.log, "", "the correct DUT reports no bug");
    }
    let mut wrong = Vec::new();
    for mt in mutants {
        let bug = mt.bug;
        let d = diff(trace, model, Some(bug), true, None, &log);
        let act = common::first_act(&d.log, &evs);
        if d.code != i32::from(mt.caught) || act.is_some() != mt.caught {
            wrong.push(format!(
                "{bug}: exit {} (expected {}), the DUT: {:?}",
                d.code,
                i32::from(mt.caught),
                d.log
            ));
            continue;
        }
        if let Some(act) = act {
            match d.first {
                Some(at) if common::in_reply(at, act, &evs) => {}
                other => wrong.push(format!(
                    "{bug}: first divergence {other:?}, the bug first acts at {act:?}"
                )),
            }
        }
        // The outputs alone (what `check` compares).
        let plain = diff(trace, model, Some(bug), false, None, &log);
        if plain.code != i32::from(mt.by_outputs) {
            wrong.push(format!(
                "{bug}: outputs only: exit {} (expected {})",
                plain.code,
                i32::from(mt.by_outputs)
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_np_mutant_is_caught_by_dcqcn_np_where_it_first_acts_or_listed_as_surviving() {
    check_model("np", "traces/dcqcn_np.toml", &NP, "NP_BUGS");
}

#[test]
fn every_cp_mutant_is_caught_by_dcqcn_cp_where_it_first_acts() {
    check_model("cp", "traces/dcqcn_cp.toml", &CP, "CP_BUGS");
}

/// The two NP mutants the bundled trace misses are real bugs: a hand-built stream, replayed
/// with traces/dcqcn_np.toml's manifest (N = 2 µs = 2,000 ns; three flows), catches each where
/// it first acts. Events (ns, flow, per-flow index, ECN):
///
/// | # | t | flow | index | ECN | reference (DCQCN-2) |
/// |---|---|---|---|---|---|
/// | 0 | 1,000 | 0 | 0 | 3 CE | flow 0's first mark: CNP at once |
/// | 1 | 1,200 | 1 | 0 | 1 ECT(1) | not CE: nothing |
/// | 2 | 1,500 | 1 | 1 | 3 CE | flow 1's first mark: CNP at once |
/// | 3 | 5,000 | 2 | 0 | 2 ECT(0) | not CE: nothing (flow 2 appears, as the manifest lists it) |
///
/// `ce-ect1` (ECN & 1 taken for CE): event 1 is flow 1's first "mark", a CNP at 1,200 (extra);
/// event 2 is 300 ns later, within N: held, its CNP by the timer at 1,200 + 2,000 = 3,200 ns
/// (extra), and the reference's CNP at event 2 is missing. First act: event 1 (flow 1, index
/// 0); earliest divergence: t = 1,200, flow 1, index 0.
/// `interval-per-host` (one interval for all flows): event 2 is 500 ns after the host's last
/// CNP (flow 0's, at 1,000): held, its CNP by the timer at 1,000 + 2,000 = 3,000 ns (extra),
/// the reference's at event 2 missing. First act: event 2 (flow 1, index 1); earliest
/// divergence: t = 1,500, flow 1, index 1 (before the extra timer at 3,000).
#[test]
fn the_np_survivors_are_caught_by_a_hand_built_stream() {
    let dir = scratch("hand");
    let file = dir.join("hand.jsonl");
    let stream = [
        (1_000u64, 0u64, 0u64, 3u8),
        (1_200, 1, 0, 1),
        (1_500, 1, 1, 3),
        (5_000, 2, 0, 2),
    ];
    let text: String = stream
        .iter()
        .map(|(t, flow, index, ecn)| {
            format!(
                "{{\"t\": {t}, \"flow\": {flow}, \"index\": {index}, \"kind\": \"rx_data\", \
                 \"psn\": {index}, \"bytes\": 1000, \"opcode\": 7, \"ecn\": {ecn}}}\n"
            )
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    let trace = "traces/dcqcn_np.toml";
    let log = dir.join("bug.log");

    // The reference's decisions are the two of the table.
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["replay", trace, "-q", "--events"])
        .arg(&file)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let cnps: Vec<At> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["send_cnp"], true);
            (
                v["t"].as_u64().unwrap(),
                v["flow"].as_u64().unwrap(),
                v["cause"]["index"].as_u64(),
            )
        })
        .collect();
    assert_eq!(cnps, [(1_000, 0, Some(0)), (1_500, 1, Some(1))]);
    let d = diff(trace, "np", None, true, Some(&file), &log);
    assert_eq!((d.code, d.log.as_str()), (0, ""), "the correct DUT");

    let events: Vec<serde_json::Value> = stream
        .iter()
        .map(|(_, flow, index, _)| serde_json::json!({"flow": flow, "index": index}))
        .collect();
    let expected: BTreeMap<&str, (usize, At)> = [
        ("ce-ect1", (1, (1_200, 1, Some(0)))),
        ("interval-per-host", (2, (1_500, 1, Some(1)))),
    ]
    .into_iter()
    .collect();
    for (bug, (act, at)) in expected {
        let d = diff(trace, "np", Some(bug), true, Some(&file), &log);
        assert_eq!(d.code, 1, "{bug} on the hand stream");
        assert_eq!(
            common::first_act(&d.log, &events),
            Some(Ok(act)),
            "{bug}: {}",
            d.log
        );
        assert_eq!(d.first, Some(at), "{bug}: first divergence");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
