//! The RCC suite's worth (issue 17.3 for RCC): the example Python RCC DUT
//! (`examples/duts/rcc_dut.py`, both sides) conforms on the bundled RCC traces, and every one
//! of its single-bug variants is caught by them: `diff` exits 1 on the trace of its side, and
//! its first divergence is at the event where the DUT says the bug first acts. The DUT finds
//! that event itself: with `--bug` it runs the correct algorithm beside the mutated one and
//! writes `bug first acts at event N of flow F (KIND, t = T ns)` to the file named by
//! `DUT_BUG_LOG` at the first event whose decisions (outputs or state) differ — so the
//! diff is run with `--state all`; the default diff (outputs only) must catch it too, at that
//! event or later (docs/conformance.md, RCC).

mod common;

use common::repo;

use std::path::Path;
use std::process::Command;

/// The receiver mutants (`RECEIVER_BUGS` of the DUT), caught by rcc_bursts_receiver.
const RECEIVER: [&str; 22] = [
    "last-hop-ge",
    "br-current-round",
    "round-from-packet",
    "fair-round",
    "last-not-counted",
    "only-not-counted",
    "first-counted-twice",
    "middle-no-open",
    "run-not-reset",
    "pid-not-sticky",
    "last-hop-first",
    "flag-entry-only",
    "pid-sign",
    "e-in-us",
    "kd-on-e",
    "target-delta",
    "e-prev-zero-on-entry",
    "w-prev-fair",
    "pid-round",
    "no-mtu-clamp",
    "no-fair-clamp",
    "mtu-wins",
];

/// The sender mutants (`SENDER_BUGS` of the DUT), caught by rcc_bursts_sender.
const SENDER: [&str; 9] = [
    "nak-ignored",
    "rate-round",
    "no-rate-cap",
    "t-whole-us",
    "stale-cwnd",
    "window-per-rtt",
    "window-in-mtus",
    "min-one-mtu",
    "no-grow",
];

fn dut(bug: Option<&str>) -> String {
    match bug {
        Some(b) => format!("process:python3 examples/duts/rcc_dut.py --bug {b}"),
        None => "process:python3 examples/duts/rcc_dut.py".to_string(),
    }
}

/// `ccreplay diff TRACE --dut ... --format json [--state all]` with `DUT_BUG_LOG` set:
/// (exit code, the report, the DUT's report line if it wrote one).
fn diff(trace: &str, bug: Option<&str>, state: bool) -> (i32, serde_json::Value, Option<String>) {
    let dir = common::Scratch::new(&format!("mutants-rcc-{}-{state}", bug.unwrap_or("none")));
    let report = dir.join("bug.log");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ccreplay"));
    cmd.args(["diff", trace, "--dut", &dut(bug), "--format", "json", "-q"])
        .env("DUT_BUG_LOG", &report)
        .current_dir(repo());
    if state {
        cmd.args(["--state", "all"]);
    }
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    let line = std::fs::read_to_string(&report).ok();
    (code, v, line.map(|l| l.trim().to_string()))
}

/// (t, flow, event index) of the earliest first divergence over the flows of a diff report.
fn first_divergence(v: &serde_json::Value) -> Option<(u64, u64, u64)> {
    v["flows"]
        .as_array()?
        .iter()
        .filter_map(|f| {
            let d = &f["first_divergence"];
            let dec = if d["reference"].is_null() {
                &d["dut"]
            } else {
                &d["reference"]
            };
            Some((
                dec["t"].as_u64()?,
                f["flow"].as_u64()?,
                dec["cause"]["index"].as_u64()?,
            ))
        })
        .min()
}

/// `bug first acts at event N of flow F (KIND, t = T ns)` -> (T, F, N).
fn parse_report(line: &str) -> (u64, u64, u64) {
    let num = |after: &str, until: char| -> u64 {
        let i = line.find(after).unwrap_or_else(|| panic!("{line}")) + after.len();
        line[i..]
            .split(until)
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (
        num("t = ", 'n'),
        num(" of flow ", '('),
        num("acts at event ", 'o'),
    )
}

/// The DUT's own lists, from the script.
fn dut_list(name: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sys; sys.path.insert(0, 'examples/duts'); import rcc_dut; print(' '.join(sorted(rcc_dut.{name})))"
            ),
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn check_side(trace: &str, mutants: &[&str], list: &str) {
    let mut ours = mutants.to_vec();
    ours.sort();
    assert_eq!(
        dut_list(list),
        ours.join(" "),
        "examples/duts/rcc_dut.py {list}"
    );
    assert!(Path::new(&repo().join(trace)).exists());

    for state in [false, true] {
        let (code, v, line) = diff(trace, None, state);
        assert_eq!(code, 0, "the correct RCC DUT differs on {trace}: {v}");
        assert_eq!(line, None, "the correct DUT reports no bug");
    }
    let mut wrong = Vec::new();
    for bug in mutants {
        let (code, v, line) = diff(trace, Some(bug), true);
        let Some(line) = line else {
            wrong.push(format!(
                "{bug}: exit {code}, the DUT reports no first action"
            ));
            continue;
        };
        let acts = parse_report(&line);
        if code != 1 || first_divergence(&v) != Some(acts) {
            wrong.push(format!(
                "{bug}: exit {code}, first divergence {:?}, the DUT: {line}",
                first_divergence(&v)
            ));
        }
        // The outputs alone (what `check` compares) catch it too, at that event or later.
        let (code, v, _) = diff(trace, Some(bug), false);
        match first_divergence(&v) {
            Some(out) if code == 1 && out >= acts => {}
            other => wrong.push(format!(
                "{bug}: outputs only: exit {code}, first divergence {other:?}, acts at {acts:?}"
            )),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn every_receiver_mutant_is_caught_by_rcc_bursts_receiver_where_it_first_acts() {
    check_side(
        "traces/rcc_bursts_receiver.toml",
        &RECEIVER,
        "RECEIVER_BUGS",
    );
}

#[test]
fn every_sender_mutant_is_caught_by_rcc_bursts_sender_where_it_first_acts() {
    check_side("traces/rcc_bursts_sender.toml", &SENDER, "SENDER_BUGS");
}
