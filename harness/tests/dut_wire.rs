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

// ---------------------------------------------------------------------------------------
// DCQCN's notification point (issue 15.5): the receiver NIC's CNPs are its decisions. The
// receiver tap of scenarios/observed/dcqcn_sender.toml (N = 20 µs, marks every few µs).
// ---------------------------------------------------------------------------------------

/// Simulate the DCQCN scenario into a fresh folder; its receiver capture's manifest.
fn np_capture(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ccreplay-np-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sc = repo().join("scenarios/observed/dcqcn_sender.toml");
    let (code, out, err) = ccreplay(
        &repo(),
        &[
            "sim",
            sc.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    dir.join("dcqcn_receiver.toml")
}

fn np_diff(manifest: &std::path::Path) -> (i32, String, String) {
    ccreplay(
        &repo(),
        &[
            "diff",
            manifest.to_str().unwrap(),
            "--model",
            "dcqcn-np",
            "--dut",
            "wire",
        ],
    )
}

/// (missing, extra) decisions of the JSON report, and the DUT's timer names.
fn np_counts(manifest: &std::path::Path) -> (u64, u64, String) {
    let (_, out, _) = ccreplay(
        &repo(),
        &[
            "diff",
            manifest.to_str().unwrap(),
            "--model",
            "dcqcn-np",
            "--dut",
            "wire",
            "--format",
            "json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    (
        j["missing"].as_u64().unwrap(),
        j["extra"].as_u64().unwrap(),
        out,
    )
}

/// The CNPs' records (frame offset, length): the receiver's frames with BTH opcode 0x81
/// (Ethernet 14 + IPv4 20 + UDP 8: the opcode is byte 42).
fn cnps(pcap: &[u8]) -> Vec<(usize, usize)> {
    records(pcap)
        .into_iter()
        .filter(|&(at, len)| len > 42 && pcap[at + 42] == 0x81)
        .collect()
}

/// The same capture with `edit` applied to its records: (time, frame) in, records out (in
/// time order).
fn rewrite(pcap_path: &std::path::Path, edit: impl Fn(Vec<(u64, Vec<u8>)>) -> Vec<(u64, Vec<u8>)>) {
    let pcap = std::fs::read(pcap_path).unwrap();
    let mut recs: Vec<(u64, Vec<u8>)> = records(&pcap)
        .into_iter()
        .map(|(at, len)| {
            let h = at - 16;
            let s = u64::from(u32::from_le_bytes(pcap[h..h + 4].try_into().unwrap()));
            let ns = u64::from(u32::from_le_bytes(pcap[h + 4..h + 8].try_into().unwrap()));
            (s * 1_000_000_000 + ns, pcap[at..at + len].to_vec())
        })
        .collect();
    recs = edit(recs);
    recs.sort_by_key(|r| r.0);
    let mut w =
        ccreplay_codecs::capture::PcapWriter::new(std::fs::File::create(pcap_path).unwrap())
            .unwrap();
    for (t, f) in recs {
        w.write(t, &f).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn the_notification_points_cnps_conform_and_their_pacing_is_judged() {
    let m = np_capture("ok");
    let (code, out, err) = np_diff(&m);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("CONFORMANT"), "{out}");
    let n = cnps(&std::fs::read(m.with_extension("pcap")).unwrap()).len();
    assert!(n >= 30, "{n} CNPs");

    // The reference told N = 40 µs: the NIC's 20-µs pacing sends CNPs inside its intervals.
    let text = std::fs::read_to_string(&m).unwrap();
    assert!(text.contains("min_time_between_cnps = 20"), "{text}");
    std::fs::write(
        &m,
        text.replace("min_time_between_cnps = 20", "min_time_between_cnps = 40"),
    )
    .unwrap();
    let (code, out, _) = np_diff(&m);
    assert_eq!(code, 1, "{out}");
    let (_, extra, json) = np_counts(&m);
    assert!(extra > 0, "{json}");
    // N = 10 µs: the NIC sends fewer CNPs than the reference — missing ones.
    std::fs::write(
        &m,
        text.replace("min_time_between_cnps = 20", "min_time_between_cnps = 10"),
    )
    .unwrap();
    let (code, out, _) = np_diff(&m);
    assert_eq!(code, 1, "{out}");
    let (missing, _, json) = np_counts(&m);
    assert!(missing > 0, "{json}");
    let _ = std::fs::remove_dir_all(m.parent().unwrap());
}

#[test]
fn a_cnp_the_nic_did_not_send_is_missing_and_a_slow_response_is_late() {
    let m = np_capture("drop");
    let pcap = m.with_extension("pcap");
    // The 10th CNP never sent.
    rewrite(&pcap, |recs| {
        let mut k = 0;
        recs.into_iter()
            .filter(|(_, f)| {
                let cnp = f.len() > 42 && f[42] == 0x81;
                k += usize::from(cnp);
                !(cnp && k == 10)
            })
            .collect()
    });
    let (code, out, _) = np_diff(&m);
    assert_eq!(code, 1, "{out}");
    let (missing, _, json) = np_counts(&m);
    assert!(missing > 0, "{json}");
    let _ = std::fs::remove_dir_all(m.parent().unwrap());

    // Every CNP 2 µs later: within the 5 µs response allowance, conformant; 8 µs later: past
    // it — the NP answered too late.
    for (late_ns, want) in [(2_000, 0), (8_000, 1)] {
        let m = np_capture(&format!("late{late_ns}"));
        rewrite(&m.with_extension("pcap"), |recs| {
            recs.into_iter()
                .map(|(t, f)| {
                    let cnp = f.len() > 42 && f[42] == 0x81;
                    (if cnp { t + late_ns } else { t }, f)
                })
                .collect()
        });
        let (code, out, err) = np_diff(&m);
        assert_eq!(code, want, "CNPs {late_ns} ns late: {out}{err}");
        let _ = std::fs::remove_dir_all(m.parent().unwrap());
    }
}
