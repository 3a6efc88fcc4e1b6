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
fn trace(tag: &str, edit: impl Fn(&mut Vec<u8>)) -> common::Scratch {
    let dir = common::Scratch::new(&format!("wire-{tag}"));
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

/// Simulate the DCQCN scenario into a fresh folder; the folder and its receiver capture's
/// manifest.
fn np_capture(tag: &str) -> (common::Scratch, PathBuf) {
    let dir = common::Scratch::new(&format!("np-{tag}"));
    common::sim("scenarios/observed/dcqcn_sender.toml", &dir, &[]);
    let m = dir.join("dcqcn_receiver.toml");
    (dir, m)
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
    let (_dir, m) = np_capture("ok");
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
}

#[test]
fn a_cnp_the_nic_did_not_send_is_missing_and_a_slow_response_is_late() {
    let (_dir, m) = np_capture("drop");
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

    // Every CNP 2 µs later: within the 5 µs response allowance, conformant; 8 µs later: past
    // it — the NP answered too late.
    for (late_ns, want) in [(2_000, 0), (8_000, 1)] {
        let (_dir, m) = np_capture(&format!("late{late_ns}"));
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
    }
}

// ---------------------------------------------------------------------------------------
// Loss, NAKs and go-back-N (docs/dut.md "`--dut wire`"): on every bundled receiver capture
// the simulator's receiver NIC (the reference model in an IB RC responder) is conformant, and
// the accounting says what became of every packet it sent and received. The expected counts
// are read from the capture's bytes here, with no ccreplay decoder (tshark agrees:
//   tshark -X lua_script:contrib/wireshark/ccreplay.lua -o ccreplay.dialect:D -r traces/T.pcap
//     -Y 'ip.dst==H && infiniband.bth.opcode <= 11'                                 (data)
//     -Y 'ip.src==H && infiniband.bth.opcode == 17 && infiniband.aeth.syndrome < 32'  (ACKs)
//     -Y 'ip.src==H && infiniband.bth.opcode == 17 && infiniband.aeth.syndrome >= 96' (NAKs)
//     -Y 'ip.src==H && infiniband.bth.opcode == 129'                                  (CNPs)
// gives, when this was written: fncc_chain_receiver 516 / 500 / 9 / 0, rcc_bursts_receiver
// 1232 / 1212 / 11 / 0, rcc_receiver 1374 / 1374 / 0 / 0, dcqcn_np 940 / 940 / 0 / 217).
// ---------------------------------------------------------------------------------------

/// The records of a pcap as (time ns, frame).
fn frames(pcap: &[u8]) -> Vec<(u64, &[u8])> {
    records(pcap)
        .into_iter()
        .map(|(at, len)| {
            let h = at - 16;
            let s = u64::from(u32::from_le_bytes(pcap[h..h + 4].try_into().unwrap()));
            let ns = u64::from(u32::from_le_bytes(pcap[h + 4..h + 8].try_into().unwrap()));
            (s * 1_000_000_000 + ns, &pcap[at..at + len])
        })
        .collect()
}

/// What a receiver capture holds, from its bytes: Ethernet 14 + IPv4 20 (source 26..30,
/// destination 30..34) + UDP 8, rcc's 8-byte timestamp, then BTH at `bth` (opcode), the AETH
/// 12 bytes after it (syndrome: bits 6..5 = 0b11 is a NAK). Data = RC SEND / WRITE opcodes
/// 0x00..=0x0B; 0x11 ACKNOWLEDGE; 0x81 CNP.
#[derive(Debug, Default)]
struct Held {
    data: u64,
    acks: u64,
    naks: u64,
    cnps: u64,
    /// CNPs sent after the last data packet arrived: past the trace's last event.
    cnps_after_last_data: u64,
}

fn held(pcap: &[u8], bth: usize, host: [u8; 4]) -> Held {
    let mut h = Held::default();
    let mut last_data = 0;
    let mut cnp_at = Vec::new();
    for (t, f) in frames(pcap) {
        let (src, dst, op) = (&f[26..30], &f[30..34], f[bth]);
        if dst == host && op <= 0x0B {
            h.data += 1;
            last_data = t;
        } else if src == host && op == 0x11 {
            if f[bth + 12] >> 5 == 0b11 {
                h.naks += 1;
            } else {
                h.acks += 1;
            }
        } else if src == host && op == 0x81 {
            h.cnps += 1;
            cnp_at.push(t);
        }
    }
    h.cnps_after_last_data = cnp_at.iter().filter(|&&t| t > last_data).count() as u64;
    h
}

fn diff_json(dir: &std::path::Path, manifest: &str) -> (i32, serde_json::Value, String) {
    diff_json_with(dir, manifest, &[])
}

/// [`diff_json`] with more arguments (`--allow KEY=VALUE`).
fn diff_json_with(
    dir: &std::path::Path,
    manifest: &str,
    more: &[&str],
) -> (i32, serde_json::Value, String) {
    let mut args = vec!["diff", manifest, "--dut", "wire", "--format", "json"];
    args.extend_from_slice(more);
    let (code, out, err) = ccreplay(dir, &args);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v, err)
}

#[test]
fn every_bundled_receiver_capture_conforms_and_every_packet_is_accounted_for() {
    for (trace, bth, host) in [
        ("fncc_chain_receiver", 42, [10, 0, 0, 4]),
        ("rcc_bursts_receiver", 50, [10, 0, 0, 4]),
        ("rcc_receiver", 50, [10, 0, 0, 3]),
        ("dcqcn_np", 42, [10, 0, 0, 4]),
    ] {
        let pcap = std::fs::read(repo().join(format!("traces/{trace}.pcap"))).unwrap();
        let h = held(&pcap, bth, host);
        let (code, v, err) = diff_json(&repo(), &format!("traces/{trace}.toml"));
        assert_eq!(code, 0, "{trace}: {v}{err}");
        assert_eq!(
            (&v["ok"], &v["mismatches"], &v["missing"], &v["extra"]),
            (&true.into(), &0.into(), &0.into(), &0.into()),
            "{trace}: {v}"
        );
        let (w, acc) = (&v["dut_accounting"], &v["accounting"]);
        let get = |k: &str| {
            w[k].as_u64()
                .unwrap_or_else(|| panic!("{trace}: {k} in {w}"))
        };
        // Every ACK / NAK / CNP the host sent, and every data packet (each an rx_data event).
        assert_eq!(get("sent"), h.acks + h.naks + h.cnps, "{trace}: {w}");
        assert_eq!(acc["skipped"]["receiver_feedback"], get("sent"), "{trace}");
        assert_eq!(get("data"), h.data, "{trace}: {w}");
        assert_eq!(acc["event_kinds"]["rx_data"], h.data, "{trace}");
        assert_eq!(
            (
                get("extra"),
                get("before_data"),
                get("no_flow"),
                get("unanswered")
            ),
            (0, 0, 0, 0),
            "{trace}: {w}"
        );
        let compared = v["decisions"].as_u64().unwrap();
        if trace == "dcqcn_np" {
            // The NP's decisions are its CNPs; its ACKs carry none. A CNP after the trace's
            // last event is past what the reference replays.
            assert_eq!(get("other"), h.acks + h.naks, "{w}");
            assert_eq!(get("cnps"), h.cnps - h.cnps_after_last_data, "{w}");
            assert_eq!(get("cnps_after_end"), h.cnps_after_last_data, "{w}");
            assert_eq!(get("cnps_no_flow"), 0, "{w}");
            assert_eq!(compared, get("cnps"));
        } else {
            // One reply per data packet at most, in order: each ACK or NAK answers one, and
            // the rest were dropped out of sequence after a NAK (IB RC: no reply), whose
            // decisions are not on the wire and not compared. No duplicates in these runs
            // (every retransmission follows a NAK or RTO of a lost packet).
            assert_eq!((get("acks"), get("dup_acks")), (h.acks, 0), "{trace}: {w}");
            assert_eq!(get("naks"), h.naks, "{trace}: {w}");
            assert_eq!(get("other"), h.cnps, "{trace}: {w}");
            assert_eq!(get("silent"), h.data - h.acks - h.naks, "{trace}: {w}");
            assert_eq!(compared, h.acks + h.naks, "{trace}");
        }
    }
    // The text says the same after the verdict: fncc_chain_receiver has 516 data packets, 500
    // ACKs and 9 NAKs (tshark, above), so 516 − 509 = 7 were dropped after a NAK.
    let (code, out, err) = ccreplay(
        &repo(),
        &["diff", "traces/fncc_chain_receiver.toml", "--dut", "wire"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("CONFORMANT: 9 flows, 509 decisions, 0 mismatched, 0 missing, 0 extra"),
        "{out}"
    );
    assert!(
        out.contains(
            "wire: 509 ACK/NAK/CNP sent by 10.0.0.4: 500 ACKs of their data packet's PSN, 9 NAKs; \
             516 data packets: 509 answered, 7 dropped out of sequence after a NAK"
        ),
        "{out}"
    );
    // `replay --dut wire` writes the NIC's decisions and says the same on stderr.
    let dir = common::Scratch::new("wire-replay");
    let decisions = dir.join("d.jsonl");
    let (code, _, err) = ccreplay(
        &repo(),
        &[
            "replay",
            "traces/fncc_chain_receiver.toml",
            "--dut",
            "wire",
            "-o",
            decisions.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "wire: 509 ACK/NAK/CNP sent by 10.0.0.4: 500 ACKs of their data packet's PSN, 9 NAKs"
        ),
        "{err}"
    );
    let lines = std::fs::read_to_string(&decisions).unwrap().lines().count();
    assert_eq!(lines, 509, "one decision per ACK or NAK");
}

// fncc_chain_receiver, flow 0 (h0 → h4, the capture's first data flow; tshark -r
// traces/fncc_chain_receiver.pcap -c 34): PSN 16777036 is lost. Frame 25: data 16777037 (the
// flow's 13th packet, event #12: 16777024..16777035 came before), answered by the NAK of frame
// 26 naming 16777036 with N = 1 (h0's is the only flow until 120 µs, FNCC-2); frame 27: data
// 16777038 (#13), dropped with no reply; frame 28: the retransmitted 16777036 (#14), ACK frame
// 29; frame 30: 16777037 (#15), ACK frame 31; frame 32: 16777038 (#16), ACK frame 33.
// (1-based frame numbers; the records below are 0-based.)

const FNCC_N: usize = 58; // after the AETH (54..58): N u16, then the INT stack

/// A copy of fncc_chain_receiver with `edit` applied to its records (0-based, time order).
fn fncc_chain(tag: &str, edit: impl Fn(&mut Vec<(u64, Vec<u8>)>)) -> common::Scratch {
    let dir = common::Scratch::new(&format!("wire-fncc-{tag}"));
    for ext in ["pcap", "toml"] {
        std::fs::copy(
            repo().join(format!("traces/fncc_chain_receiver.{ext}")),
            dir.join(format!("fncc_chain_receiver.{ext}")),
        )
        .unwrap();
    }
    rewrite(&dir.join("fncc_chain_receiver.pcap"), |mut recs| {
        // The frames named above, as tshark shows them.
        let psn = |f: &[u8]| u32::from_be_bytes([0, f[51], f[52], f[53]]);
        assert_eq!((recs[24].1[42], psn(&recs[24].1)), (7, 16777037));
        assert_eq!(
            (recs[25].1[42], recs[25].1[54], psn(&recs[25].1)),
            (0x11, 96, 16777036)
        );
        assert_eq!((recs[28].1[42], psn(&recs[28].1)), (0x11, 16777036));
        assert_eq!((recs[30].1[42], psn(&recs[30].1)), (0x11, 16777037));
        edit(&mut recs);
        recs
    });
    dir
}

/// Recompute an FNCC frame's ICRC (its last 4 bytes), as the NIC would send it.
fn fix_icrc(f: &mut [u8]) {
    common::fix_icrc(f, Dialect::Fncc);
}

fn flow0(v: &serde_json::Value) -> &serde_json::Value {
    &v["flows"][0]
}

#[test]
fn a_naks_flow_count_is_compared_with_the_packet_it_answers() {
    // Frame 26's N: 1 → 2.
    let dir = fncc_chain("nak-n", |recs| {
        let f = &mut recs[25].1;
        assert_eq!(&f[FNCC_N..FNCC_N + 2], &[0, 1]);
        f[FNCC_N + 1] = 2;
        fix_icrc(f);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&1.into(), &0.into(), &0.into()),
        "{f}"
    );
    let d = &f["first_divergence"];
    assert_eq!(d["reference"]["cause"]["index"], 12, "{d}");
    assert_eq!(d["fields"][0]["field"], "ack_n");
    assert_eq!(
        (&d["fields"][0]["reference"], &d["fields"][0]["dut"]),
        (&"1".into(), &"2".into())
    );
    assert_eq!(v["mismatches"], 1, "only that packet: {v}");
}

#[test]
fn a_second_ack_is_extra_and_a_retransmissions_missing_ack_is_missing() {
    // Frame 29 (the ACK of the retransmitted 16777036) sent twice: nothing waits for the
    // second; it is an extra decision, shown with the latest data packet then (#14).
    let dir = fncc_chain("twice", |recs| {
        let again = recs[28].clone();
        recs.insert(29, again);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &0.into(), &1.into()),
        "{f}"
    );
    assert_eq!(f["first_divergence"]["dut"]["cause"]["index"], 14, "{f}");
    assert_eq!(v["dut_accounting"]["extra"], 1);

    // Frame 31 (the ACK of the retransmitted 16777037) never sent: #15 is missing, and the
    // ACK of frame 33 still answers #16.
    let dir = fncc_chain("noack", |recs| {
        recs.remove(30);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &1.into(), &0.into()),
        "{f}"
    );
    assert_eq!(
        f["first_divergence"]["reference"]["cause"]["index"], 15,
        "{f}"
    );
    assert_eq!(v["dut_accounting"]["unanswered"], 1);
}

/// Replies out of order on the wire (a capture that merged queues, or a NIC that reordered):
/// frame 31 (the ACK of 16777037, #15) sent 1 ns after frame 33 (the ACK of 16777038, #16).
/// Frame 33 passes over #15; frame 31 then answers it, late: every decision still compared
/// (509), none missing or extra, and the accounting names it.
#[test]
fn an_ack_after_a_later_packets_is_late_not_missing_and_extra() {
    let dir = fncc_chain("late", |recs| {
        let (t33, _) = recs[32];
        let (_, ack31) = recs.remove(30);
        recs.insert(31, (t33 + 1, ack31));
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    assert_eq!(
        (&v["decisions"], &v["missing"], &v["extra"]),
        (&509.into(), &0.into(), &0.into()),
        "{v}"
    );
    let a = &v["dut_accounting"];
    assert_eq!(
        (&a["late"], &a["unanswered"], &a["acks"]),
        (&1.into(), &0.into(), &500.into()),
        "{a}"
    );
    let (code, out, err) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("500 ACKs of their data packet's PSN, 1 of them after a later packet's reply"),
        "{out}"
    );
}

/// A NIC that coalesces ACKs (FNCC 3.2.3: a cumulative ACK for every m packets) is not a
/// NIC that lost one: the same capture without frame 31 (the ACK of #15) is missing #15 by
/// default, with a hint naming the allowance (frame 33's ACK of 16777038 acknowledges
/// 16777037: two packets, #15 and #16); with `--allow ack_coalescing=2` #15 is coalesced, not
/// compared, and the NIC conforms: 516 data packets, 508 decisions compared (509 − #15).
#[test]
fn a_cumulative_ack_is_coalescing_when_the_user_allows_it() {
    let dir = fncc_chain("coalesce", |recs| {
        recs.remove(30);
    });
    let (code, out, err) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "hint: 1 of 1 unanswered data packets were acknowledged by a later ACK or NAK"
        ) && out.contains("--allow ack_coalescing=2"),
        "{out}"
    );
    let (code, v, err) = diff_json_with(
        &dir,
        "fncc_chain_receiver.toml",
        &["--allow", "ack_coalescing=2"],
    );
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    let get = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(
        [
            "data",
            "coalesced",
            "unanswered",
            "silent",
            "acked_later",
            "ack_coalescing"
        ]
        .map(get),
        [516, 1, 0, 7, 0, 2],
        "{w}"
    );
    assert_eq!(v["decisions"], 508, "{v}");
    // A count, at least 1.
    let (code, _, err) = ccreplay(
        &dir,
        &[
            "diff",
            "fncc_chain_receiver.toml",
            "--dut",
            "wire",
            "--allow",
            "ack_coalescing=0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a whole number of at least 1"), "{err}");
}

#[test]
fn without_its_nak_the_packets_of_the_gap_are_missing() {
    // Frame 26 never sent: nothing says the responder saw the gap, so #12 and #13 (frames 25
    // and 27) are unanswered, not dropped by rule: 2 missing; of the 7 packets dropped after a
    // NAK (the conformance test above), frame 27 was one: 6 remain.
    let dir = fncc_chain("nonak", |recs| {
        recs.remove(25);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &2.into(), &0.into()),
        "{f}"
    );
    assert_eq!(
        f["first_divergence"]["reference"]["cause"]["index"], 12,
        "{f}"
    );
    let w = &v["dut_accounting"];
    assert_eq!(
        (&w["unanswered"], &w["silent"], &w["naks"]),
        (&2.into(), &6.into(), &8.into()),
        "{w}"
    );
}

/// The capture ends before the NIC's last replies: packets that arrived within the NIC's
/// slowest turnaround of the end (a data packet to the ACK of its PSN, the largest in the
/// capture) may have their reply after it — not compared; older ones are missing.
#[test]
fn a_reply_the_capture_ends_before_is_not_missing() {
    // The first 28 frames (tshark above): it ends with frame 28, the retransmitted 16777036
    // (#14), whose ACK (frame 29) is not captured. The simulator's NIC replies in the ns a
    // packet arrives (frames 1-24: each ACK at its data packet's time): turnaround 0, and
    // #14 arrived at the end. #12 NAK'd, #13 dropped after it (silent): 15 data packets,
    // 12 ACKs, 1 NAK, 1 silent, 1 cut by the end.
    let dir = fncc_chain("cut28", |recs| recs.truncate(28));
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    let get = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(
        [
            "data",
            "acks",
            "naks",
            "silent",
            "cut_by_end",
            "turnaround_ns",
            "unanswered"
        ]
        .map(get),
        [15, 12, 1, 1, 1, 0, 0],
        "{w}"
    );
    assert_eq!((&v["decisions"], &v["missing"]), (&13.into(), &0.into()));
    let (_, out, _) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert!(
        out.contains(
            "15 data packets: 13 answered, 1 dropped out of sequence after a NAK (no reply by IB \
             RC rules: not compared), 1 within the NIC's slowest turnaround (0 ns) of the \
             capture's end (reply not captured: not compared)"
        ),
        "{out}"
    );

    // The first 40 frames without the ACKs 35, 37 and 39 (the gap closed at frame 29):
    // #17, #18 and #19 (frames 34, 36, 38, 979-1,077 ns apart) wait, and #20 (frame 40,
    // 16777042) arrives at the end. Turnaround 0: #20 is cut by the end, the three before it
    // are missing — a NIC that stopped answering.
    let dir = fncc_chain("cut40", |recs| {
        recs.truncate(40);
        for i in [38, 36, 34] {
            assert_eq!(recs[i].1[42], 0x11);
            recs.remove(i);
        }
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let w = &v["dut_accounting"];
    assert_eq!(
        (
            &w["cut_by_end"],
            &w["unanswered"],
            &w["silent"],
            &v["missing"]
        ),
        (&1.into(), &3.into(), &1.into(), &3.into()),
        "{v}"
    );

    // Every reply 1,500 ns late (a NIC's turnaround; rewrite puts the frames in time order
    // again), the capture cut after #16 (frame 32, 19.951 µs): #15 (18.875 µs, 1,076 ns
    // before the end) and #16 wait, both within the 1,500 ns turnaround — cut by the end; the
    // ACK of #14 (17.799 + 1.5 µs) is in.
    let dir = fncc_chain("late", |recs| {
        recs.truncate(32);
        for r in recs.iter_mut().filter(|r| r.1[42] == 0x11) {
            r.0 += 1_500;
        }
        let end = recs[31].0;
        recs.retain(|r| r.0 <= end);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!(
        (
            &w["turnaround_ns"],
            &w["cut_by_end"],
            &w["acks"],
            &w["unanswered"]
        ),
        (&1_500.into(), &2.into(), &13.into(), &0.into()),
        "{w}"
    );
}

// dcqcn_np (docs/dut.md "CNP pacing"): N = 2 µs, marks that land exactly N after a CNP.

/// A copy of dcqcn_np with `edit` applied to its records.
fn dcqcn_np(
    tag: &str,
    edit: impl Fn(Vec<(u64, Vec<u8>)>) -> Vec<(u64, Vec<u8>)>,
) -> common::Scratch {
    let dir = common::Scratch::new(&format!("wire-np-{tag}"));
    for ext in ["pcap", "toml"] {
        std::fs::copy(
            repo().join(format!("traces/dcqcn_np.{ext}")),
            dir.join(format!("dcqcn_np.{ext}")),
        )
        .unwrap();
    }
    rewrite(&dir.join("dcqcn_np.pcap"), edit);
    dir
}

fn is_cnp(f: &[u8]) -> bool {
    f.len() > 42 && f[42] == 0x81
}

#[test]
fn a_cnp_that_waits_for_the_port_is_the_timers_and_one_sent_early_is_caught() {
    // The NIC sends a timer's CNP when its port is free: behind an ACK it leaves one ACK
    // later, 62 B × 8 / 25 Gbps = 19.84 ns (the capture's ACKs are 62-byte frames, its link
    // 25 Gbps); 20 ns. A mark at the timer's very ns now arrives before the CNP leaves; it
    // still belongs to the next interval (C-5: the timer fired first).
    let dir = dcqcn_np("port", |recs| {
        recs.into_iter()
            .map(|(t, f)| (if is_cnp(&f) { t + 20 } else { t }, f))
            .collect()
    });
    let (code, v, err) = diff_json(&dir, "dcqcn_np.toml");
    assert_eq!(code, 0, "{v}{err}");

    // A timer's CNP sent 100 ns before its interval ends: the first CNP 2 µs after its
    // flow's previous one with a mark strictly between them (DCQCN-2: a CNP at the end of
    // the interval the previous one opened).
    let pcap = std::fs::read(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let recs = frames(&pcap);
    let dqp = |f: &[u8]| u32::from_be_bytes([0, f[47], f[48], f[49]]);
    let mut early = None;
    'find: for (i, (t, f)) in recs.iter().enumerate() {
        if !is_cnp(f) {
            continue;
        }
        // The flow's previous CNP, and a CE-marked packet of the flow between (the data's
        // source is the CNP's destination, IPv4 bytes 26..30 / 30..34; ECN: byte 15 & 3).
        let prev = recs[..i]
            .iter()
            .rev()
            .find(|(_, g)| is_cnp(g) && dqp(g) == dqp(f) && g[30..34] == f[30..34]);
        if let Some((tp, _)) = prev
            && t - tp == 2_000
            && recs.iter().any(|(tm, g)| {
                g[26..30] == f[30..34] && g[42] <= 0x0B && g[15] & 3 == 3 && *tm > *tp && tm < t
            })
        {
            early = Some(*t);
            break 'find;
        }
    }
    let end = early.expect("a timer's CNP");
    let dir = dcqcn_np("early", |recs| {
        recs.into_iter()
            .map(|(t, f)| (if is_cnp(&f) && t == end { t - 100 } else { t }, f))
            .collect()
    });
    let (code, v, err) = diff_json(&dir, "dcqcn_np.toml");
    assert_eq!(code, 1, "{err}");
    let bad: Vec<_> = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ok"] == false)
        .collect();
    assert_eq!(bad.len(), 1, "{v}");
    let d = &bad[0]["first_divergence"];
    assert_eq!(d["reference"]["t"], end, "{d}");
    assert_eq!(d["reference"]["cause"]["name"], "cnp_interval", "{d}");
    assert!(bad[0]["missing"].as_u64().unwrap() >= 1 && bad[0]["extra"].as_u64().unwrap() >= 1);
}

#[test]
fn a_cnp_after_the_traces_last_event_is_not_compared() {
    // The capture cut at its last CNP (kept): the data that came with or after it gone, so
    // the CNP's instant lies after the last event; the reference stops there.
    let pcap = std::fs::read(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let last = frames(&pcap)
        .into_iter()
        .filter(|(_, f)| is_cnp(f))
        .map(|(t, _)| t)
        .max()
        .unwrap();
    let dir = dcqcn_np("cut", |recs| {
        recs.into_iter()
            .filter(|(t, f)| *t < last || (*t == last && is_cnp(f)))
            .collect()
    });
    let (code, v, err) = diff_json(&dir, "dcqcn_np.toml");
    assert_eq!(code, 0, "{v}{err}");
    let h = held(
        &std::fs::read(dir.join("dcqcn_np.pcap")).unwrap(),
        42,
        [10, 0, 0, 4],
    );
    assert_eq!(h.cnps_after_last_data, 1);
    let w = &v["dut_accounting"];
    assert_eq!(
        (&w["cnps"], &w["cnps_after_end"]),
        (&(h.cnps - 1).into(), &1.into()),
        "{w}"
    );
}

// What the accounting does with packets the pairing cannot place (cargo-mutants over
// dut/wire.rs, docs/conformance.md). Counts from the captures' bytes (a Python read of
// traces/*.pcap, as tshark's filters above): fncc_chain_receiver's host sent 509 ACKs / NAKs
// and no CNP; dcqcn_np's 940 ACKs and 217 CNPs (74 to 10.0.0.1, 17 + 62 to 10.0.0.2, 64 to
// 10.0.0.3). Destination IPs are rewritten 10.0.0.d → 10.d.0.0, which keeps the IPv4 header's
// checksum (the 16-bit words 0x0a00 + 0x000d = 0x0a0d + 0x0000); the ICRC of a packet the host
// sends is not checked (the NIC sent it whatever it holds).
fn to_no_peer(f: &mut [u8]) {
    f[31] = f[33];
    f[32] = 0;
    f[33] = 0;
}

#[test]
fn a_reply_to_no_peer_of_a_flow_is_counted_as_of_no_flow() {
    let dir = fncc_chain("no-flow", |recs| {
        let (t, mut f) = recs.iter().find(|(_, f)| f[42] == 0x11).unwrap().clone();
        to_no_peer(&mut f);
        recs.push((t + 1, f));
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!((&w["sent"], &w["no_flow"]), (&510.into(), &1.into()), "{w}");
    assert_eq!((&w["extra"], &w["other"]), (&0.into(), &0.into()), "{w}");
}

// A NIC that answered nothing: no turnaround seen, so nothing is excused at the capture's
// end — every data packet is missing, the last one (the last record) too.
#[test]
fn a_nic_that_answered_nothing_has_every_data_packet_missing() {
    let dir = fncc_chain("silent", |recs| recs.retain(|(_, f)| f[42] != 0x11));
    let pcap = std::fs::read(dir.join("fncc_chain_receiver.pcap")).unwrap();
    let h = held(&pcap, 42, [10, 0, 0, 4]);
    assert_eq!((h.acks, h.naks), (0, 0));
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!(w["unanswered"], h.data, "{w}");
    assert_eq!(
        (&w["cut_by_end"], &w["sent"]),
        (&0.into(), &0.into()),
        "{w}"
    );
    assert_eq!(v["missing"], h.data, "{v}");
}

// A CNP whose QP no ACK or [[flows]] entry names goes to its peer's only flow (10.0.0.3 has
// one); a CNP to a host with no flow is counted apart. Everything else conforms as before.
#[test]
fn a_cnp_pairs_with_its_peers_only_flow_or_with_none() {
    let dir = dcqcn_np("cnp-pairing", |mut recs| {
        let to = |f: &[u8], ip: [u8; 4]| is_cnp(f) && f[30..34] == ip;
        let i = recs.iter().position(|(_, f)| to(f, [10, 0, 0, 3])).unwrap();
        recs[i].1[47..50].copy_from_slice(&[0xAB, 0xCD, 0xEF]);
        let (t, mut f) = recs
            .iter()
            .find(|(_, f)| to(f, [10, 0, 0, 1]))
            .unwrap()
            .clone();
        to_no_peer(&mut f);
        recs.push((t + 1, f));
        recs
    });
    let (code, out, err) = ccreplay(
        &dir,
        &["diff", "dcqcn_np.toml", "--dut", "wire", "--format", "json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let w = &v["dut_accounting"];
    let get = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(get("sent"), 940 + 217 + 1, "{w}");
    assert_eq!(get("cnps_no_flow"), 1, "{w}");
    assert_eq!(get("cnps") + get("cnps_after_end"), 217, "{w}");
    assert_eq!(get("other"), 940, "{w}");
}

// Packets that carry no decision of the model: a CNP the FNCC receiver sends (the first of
// dcqcn_np's, from the same host 10.0.0.4 to 10.0.0.1) is counted as `other`; an ACK a peer
// sends *to* the host (the host's first ACK with its addresses swapped, to the host's QP
// 0x200001 of that flow, ICRC recomputed) is neither a data packet nor one the host sent.
#[test]
fn a_cnp_the_receiver_sends_and_an_ack_it_receives_carry_no_decision() {
    let np = std::fs::read(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let cnp = frames(&np)
        .into_iter()
        .find(|(_, f)| is_cnp(f))
        .unwrap()
        .1
        .to_vec();
    assert_eq!(
        (&cnp[26..30], &cnp[30..34]),
        (&[10, 0, 0, 4][..], &[10, 0, 0, 1][..])
    );
    let dir = fncc_chain("not-decisions", |recs| {
        let (t, ack) = recs.iter().find(|(_, f)| f[42] == 0x11).unwrap().clone();
        let mut back = ack.clone();
        back[26..30].copy_from_slice(&ack[30..34]);
        back[30..34].copy_from_slice(&ack[26..30]);
        back[47..50].copy_from_slice(&[0x20, 0x00, 0x01]);
        fix_icrc(&mut back);
        recs.push((t + 1, back));
        recs.push((t + 2, cnp.clone()));
    });
    let pcap = std::fs::read(dir.join("fncc_chain_receiver.pcap")).unwrap();
    let h = held(&pcap, 42, [10, 0, 0, 4]);
    assert_eq!((h.acks + h.naks, h.cnps), (509, 1));
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!((&w["sent"], &w["other"]), (&510.into(), &1.into()), "{w}");
    assert_eq!(w["data"], h.data, "{w}");
    assert_eq!(
        (&w["unanswered"], &w["extra"]),
        (&0.into(), &0.into()),
        "{w}"
    );
}

// An ACK whose QP neither the manifest nor an earlier ACK names goes to its peer's only flow
// (rcc_receiver: 10.0.0.2 has one): a second copy of the 100th ACK to 10.0.0.2 with QP
// 0xABCDEF answers no waiting packet there — extra, not "of no flow".
#[test]
fn an_ack_to_a_peer_with_one_flow_is_that_flows_even_with_another_qp() {
    let dir = trace("only-flow", |p| {
        let (at, len) = records(p)
            .into_iter()
            .filter(|&(at, _)| p[at + OPCODE] == 0x11 && p[at + 30..at + 34] == [10, 0, 0, 2])
            .nth(99)
            .unwrap();
        let mut copy = p[at - 16..at + len].to_vec();
        copy[16 + OPCODE + 5..16 + OPCODE + 8].copy_from_slice(&[0xAB, 0xCD, 0xEF]);
        // The copy 1 ns after the original: the record header's nanoseconds + 1 (ns pcap).
        let ns = u32::from_le_bytes(copy[4..8].try_into().unwrap());
        copy[4..8].copy_from_slice(&(ns + 1).to_le_bytes());
        let end = at + len;
        p.splice(end..end, copy);
    });
    let (code, v, err) = diff_json(&dir, "rcc_receiver.toml");
    assert_eq!(code, 1, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!((&w["extra"], &w["no_flow"]), (&1.into(), &0.into()), "{w}");
    assert_eq!(
        (&v["extra"], &v["missing"], &v["mismatches"]),
        (&1.into(), &0.into(), &0.into()),
        "{v}"
    );
}

// Without [[flows]] the replies' QPs are learned: an ACK goes to the flow of its peer with a
// packet it can answer (10.0.0.1 has three flows in rcc_receiver). The manifest without its
// [[flows]] entries: the same verdict, every ACK placed.
#[test]
fn without_flows_in_the_manifest_each_ack_finds_the_flow_it_answers() {
    let dir = trace("no-flows", |_| {});
    let path = dir.join("rcc_receiver.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = text.split_once("[[flows]]").unwrap();
    let source = &rest[rest.find("[source]").unwrap()..];
    std::fs::write(&path, format!("{head}{source}")).unwrap();
    let (code, v, err) = diff_json(&dir, "rcc_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    assert_eq!(v["decisions"], 1374, "{v}");
    let w = &v["dut_accounting"];
    assert_eq!(
        (&w["acks"], &w["no_flow"], &w["extra"]),
        (&1374.into(), &0.into(), &0.into()),
        "{w}"
    );
}
