//! A green verdict accounts for every packet (issue 14.1-14.4): every record of a capture is an
//! event or skipped for a named reason, and a run that compared nothing is an error, never
//! CONFORMANT.
//!
//! `tests/fixtures/accounting.pcap` is written by `make_fixtures.py` (scapy), which tags each
//! packet with what it must become and writes the tallies of those tags to
//! `accounting.counts.json`: the counts asserted here come from there, not from this code.

use std::path::{Path, PathBuf};
use std::process::Command;

use ccreplay::extract::{ExtractReport, Skip};
use ccreplay::replay::{Trace, for_each_event_jobs};

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn counts() -> serde_json::Value {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/accounting.counts.json"))
        .expect("accounting.counts.json");
    serde_json::from_str(&text).unwrap()
}

/// The accounting fixture in a fresh folder as `t.pcap`, with a manifest `t.toml` at sender
/// `host`, in `dialect`, with `extra` appended (e.g. `[[flows]]`).
fn trace(name: &str, host: &str, dialect: &str, udp_port: u16, extra: &str) -> common::Scratch {
    let dir = common::Scratch::new(&format!("accounting-{name}"));
    std::fs::copy(
        repo().join("tests/fixtures/accounting.pcap"),
        dir.join("t.pcap"),
    )
    .unwrap();
    let manifest = format!(
        r#"dialect = "{dialect}"

[capture_point]
kind = "sender"
host = "{host}"

[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
udp_port = {udp_port}

[[models]]
name = "dcqcn-nic"

[source]
kind = "captured"
generator = "tests/fixtures/make_fixtures.py"
{extra}"#
    );
    std::fs::write(dir.join("t.toml"), manifest).unwrap();
    dir
}

const FLOW: &str = r#"
[[flows]]
local_ip = "10.0.0.1"
local_qp = 0x000101
remote_ip = "10.0.0.2"
remote_qp = 0x000102
"#;

fn ccreplay(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report(dir: &Path, jobs: usize) -> ExtractReport {
    let trace = Trace::load(&dir.join("t.toml")).unwrap();
    let (_, r) = for_each_event_jobs(&trace, jobs, |_| {}).unwrap();
    r
}

#[test]
fn every_record_is_an_event_or_skipped_for_its_reason() {
    let c = counts();
    // Both extraction modes (pairing by a first pass; [[flows]] in one pass) and 1-2 threads.
    for (mode, extra) in [("pass1", ""), ("flows", FLOW)] {
        let dir = trace(mode, "10.0.0.1", "roce", 4791, extra);
        for jobs in [1, 2] {
            let r = report(&dir, jobs);
            let what = format!("{mode}, --jobs {jobs}");
            assert_eq!(r.packets, c["frames"], "{what}: frames");
            assert_eq!(r.roce, c["roce"], "{what}: RoCEv2");
            assert_eq!(r.events, c["events"], "{what}: events");
            assert_eq!(r.event_kinds.tx_data, c["event_kinds"]["tx_data"], "{what}");
            assert_eq!(r.event_kinds.rx_ack, c["event_kinds"]["rx_ack"], "{what}");
            assert_eq!(r.event_kinds.rx_nak, c["event_kinds"]["rx_nak"], "{what}");
            assert_eq!(r.event_kinds.rx_cnp, c["event_kinds"]["rx_cnp"], "{what}");
            for why in Skip::ALL {
                let want = c["skipped"][why.key()].as_u64().unwrap_or(0);
                assert_eq!(r.skipped.get(why), want, "{what}: skipped {}", why.key());
            }
            // The partition: nothing read is unaccounted for.
            assert_eq!(r.events + r.skipped.total(), r.packets, "{what}");
            assert_eq!(r.damaged_in_traffic, c["damaged_in_traffic"], "{what}");
            assert_eq!(
                r.other_data_senders,
                vec![("10.0.0.7".parse().unwrap(), 1)],
                "{what}"
            );
            assert_eq!(r.other_udp_ports, vec![(53, 2)], "{what}");
            assert_eq!(
                r.unpaired_acks,
                vec![("10.0.0.5".parse().unwrap(), 0x000555, 1)],
                "{what}"
            );
        }
    }
}

#[test]
fn the_accounting_is_printed_by_replay_diff_and_check() {
    let dir = trace("printed", "10.0.0.1", "roce", 4791, FLOW);
    let (code, _, err) = ccreplay(&["replay", "t.toml", "-o", "d.jsonl"], &dir);
    assert_eq!(code, 0, "{err}");
    let line = "t.pcap: 20 frames: 16 RoCEv2, 7 events (tx_data 3, rx_ack 2, rx_nak 1, rx_cnp 1); \
                13 skipped: 1 PFC pause frame, 2 UDP to another port, 1 not RoCEv2, 1 malformed, \
                1 bad ICRC, 2 of other hosts than 10.0.0.1, 1 management datagram to QP1 \
                (connection setup), 2 in a direction the capture point \
                does not replay, 1 opcode with no congestion-control event, 1 ACK/NAK/CNP of no flow";
    assert!(err.contains(line), "{err}");
    // Damage inside the flow is a warning on every run...
    assert!(
        err.contains("warning: t.pcap: 2 malformed or bad-ICRC packets of the replayed traffic"),
        "{err}"
    );
    // ... and an error with --strict, which writes nothing.
    let (code, _, err) = ccreplay(&["replay", "t.toml", "-o", "s.jsonl", "--strict"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(!dir.join("s.jsonl").exists());

    let (code, out, err) = ccreplay(
        &[
            "diff",
            "t.toml",
            "--dut",
            "model:dcqcn-nic",
            "--format",
            "json",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["accounting"]["frames"], 20);
    assert_eq!(j["accounting"]["roce"], 16);
    assert_eq!(j["accounting"]["events"], 7);
    assert_eq!(j["accounting"]["skipped_total"], 13);
    assert_eq!(j["accounting"]["skipped"]["other_udp_port"], 2);
    assert_eq!(j["accounting"]["skipped"]["management"], 1);
    assert_eq!(j["accounting"]["skipped"]["unpaired_ack"], 1);
}

#[test]
fn a_wrong_host_is_an_error_naming_the_host_that_sends() {
    let dir = trace("host", "10.9.9.9", "roce", 4791, "");
    let (code, _, err) = ccreplay(&["replay", "t.toml", "-o", "d.jsonl"], &dir);
    assert_eq!(code, 2, "{err}");
    // 16 RoCEv2 packets: the malformed one is skipped before the host is looked at; the 15
    // others (the bad-ICRC ACK among them: a host checks the ICRC of what it receives, and
    // 10.9.9.9 receives nothing) are of hosts other than 10.9.9.9. Data is sent by 10.0.0.1
    // (3 packets of the flow; its MAD to QP1 is no data), 10.0.0.2 (the wrong-way WRITE) and
    // 10.0.0.7.
    assert!(
        err.contains(
            "no events to replay: 15 of the 16 RoCEv2 packets are neither from nor to 10.9.9.9"
        ),
        "{err}"
    );
    assert!(
        err.contains("data is sent by 10.0.0.1 (3 packets), 10.0.0.2 (1 packet), 10.0.0.7 (1 packet): check `capture_point.host`"),
        "{err}"
    );
    assert!(!dir.join("d.jsonl").exists(), "nothing written");
    for args in [
        &["diff", "t.toml", "--dut", "model:dcqcn-nic"][..],
        &[
            "diff",
            "t.toml",
            "--dut",
            "model:dcqcn-nic",
            "--format",
            "json",
        ],
    ] {
        let (code, out, err) = ccreplay(args, &dir);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!out.contains("CONFORMANT"), "{args:?}: {out}");
        assert!(
            out.contains("neither from nor to 10.9.9.9"),
            "{args:?}: {out}"
        );
    }
}

#[test]
fn a_wrong_port_or_dialect_is_an_error_with_its_likely_cause() {
    let dir = trace("port", "10.0.0.1", "roce", 4792, "");
    let (code, _, err) = ccreplay(&["replay", "t.toml"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("none of the 20 frames is RoCEv2 to UDP port 4792"),
        "{err}"
    );
    assert!(err.contains("set `network.udp_port = 4791`"), "{err}");

    // Read as hpcc, the INT shim swallows the BTH: every packet is malformed. Read as roce,
    // all 16 but the fixture's one malformed and one bad-ICRC packet are clean
    // (accounting.counts.json): the hint names that dialect.
    let dir = trace("dialect", "10.0.0.1", "hpcc", 4791, "");
    let (code, _, err) = ccreplay(&["replay", "t.toml"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "of the first 16 RoCEv2 packets, 14 read cleanly as `roce`, 0 as the manifest's `hpcc`"
        ),
        "{err}"
    );
    assert!(err.contains("set dialect = \"roce\" in t.toml"), "{err}");
}

#[test]
fn a_listed_flow_that_never_appears_is_an_error() {
    let extra = format!(
        "{FLOW}
[[flows]]
local_ip = \"10.0.0.1\"
local_qp = 0x000201
remote_ip = \"10.0.0.3\"
remote_qp = 0x000202
"
    );
    let dir = trace("absent", "10.0.0.1", "roce", 4791, &extra);
    let (code, _, err) = ccreplay(&["replay", "t.toml"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[[flows]] entry 2 (10.0.0.1 QP 0x000201 -> 10.0.0.3 QP 0x000202) never appears in the capture"),
        "{err}"
    );
}

#[test]
fn the_capture_named_is_the_capture_replayed() {
    let dir = trace("named", "10.0.0.1", "roce", 4791, "");
    std::fs::copy(
        repo().join("traces/roce_dcqcn.pcap"),
        dir.join("other.pcap"),
    )
    .unwrap();
    let text = std::fs::read_to_string(dir.join("t.toml")).unwrap();
    std::fs::write(
        dir.join("t.toml"),
        format!("capture = \"other.pcap\"\n{text}"),
    )
    .unwrap();
    let (code, out, err) = ccreplay(&["replay", "t.pcap"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "nothing replayed: {out}");
    assert!(
        err.contains("names other.pcap, not t.pcap given on the command line"),
        "{err}"
    );
    // The manifest itself still replays the file it names.
    let (code, _, err) = ccreplay(&["replay", "t.toml", "-o", "d.jsonl"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("other.pcap: "), "{err}");
}

#[test]
fn check_reports_an_empty_pair_as_an_error_with_its_accounting() {
    let dir = trace("check", "10.9.9.9", "roce", 4791, "");
    std::fs::create_dir_all(dir.join("golden/t")).unwrap();
    // An empty golden file: before issue 14, an empty replay "conformed" to it.
    std::fs::write(dir.join("golden/t/dcqcn-nic.jsonl"), "").unwrap();
    let (code, out, err) = ccreplay(&["check", ".", "--golden", "golden"], &dir);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("ERROR  t / dcqcn-nic: ./t.pcap: no events to replay"),
        "{out}"
    );
    assert!(out.contains("0 of 1 trace/model pairs conform"), "{out}");
    // And bless refuses to write a golden file of nothing.
    let (code, _, err) = ccreplay(&["bless", ".", "--golden", "golden"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no events to replay"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("golden/t/dcqcn-nic.jsonl")).unwrap(),
        ""
    );
}

#[test]
fn junit_has_a_testcase_for_missing_and_broken_pairs_with_the_accounting() {
    let dir = common::Scratch::new("accounting-junit");
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    // The five traces whose flows the counts below are made of (the suite grows; this test's
    // arithmetic should not have to).
    for stem in [
        "fncc_dumbbell",
        "hpcc_dumbbell",
        "rcc_receiver",
        "rcc_sender",
        "roce_dcqcn",
    ] {
        for ext in ["pcap", "toml"] {
            let name = format!("{stem}.{ext}");
            std::fs::copy(
                repo().join("traces").join(&name),
                dir.join("traces").join(&name),
            )
            .unwrap();
        }
    }
    let copy = Command::new("cp")
        .args(["-r"])
        .arg(repo().join("golden"))
        .arg(dir.join("golden"))
        .status()
        .unwrap();
    assert!(copy.success());
    // hpcc_dumbbell loses its golden file (a failure); rcc_sender's manifest gets an unknown
    // key (an error).
    std::fs::remove_file(dir.join("golden/hpcc_dumbbell/hpcc.jsonl")).unwrap();
    let m = dir.join("traces/rcc_sender.toml");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, format!("{text}\ngarbage = 1\n")).unwrap();
    let (code, _, err) = ccreplay(&["check", "traces", "--junit", "j.xml"], &dir);
    assert_eq!(code, 2, "{err}");
    let x = std::fs::read_to_string(dir.join("j.xml")).unwrap();
    // Suites: fncc (3 flows), hpcc (missing: 1 case), rcc_receiver (4 flows), rcc_sender
    // (broken: 1 case), roce_dcqcn dcqcn and dcqcn-nic (3 flows each): 15 cases. The missing
    // golden file compared nothing: an error, as the broken manifest, not a failure.
    assert!(
        x.contains("<testsuites name=\"ccreplay\" tests=\"15\" failures=\"0\" errors=\"2\""),
        "{x}"
    );
    assert!(x.contains("<error message=\"no golden file "), "{x}");
    assert!(x.contains("<testsuite name=\"rcc_sender / -\""), "{x}");
    assert!(x.contains("<error message=\""), "{x}");
    // Each compared suite carries its trace's accounting (docs/verdicts.md).
    assert!(
        x.contains("<property name=\"accounting.frames\" value=\"2517\"/>"),
        "{x}"
    );
    assert!(
        x.contains("<property name=\"accounting.skipped.receiver_feedback\" value=\"1374\"/>"),
        "{x}"
    );
}

/// rdma_cm sets a connection up and tears it down with MADs to QP1 (tests/fixtures/cm/, made
/// by scapy; tshark names them ConnectRequest, ConnectReply, ReadyToUse, DisconnectRequest,
/// DisconnectReply). Merged by time into a bundled capture, as mergecap would, they are
/// skipped as management — not a flow of their own that renumbers the real ones — and the
/// replay is the bundled golden file's, flow ids and event indices included.
#[test]
fn connection_setup_is_management_not_a_flow() {
    let dir = common::Scratch::new("accounting-cm");
    let clamp = std::fs::read(repo().join("traces/dcqcn_clamp.pcap")).unwrap();
    let mads = std::fs::read(repo().join("tests/fixtures/cm/cm_mads.pcap")).unwrap();
    let mut all = common::pcap_records(&mads);
    all.extend(common::pcap_records(&clamp));
    all.sort_by_key(|(t, _)| *t);
    let mut merged = clamp[..24].to_vec();
    for (_, r) in &all {
        merged.extend_from_slice(r);
    }
    std::fs::write(dir.join("cm.pcap"), &merged).unwrap();
    let manifest = std::fs::read_to_string(repo().join("traces/dcqcn_clamp.toml"))
        .unwrap()
        .replace("capture = \"dcqcn_clamp.pcap\"", "capture = \"cm.pcap\"");
    std::fs::write(dir.join("cm.toml"), manifest).unwrap();
    for (model, extra) in [
        ("dcqcn-nic", None),
        ("dcqcn", Some(common::no_flows as fn(&str) -> String)),
    ] {
        if let Some(edit) = extra {
            let text = std::fs::read_to_string(dir.join("cm.toml")).unwrap();
            std::fs::write(dir.join("cm.toml"), edit(&text)).unwrap();
        }
        let (code, _, err) = common::run(
            &dir,
            &["replay", "cm.toml", "--model", model, "-o", "d.jsonl"],
        );
        assert_eq!(code, 0, "{err}");
        // 656 frames of the bundled capture + 5 MADs.
        assert!(
            err.contains("661 frames: 661 RoCEv2, 656 events (tx_data 393, rx_ack 253, rx_cnp 10); 5 skipped: 5 management datagrams to QP1 (connection setup)"),
            "{err}"
        );
        let golden =
            std::fs::read_to_string(repo().join(format!("golden/dcqcn_clamp/{model}.jsonl")))
                .unwrap();
        let got = std::fs::read_to_string(dir.join("d.jsonl")).unwrap();
        let parse = |s: &str| -> Vec<serde_json::Value> {
            s.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        assert_eq!(parse(&got), parse(&golden), "{model}");
    }
    // init sees one sender and its two flows, not data both ways.
    let (code, _, err) = common::run(&dir, &["init", "cm.pcap", "-o", "init.toml"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("init.toml")).unwrap();
    assert!(!text.contains("data both ways"), "{text}");
    assert!(!text.contains("QP 0x000001"), "{text}");
    let m: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(m["capture_point"]["kind"].as_str(), Some("sender"));
    assert_eq!(
        m["flows"],
        common::manifest("traces/dcqcn_clamp.toml")["flows"]
    );
}
