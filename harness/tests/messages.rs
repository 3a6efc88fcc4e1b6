//! What the CLI tells a user about a bad input (issue 6.3): what was wrong, where (file, frame,
//! flow) and what to do; nothing half-written.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of the bundled hpcc trace in a fresh folder, its capture bytes passed through `edit`
/// and its manifest through `manifest`.
fn trace(
    name: &str,
    edit: impl Fn(&mut Vec<u8>),
    manifest: impl Fn(String) -> String,
) -> common::Scratch {
    let dir = common::Scratch::new(&format!("messages-{name}"));
    let mut pcap = std::fs::read(repo().join("traces/hpcc_dumbbell.pcap")).unwrap();
    edit(&mut pcap);
    std::fs::write(dir.join("t.pcap"), pcap).unwrap();
    let text = std::fs::read_to_string(repo().join("traces/hpcc_dumbbell.toml")).unwrap();
    let text = text.replace("capture = \"hpcc_dumbbell.pcap\"", "capture = \"t.pcap\"");
    assert!(text.contains("capture = \"t.pcap\""));
    std::fs::write(dir.join("t.toml"), manifest(text)).unwrap();
    dir
}

fn ccreplay(args: &[&str], cwd: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// The bundled capture is little-endian nanosecond pcap: a 24-byte file header, then records
// of a 16-byte header and the frame. Frame 1 starts at byte 40; its UDP length field at frame
// offset 14 (Ethernet) + 20 (IPv4) + 4 = 38, byte 78 of the file.
const FRAME1: usize = 24 + 16;

fn caplen(pcap: &[u8], record_at: usize) -> usize {
    u32::from_le_bytes(pcap[record_at + 8..record_at + 12].try_into().unwrap()) as usize
}

#[test]
fn a_capture_cut_mid_record_is_named_with_the_record_and_a_hint() {
    // Keep records 1-2000 whole (data and ACKs of every flow) and 100 bytes of record 2001's
    // frame.
    let dir = trace(
        "cut",
        |p| {
            let mut at = 24;
            for _ in 0..2000 {
                at += 16 + caplen(p, at);
            }
            p.truncate(at + 16 + 100);
        },
        |m| m,
    );
    cut_capture_is_never_a_verdict(&dir, "record 2001");
}

/// A record whose length field lies (claims more bytes than the file holds): the same.
#[test]
fn a_record_that_lies_about_its_length_is_never_a_verdict() {
    let dir = trace(
        "lies",
        |p| {
            let mut at = 24;
            for _ in 0..2000 {
                at += 16 + caplen(p, at);
            }
            // Record 2001 claims 1,000,000 captured bytes.
            p[at + 8..at + 12].copy_from_slice(&1_000_000u32.to_le_bytes());
            p[at + 12..at + 16].copy_from_slice(&1_000_000u32.to_le_bytes());
        },
        |m| m,
    );
    cut_capture_is_never_a_verdict(&dir, "record 2001");
}

/// `replay`, `diff` and `bless` on a capture that ends early: exit 2 naming the record, no
/// decisions file, no CONFORMANT, no golden file rewritten with part of the decisions.
fn cut_capture_is_never_a_verdict(dir: &Path, record: &str) {
    let (code, err) = ccreplay(&["replay", "t.toml", "-o", "out.jsonl"], dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("t.pcap: the capture ends early after 2,000 frames: ") && err.contains(record),
        "{err}"
    );
    assert!(
        err.contains("hint: was the file still being written"),
        "{err}"
    );
    assert!(!dir.join("out.jsonl").exists());
    let golden = repo().join("golden/hpcc_dumbbell/hpcc.jsonl");
    let g = golden.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["diff", "t.toml", "--golden", g])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("CONFORMANT"));
    let gdir = dir.join("g/t");
    std::fs::create_dir_all(&gdir).unwrap();
    std::fs::write(gdir.join("hpcc.jsonl"), "kept\n").unwrap();
    let (code, err) = ccreplay(&["bless", ".", "--golden", "g"], dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no golden file was changed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(gdir.join("hpcc.jsonl")).unwrap(),
        "kept\n"
    );
    let left: Vec<_> = std::fs::read_dir(&gdir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn a_malformed_packet_is_skipped_and_named_by_frame_with_the_inspect_command() {
    let dir = trace(
        "malformed",
        |p| p[FRAME1 + 38..FRAME1 + 40].copy_from_slice(&0xFFFFu16.to_be_bytes()),
        |m| m,
    );
    let (code, err) = ccreplay(&["replay", "t.toml", "-o", "out.jsonl"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "t.pcap: 1 malformed or bad-ICRC packet of the replayed traffic skipped (first malformed: frame 1: "
        ),
        "{err}"
    );
    assert!(
        err.contains("`ccreplay inspect t.pcap --dialect hpcc --strict`"),
        "{err}"
    );
}

#[test]
fn an_unknown_model_names_the_manifest_and_writes_nothing() {
    let dir = trace(
        "model",
        |_| {},
        |m| m.replacen("name = \"hpcc\"", "name = \"hpcx\"", 1),
    );
    for args in [
        &["replay", "t.toml", "-o", "out.jsonl"][..],
        &["diff", "t.toml", "--golden", "t.toml"][..],
    ] {
        let (code, err) = ccreplay(args, &dir);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.starts_with("ccreplay: t.toml: unknown model `hpcx` (known: "),
            "{err}"
        );
        assert!(err.contains("hint: fix its [[models]] entry"), "{err}");
    }
    assert!(!dir.join("out.jsonl").exists());
}

#[test]
fn a_parameter_out_of_range_names_the_manifest_parameter_and_range() {
    let dir = trace(
        "param",
        |_| {},
        |m| m.replacen("eta = 0.95", "eta = 2.0", 1),
    );
    let (code, err) = ccreplay(&["replay", "t.toml", "-o", "out.jsonl"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "t.toml: parameters of `hpcc`: invalid parameter `eta` = 2: must be in (0, 1]"
        ),
        "{err}"
    );
    assert!(!dir.join("out.jsonl").exists());
}

/// `-o /dev/null` (benchmarks do it) must write into the device, never rename a regular file
/// over it. Through a link to /dev/null, so that a regression replaces only the link.
#[test]
fn outputs_to_a_device_are_written_in_place() {
    let null = Path::new("/dev/null");
    if std::fs::metadata(null).map_or(true, |m| m.is_file()) {
        return;
    }
    let dir = trace("device", |_| {}, |m| m);
    std::os::unix::fs::symlink(null, dir.join("null")).unwrap();
    // `report check`: the folder has no golden file, so nothing is compared (exit 2), and the
    // page is written all the same.
    for (args, want) in [
        (&["replay", "t.toml", "-o", "null"][..], 0),
        (
            &["replay", "t.toml", "--emit-events", "null", "-o", "null"][..],
            0,
        ),
        (&["report", "check", ".", "-o", "null"][..], 2),
    ] {
        let (code, err) = ccreplay(args, &dir);
        assert_eq!(code, want, "{args:?}: {err}");
        assert!(err.contains("wrote null") || want == 0, "{args:?}: {err}");
        let m = std::fs::symlink_metadata(dir.join("null")).unwrap();
        assert!(
            m.file_type().is_symlink(),
            "{args:?} renamed a file over the link"
        );
    }
}
