//! RDMA READ traffic (docs/verdicts.md "READ traffic"): a READ moves a WRITE's bytes the other
//! way — the responder sends them as READ responses on its QP, and the requester's CNPs go
//! back to that QP — so DCQCN's reaction point paces and reacts alike. The captures are the
//! READ twins of two bundled WRITE captures, rebuilt packet for packet by scapy
//! (tests/fixtures/read/make_read_twins.py: WRITEs → READ responses at the same times, a READ
//! request before each message, ACKs dropped, CNPs kept). The expected decisions are the
//! WRITE captures' golden files; the expected counts are the twins' packets as the script
//! built them (656 frames of dcqcn_clamp − 253 ACKs + 2 READ requests = 405).

mod common;

use std::path::Path;

use common::{Scratch, repo, run as ccreplay};
use serde_json::Value;

/// `traces/STEM.toml` with its capture replaced by the READ twin, in `dir`; `edit` changes
/// the manifest's text. Returns the manifest's path.
fn twin(dir: &Path, stem: &str, edit: impl Fn(String) -> String) -> String {
    let read = format!("{stem}_read.pcap");
    std::fs::copy(
        repo().join("tests/fixtures/read").join(&read),
        dir.join(&read),
    )
    .unwrap();
    let text = std::fs::read_to_string(repo().join(format!("traces/{stem}.toml"))).unwrap();
    let text = text.replace(
        &format!("capture = \"{stem}.pcap\""),
        &format!("capture = \"{read}\""),
    );
    assert!(text.contains(&read));
    let path = dir.join(format!("{stem}_read.toml"));
    std::fs::write(&path, edit(text)).unwrap();
    path.to_str().unwrap().to_string()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A decision without its cause's event index: the twin has no ACK events, so its events
/// are numbered differently; time, flow, cause kind, rate and state must all be the same.
fn without_index(mut d: Value) -> Value {
    d["cause"].as_object_mut().unwrap().remove("index");
    d
}

#[test]
fn a_responder_paces_read_responses_as_a_writer_its_writes() {
    let dir = Scratch::new("read-sender");
    for (edit, how) in [
        (Box::new(|t| t) as Box<dyn Fn(String) -> String>, "manifest"),
        (
            Box::new(|t: String| common::no_flows(&t)),
            "READ requests' PSNs",
        ),
    ] {
        let manifest = twin(&dir, "dcqcn_clamp", edit);
        for model in ["dcqcn", "dcqcn-nic"] {
            let out = dir.join(format!("{model}.jsonl"));
            let events = dir.join("events.jsonl");
            let (code, _, err) = ccreplay(
                &dir,
                &[
                    "replay",
                    &manifest,
                    "--model",
                    model,
                    "-o",
                    out.to_str().unwrap(),
                    "--emit-events",
                    events.to_str().unwrap(),
                ],
            );
            assert_eq!(code, 0, "{model} ({how}): {err}");
            // Every packet accounted for: the 393 READ responses and 10 CNPs are events, the
            // 2 READ requests pair and are skipped.
            assert!(
                err.contains(
                    "405 frames: 405 RoCEv2, 403 events (tx_data 393, rx_cnp 10); 2 skipped: 2 opcodes with no congestion-control event"
                ),
                "{err}"
            );
            let got: Vec<Value> = lines(&out).into_iter().map(without_index).collect();
            let golden = lines(&repo().join(format!("golden/dcqcn_clamp/{model}.jsonl")));
            // The WRITE capture goes on with ACKs for 21 µs after its last data packet, and
            // the replay fires timers up to its last event: the twin's decisions are the
            // golden file's up to the twin's last event (dcqcn-nic's alpha timer fires after).
            let last = lines(&events).last().unwrap()["t"].as_u64().unwrap();
            let want: Vec<Value> = golden
                .into_iter()
                .filter(|d| d["t"].as_u64().unwrap() <= last)
                .map(without_index)
                .collect();
            assert!(want.len() >= 10, "{model}: {} decisions", want.len());
            assert_eq!(got, want, "{model} ({how})");
        }
    }
}

#[test]
fn a_requester_sends_cnps_for_marked_read_responses_as_for_writes() {
    let dir = Scratch::new("read-receiver");
    let manifest = twin(&dir, "dcqcn_np", |t| t);
    let out = dir.join("np.jsonl");
    let (code, _, err) = ccreplay(&dir, &["replay", &manifest, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // 2,097 frames − 940 ACKs + 4 READ requests = 1,161; the 217 CNPs are the receiver's
    // own (its output), as in the WRITE capture.
    assert!(
        err.contains("1,161 frames: 1,161 RoCEv2, 940 events (rx_data 940); 221 skipped: 217 ACK/NAK/CNP sent by the receiver, 4 opcodes with no congestion-control event"),
        "{err}"
    );
    // The data events are the WRITE capture's one for one, so even the indices agree.
    let golden = lines(&repo().join("golden/dcqcn_np/dcqcn-np.jsonl"));
    assert_eq!(golden.len(), 217);
    assert_eq!(lines(&out), golden);
    // The requester's NIC as the DUT: its CNPs on the wire are the reference's, one for one.
    let (code, out, err) = ccreplay(&dir, &["diff", &manifest, "--dut", "wire"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("CONFORMANT: 4 flows, 217 decisions, 0 mismatched"),
        "{out}"
    );
    assert!(
        out.contains("wire: 217 ACK/NAK/CNP sent by 10.0.0.4: 217 CNPs compared"),
        "{out}"
    );
}

#[test]
fn a_switch_port_sees_read_responses_as_data() {
    let dir = Scratch::new("read-port");
    // The responder's link as a switch port's egress: its READ responses leave the port.
    let manifest = twin(&dir, "dcqcn_clamp", |t| {
        let t = t.replace(
            "kind = \"sender\"\nhost = \"10.0.0.1\"",
            "kind = \"switch_port\"\nport = \"tor:1\"",
        );
        let t = common::no_flows(&t);
        let models = t.find("[[models]]").unwrap();
        let source = t.find("[source]").unwrap();
        format!(
            "{}[[models]]\nname = \"dcqcn-cp\"\n\n{}",
            &t[..models],
            &t[source..]
        )
    });
    let (code, _, err) = ccreplay(&dir, &["replay", &manifest, "-o", "cp.jsonl"]);
    // A `roce` port capture carries no queue length for dcqcn-cp to decide on (exit 2,
    // docs/verdicts.md); what matters here is that every READ response is a dequeue event.
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("405 frames: 405 RoCEv2, 393 events (dequeue 393); 12 skipped: 12 opcodes with no congestion-control event"),
        "{err}"
    );
}

#[test]
fn init_pairs_a_read_flow_by_its_requests() {
    let dir = Scratch::new("read-init");
    twin(&dir, "dcqcn_clamp", |t| t);
    let (code, _, err) = ccreplay(&dir, &["init", "dcqcn_clamp_read.pcap", "-o", "init.toml"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("init.toml")).unwrap();
    // inspect lists the responses as the flows' data.
    let (code, listing, _) = ccreplay(
        &dir,
        &["inspect", "dcqcn_clamp_read.pcap", "--format", "text"],
    );
    assert_eq!(code, 0);
    assert!(
        listing.contains("10.0.0.1 -> 10.0.0.3 QP 0x200001: 193 (193 data), from frame 2"),
        "{listing}"
    );
    // ... and the requester's READ requests as such, beside its CNPs (tshark: opcode 0x0c at
    // frames 1 and 173, 8 and 2 CNPs on those QPs).
    for line in [
        "10.0.0.3 -> 10.0.0.1 QP 0x100001: 9 (8 CNP, 1 READ request), from frame 1",
        "10.0.0.3 -> 10.0.0.1 QP 0x100003: 3 (2 CNP, 1 READ request), from frame 173",
    ] {
        assert!(listing.contains(line), "{line}\n{listing}");
    }
    let (_, json, _) = ccreplay(
        &dir,
        &["inspect", "dcqcn_clamp_read.pcap", "--format", "json"],
    );
    let summary: Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    let reads: Vec<u64> = summary["flow_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["read_requests"].as_u64().unwrap())
        .collect();
    assert_eq!(reads, [1, 0, 1, 0]);
    let m: toml::Table = toml::from_str(&text).unwrap();
    // The responder is the sender; its flows are the WRITE capture's, QP for QP.
    assert_eq!(m["capture_point"]["kind"].as_str(), Some("sender"));
    assert_eq!(m["capture_point"]["host"].as_str(), Some("10.0.0.1"));
    let bundled = common::manifest("traces/dcqcn_clamp.toml");
    assert_eq!(m["flows"], bundled["flows"]);
    assert!(
        text.contains("# 193 data packets, 8 ACK/NAK/CNP; paired by PSN with its READ request (1)"),
        "{text}"
    );
    assert!(
        text.contains("READ responses are acknowledged by none"),
        "{text}"
    );
    // The WRITE original's flow was paired by its ACKs' PSNs, and says only that (177 ACKs and
    // 8 CNPs come back on QP 0x100001: inspect's flow list of traces/dcqcn_clamp.pcap).
    std::fs::copy(
        repo().join("traces/dcqcn_clamp.pcap"),
        dir.join("write.pcap"),
    )
    .unwrap();
    let (code, _, err) = ccreplay(&dir, &["init", "write.pcap", "-o", "write.toml"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("write.toml")).unwrap();
    assert!(
        text.contains("\n# 193 data packets, 185 ACK/NAK/CNP; paired by PSN\n"),
        "{text}"
    );
}

#[test]
fn a_window_model_on_read_traffic_says_why_it_has_nothing() {
    let dir = Scratch::new("read-hpcc");
    let manifest = twin(&dir, "dcqcn_clamp", |t| {
        let models = t.find("[[models]]").unwrap();
        let flows = t.find("[[flows]]").unwrap();
        format!(
            "{}[[models]]\nname = \"hpcc\"\n\n{}",
            &t[..models],
            &t[flows..]
        )
    });
    let (code, _, err) = ccreplay(&dir, &["replay", &manifest, "-o", "h.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("393 of the data packets are READ responses, which no ACK answers"),
        "{err}"
    );
    // The judge from the wire says the same of its window.
    let (code, out, err) = ccreplay(&dir, &["diff", &manifest, "--dut", "observed"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        (out.clone() + &err).contains("which no ACK answers (judge READ traffic with dcqcn"),
        "{out}{err}"
    );
}

#[test]
fn the_observed_judge_reads_a_responder_as_a_writer() {
    let dir = Scratch::new("read-observed");
    let manifest = twin(&dir, "dcqcn_clamp", |t| t);
    let original = repo().join("traces/dcqcn_clamp.toml");
    let (code, write, err) = ccreplay(
        &dir,
        &["diff", original.to_str().unwrap(), "--dut", "observed"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, read, err) = ccreplay(&dir, &["diff", &manifest, "--dut", "observed"]);
    assert_eq!(code, 0, "{err}");
    // The same verdict on the same transmit times and CNPs.
    let verdict = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("CONFORMANT"))
            .map(str::to_owned)
    };
    assert_eq!(verdict(&read), verdict(&write));
    assert!(verdict(&read).is_some(), "{read}");
}

/// Only a READ request pairs a direction without being feedback: an atomic request to the
/// host (tests/fixtures/read/atomic.pcap, scapy: a CMP_SWAP from 10.0.0.3 to a third QP of
/// 10.0.0.1 whose PSN is flow 0's first), merged before dcqcn_clamp's packets, is skipped and
/// pairs nothing — read as a pairing, it would take flow 0 from its ACKs (its direction is
/// seen first and its PSN is in flow 0's range), leaving 177 ACKs and 8 CNPs unpaired.
#[test]
fn an_atomic_request_pairs_nothing() {
    let (dir, code, err) = clamp_with("atomic", true);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("657 frames: 657 RoCEv2, 656 events (tx_data 393, rx_ack 253, rx_cnp 10); 1 skipped: 1 opcode with no congestion-control event"),
        "{err}"
    );
    let golden = lines(&repo().join("golden/dcqcn_clamp/dcqcn.jsonl"));
    assert_eq!(lines(&dir.join("d.jsonl")), golden);
}

/// A READ request whose responses the capture does not hold (tests/fixtures/read/
/// late_read.pcap, after dcqcn_clamp's last packet) pairs with no flow; its direction carries
/// no feedback, so nothing is reported unpaired (an ACK direction that pairs nothing is).
#[test]
fn a_read_request_without_its_responses_loses_nothing() {
    let (dir, code, err) = clamp_with("late_read", false);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("657 frames: 657 RoCEv2, 656 events (tx_data 393, rx_ack 253, rx_cnp 10); 1 skipped: 1 opcode with no congestion-control event"),
        "{err}"
    );
    assert!(!err.contains("match no data flow"), "{err}");
    let golden = lines(&repo().join("golden/dcqcn_clamp/dcqcn.jsonl"));
    assert_eq!(lines(&dir.join("d.jsonl")), golden);
}

/// dcqcn_clamp.pcap with the one packet of `tests/fixtures/read/NAME.pcap` before (`first`)
/// or after its packets, replayed through dcqcn with flows paired from the capture: the
/// folder, the exit status and stderr.
fn clamp_with(name: &str, first: bool) -> (Scratch, i32, String) {
    let dir = Scratch::new(&format!("read-{name}"));
    let clamp = std::fs::read(repo().join("traces/dcqcn_clamp.pcap")).unwrap();
    let extra = std::fs::read(repo().join(format!("tests/fixtures/read/{name}.pcap"))).unwrap();
    // Both are little-endian ns pcaps with the same 24-byte header.
    assert_eq!(clamp[..24], extra[..24]);
    let merged = if first {
        [&extra[..], &clamp[24..]].concat()
    } else {
        [&clamp[..], &extra[24..]].concat()
    };
    std::fs::write(dir.join("a.pcap"), merged).unwrap();
    let text = std::fs::read_to_string(repo().join("traces/dcqcn_clamp.toml"))
        .unwrap()
        .replace("capture = \"dcqcn_clamp.pcap\"", "capture = \"a.pcap\"");
    std::fs::write(dir.join("a.toml"), common::no_flows(&text)).unwrap();
    let (code, _, err) = ccreplay(
        &dir,
        &["replay", "a.toml", "--model", "dcqcn", "-o", "d.jsonl"],
    );
    (dir, code, err)
}

/// Several READs outstanding at once: the twin with flow 1's request (its record 173) moved
/// up beside flow 0's (record 1, the same timestamp), both before any response. init still
/// pairs both flows by their requests.
#[test]
fn outstanding_reads_pair_each_flow() {
    let dir = Scratch::new("read-outstanding");
    let bytes = std::fs::read(repo().join("tests/fixtures/read/dcqcn_clamp_read.pcap")).unwrap();
    let mut recs: Vec<Vec<u8>> = common::pcap_records(&bytes)
        .into_iter()
        .map(|(_, r)| r.to_vec())
        .collect();
    assert_eq!(recs.len(), 405);
    // Record 173 (index 172) is flow 1's READ request: opcode 0x0C at byte 16 + 42.
    assert_eq!(recs[172][16 + 42], 0x0C);
    let mut second = recs.remove(172);
    let t0 = recs[0][..8].to_vec();
    second[..8].copy_from_slice(&t0);
    recs.insert(1, second);
    let mut out = bytes[..24].to_vec();
    for r in &recs {
        out.extend_from_slice(r);
    }
    std::fs::write(dir.join("two.pcap"), out).unwrap();
    let (code, _, err) = ccreplay(&dir, &["init", "two.pcap", "-o", "two.toml"]);
    assert_eq!(code, 0, "{err}");
    let m: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.join("two.toml")).unwrap()).unwrap();
    assert_eq!(
        m["flows"],
        common::manifest("traces/dcqcn_clamp.toml")["flows"]
    );
}

/// init's base RTT guess says why no round trip was timed: READ responses only where the
/// capture is a responder's (the sender's); a WRITE sender without ACKs
/// (tests/fixtures/observed/paced.pcap) and a READ requester (the receiver twin) say their
/// own reasons.
#[test]
fn init_says_why_it_timed_no_round_trip() {
    let dir = Scratch::new("read-rtt");
    let guess = |file: &str| {
        // paced.pcap has no CNP for dcqcn to decide on: init's try of the manifest it wrote
        // fails (exit 2), the manifest stays.
        let (code, _, err) = ccreplay(&dir, &["init", file, "-o", "m.toml"]);
        assert_eq!(
            code,
            if file == "paced.pcap" { 2 } else { 0 },
            "{file}: {err}"
        );
        let text = std::fs::read_to_string(dir.join("m.toml")).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("# GUESS") && l.contains("10 µs assumed"))
            .unwrap_or_else(|| panic!("{file}: {text}"))
            .to_string();
        std::fs::remove_file(dir.join("m.toml")).unwrap();
        line
    };
    twin(&dir, "dcqcn_clamp", |t| t);
    twin(&dir, "dcqcn_np", |t| t);
    std::fs::copy(
        repo().join("tests/fixtures/observed/paced.pcap"),
        dir.join("paced.pcap"),
    )
    .unwrap();
    assert_eq!(
        guess("dcqcn_clamp_read.pcap"),
        "# GUESS: no ACK answers a data packet's PSN (READ responses are acknowledged by none): 10 µs assumed; set your network's base RTT"
    );
    assert_eq!(
        guess("paced.pcap"),
        "# GUESS: no ACK answers a data packet's PSN: 10 µs assumed; set your network's base RTT"
    );
    assert_eq!(
        guess("dcqcn_np_read.pcap"),
        "# GUESS: a receiver's capture holds no round trip: 10 µs assumed; set your network's base RTT"
    );
}
