//! The external-process DUT adapter (harness.md 4, docs/dut.md): the Python HPCC example agrees
//! with the reference bit for bit, its buggy variant is caught at the first window update, and
//! every way a DUT can fail ends in a `DutError` that names what it should, without hanging.
//!
//! The failure cases use tiny `sh` scripts made of shell builtins only (so killing the shell
//! kills the whole DUT). The Python tests are skipped with a message when `python3` is absent,
//! unless `CI=true`.

mod dut_common;

use std::time::{Duration, Instant};

use ccreplay::dut::process::{DEFAULT_TIMEOUT, ProcessDut, STDERR_TAIL_LINES};
use ccreplay::dut::{Dut, DutError};
use ccreplay_reference_cc::Cause;
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use dut_common::*;
use serde_json::json;

fn python_dut(bug: bool) -> Vec<String> {
    let script = root().join("examples/duts/hpcc_dut.py");
    let mut c = vec!["python3".to_string(), script.display().to_string()];
    if bug {
        c.extend(["--bug".to_string(), "wai-twice".to_string()]);
    }
    c
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

const HELLO: &str =
    r#"read -r l; printf '%s\n' '{"type":"hello","protocol":1,"name":"scripted"}'; "#;

/// Run the few-event stream through a DUT started from `command`; the error it must end with.
fn run_err(command: &[String], timeout: Duration) -> DutError {
    let events = few_events();
    match ProcessDut::spawn(command, &setup(json!({})), timeout) {
        Err(e) => e,
        Ok(mut d) => run(&mut d, &events).expect_err("the DUT must fail"),
    }
}

#[cfg(target_os = "linux")]
fn gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn python_hpcc_is_bit_identical_to_the_reference() {
    if !have_tool("python3") {
        return;
    }
    let events = hpcc_events();
    let params = hpcc_params();
    let reference = reference(&params, &events);
    let w_init = Hpcc::new(&params).unwrap().w_init_bytes();
    assert_stream_exercises_hpcc(&reference, w_init);

    let json = serde_json::to_value(&params).unwrap();
    let mut dut = ProcessDut::spawn(&python_dut(false), &setup(json), DEFAULT_TIMEOUT).unwrap();
    assert_eq!(dut.name(), "hpcc-py");
    let got = run(&mut dut, &events).unwrap();
    assert_identical(&reference, &got);
}

#[test]
fn python_hpcc_defaults_are_the_references() {
    if !have_tool("python3") {
        return;
    }
    let events = hpcc_events();
    let reference = reference(&hpcc::Params::default(), &events);
    let line = format!(
        "python3 {}",
        root().join("examples/duts/hpcc_dut.py").display()
    );
    let mut dut =
        ProcessDut::spawn_command_line(&line, &setup(json!({})), DEFAULT_TIMEOUT).unwrap();
    let got = run(&mut dut, &events).unwrap();
    assert_identical(&reference, &got);
}

#[test]
fn python_bug_is_caught_at_the_first_window_update() {
    if !have_tool("python3") {
        return;
    }
    let events = hpcc_events();
    let params = hpcc_params();
    let reference = reference(&params, &events);
    let w_init = Hpcc::new(&params).unwrap().w_init_bytes();
    let json = serde_json::to_value(&params).unwrap();
    let mut dut = ProcessDut::spawn(&python_dut(true), &setup(json), DEFAULT_TIMEOUT).unwrap();
    assert_eq!(dut.name(), "hpcc-py+bug-wai-twice");
    let got = run(&mut dut, &events).unwrap();
    let first = first_difference(&reference, &got).expect("the bug must show");
    assert_eq!(first, first_window_change(&reference, w_init));
    assert!(matches!(
        reference[first].cause,
        Cause::Event {
            kind: "rx_ack" | "rx_nak",
            ..
        }
    ));
    // W_AI = W_init (1 - eta) / N = 150,000 x 0.05 / 100 = 75 bytes (HPCC-8; W_init = 100 Gbps
    // x 12 µs / 8 = 150,000 B). Added once more before the floor: W grows by 75 or 76 bytes.
    let extra =
        got[first].outputs.window_bytes.unwrap() - reference[first].outputs.window_bytes.unwrap();
    assert!(matches!(extra, 75 | 76), "W grew by {extra}");
}

#[test]
fn python_rejects_an_unknown_parameter_in_the_hello() {
    if !have_tool("python3") {
        return;
    }
    let e = ProcessDut::spawn(
        &python_dut(false),
        &setup(json!({"etta": 0.9})),
        DEFAULT_TIMEOUT,
    )
    .err()
    .expect("an unknown parameter is refused");
    assert!(
        e.what.contains("refused the hello") && e.what.contains("etta"),
        "{e}"
    );
}

#[test]
fn a_crash_names_the_event_the_last_reply_and_stderr() {
    let e = run_err(
        &sh(&format!(
            "{HELLO}read -r l; echo 'about to die' >&2; exit 3"
        )),
        DEFAULT_TIMEOUT,
    );
    let text = e.to_string();
    assert!(e.what.contains("closed its stdout"), "{text}");
    assert!(e.what.contains("exit status: 3"), "{text}");
    let ev = e.event.as_deref().unwrap();
    assert!(
        ev.contains(r#""type": "event""#) && ev.contains(r#""kind": "tx_data""#),
        "{text}"
    );
    assert!(
        e.last_reply.as_deref().unwrap().contains("scripted"),
        "{text}"
    );
    assert_eq!(e.stderr_tail, "about to die");
    assert!(e.hint.is_some());
    assert!(
        text.contains("about to die") && text.contains("last reply"),
        "{text}"
    );
}

#[test]
fn a_crash_right_after_the_hello_is_reported_at_the_next_event() {
    let e = run_err(&sh(&format!("{HELLO}exit 0")), DEFAULT_TIMEOUT);
    assert!(e.what.contains("before replying to the event"), "{e}");
    assert!(e.event.as_deref().unwrap().contains(r#""index": 0"#), "{e}");
}

#[test]
fn garbage_is_a_protocol_error_naming_the_reply() {
    let e = run_err(
        &sh(&format!(
            "{HELLO}read -r l; echo 'this is not json'; read -r l"
        )),
        DEFAULT_TIMEOUT,
    );
    assert!(
        e.what.contains("broke the protocol") && e.what.contains("not JSON"),
        "{e}"
    );
    assert_eq!(e.last_reply.as_deref(), Some("this is not json"));
    assert!(
        e.event.as_deref().unwrap().contains(r#""kind": "tx_data""#),
        "{e}"
    );
}

#[test]
fn a_hang_times_out_within_its_bound() {
    let timeout = Duration::from_millis(300);
    let start = Instant::now();
    let e = run_err(&sh(&format!("{HELLO}while read -r l; do :; done")), timeout);
    let took = start.elapsed();
    assert!(e.what.contains("no reply to the event within 300ms"), "{e}");
    assert!(took >= timeout, "{took:?}");
    // The timeout, then the kill, reap and a bounded wait for stderr (0.5 s).
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_dut_that_never_reads_cannot_block_the_harness() {
    // A 4 MB hello into a pipe nobody reads: the writer thread blocks, the reply wait does not.
    let big = json!({ "pad": "x".repeat(4 << 20) });
    let start = Instant::now();
    let e = ProcessDut::spawn(
        &sh("exec sleep 30"),
        &setup(big),
        Duration::from_millis(300),
    )
    .err()
    .expect("no hello reply");
    assert!(e.what.contains("no reply to the hello"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_program_that_does_not_exist_cannot_start() {
    let e = run_err(&["/nonexistent/ccreplay-dut".to_string()], DEFAULT_TIMEOUT);
    assert!(e.what.starts_with("could not start"), "{e}");
    assert!(e.hint.as_deref().unwrap().contains("no program"), "{e}");
    assert_eq!(e.event, None);
    let e = ProcessDut::spawn(&[], &setup(json!({})), DEFAULT_TIMEOUT)
        .err()
        .unwrap();
    assert!(e.what.contains("the command is empty"), "{e}");
    let e = ProcessDut::spawn_command_line("python3 'unclosed", &setup(json!({})), DEFAULT_TIMEOUT)
        .err()
        .unwrap();
    assert!(e.what.contains("unterminated"), "{e}");
}

#[test]
fn a_wrong_protocol_version_is_refused() {
    let e = run_err(
        &sh(
            r#"read -r l; printf '%s\n' '{"type":"hello","protocol":2,"name":"future"}'; read -r l"#,
        ),
        DEFAULT_TIMEOUT,
    );
    assert!(
        e.what.contains("protocol version 2, the harness speaks 1"),
        "{e}"
    );
    assert!(e.hint.as_deref().unwrap().contains("protocol 1"), "{e}");
    assert!(e.last_reply.as_deref().unwrap().contains("future"), "{e}");
    // The hello itself is the request named.
    assert!(
        e.event.as_deref().unwrap().contains(r#""type":"hello""#),
        "{e}"
    );
}

#[test]
fn a_refused_hello_carries_the_duts_message() {
    let e = run_err(
        &sh(r#"read -r l; printf '%s\n' '{"type":"error","message":"no model dcqcn here"}'"#),
        DEFAULT_TIMEOUT,
    );
    assert!(
        e.what.contains("refused the hello: no model dcqcn here"),
        "{e}"
    );
}

#[test]
fn the_hello_carries_the_setup() {
    // The DUT echoes the hello it got on stderr and then dies: the tail shows the hello.
    let e = run_err(&sh("read -r l; echo \"$l\" >&2; exit 1"), DEFAULT_TIMEOUT);
    let hello: serde_json::Value = serde_json::from_str(&e.stderr_tail).unwrap();
    assert_eq!(
        hello,
        json!({
            "type": "hello", "protocol": 1, "model": "hpcc", "capture_point": "sender",
            "params": {},
            "flows": [
                {"flow": 0, "local_ip": "10.0.0.1", "local_qp": 256, "remote_ip": "10.0.1.1", "remote_qp": 512},
                {"flow": 1, "local_ip": "10.0.0.1", "local_qp": 257, "remote_ip": "10.0.1.1", "remote_qp": 513},
                {"flow": 2, "local_ip": "10.0.0.1", "local_qp": 258, "remote_ip": "10.0.1.1", "remote_qp": 514}
            ]
        })
    );
}

#[test]
fn a_decision_for_another_event_is_out_of_protocol() {
    let e = run_err(
        &sh(&format!(
            "{HELLO}read -r l; printf '%s\\n' '{{\"type\":\"decisions\",\"decisions\":[\
             {{\"t\":1000,\"flow\":0,\"cause\":{{\"kind\":\"tx_data\",\"index\":7}},\"state\":{{}}}}]}}'; read -r l"
        )),
        DEFAULT_TIMEOUT,
    );
    assert!(e.what.contains("caused by tx_data #7 of flow 0"), "{e}");
    assert!(e.what.contains("request was tx_data #0 of flow 0"), "{e}");
}

/// Timer decisions come first, at or before the event's time; the event's own after them.
#[test]
fn timer_decisions_come_first() {
    let timer =
        r#"{"t":900,"flow":1,"cause":{"kind":"timer","name":"alpha"},"state":{"alpha":0.5}}"#;
    let own = r#"{"t":1000,"flow":0,"cause":{"kind":"tx_data","index":0},"rate_bps":7,"state":{}}"#;
    let reply = |ds: &str| format!(r#"{{"type":"decisions","decisions":[{ds}]}}"#);
    let script = |r: &str| {
        // Answers the first event with `r`, every later request with no decisions.
        sh(&format!(
            "{HELLO}read -r l; printf '%s\\n' '{r}'; while read -r l; do printf '%s\\n' '{}'; done",
            reply("")
        ))
    };
    let events = few_events();
    let mut ok = ProcessDut::spawn(
        &script(&reply(&format!("{timer},{own}"))),
        &setup(json!({})),
        DEFAULT_TIMEOUT,
    )
    .unwrap();
    let mut out = Vec::new();
    ok.event(&events[0], &mut out).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].cause, Cause::Timer { name: "alpha" });
    assert_eq!((out[0].t_ns, out[0].flow), (900, 1));
    assert_eq!(out[1].outputs.rate_bps, Some(7));
    drop(ok);

    let e = run_err(&script(&reply(&format!("{own},{timer}"))), DEFAULT_TIMEOUT);
    assert!(
        e.what.contains("comes after the event's own decisions"),
        "{e}"
    );
    let late = timer.replace("\"t\":900", "\"t\":1001");
    let e = run_err(&script(&reply(&late)), DEFAULT_TIMEOUT);
    assert!(
        e.what
            .contains("at t = 1001 ns is after the event's time = 1000 ns"),
        "{e}"
    );
}

#[test]
fn an_error_reply_stops_the_run_with_its_message() {
    let e = run_err(
        &sh(&format!(
            "{HELLO}read -r l; printf '%s\\n' '{{\"type\":\"error\",\"message\":\"W went negative\"}}'"
        )),
        DEFAULT_TIMEOUT,
    );
    assert!(e.what.contains("reported an error: W went negative"), "{e}");
}

#[test]
fn the_dut_must_exit_cleanly_after_finish() {
    let empty = r#"{"type":"decisions","decisions":[]}"#;
    let e = run_err(
        &sh(&format!(
            "{HELLO}while read -r l; do printf '%s\\n' '{empty}'; case \"$l\" in *finish*) exit 1;; esac; done"
        )),
        DEFAULT_TIMEOUT,
    );
    assert!(
        e.what
            .contains("ended with exit status: 1 after the finish"),
        "{e}"
    );
    assert!(
        e.event.as_deref().unwrap().contains(r#""type": "finish""#),
        "{e}"
    );

    // The same DUT exiting with 0 is fine, and so is one that exits on stdin's end.
    for tail in ["exit 0", ":"] {
        let mut d = ProcessDut::spawn(
            &sh(&format!(
                "{HELLO}while read -r l; do printf '%s\\n' '{empty}'; case \"$l\" in *finish*) {tail};; esac; done"
            )),
            &setup(json!({})),
            DEFAULT_TIMEOUT,
        )
        .unwrap();
        assert_eq!(run(&mut d, &few_events()).unwrap().len(), 0);
    }
}

#[test]
fn the_stderr_tail_is_bounded() {
    let e = run_err(
        &sh(&format!(
            "{HELLO}read -r l; i=1; while [ $i -le 50 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 4"
        )),
        DEFAULT_TIMEOUT,
    );
    let lines: Vec<&str> = e.stderr_tail.lines().collect();
    assert_eq!(lines.len(), STDERR_TAIL_LINES);
    // The last 20 of 50 lines: 31..=50.
    assert_eq!(lines.first(), Some(&"line 31"));
    assert_eq!(lines.last(), Some(&"line 50"));
}

#[cfg(target_os = "linux")]
#[test]
fn the_child_is_killed_and_reaped_on_drop_and_on_error() {
    let d = ProcessDut::spawn(
        &sh(&format!("{HELLO}while read -r l; do :; done")),
        &setup(json!({})),
        DEFAULT_TIMEOUT,
    )
    .unwrap();
    let pid = d.id().unwrap();
    assert!(!gone(pid));
    drop(d);
    assert!(gone(pid), "pid {pid} still exists after drop");

    let mut d = ProcessDut::spawn(
        &sh(&format!("{HELLO}while read -r l; do :; done")),
        &setup(json!({})),
        Duration::from_millis(100),
    )
    .unwrap();
    let pid = d.id().unwrap();
    let e = d.event(&few_events()[0], &mut Vec::new()).unwrap_err();
    assert!(e.what.contains("no reply"), "{e}");
    assert!(gone(pid), "pid {pid} still exists after the timeout");
    assert_eq!(d.id(), None);
    // Later calls say the DUT failed earlier, without touching any process.
    let e = d.event(&few_events()[1], &mut Vec::new()).unwrap_err();
    assert!(e.what.contains("failed earlier"), "{e}");
}

#[test]
fn decisions_of_a_failed_reply_are_not_kept() {
    // Decision 0 is fine, decision 1 is for another flow: nothing of the reply reaches `out`.
    let good = r#"{"t":1000,"flow":0,"cause":{"kind":"tx_data","index":0},"state":{}}"#;
    let bad = r#"{"t":1000,"flow":9,"cause":{"kind":"tx_data","index":0},"state":{}}"#;
    let mut d = ProcessDut::spawn(
        &sh(&format!(
            "{HELLO}read -r l; printf '%s\\n' '{{\"type\":\"decisions\",\"decisions\":[{good},{bad}]}}'; read -r l"
        )),
        &setup(json!({})),
        DEFAULT_TIMEOUT,
    )
    .unwrap();
    let mut out = vec![];
    let e = d.event(&few_events()[0], &mut out).unwrap_err();
    assert!(e.what.contains("of flow 9"), "{e}");
    assert!(out.is_empty());
}
