//! Dialect detection (issue 14.3): the ICRC as the oracle for what sits before BTH, the header
//! structure for what sits after the AETH. Every expectation comes from how the capture was
//! made: the bundled traces' manifests record the dialect `sim` wrote, and the fixtures'
//! names record the layout make_fixtures.py built (tests/fixtures/README.md).

mod common;

use common::{repo, run};

use std::process::Command;

use ccreplay::detect::detect_file;
use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::IntLayout;
use rstest::rstest;

#[rstest]
#[case("traces/roce_dcqcn.pcap", Dialect::Roce, None)]
#[case("traces/hpcc_dumbbell.pcap", Dialect::Hpcc, Some((IntLayout::Padded, 5)))]
#[case("traces/hpcc_chain.pcap", Dialect::Hpcc, Some((IntLayout::Padded, 5)))]
#[case("traces/fncc_dumbbell.pcap", Dialect::Fncc, Some((IntLayout::Padded, 5)))]
#[case("traces/rcc_sender.pcap", Dialect::Rcc, None)]
#[case("traces/rcc_receiver.pcap", Dialect::Rcc, None)]
#[case("tests/fixtures/roce_opcodes.pcap", Dialect::Roce, None)]
#[case("tests/fixtures/hpcc.pcap", Dialect::Hpcc, Some((IntLayout::Padded, 5)))]
#[case("tests/fixtures/fncc.pcap", Dialect::Fncc, Some((IntLayout::Padded, 5)))]
#[case("tests/fixtures/rcc.pcap", Dialect::Rcc, None)]
#[case("tests/fixtures/detect_hpcc_grown.pcap", Dialect::Hpcc, Some((IntLayout::Grown, 7)))]
#[case("tests/fixtures/detect_hpcc_padded8.pcap", Dialect::Hpcc, Some((IntLayout::Padded, 8)))]
#[case("tests/fixtures/detect_fncc_grown.pcap", Dialect::Fncc, Some((IntLayout::Grown, 6)))]
#[case("tests/fixtures/detect_fncc_padded3.pcap", Dialect::Fncc, Some((IntLayout::Padded, 3)))]
fn detects_the_dialect_a_capture_was_written_in(
    #[case] file: &str,
    #[case] dialect: Dialect,
    #[case] int: Option<(IntLayout, u8)>,
) {
    let d = detect_file(&repo().join(file), 4791).unwrap();
    let c = d.config();
    assert_eq!(c.dialect, dialect, "{file}: {}", d.why());
    if let Some((layout, hops)) = int {
        assert_eq!(c.int.layout, layout, "{file}: {}", d.why());
        match layout {
            IntLayout::Padded => assert_eq!(c.int.max_hops, hops, "{file}"),
            IntLayout::Grown => assert_eq!(d.best().max_n_hop, hops, "{file}"),
        }
    }
    // The sim captures are whole and clean: every packet sampled reads cleanly.
    if file.starts_with("traces/") {
        assert_eq!(d.best().clean, d.sampled, "{file}: {}", d.why());
        assert_eq!(d.sampled, 2_000, "{file}");
    }
}

/// The trap of the issue: an hpcc capture inspected without `--dialect` reported thousands of
/// malformed packets and bad ICRCs with no hint. Now it is read as hpcc, and says so.
#[test]
fn inspect_without_dialect_reads_an_hpcc_capture_cleanly_and_says_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["inspect", "traces/hpcc_dumbbell.pcap", "--format", "text"])
        .current_dir(repo())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("dialect hpcc detected"), "{stderr}");
    assert!(stderr.contains("with a valid ICRC"), "{stderr}");
    assert!(
        stdout.contains("0 malformed") && stdout.contains("0 bad ICRC"),
        "{}",
        stdout.lines().rev().take(8).collect::<Vec<_>>().join("\n")
    );
    // --dialect still wins.
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["inspect", "traces/hpcc_dumbbell.pcap", "--format", "text"])
        .args(["--dialect", "roce"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("2672 bad ICRC"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("detected"));
}

/// A copy of a bundled trace with its manifest edited.
fn edited(name: &str, tag: &str, edit: impl Fn(String) -> String) -> common::Scratch {
    let dir = common::Scratch::new(&format!("detect-{tag}"));
    let t = repo().join("traces");
    std::fs::copy(
        t.join(format!("{name}.pcap")),
        dir.join(format!("{name}.pcap")),
    )
    .unwrap();
    let text = std::fs::read_to_string(t.join(format!("{name}.toml"))).unwrap();
    let new = edit(text.clone());
    assert_ne!(new, text, "the edit changed nothing");
    std::fs::write(dir.join(format!("{name}.toml")), new).unwrap();
    dir
}

#[rstest]
#[case("replay")]
#[case("diff")]
fn a_wrong_dialect_with_nothing_replayed_fails_naming_the_right_one(#[case] cmd: &str) {
    let dir = edited("hpcc_dumbbell", cmd, |t| {
        t.replace("dialect = \"hpcc\"", "dialect = \"roce\"")
    });
    let mut args = vec![cmd, "hpcc_dumbbell.toml"];
    if cmd == "diff" {
        args.extend(["--dut", "model:hpcc"]);
    }
    let (code, out, err) = run(&dir, &args);
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("CONFORMANT"), "{out}");
    assert!(err.contains("set dialect = \"hpcc\""), "{err}");
    assert!(err.contains("bad ICRC"), "{err}");
    // The cause alone: no list of [[flows]] that "never appear".
    assert!(!err.contains("never appears"), "{err}");
}

#[test]
fn a_wrong_int_layout_is_named() {
    let dir = edited("hpcc_dumbbell", "hops", |t| {
        t.replace("max_hops = 5", "max_hops = 4")
    });
    let (code, _, err) = run(&dir, &["replay", "hpcc_dumbbell.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_hops = 5"), "{err}");
}

#[test]
fn a_dialect_that_leaves_bytes_unread_is_a_warning_naming_the_right_one() {
    let dir = edited("fncc_dumbbell", "unread", |t| {
        t.replace("dialect = \"fncc\"", "dialect = \"roce\"")
    });
    let (_, _, err) = run(&dir, &["replay", "fncc_dumbbell.toml", "-o", "d.jsonl"]);
    assert!(err.contains("warning:"), "{err}");
    assert!(err.contains("set dialect = \"fncc\""), "{err}");
    // The bundled manifests read their captures as well as any dialect: no such warning.
    let (code, _, err) = run(
        &repo(),
        &["replay", "traces/fncc_dumbbell.toml", "-o", "/dev/null"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("misreads"), "{err}");
}

// A capture that ends early *and* is read in the wrong dialect: the early end is the
// no-decisions error's hint, and the dialect that reads it is still named (a warning), not
// lost behind it.
#[test]
fn a_wrong_dialect_is_named_when_the_capture_also_ends_early() {
    let dir = edited("hpcc_dumbbell", "cut-and-misread", |t| {
        t.replace("dialect = \"hpcc\"", "dialect = \"roce\"")
    });
    let pcap = dir.join("hpcc_dumbbell.pcap");
    let bytes = std::fs::read(&pcap).unwrap();
    // Cut 10 bytes into the last record's data: the record header promises more.
    std::fs::write(&pcap, &bytes[..bytes.len() - 10]).unwrap();
    let (code, out, err) = run(&dir, &["replay", "hpcc_dumbbell.toml", "-o", "d.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("CONFORMANT"), "{out}");
    assert!(err.contains("the capture ends early"), "{err}");
    assert!(err.contains("made no decisions"), "{err}");
    assert!(
        err.contains("the manifest's dialect misreads packets"),
        "{err}"
    );
    assert!(err.contains("set dialect = \"hpcc\""), "{err}");
}
