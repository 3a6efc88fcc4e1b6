//! `--dut wire` (issue 15.5): a receiver NIC's decisions are the ACKs it sent, compared exactly
//! with the reference receiver's. The bundled RCC receiver capture (written by `ccreplay sim`,
//! whose receiver NIC runs the reference model) conforms; the same capture with one ACK's
//! window changed — ICRC recomputed, as a buggy NIC would send it — differs at that ACK only.
//! Also DCQCN's notification point (its CNPs and their pacing), every bundled receiver capture
//! with every packet accounted for, and packets the pairing cannot place. How the ACKs and
//! NAKs of an edited fncc_chain_receiver pair with the data packets they answer is tested in
//! dut_wire_acks.rs.

mod common;

use common::wire::{diff_json, fix_icrc, fncc_chain, records, rewrite};
use common::{repo, run as ccreplay};

use std::path::PathBuf;

use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

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
