//! `ccreplay import ns3` rebuilding HPCC's INT: on hand-made traces (make_mixtr.py's
//! `*_reroute` and `*_ackloss`, and a `mix.tr` written record by record here) and, when the
//! simulator is at hand, on the two runs the bugs were found in. The rest of the importer's
//! tests are in import_ns3.rs.
//!
//! HPCC INT after a reroute and after a lost or late ACK: the importer once took a packet's INT
//! only when its hop count was the switch count of the path the topology gives before
//! LINK_DOWN, and let one missing ACK empty the queue of ACKs waiting for the sender, so every
//! later ACK of the flow lost its INT (tests/fixtures/ns3/README.md has the simulator runs).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

mod common;

use common::ns3::{
    copy_all, copy_fixture, fixture, import, lines, replay, run, stderr, summary_line, tmpdir,
};

/// One INT hop at 100 Gb/s (B = 2) with an empty queue (qLen 0: every record of these
/// fixtures is a packet alone in its port's queue).
fn hop(ts: u64, tx_bytes: u64) -> Value {
    json!({"b": 2, "ts": ts, "tx_bytes": tx_bytes, "qlen": 0})
}

fn ack_ev(t: u64, index: u64, kind: &str, psn: u64, int: Value) -> Value {
    // Syndromes: ACK 0x1F = 31, NAK 0x60 = 96.
    let syndrome = if kind == "rx_nak" { 96 } else { 31 };
    json!({"t": t, "flow": 0, "index": index, "kind": kind, "psn": psn, "syndrome": syndrome, "int": int})
}

fn tx_ev(t: u64, index: u64, psn: u64, opcode: u64) -> Value {
    json!({"t": t, "flow": 0, "index": index, "kind": "tx_data", "psn": psn, "bytes": 1000, "opcode": opcode})
}

/// The library's counts of ACKs written with and without INT (`tag` names the scratch folder).
fn int_counts(config: &Path, tag: &str) -> (u64, u64) {
    let out = tmpdir(&format!("int-counts-{tag}"));
    let s = ccreplay::import::ns3::import(&ccreplay::import::ns3::Options {
        config: config.into(),
        out: out.to_path_buf(),
        mix: None,
    })
    .unwrap();
    let _ = fs::remove_dir_all(out);
    (s.acks_with_int, s.acks_without_int)
}

// The fixture *_reroute (make_mixtr.py `records_reroute`): host 0 on switch 2, host 1 on
// switch 3; links in file order 0-2, 1-3, 2-3, 2-4, 4-3, so the ports (numbered from 1 per
// node in link order) are: switch 2: 1 → host 0, 2 → switch 3, 3 → switch 4; switch 3:
// 1 → host 1, 2 → switch 2, 3 → switch 4; switch 4: 1 → switch 2, 2 → switch 3. One flow
// 0 → 1 of 3000 bytes; the topology's path 0-2-3-1 has 2 switches; the link 2-3 goes down at
// T0 + 2000 ns and the data then crosses 2, 4, 3.
//
// Path 0 → 1: 3 links, delay 3 × 1000 ns, 3 × 80 ns per 1000 bytes at 100 Gb/s: rtt = 2 ×
// 3000 + 240 = 6240 ns; bdp = 6240 × 100e9 / 1e9 / 8 = 78000 bytes.
//
// TS = time mod 2^24 = 3511296 + the offset from T0 (2e9 = 119 × 2^24 + 3511296). txBytes =
// bytes the port sent before / 128, 1048 bytes a packet: 0, 1048 → 8, 2096 → 16, 3144 → 24.
// - byte 0: switch 2 port 2 at +1884 (port's first: 0), switch 3 port 1 at +2968 (first: 0);
//   pathID 2 ^ 3 = 1. Its ACK (next byte 1000 → PSN 0) reaches host 0 at +8082.
// - byte 1000: switch 2 port 2 at +1968, then lost with the link.
// - byte 2000: switch 2 port 3 at +2152 (first: 0), switch 4 port 2 at +3236 (first: 0),
//   switch 3 port 1 at +4320 (after byte 0: 8); pathID 2 ^ 4 ^ 3 = 5. It arrives out of order:
//   the NAK of byte 1000 (PSN 1000 / 1000 = 1) carries its 3 hops, at host 0 at +9434.
// - go-back-N: byte 1000 again at switch 2 port 3 at +10584 (after byte 2000: 8), switch 4 at
//   +11668 (8), switch 3 at +12752 (after bytes 0 and 2000: 16): ACK 2000 → PSN 1 at +17866;
//   its first try's hop at switch 2 is dropped, the retransmission starts over.
// - byte 2000 again: switch 2 at +10668 (16), switch 4 at +11752 (16), switch 3 at +12836 (24):
//   ACK 3000 → PSN 2 at +17950.
// Opcodes of 3000 bytes: WRITE FIRST 6 (byte 0), MIDDLE 7 (1000), LAST 8 (2000).
#[test]
fn int_after_reroute_to_a_longer_path() {
    let out = tmpdir("reroute");
    let config = fixture().join("config_reroute.txt");
    let o = import(&config, &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t0 = 2_000_000_000u64;
    let ts = |off: u64| 3_511_296 + off;
    let two = json!({"nhop": 2, "path_id": 1, "hops": [hop(ts(1884), 0), hop(ts(2968), 0)]});
    let nak = json!({"nhop": 3, "path_id": 5,
        "hops": [hop(ts(2152), 0), hop(ts(3236), 0), hop(ts(4320), 8)]});
    let again1 = json!({"nhop": 3, "path_id": 5,
        "hops": [hop(ts(10584), 8), hop(ts(11668), 8), hop(ts(12752), 16)]});
    let again2 = json!({"nhop": 3, "path_id": 5,
        "hops": [hop(ts(10668), 16), hop(ts(11752), 16), hop(ts(12836), 24)]});
    let expected = vec![
        tx_ev(t0 + 800, 0, 0, 6),
        tx_ev(t0 + 884, 1, 1, 7),
        tx_ev(t0 + 1068, 2, 2, 8),
        ack_ev(t0 + 8082, 3, "rx_ack", 0, two),
        ack_ev(t0 + 9434, 4, "rx_nak", 1, nak),
        tx_ev(t0 + 9500, 5, 1, 7),
        tx_ev(t0 + 9584, 6, 2, 8),
        ack_ev(t0 + 17866, 7, "rx_ack", 1, again1),
        ack_ev(t0 + 17950, 8, "rx_ack", 2, again2),
    ];
    assert_eq!(lines(&out.join("sender_0.jsonl")), expected);
    let m: toml::Table =
        toml::from_str(&fs::read_to_string(out.join("sender_0.toml")).unwrap()).unwrap();
    assert_eq!(m["network"]["base_rtt_ns"].as_integer(), Some(6240));
    // 41 records: 5 host dequeues (tx_data), 4 receives at host 1 (rx_data), 4 at host 0
    // (rx_ack / rx_nak): 13 made 13 events; 24 switch records (5 packets at switch 2, 4 at
    // switch 3, 3 at switch 4, an enqueue and a dequeue each) and host 1's 4 ACK / NAK
    // enqueues rebuilt INT: 28.
    assert_eq!(
        summary_line(&o),
        "ccreplay: 41 records: 13 made 13 events, 28 rebuilt INT, 0 ignored"
    );
    assert!(!stderr(&o).contains("without INT"), "{}", stderr(&o));
    assert_eq!(int_counts(&config, "reroute"), (4, 0));
    // Every ACK has its INT, so the frames can be made: the pcap gives the same decisions.
    let a = replay(&out.join("sender_0.toml"), "hpcc");
    assert_eq!(a, replay(&out.join("sender_0_capture.toml"), "hpcc"));
    let _ = fs::remove_dir_all(out);
}

/// The hop count is the packet's dequeue records only when they join up from the sender to
/// the receiver: with switch 4 not traced, the rerouted packets have records at switches 2 and
/// 3 only — as many as the topology's path before the failure — and get no INT, since switch 2
/// sent them to switch 4, not to switch 3.
#[test]
fn int_not_rebuilt_across_an_untraced_switch() {
    let dir = tmpdir("reroute-untraced");
    copy_all(&dir);
    let mix = fs::read(dir.join("mix_reroute.tr")).unwrap();
    // Header: count, 10 ports × 11 bytes, win.
    let header = 4 + 10 * 11 + 4;
    let mut kept = mix[..header].to_vec();
    for r in mix[header..].chunks(56) {
        // Switch 4's records: node (byte 8, u16) 4, node type (byte 29) 1.
        if !(r[8] == 4 && r[9] == 0 && r[29] == 1) {
            kept.extend_from_slice(r);
        }
    }
    // 41 records, 6 of them switch 4's (3 packets, enqueue + dequeue).
    assert_eq!(kept.len(), header + 35 * 56);
    fs::write(dir.join("mix_reroute.tr"), kept).unwrap();
    fs::write(dir.join("trace_reroute.txt"), "4\n0 1 2 3\n").unwrap();
    let out = dir.join("out");
    let o = import(&dir.join("config_reroute.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("switches [4] are not in the trace list"),
        "{err}"
    );
    // Byte 0 crossed switches 2 and 3 before the failure: its ACK keeps its INT; the NAK and
    // the ACKs of the retransmissions do not.
    assert!(
        err.contains("3 of 4 ACKs/NAKs written without INT"),
        "{err}"
    );
    let acks: Vec<(u64, bool)> = lines(&out.join("sender_0.jsonl"))
        .iter()
        .filter(|e| e["kind"] != "tx_data")
        .map(|e| (e["index"].as_u64().unwrap(), e.get("int").is_some()))
        .collect();
    assert_eq!(acks, vec![(3, true), (4, false), (7, false), (8, false)]);
    let _ = fs::remove_dir_all(dir);
}

// The fixture *_ackloss (make_mixtr.py `records_ackloss`): hosts 0 and 1 on switch 2 (ports 1
// and 2), one flow of 5000 bytes. Packet k (k = 0..4, byte 1000 k) leaves host 0 at T0 + 84 k,
// switch 2 port 2 at T0 + 1084 + 84 k with 1048 k bytes sent before it there, and reaches host
// 1 at T0 + 2168 + 84 k, which queues ACK 1000 (k + 1). INT of packet k: TS = 3511296 + 1084 +
// 84 k = 3512380 + 84 k; txBytes = floor(1048 k / 128) = 0, 8, 16, 24, 32; pathID 2.
// The sender receives ACK 1000 (PSN 0) at +4200, never ACK 2000, ACK 4000 (PSN 3) at +4452,
// ACK 3000 (PSN 2) at +4460 and ACK 5000 (PSN 4) at +4536. Each carries the INT of the packet
// that made it: k = 0, 3, 2, 4. Opcodes of 5000 bytes: FIRST 6, MIDDLE 7 × 3, LAST 8.
#[test]
fn int_of_acks_after_a_lost_and_a_late_ack() {
    let out = tmpdir("ackloss");
    let config = fixture().join("config_ackloss.txt");
    let o = import(&config, &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t0 = 2_000_000_000u64;
    let int_k = |k: u64| json!({"nhop": 1, "path_id": 2, "hops": [hop(3_512_380 + 84 * k, 1048 * k / 128)]});
    let mut expected: Vec<Value> = (0..5)
        .map(|k| tx_ev(t0 + 84 * k, k, k, [6, 7, 7, 7, 8][k as usize]))
        .collect();
    for (i, (t, k)) in [(4200, 0), (4452, 3), (4460, 2), (4536, 4)]
        .iter()
        .enumerate()
    {
        expected.push(ack_ev(t0 + t, 5 + i as u64, "rx_ack", *k, int_k(*k)));
    }
    assert_eq!(lines(&out.join("sender_0.jsonl")), expected);
    // 29 records: 5 host dequeues, 5 receives at host 1, 4 at host 0 made 14 events; 10 switch
    // records and 5 ACK enqueues rebuilt INT.
    assert_eq!(
        summary_line(&o),
        "ccreplay: 29 records: 14 made 14 events, 15 rebuilt INT, 0 ignored"
    );
    assert_eq!(int_counts(&config, "ackloss"), (4, 0));
    let _ = fs::remove_dir_all(out);
}

/// A `mix.tr` record (trace-format.h layout, as make_mixtr.py writes it): data (l3 0x11) with
/// `sport, dport, seq, ts 0, pg 3, payload 1000` in the union, ACKs (0xFC) with `sport, dport,
/// flags 0, pg 3, seq`.
fn record(t: u64, node: u16, intf: u8, event: u8, switch: bool, l3: u8, seq: u32) -> Vec<u8> {
    let ip = |n: u32| 0x0B00_0001u32 + n * 0x100;
    let (sip, dip, sport, dport, size) = if l3 == 0x11 {
        (ip(0), ip(1), 10000u16, 100u16, 1048u16)
    } else {
        (ip(1), ip(0), 100, 10000, 90)
    };
    let mut r = vec![0u8; 56];
    r[0..8].copy_from_slice(&t.to_le_bytes());
    r[8..10].copy_from_slice(&node.to_le_bytes());
    r[10] = intf;
    r[11] = if l3 == 0x11 { 3 } else { 0 };
    r[16..20].copy_from_slice(&sip.to_le_bytes());
    r[20..24].copy_from_slice(&dip.to_le_bytes());
    r[24..26].copy_from_slice(&size.to_le_bytes());
    r[26] = l3;
    r[27] = event;
    r[29] = switch as u8;
    r[32..34].copy_from_slice(&sport.to_le_bytes());
    r[34..36].copy_from_slice(&dport.to_le_bytes());
    if l3 == 0x11 {
        r[36..40].copy_from_slice(&seq.to_le_bytes());
        r[48..50].copy_from_slice(&3u16.to_le_bytes());
        r[50..52].copy_from_slice(&1000u16.to_le_bytes());
    } else {
        r[38..40].copy_from_slice(&3u16.to_le_bytes());
        r[40..44].copy_from_slice(&seq.to_le_bytes());
    }
    r
}

/// Memory stays bounded: an ACK still waiting when the sender receives one the receiver queued
/// 4096 ACKs after it is taken as lost. 4097 packets (k = 0..4096) on the first fixture's
/// topology; the sender gets ACK k (byte 1000 (k + 1)) of k = 1..4096 soon after it is queued,
/// and ACK 0 late: just before ACK 4096 it still finds its INT (4096 − 0 = 4096 ACKs later is
/// the first that drops it), just after it is gone.
#[test]
fn late_ack_forgotten_after_4096_later_acks() {
    const N: u64 = 4097;
    let t0 = 2_000_000_000u64;
    for late_after in [4095u64, 4096] {
        let dir = tmpdir(&format!("late-{late_after}"));
        copy_fixture(&dir);
        fs::write(
            dir.join("flow.txt"),
            format!("1\n0 1 3 100 {} 2.0\n", N * 1000),
        )
        .unwrap();
        // The fixture's header: 4 ports (0,1), (1,1), (2,1), (2,2) at 100 Gb/s, win 52000.
        let mut mix = fs::read(dir.join("mix.tr")).unwrap()[..52].to_vec();
        let mut recs: Vec<Vec<u8>> = Vec::new();
        let (dequ, enqu, recv) = (2u8, 1u8, 0u8);
        for k in 0..N {
            let seq = (1000 * k) as u32;
            recs.push(record(t0 + 84 * k, 0, 1, dequ, false, 0x11, seq));
            recs.push(record(t0 + 1084 + 84 * k, 2, 2, enqu, true, 0x11, seq));
            recs.push(record(t0 + 1084 + 84 * k, 2, 2, dequ, true, 0x11, seq));
            recs.push(record(t0 + 2168 + 84 * k, 1, 1, recv, false, 0x11, seq));
            recs.push(record(
                t0 + 2168 + 84 * k,
                1,
                1,
                enqu,
                false,
                0xFC,
                seq + 1000,
            ));
            // ACK k reaches the sender 2000 ns after it was queued; ACK 0 42 ns after ACK
            // `late_after` (ACKs are 84 ns apart, so before the next one).
            let back = |j: u64| t0 + 4168 + 84 * j;
            if k > 0 {
                recs.push(record(back(k), 0, 1, recv, false, 0xFC, seq + 1000));
            }
            if k == late_after {
                recs.push(record(back(k) + 42, 0, 1, recv, false, 0xFC, 1000));
            }
        }
        recs.sort_by_key(|r| u64::from_le_bytes(r[0..8].try_into().unwrap()));
        for r in &recs {
            mix.extend_from_slice(r);
        }
        fs::write(dir.join("mix.tr"), mix).unwrap();
        let (with, without) =
            int_counts(&dir.join("config_hpcc.txt"), &format!("late-{late_after}"));
        let out = dir.join("out");
        let o = import(&dir.join("config_hpcc.txt"), &out);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let late = lines(&out.join("sender_0.jsonl"))
            .into_iter()
            .find(|e| e["kind"] == "rx_ack" && e["psn"] == 0)
            .unwrap();
        if late_after == 4095 {
            // Packet 0's INT: switch 2 port 2 at T0 + 1084, its first packet.
            assert_eq!((with, without), (N, 0));
            assert_eq!(
                late["int"],
                json!({"nhop": 1, "path_id": 2, "hops": [hop(3_512_380, 0)]})
            );
        } else {
            assert_eq!((with, without), (N - 1, 1));
            assert!(late.get("int").is_none(), "{late}");
            assert!(
                stderr(&o).contains("1 of 4097 ACKs/NAKs written without INT"),
                "{}",
                stderr(&o)
            );
        }
        let _ = fs::remove_dir_all(dir);
    }
}

/// The two simulator runs the bugs were reported on (tests/fixtures/ns3/README.md), when
/// CCREPLAY_NS3_SIM names the HPCC simulator's built `simulation/` folder (else skipped, said
/// on standard error): `longer` (switches 6, 7, 8; LINK_DOWN 13400 6 7 moves the flows through
/// 7 onto 6-8-7) and `parallel` (6-8-7 and 6-9-7; LINK_DOWN 13400 6 8 loses an ACK of flow
/// 1 -> 2 and delays another). The ACK counts are the sender receive records of hosts 0 and 1
/// in the runs' mix.tr (counted by check_int.py, and by hand with make_mixtr.py's layout):
/// 1,282 and 1,296; before the fix 56 and 27 of them had no INT. check_int.py rebuilds every
/// ACK's INT its own way and must agree on each.
#[test]
fn simulator_runs_keep_int_after_reroute_and_lost_ack() {
    let Some(sim) = std::env::var_os("CCREPLAY_NS3_SIM").map(PathBuf::from) else {
        eprintln!("skipped: set CCREPLAY_NS3_SIM to the HPCC simulator's built simulation/ folder");
        return;
    };
    for (name, acks) in [("longer", 1282u64), ("parallel", 1296)] {
        let dir = tmpdir(&format!("sim-{name}"));
        for f in [
            format!("sim_config_{name}.txt"),
            format!("sim_topology_{name}.txt"),
            format!("sim_trace_{name}.txt"),
            "sim_flow.txt".into(),
        ] {
            fs::copy(fixture().join(&f), dir.join(&f)).unwrap();
        }
        let config = dir.join(format!("sim_config_{name}.txt"));
        let o = run(Command::new(sim.join("build/scratch/third"))
            .arg(&config)
            .current_dir(&dir)
            .env("LD_LIBRARY_PATH", sim.join("build")));
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(
            int_counts(&config, &format!("sim-{name}")),
            (acks, 0),
            "{name}"
        );
        let out = dir.join("out");
        let o = import(&config, &out);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(!stderr(&o).contains("without INT"), "{}", stderr(&o));
        let check = run(Command::new("python3")
            .arg(fixture().join("check_int.py"))
            .arg(dir.join(format!("sim_topology_{name}.txt")))
            .arg(dir.join("sim_flow.txt"))
            .arg(dir.join(format!("sim_{name}.tr")))
            .arg(&out)
            .arg("0,1"));
        assert_eq!(
            String::from_utf8_lossy(&check.stdout),
            format!("acks {acks}, without INT here 0, importer differs on 0\n"),
            "{name}: {}",
            stderr(&check)
        );
        let _ = fs::remove_dir_all(dir);
    }
}
