//! `--dut wire` (issue 15.5): a receiver NIC's decisions are the ACKs it sent, compared exactly
//! with the reference receiver's. The bundled RCC receiver capture (written by `ccreplay sim`,
//! whose receiver NIC runs the reference model) conforms; the same capture with one ACK's
//! window changed — ICRC recomputed, as a buggy NIC would send it — differs at that ACK only.

mod common;

use common::{repo, run as ccreplay};

use std::path::PathBuf;

use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

/// The records of a little-endian pcap: (offset of the frame, its length).
fn records(pcap: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        v.push((at + 16, len));
        at += 16 + len;
    }
    v
}

// The rcc dialect's ACK (docs/wire.md 4): Ethernet 14 + IPv4 20 + UDP 8, the 8-byte
// timestamp (42), BTH (50; opcode byte 50), AETH (62), cwnd u32 / N u16 / flags / reserved
// (66..74), the ICRC (74..78).
const OPCODE: usize = 50;
const CWND: usize = 66;
const ICRC: usize = 74;

/// A copy of the bundled RCC receiver trace with `edit` applied to its capture.
fn trace(tag: &str, edit: impl Fn(&mut Vec<u8>)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ccreplay-wire-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut pcap = std::fs::read(repo().join("traces/rcc_receiver.pcap")).unwrap();
    edit(&mut pcap);
    std::fs::write(dir.join("rcc_receiver.pcap"), pcap).unwrap();
    std::fs::copy(
        repo().join("traces/rcc_receiver.toml"),
        dir.join("rcc_receiver.toml"),
    )
    .unwrap();
    dir
}

/// The frame offset of the 100th ACK.
fn ack_100(pcap: &[u8]) -> usize {
    records(pcap)
        .into_iter()
        .filter(|&(at, _)| pcap[at + OPCODE] == 0x11)
        .nth(99)
        .unwrap()
        .0
}

#[test]
fn the_receivers_acks_conform_and_a_changed_window_is_caught_at_its_ack() {
    let (code, out, err) = ccreplay(
        &repo(),
        &["diff", "traces/rcc_receiver.toml", "--dut", "wire"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("CONFORMANT: 4 flows, 1374 decisions"), "{out}");

    let original = std::fs::read(repo().join("traces/rcc_receiver.pcap")).unwrap();
    let at = ack_100(&original);
    let cwnd = u32::from_be_bytes(original[at + CWND..at + CWND + 4].try_into().unwrap());
    let dir = trace("cwnd", |p| {
        let at = ack_100(p);
        p[at + CWND..at + CWND + 4].copy_from_slice(&(cwnd + 1000).to_be_bytes());
        let len = records(p).into_iter().find(|r| r.0 == at).unwrap().1;
        let cfg = DecodeConfig::for_dialect(Dialect::Rcc);
        let (computed, _) = Packet::decode_ethernet(&p[at..at + len], &cfg)
            .icrc_check()
            .unwrap();
        p[at + ICRC..at + ICRC + 4].copy_from_slice(&computed.to_be_bytes());
    });
    let (code, out, err) = ccreplay(
        &dir,
        &[
            "diff",
            "rcc_receiver.toml",
            "--dut",
            "wire",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let flows = v["flows"].as_array().unwrap();
    let bad: Vec<_> = flows.iter().filter(|f| f["mismatches"] != 0).collect();
    assert_eq!(bad.len(), 1, "{out}");
    assert_eq!(bad[0]["mismatches"], 1);
    assert_eq!(bad[0]["missing"], 0);
    let first = &bad[0]["first_divergence"];
    let text = first.to_string();
    assert!(text.contains("ack_cwnd"), "{text}");
    assert!(
        text.contains(&cwnd.to_string()) && text.contains(&(cwnd + 1000).to_string()),
        "{text}"
    );
}

#[test]
fn an_ack_the_nic_did_not_send_is_missing() {
    // The 100th ACK's opcode made unknown: no ACK answers that data packet.
    let dir = trace("noack", |p| {
        let at = ack_100(p);
        p[at + OPCODE] = 0x1F;
    });
    let (code, out, err) = ccreplay(&dir, &["diff", "rcc_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("1373 dut") || out.contains("1 missing"),
        "{out}"
    );
}

#[test]
fn decisions_that_are_not_on_the_wire_are_refused() {
    let (code, _, err) = ccreplay(
        &repo(),
        &["diff", "traces/rcc_sender.toml", "--dut", "wire"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rcc-receiver"), "{err}");
    let (code, _, err) = ccreplay(
        &repo(),
        &["diff", "traces/hpcc_dumbbell.toml", "--dut", "wire"],
    );
    assert_eq!(code, 2, "{err}");
}

/// A NIC's ACK turnaround is not part of its receiver's decision: every ACK 100 ns later
/// (less than the 850 ns between two data packets on the 10 Gbps link) still conforms.
#[test]
fn the_ack_turnaround_is_not_judged() {
    let dir = trace("late", |p| {
        for (at, _) in records(p) {
            if p[at + OPCODE] == 0x11 {
                // The record header's nanoseconds (ns pcap): 16 bytes before the frame, +4.
                let ns_at = at - 16 + 4;
                let ns = u32::from_le_bytes(p[ns_at..ns_at + 4].try_into().unwrap());
                // The bundled run lasts 2 ms from a whole second: no carry into the seconds.
                assert!(ns + 100 < 1_000_000_000);
                p[ns_at..ns_at + 4].copy_from_slice(&(ns + 100).to_le_bytes());
            }
        }
    });
    let (code, out, err) = ccreplay(&dir, &["diff", "rcc_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("CONFORMANT: 4 flows, 1374 decisions"), "{out}");
}
