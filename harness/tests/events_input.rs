//! Events as input (docs/protocol.md "Events as input"): `replay --emit-events` then
//! `replay --events` gives the same decisions as the capture; bad lines are reported with their
//! numbers and exit status 2; `check` and `diff` work on events traces.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ccreplay::protocol;
use ccreplay_reference_cc::{Event, EventKind};

mod common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("events-{name}"))
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.code().is_some(),
        "killed by a signal: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Capture → events → decisions: the same bytes as capture → decisions, for every bundled
/// trace and every model of its manifest.
#[test]
fn emitted_events_replay_to_the_same_decisions() {
    let dir = tmpdir("roundtrip");
    let traces = repo().join("traces");
    let mut manifests: Vec<PathBuf> = fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    manifests.sort();
    assert!(!manifests.is_empty());
    for m in &manifests {
        let stem = m.file_stem().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(m).unwrap();
        let models: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("name = \""))
            .map(|l| l.trim_end_matches('"').to_string())
            .collect();
        assert!(!models.is_empty(), "{stem}");
        let events = dir.join(format!("{stem}.jsonl"));
        for model in &models {
            let from_capture = dir.join(format!("{stem}-{model}-capture.jsonl"));
            let from_events = dir.join(format!("{stem}-{model}-events.jsonl"));
            let o = run(bin()
                .arg("replay")
                .arg(m)
                .args(["--model", model, "--emit-events"])
                .arg(&events)
                .arg("--out")
                .arg(&from_capture));
            assert_eq!(o.status.code(), Some(0), "{stem}/{model}: {}", stderr(&o));
            let o = run(bin()
                .arg("replay")
                .arg(m)
                .args(["--model", model, "--events"])
                .arg(&events)
                .arg("--out")
                .arg(&from_events));
            assert_eq!(o.status.code(), Some(0), "{stem}/{model}: {}", stderr(&o));
            let a = fs::read(&from_capture).unwrap();
            let b = fs::read(&from_events).unwrap();
            assert!(!a.is_empty(), "{stem}/{model}: no decisions");
            assert!(a == b, "{stem}/{model}: decisions differ");
        }
    }
    let _ = fs::remove_dir_all(dir);
}

const MANIFEST: &str = r#"events = "cnp.jsonl"
dialect = "roce"

[capture_point]
kind = "sender"
host = "10.0.0.1"

[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000

[[models]]
name = "dcqcn"

[source]
kind = "synthesized"
generator = "harness/tests/events_input.rs"
"#;

/// Events written with the protocol's writer: two flows, a CNP each, data in between.
fn write_cnp_events(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    let evs = [
        (
            1_000,
            0,
            0,
            EventKind::TxData {
                psn: 0,
                bytes: 1000,
                opcode: 0x0A,
            },
        ),
        (
            1_100,
            1,
            0,
            EventKind::TxData {
                psn: 0,
                bytes: 1000,
                opcode: 0x0A,
            },
        ),
        (5_000, 0, 1, EventKind::RxCnp),
        (9_000, 1, 1, EventKind::RxCnp),
    ];
    for (t_ns, flow, index, kind) in evs {
        protocol::write_event(
            &mut buf,
            &Event {
                t_ns,
                flow,
                index,
                kind,
            },
        );
    }
    fs::write(path, &buf).unwrap();
    buf
}

#[test]
fn writer_output_replays_and_bad_lines_are_numbered() {
    let dir = tmpdir("badlines");
    fs::write(dir.join("cnp.toml"), MANIFEST).unwrap();
    let good = write_cnp_events(&dir.join("cnp.jsonl"));

    // The trace names its events file: replay it (TRACE alone, and --events FILE alone with
    // the manifest beside it).
    let o = run(bin().arg("replay").arg(dir.join("cnp.toml")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let decisions = String::from_utf8(o.stdout).unwrap();
    // DCQCN reacts to each CNP (DCQCN-3: a rate cut): decisions caused by events index 1 of
    // flow 0 and flow 1, nothing for tx_data.
    let causes: Vec<(u64, u64)> = decisions
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["flow"].as_u64().unwrap(),
                v["cause"]["index"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .filter(|c| c.1 != u64::MAX)
        .collect();
    assert_eq!(causes, vec![(0, 1), (1, 1)], "{decisions}");
    let o = run(bin()
        .arg("replay")
        .arg("--events")
        .arg(dir.join("cnp.jsonl")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), decisions);

    // Bad lines: 2 (not JSON), 4 (unknown kind), 6 (missing `t`); line 5 is blank.
    let lines: Vec<&str> = std::str::from_utf8(&good).unwrap().lines().collect();
    let bad = format!(
        "{}\nnot json\n{}\n{{\"t\": 7, \"flow\": 0, \"index\": 9, \"kind\": \"rx_magic\"}}\n\n{{\"flow\": 0, \"index\": 9, \"kind\": \"rx_cnp\"}}\n{}\n{}\n",
        lines[0], lines[1], lines[2], lines[3]
    );
    let bad_path = dir.join("bad.jsonl");
    fs::write(&bad_path, bad).unwrap();
    let o = run(bin()
        .arg("replay")
        .arg(dir.join("cnp.toml"))
        .arg("--events")
        .arg(&bad_path));
    assert_eq!(o.status.code(), Some(2), "bad input exits 2");
    let err = stderr(&o);
    let shown = bad_path.display().to_string();
    assert!(err.contains(&format!("{shown}:2: not JSON")), "{err}");
    assert!(
        err.contains(&format!("{shown}:4: unknown event kind `rx_magic`")),
        "{err}"
    );
    assert!(err.contains(&format!("{shown}:6: missing `t`")), "{err}");
    assert!(err.contains("3 of 7 event lines skipped"), "{err}");
    // The run went on: the good lines gave the same decisions.
    assert_eq!(String::from_utf8(o.stdout).unwrap(), decisions);

    // diff on the events against the decisions as golden: conformant (0), bad lines: 2.
    let golden = dir.join("golden.jsonl");
    fs::write(&golden, &decisions).unwrap();
    let o = run(bin()
        .arg("diff")
        .arg(dir.join("cnp.toml"))
        .arg("--golden")
        .arg(&golden));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(bin()
        .arg("diff")
        .arg(dir.join("cnp.toml"))
        .arg("--events")
        .arg(&bad_path)
        .arg("--golden")
        .arg(&golden));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn check_an_events_trace_against_golden_files() {
    let dir = tmpdir("check");
    let traces = dir.join("traces");
    let golden = dir.join("golden");
    fs::create_dir_all(&traces).unwrap();
    fs::write(traces.join("cnp.toml"), MANIFEST).unwrap();
    let good = write_cnp_events(&traces.join("cnp.jsonl"));
    let o = run(bin().arg("bless").arg(&traces).arg("--golden").arg(&golden));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(golden.join("cnp").join("dcqcn.jsonl").exists());
    let o = run(bin().arg("check").arg(&traces).arg("--golden").arg(&golden));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // A changed event: flow 1's CNP one index later changes its decision's cause → 1.
    let text = String::from_utf8(good.clone()).unwrap();
    let changed = text.replace(
        "{\"t\": 9000, \"flow\": 1, \"index\": 1,",
        "{\"t\": 9000, \"flow\": 1, \"index\": 2,",
    );
    assert_ne!(changed, text);
    fs::write(traces.join("cnp.jsonl"), changed).unwrap();
    let o = run(bin().arg("check").arg(&traces).arg("--golden").arg(&golden));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // A bad line: ERROR with its number, exit 2.
    fs::write(traces.join("cnp.jsonl"), format!("{text}{{oops\n")).unwrap();
    let o = run(bin().arg("check").arg(&traces).arg("--golden").arg(&golden));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("ERROR") && out.contains("cnp.jsonl:5: not JSON"),
        "{out}"
    );
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn events_without_a_manifest_is_bad_input() {
    let dir = tmpdir("nomanifest");
    write_cnp_events(&dir.join("lonely.jsonl"));
    let o = run(bin()
        .arg("replay")
        .arg("--events")
        .arg(dir.join("lonely.jsonl")));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no manifest for the events file"),
        "{}",
        stderr(&o)
    );
    // capture and events both in a manifest: rejected with the reason.
    fs::write(
        dir.join("both.toml"),
        format!("capture = \"x.pcap\"\n{MANIFEST}"),
    )
    .unwrap();
    let o = run(bin().arg("replay").arg(dir.join("both.toml")));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`capture` and `events` both given"),
        "{}",
        stderr(&o)
    );
    let _ = fs::remove_dir_all(dir);
}

/// A process DUT is told the flows of an events trace (from the manifest's `[[flows]]`) and
/// conforms on the events as on the capture.
#[test]
fn process_dut_on_an_events_trace() {
    let dir = tmpdir("dut");
    let trace = repo().join("traces").join("hpcc_dumbbell.toml");
    let events = dir.join("ev.jsonl");
    let o = run(bin()
        .arg("replay")
        .arg(&trace)
        .arg("--emit-events")
        .arg(&events)
        .arg("--out")
        .arg(dir.join("d.jsonl")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dut = format!(
        "process:python3 {}",
        repo().join("examples/duts/hpcc_dut.py").display()
    );
    let o = run(bin()
        .arg("diff")
        .arg(&trace)
        .arg("--events")
        .arg(&events)
        .args(["--dut", &dut]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("CONFORMANT"), "{out}");
    let _ = fs::remove_dir_all(dir);
}
