//! `ccreplay init` (issue 14.5): from "I have a pcap" to a verdict in one command. The
//! expectations are the bundled manifests, written by `ccreplay sim` from the scenario that
//! made each capture (what the simulator knew, not what init reads off the packets).

mod common;

use common::repo;

use std::path::Path;
use std::process::Command;

use ccreplay::manifest::Manifest;

const BUNDLED: [&str; 7] = [
    "roce_dcqcn",
    "roce_dcqcn_erspan",
    "hpcc_dumbbell",
    "hpcc_chain",
    "fncc_dumbbell",
    "rcc_sender",
    "rcc_receiver",
];

fn run(dir: &Path, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh folder holding a copy of a bundled capture, and no manifest.
fn alone(name: &str, tag: &str) -> common::Scratch {
    let dir = common::Scratch::new(&format!("init-{tag}-{name}"));
    std::fs::copy(
        repo().join(format!("traces/{name}.pcap")),
        dir.join(format!("{name}.pcap")),
    )
    .unwrap();
    dir
}

/// With the device's configuration given (the models and their parameters: what a user knows
/// of their NIC), the manifest init writes replays to the very decisions of the bundled one;
/// everything else — dialect, INT layout, capture point, flows, link rate, MTU — comes from
/// the capture.
#[test]
fn init_then_replay_gives_the_bundled_decisions() {
    for name in BUNDLED {
        let bundled_path = repo().join(format!("traces/{name}.toml"));
        let bundled = Manifest::load(&bundled_path).unwrap();
        let dir = alone(name, "same");
        let pcap = format!("{name}.pcap");
        let mut args: Vec<String> = vec!["init".into(), pcap.clone()];
        for m in &bundled.models {
            args.extend(["--model".into(), m.name.clone()]);
            for (k, v) in &m.params {
                args.extend(["--param".into(), format!("{}.{k}={v}", m.name)]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(&dir, &args);
        assert_eq!(code, 0, "{name}: {err}");
        let made = Manifest::load(&dir.join(format!("{name}.toml"))).unwrap();
        assert_eq!(made.dialect, bundled.dialect, "{name}");
        assert_eq!(made.capture_point, bundled.capture_point, "{name}");
        assert_eq!(made.int, bundled.int, "{name}");
        assert_eq!(made.flows, bundled.flows, "{name}");
        assert_eq!(made.network.mtu_bytes, bundled.network.mtu_bytes, "{name}");
        assert_eq!(made.network.udp_port, bundled.network.udp_port, "{name}");
        assert_eq!(
            made.network.link_rate_bps, bundled.network.link_rate_bps,
            "{name}"
        );
        assert_eq!(made.source.kind, "captured");
        if bundled.capture_point.kind() == "sender" {
            // The smallest data-to-ACK delay at the tap: the unloaded RTT, to the ns the
            // timestamps allow (the simulator rounds its T up from picoseconds).
            let (a, b) = (made.network.base_rtt_ns, bundled.network.base_rtt_ns);
            assert!(a.abs_diff(b) <= 1, "{name}: base RTT {a} vs {b}");
        }
        for m in &bundled.models {
            let (c1, ours, e1) = run(
                &dir,
                &["replay", &format!("{name}.toml"), "--model", &m.name],
            );
            let (c2, theirs, e2) = run(
                &repo(),
                &["replay", &format!("traces/{name}.toml"), "--model", &m.name],
            );
            assert_eq!((c1, c2), (0, 0), "{name} {}: {e1}\n{e2}", m.name);
            assert!(!ours.is_empty(), "{name} {}", m.name);
            assert!(ours == theirs, "{name} {}: decisions differ", m.name);
        }
    }
}

/// No editing: init, then replay the capture by its name, on every bundled capture.
#[test]
fn init_alone_is_enough_to_replay() {
    for name in BUNDLED {
        let dir = alone(name, "alone");
        let pcap = format!("{name}.pcap");
        let (code, _, err) = run(&dir, &["init", &pcap]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(err.contains(&format!("wrote {name}.toml")), "{err}");
        // Counted, in the singular for one: the model's defaults, and a receiver's RTT.
        let guesses = match name {
            "rcc_sender" => "flows)",
            "rcc_receiver" => "; 2 GUESS lines to check)",
            _ => "; 1 GUESS line to check)",
        };
        assert!(err.contains(guesses), "{name}: {err}");
        let (code, out, err) = run(&dir, &["replay", &pcap]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(out.len() > 1000, "{name}: few decisions");
        assert!(err.contains("events"), "{err}");
        // A receiver's capture cannot show the RTT: that guess is marked. [network]'s other
        // values are measured.
        let text = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
        let network = &text[text.find("[network]").unwrap()..text.find("udp_port").unwrap()];
        assert_eq!(
            network.contains("# GUESS"),
            name == "rcc_receiver",
            "{name}:\n{text}"
        );
        // The device's configuration is not on the wire: the model's parameters are written
        // at their defaults, marked (rcc-sender has none beyond [network]'s).
        assert_eq!(
            text.contains("# GUESS: the model's defaults (docs/models/"),
            name != "rcc_sender",
            "{name}:\n{text}"
        );
    }
}

/// A correct NIC (the simulator's, configured with N = 4 flows) judged on init's manifest:
/// with the model's defaults (N = 100) it differs, and the diff says the parameters are
/// init's guesses; with the device's N it conforms, and says nothing of it.
#[test]
fn a_diff_on_guessed_parameters_says_so() {
    let dir = alone("hpcc_dumbbell", "guessed");
    let (code, _, err) = run(&dir, &["init", "hpcc_dumbbell.pcap"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&dir, &["diff", "hpcc_dumbbell.toml", "--dut", "observed"]);
    assert_eq!(code, 1, "{err}");
    assert!(String::from_utf8_lossy(&out).contains("DIFFERENCES FOUND"));
    assert!(
        err.contains("hint: hpcc_dumbbell.toml: the `hpcc` parameters are still init's guesses"),
        "{err}"
    );
    let (code, _, err) = run(
        &dir,
        &[
            "init",
            "hpcc_dumbbell.pcap",
            "--force",
            "--param",
            "hpcc.expected_flows=4",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&dir, &["diff", "hpcc_dumbbell.toml", "--dut", "observed"]);
    assert_eq!(code, 0, "{err}");
    assert!(String::from_utf8_lossy(&out).contains("CONFORMANT"));
    assert!(!err.contains("hint:"), "{err}");
}

#[test]
fn init_keeps_a_manifest_that_is_there() {
    let dir = alone("hpcc_dumbbell", "keep");
    std::fs::write(dir.join("hpcc_dumbbell.toml"), "# mine\n").unwrap();
    let (code, _, err) = run(&dir, &["init", "hpcc_dumbbell.pcap"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("hpcc_dumbbell.toml")).unwrap(),
        "# mine\n"
    );
    let (code, _, err) = run(&dir, &["init", "hpcc_dumbbell.pcap", "--force"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn init_refuses_bad_parameters_and_empty_captures() {
    let dir = alone("hpcc_dumbbell", "bad");
    let (code, _, err) = run(&dir, &["init", "hpcc_dumbbell.pcap", "--param", "etta=0.9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("etta"), "{err}");
    assert!(!dir.join("hpcc_dumbbell.toml").exists());
    let (code, _, err) = run(
        &dir,
        &["init", "hpcc_dumbbell.pcap", "--param", "dcqcn.rpg_gd=3"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not among the models"), "{err}");
    // A capture with no RoCEv2: nothing written.
    let (code, _, err) = run(
        &repo(),
        &["init", "tests/fixtures/malformed.pcap", "-o", "-"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing to replay"), "{err}");
    // Hand-made captures: the pcap header alone; one ARP frame; a record cut short (its
    // header says 100 bytes, 20 follow). Each named by what it holds, nothing written.
    let header = [
        0xa1b2_c3d4u32.to_le_bytes().as_slice(),
        &2u16.to_le_bytes(),
        &4u16.to_le_bytes(),
        &[0; 8],
        &65_535u32.to_le_bytes(),
        &1u32.to_le_bytes(),
    ]
    .concat();
    let arp: Vec<u8> = [
        [0xff; 6].as_slice(),
        &[0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
        &[0x08, 0x06],
        &[0; 28],
    ]
    .concat();
    let record = |caplen: u32, data: &[u8]| {
        [
            1u32.to_le_bytes().as_slice(),
            &0u32.to_le_bytes(),
            &caplen.to_le_bytes(),
            &caplen.to_le_bytes(),
            data,
        ]
        .concat()
    };
    let cases = [
        (
            "header_only",
            header.clone(),
            "in 0 frames: nothing to replay",
        ),
        (
            "one_arp",
            [header.clone(), record(42, &arp)].concat(),
            "in 1 frame: nothing to replay",
        ),
        (
            "cut",
            [header.clone(), record(100, &arp[..20])].concat(),
            "in 0 frames (the capture ends early: record 1 at byte 24: captured length 100 but \
             only 20 data bytes left",
        ),
    ];
    for (name, bytes, says) in cases {
        std::fs::write(dir.join(format!("{name}.pcap")), bytes).unwrap();
        let (code, _, err) = run(&dir, &["init", &format!("{name}.pcap")]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(!dir.join(format!("{name}.toml")).exists(), "{name}");
    }
}

/// A capture with microsecond timestamps of a 25 Gbps sender (data frames 340 ns apart, so
/// several share a microsecond): never 0 ns apart, never an infinite rate; a pair a
/// microsecond apart says only "4 Gbps or more", and the rate comes from a run long enough
/// for the unit: an independent count (tshark 4.0.17's times of traces/roce_dcqcn.pcap
/// floored to µs, every run of 2 to 64 data frames from 10.0.0.1 to 10.0.0.3, bits before
/// the last over span + 1 µs) finds 32 frames 10,000 ns apart with 33,558 bytes (each +24)
/// before the last: at least 24.41 Gbps, at most 33,558 × 8 / 9,000 ns = 29.83 Gbps, 25 Gbps
/// alone within 15 %.
#[test]
fn frames_that_share_a_timestamp_do_not_measure_the_link() {
    use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
    let dir = alone("roce_dcqcn", "us");
    let pcap = dir.join("roce_dcqcn.pcap");
    let mut r = CaptureReader::open(repo().join("traces/roce_dcqcn.pcap")).unwrap();
    let mut w = PcapWriter::create(&pcap).unwrap();
    let mut shared = 0;
    let mut last = u64::MAX;
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let t = rec.ts_ns / 1_000 * 1_000;
        shared += usize::from(t == last);
        last = t;
        w.write(t, rec.data).unwrap();
    }
    w.flush().unwrap();
    assert!(shared > 100, "{shared}");
    let (code, out, err) = run(&dir, &["init", "roce_dcqcn.pcap", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(
            "# measured: 32 consecutive data frames in 10000 ns, 33558 B before the last"
        ),
        "{text}"
    );
    assert!(
        text.contains("(timestamps to 1000 ns: between 24.41 Gbps and 29.83 Gbps)"),
        "{text}"
    );
    assert!(text.contains("\nlink_rate_bps = 25000000000\n"), "{text}");
}
