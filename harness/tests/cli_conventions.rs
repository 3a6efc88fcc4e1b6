//! Unix conventions of the command line (issue 14.8): a closed pipe ends any command quietly
//! with status 0; `-q` keeps standard error to warnings and errors; every "wrote" line goes to
//! standard error.

use std::path::PathBuf;
use std::process::{Command, Stdio};

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ccreplay() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ccreplay"));
    c.current_dir(repo());
    c
}

#[test]
fn a_closed_pipe_ends_every_command_quietly_with_status_0() {
    for args in [
        &["check"][..],
        &["check", "--format", "json"],
        &["replay", "traces/hpcc_dumbbell.toml"],
        &["diff", "traces/hpcc_dumbbell.toml", "--dut", "model:hpcc"],
        &[
            "diff",
            "traces/hpcc_dumbbell.toml",
            "--dut",
            "model:hpcc",
            "--format",
            "json",
        ],
        &["inspect", "traces/hpcc_dumbbell.pcap", "--dialect", "hpcc"],
    ] {
        let mut child = ccreplay()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the first line is written (`| head -0`): every write
        // to standard output fails with EPIPE.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

#[test]
fn quiet_keeps_only_warnings_and_errors_and_wrote_lines_go_to_stderr() {
    let dir = common::Scratch::new("cli");
    let out_file = dir.join("d.jsonl");
    let o = ccreplay()
        .args(["replay", "traces/hpcc_dumbbell.toml", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2,672 frames"), "{err}");
    assert!(err.contains("-> "), "{err}");
    let o = ccreplay()
        .args(["-q", "replay", "traces/hpcc_dumbbell.toml", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "",
        "-q prints nothing on success"
    );
    // `sim` writes its files; the "wrote" lines are on standard error, standard output is
    // empty.
    let o = ccreplay()
        .args(["sim", "scenarios/bundled/hpcc_dumbbell.toml", "--out"])
        .arg(dir.join("sim"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "");
    assert!(String::from_utf8_lossy(&o.stderr).contains("ccreplay: wrote "));
}
