//! `ccreplay import ns3` on the hand-made fixture of tests/fixtures/ns3 (make_mixtr.py writes
//! it from trace-format.h's layout). Every expected number is derived below from the records
//! the script writes; errors are checked to name the file and the line or byte offset.
//! The INT rebuilt after a reroute or a lost or late ACK is tested in import_ns3_int.rs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

mod common;

use common::ns3::{
    bin, copy_all, copy_fixture, fixture, import, lines, replay, run, stderr, summary_line, tmpdir,
};

// The fixture (make_mixtr.py): hosts 0 and 1, switch 2, two 100 Gb/s links of 0.001 ms; one
// flow of 2000 bytes from 0 to 1, PACKET_PAYLOAD_SIZE 1000, T0 = 2 s = 2_000_000_000 ns.
//
// Path 0 → 1: 2 links, delay 2 × 1000 ns; one 1000-byte packet per link takes
// 1000 × 8e9 / 100e9 = 80 ns: rtt = 2 × 2000 + 2 × 80 = 4160 ns; bdp = 4160 × 100e9 / 1e9 / 8
// = 52000 bytes (third.cc's pairRtt / pairBdp; GLOBAL_T 1 takes the largest, the same here).
//
// INT at switch 2 port 2 (the only switch): B = 2 (100G). TS = time mod 2^24:
// 2e9 = 119 × 16777216 + 3511296, so T0 + 1084 → 3512380 and T0 + 1168 → 3512464.
// Packet 0 leaves first: 0 bytes sent before it → txBytes 0; queue empty → qLen 0. Its 1048
// bytes are then sent. Packet 1 leaves with the other flow's 1048-byte packet still in class 3
// (record qlen 1048) and the 400-byte class-0 packet enqueued at T0 + 1100: all classes hold
// 1448 bytes → qLen = floor(1448 / 80) = 18 (the record's class alone would give 13); bytes
// sent before it 1048 → txBytes = floor(1048 / 128) = 8. pathID = 2 (the switch's id).
fn int(ts: u64, tx_bytes: u64, qlen: u64) -> Value {
    json!({"nhop": 1, "path_id": 2, "hops": [{"b": 2, "ts": ts, "tx_bytes": tx_bytes, "qlen": qlen}]})
}

#[test]
fn hpcc_events_with_rebuilt_int() {
    let out = tmpdir("hpcc");
    let o = import(&fixture().join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t0 = 2_000_000_000u64;
    // PSN = seq / 1000; opcodes WRITE_FIRST (6) for bytes 0..1000 of 2000, WRITE_LAST (8).
    // ACK of next-expected byte E = 1000 → PSN ceil(1000/1000) − 1 = 0; E = 2000 → 1.
    let expected = vec![
        json!({"t": t0, "flow": 0, "index": 0, "kind": "tx_data", "psn": 0, "bytes": 1000, "opcode": 6}),
        json!({"t": t0 + 84, "flow": 0, "index": 1, "kind": "tx_data", "psn": 1, "bytes": 1000, "opcode": 8}),
        json!({"t": t0 + 4200, "flow": 0, "index": 2, "kind": "rx_ack", "psn": 0, "syndrome": 31, "int": int(3_512_380, 0, 0)}),
        json!({"t": t0 + 4284, "flow": 0, "index": 3, "kind": "rx_ack", "psn": 1, "syndrome": 31, "int": int(3_512_464, 8, 18)}),
    ];
    assert_eq!(lines(&out.join("sender_0.jsonl")), expected);
    // The receiver: the two packets as they arrived, the second CE-marked (ecn 3).
    let expected = vec![
        json!({"t": t0 + 2100, "flow": 0, "index": 0, "kind": "rx_data", "psn": 0, "bytes": 1000, "opcode": 6, "ecn": 0}),
        json!({"t": t0 + 2184, "flow": 0, "index": 1, "kind": "rx_data", "psn": 1, "bytes": 1000, "opcode": 8, "ecn": 3}),
    ];
    assert_eq!(lines(&out.join("receiver_1.jsonl")), expected);
    assert!(
        !out.join("receiver_1.toml").exists(),
        "HPCC has no receiver model"
    );
    assert!(
        stderr(&o).contains("events only, no manifest"),
        "{}",
        stderr(&o)
    );

    let m: toml::Table =
        toml::from_str(&fs::read_to_string(out.join("sender_0.toml")).unwrap()).unwrap();
    assert_eq!(m["events"].as_str(), Some("sender_0.jsonl"));
    assert_eq!(m["dialect"].as_str(), Some("hpcc"));
    assert_eq!(m["capture_point"]["host"].as_str(), Some("11.0.0.1"));
    assert_eq!(m["network"]["base_rtt_ns"].as_integer(), Some(4160));
    assert_eq!(
        m["network"]["link_rate_bps"].as_integer(),
        Some(100_000_000_000)
    );
    assert_eq!(m["network"]["mtu_bytes"].as_integer(), Some(1000));
    let models = m["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names.last(), Some(&"hpcc"));
    if let Some(ns3) = models
        .iter()
        .find(|x| x["name"].as_str() == Some("hpcc-ns3"))
    {
        let p = &ns3["params"];
        // config_hpcc.txt: MI_THRESH 0, RATE_AI 50Mb/s, U_TARGET 0.95, VAR_WIN 1, MULTI_RATE 0.
        assert_eq!(p["win_bytes"].as_integer(), Some(52000));
        assert_eq!(p["RATE_AI"].as_integer(), Some(50_000_000));
        assert_eq!(p["MI_THRESH"].as_integer(), Some(0));
        assert_eq!(p["U_TARGET"].as_float(), Some(0.95));
        assert_eq!(p["VAR_WIN"].as_integer(), Some(1));
        assert_eq!(p["MULTI_RATE"].as_integer(), Some(0));
    }
    let flows = m["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0]["remote_ip"].as_str(), Some("11.0.1.1"));

    // Every model of the manifest replays the imported events: one decision per ACK.
    for name in names {
        let o = run(bin()
            .arg("replay")
            .arg(out.join("sender_0.toml"))
            .args(["--model", name]));
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let causes: Vec<u64> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["cause"]["index"].as_u64()
            })
            .collect();
        assert_eq!(causes, vec![2, 3], "{name}");
    }
    let _ = fs::remove_dir_all(out);
}

#[test]
fn dcqcn_cnp_flag_and_receiver_manifest() {
    let out = tmpdir("dcqcn");
    let o = import(&fixture().join("config_dcqcn.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ev = lines(&out.join("sender_0.jsonl"));
    // No INT in DCQCN; the second ACK has the CNP flag (bit 0 of flags): rx_cnp right after it.
    assert_eq!(ev.len(), 5);
    assert!(ev.iter().all(|e| e.get("int").is_none()));
    assert_eq!(
        ev[4],
        json!({"t": 2_000_004_284u64, "flow": 0, "index": 4, "kind": "rx_cnp"})
    );
    let m: toml::Table =
        toml::from_str(&fs::read_to_string(out.join("receiver_1.toml")).unwrap()).unwrap();
    assert_eq!(m["capture_point"]["kind"].as_str(), Some("receiver"));
    assert_eq!(m["models"][0]["name"].as_str(), Some("dcqcn-np"));
    // A CNP packet (l3Prot 0xFF) to host 0 at T0 + 5000 naming the flow by its source port
    // (fid 10000, union offset 32): one more rx_cnp, index 5.
    let dir = tmpdir("dcqcn-cnp");
    copy_fixture(&dir);
    let mut mix = fs::read(dir.join("mix.tr")).unwrap();
    let mut r = [0u8; 56];
    r[0..8].copy_from_slice(&2_000_005_000u64.to_le_bytes());
    r[10] = 1; // intf
    r[16..20].copy_from_slice(&0x0b00_0101u32.to_le_bytes()); // sip 11.0.1.1
    r[20..24].copy_from_slice(&0x0b00_0001u32.to_le_bytes()); // dip 11.0.0.1
    r[26] = 0xFF;
    r[32..34].copy_from_slice(&10000u16.to_le_bytes());
    mix.extend_from_slice(&r);
    fs::write(dir.join("mix.tr"), mix).unwrap();
    let o = import(&dir.join("config_dcqcn.txt"), &dir.join("out"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ev = lines(&dir.join("out").join("sender_0.jsonl"));
    assert_eq!(
        ev.last(),
        Some(&json!({"t": 2_000_005_000u64, "flow": 0, "index": 5, "kind": "rx_cnp"}))
    );
    let _ = fs::remove_dir_all(dir);
    for trace in ["sender_0.toml", "receiver_1.toml"] {
        let o = run(bin().arg("replay").arg(out.join(trace)));
        assert_eq!(o.status.code(), Some(0), "{trace}: {}", stderr(&o));
    }
    let _ = fs::remove_dir_all(out);
}

#[test]
fn int_not_rebuilt_without_switch_records() {
    let dir = tmpdir("noswitch");
    copy_fixture(&dir);
    // Drop every switch record (nodeType, byte 29, = 1) and the switch from the trace list.
    let mix = fs::read(dir.join("mix.tr")).unwrap();
    let header = 4 + 4 * 11 + 4;
    let mut kept = mix[..header].to_vec();
    for r in mix[header..].chunks(56) {
        if r[29] == 0 {
            kept.extend_from_slice(r);
        }
    }
    fs::write(dir.join("mix.tr"), kept).unwrap();
    fs::write(dir.join("trace.txt"), "2\n0 1\n").unwrap();
    let out = dir.join("out");
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("switches [2] are not in the trace list"),
        "{err}"
    );
    assert!(
        err.contains("2 of 2 ACKs/NAKs written without INT"),
        "{err}"
    );
    let ev = lines(&out.join("sender_0.jsonl"));
    assert_eq!(ev.len(), 4);
    assert!(ev.iter().all(|e| e.get("int").is_none()));
    // Frames cannot be made without the INT: no pcap, said so.
    assert!(!out.join("sender_0_capture.pcap").exists());
    assert!(err.contains("no pcap (ACKs without INT)"), "{err}");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn errors_name_the_file_and_where() {
    let dir = tmpdir("errors");
    copy_fixture(&dir);
    let mix = fs::read(fixture().join("mix.tr")).unwrap();
    // Header: 4 + 4 ports × 11 + 4 = 52 bytes; 22 records of 56 bytes.
    assert_eq!(mix.len(), 52 + 22 * 56);
    let out = dir.join("out");
    // A first import succeeds; every failed one after it must leave its files as they were
    // (nothing half-written, no temporary file left behind).
    assert_eq!(
        import(&dir.join("config_hpcc.txt"), &out).status.code(),
        Some(0)
    );
    let snapshot = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = snapshot();
    assert!(before.len() >= 3, "{before:?}");

    // A truncated last record: it starts at 52 + 21 × 56 = 1228; 46 of its 56 bytes remain.
    fs::write(dir.join("mix.tr"), &mix[..mix.len() - 10]).unwrap();
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    let want = format!(
        "{}: byte 1228: record truncated: 46 of 56 bytes",
        dir.join("mix.tr").display()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(
        snapshot() == before,
        "a failed import changed {}",
        out.display()
    );

    // An unknown event type in the third record (at 52 + 2 × 56 = 164; event is byte 27).
    let mut bad = mix.clone();
    bad[164 + 27] = 9;
    fs::write(dir.join("mix.tr"), &bad).unwrap();
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("byte 164: unknown event type 9"),
        "{}",
        stderr(&o)
    );
    assert!(
        snapshot() == before,
        "a failed import changed {}",
        out.display()
    );

    // A header cut short.
    fs::write(dir.join("mix.tr"), &mix[..20]).unwrap();
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("SimSetting port entry truncated"),
        "{}",
        stderr(&o)
    );

    // The header alone (tracing off): an error saying what to set, nothing written.
    fs::write(dir.join("mix.tr"), &mix[..52]).unwrap();
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("no trace records: the simulator wrote its header only; set ENABLE_TRACE 1"),
        "{}",
        stderr(&o)
    );
    assert!(
        snapshot() == before,
        "a failed import changed {}",
        out.display()
    );
    fs::write(dir.join("mix.tr"), &mix).unwrap();

    // A bad config line: the 5th line's rate.
    let cfg = fs::read_to_string(dir.join("config_hpcc.txt")).unwrap();
    let mut l: Vec<&str> = cfg.lines().collect();
    l.insert(4, "RATE_AI fifty");
    fs::write(dir.join("bad.txt"), l.join("\n")).unwrap();
    let o = import(&dir.join("bad.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    let want = format!(
        "{}:5: RATE_AI: `fifty` is not a valid",
        dir.join("bad.txt").display()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));

    // A flow from a switch.
    fs::write(dir.join("flow.txt"), "1\n2 1 3 100 2000 2.0\n").unwrap();
    let o = import(&dir.join("config_hpcc.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    let want = format!("{}:2: node 2 is not a host", dir.join("flow.txt").display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    fs::copy(fixture().join("flow.txt"), dir.join("flow.txt")).unwrap();

    // A CC mode the harness does not model.
    fs::write(
        dir.join("timely.txt"),
        cfg.replace("CC_MODE 3", "CC_MODE 7"),
    )
    .unwrap();
    let o = import(&dir.join("timely.txt"), &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("CC_MODE 7 is not modelled"),
        "{}",
        stderr(&o)
    );
    let _ = fs::remove_dir_all(dir);
}

/// The pcap written beside complete events files replays to the same decisions, and an
/// independent decoder (tshark, when installed) reads the PSNs, opcodes and QPs the events say.
#[test]
fn pcap_beside_the_events_replays_the_same() {
    for cc in ["hpcc", "dcqcn"] {
        let out = tmpdir(&format!("pcap-{cc}"));
        let o = import(&fixture().join(format!("config_{cc}.txt")), &out);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let m: toml::Table =
            toml::from_str(&fs::read_to_string(out.join("sender_0_capture.toml")).unwrap())
                .unwrap();
        assert_eq!(m["capture"].as_str(), Some("sender_0_capture.pcap"));
        for model in m["models"].as_array().unwrap() {
            let name = model["name"].as_str().unwrap();
            let a = replay(&out.join("sender_0.toml"), name);
            let b = replay(&out.join("sender_0_capture.toml"), name);
            assert!(!a.is_empty(), "{cc}/{name}");
            assert_eq!(a, b, "{cc}/{name}");
        }
        let o = run(bin()
            .arg("inspect")
            .arg(out.join("sender_0_capture.pcap"))
            .args(["--dialect", if cc == "hpcc" { "hpcc" } else { "roce" }])
            .args(["--strict", "--format", "json"]));
        assert_eq!(o.status.code(), Some(0), "malformed frames: {}", stderr(&o));
        if cc == "dcqcn"
            && let Ok(t) = Command::new("tshark")
                .arg("-r")
                .arg(out.join("sender_0_capture.pcap"))
                .args(["-T", "fields", "-e", "infiniband.bth.opcode", "-e"])
                .args(["infiniband.bth.psn", "-e", "infiniband.bth.destqp"])
                .output()
            && t.status.success()
        {
            // Data to the receiver's QP 0x020000 | 10000 = 0x022710 (WRITE FIRST 6, LAST 8),
            // ACKs (17) and the CNP (129) to the sender's 0x012710; PSNs 0, 1, 0, 1, 0.
            let got = String::from_utf8_lossy(&t.stdout).into_owned();
            assert_eq!(
                got,
                "6\t0\t0x022710\n8\t1\t0x022710\n17\t0\t0x012710\n17\t1\t0x012710\n129\t0\t0x012710\n"
            );
        }
        let _ = fs::remove_dir_all(out);
    }
}

/// No input makes the importer panic: the fixture with bytes and lines changed at random
/// (a fixed-seed generator, so a failure reproduces) gives `Ok` or an error, never a panic.
#[test]
fn mutated_inputs_never_panic() {
    use ccreplay::import::ns3::{Options, import};
    let dir = tmpdir("mutate");
    copy_fixture(&dir);
    let mix = fs::read(fixture().join("mix.tr")).unwrap();
    let texts: Vec<(&str, String)> = ["config_hpcc.txt", "topology.txt", "flow.txt", "trace.txt"]
        .iter()
        .map(|f| (*f, fs::read_to_string(fixture().join(f)).unwrap()))
        .collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let opts = Options {
        config: dir.join("config_hpcc.txt"),
        out: dir.join("out"),
        mix: None,
    };
    let (mut ok, mut errors) = (0, 0);
    for round in 0..300 {
        let mut m = mix.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % m.len();
            m[i] = next() as u8;
        }
        if round % 7 == 0 {
            m.truncate((next() as usize) % m.len());
        }
        fs::write(dir.join("mix.tr"), &m).unwrap();
        // Every third round, one text file gets a token replaced.
        for (f, t) in &texts {
            fs::write(dir.join(f), t).unwrap();
        }
        if round % 3 == 0 {
            let (f, t) = &texts[(next() as usize) % texts.len()];
            let mut toks: Vec<String> = t.split(' ').map(String::from).collect();
            let i = (next() as usize) % toks.len();
            toks[i] = ["x", "-1", "99999999999", "", "0", "4294967296", "1e400"]
                [(next() as usize) % 7]
                .to_string();
            fs::write(dir.join(f), toks.join(" ")).unwrap();
        }
        match import(&opts) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                errors += 1;
            }
        }
    }
    // Both outcomes occur (the mutations reach past the header checks and into them).
    assert!(ok > 0 && errors > 0, "ok {ok}, errors {errors}");
    let _ = fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Issue 18: an importer that loses nothing.

/// The fixture's files (name → bytes) in `dir`, to show a failed import left it as it was.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.clone(), fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

// The fixture *_2dst (make_mixtr.py `records_2dst`), DCQCN: hosts 0, 1, 2 on switch 3.
// flow_2dst.txt: A = 0 -> 1, 2000 bytes at 2.0 s; B = 0 -> 2, 1000 bytes at 2.0 s;
// C = 0 -> 1, 1000 bytes at 2.000001 s. third.cc numbers source ports per (source,
// destination) pair from 10000 in file order: A 10000 (pair 0->1, first), B 10000 (pair 0->2,
// first), C 10001 (pair 0->1, second). The records use exactly these ports; a per-source count
// (A 10000, B 10001, C 10002) matches none of B's or C's.
//
// Events (T0 = 2 s; PSN = seq / 1000; WRITE FIRST 6, LAST 8, ONLY 10 for 1000 of 1000 bytes;
// ACK of next-expected byte E → PSN ceil(E / 1000) − 1; the CNP flag (bit 0) of an ACK and a
// CNP packet (fid = the flow's source port) → rx_cnp):
// sender_0 (flows A 0, B 1, C 2 in file order): tx A0 @0, tx B0 @84, tx A1 @168, tx C0 @1000,
// ack A(1000) @4200, ack B(1000)+cnp @4284, ack A(2000) @4368, CNP packet B @4400,
// ack C(1000) @5200 → 10 events from 9 records;
// receiver_1 (A 0, C 1): rx A0 @2100, rx A1 @2268, rx C0 @3100; receiver_2 (B 0): rx B0 @2184
// with ECN 3 → 4 events from 4 records. 13 records made 14 events.
// Ignored, 8: other traffic 1 (host 2 -> host 1 @2300: no flow joins the pair), ports of no
// flow 1 (0 -> 1 with source port 10005 @3200), switch records 2 (DCQCN: switch 3's enqueue and
// dequeue @1084), host queue 3 (host 1's ACK enqueue @2100 and dequeue @2110, host 2's ACK
// enqueue @2184), PFC 1 (@2400). 13 + 8 = 21 records.
#[test]
fn host_sending_to_two_hosts_keeps_both_flows() {
    let out = tmpdir("2dst");
    let o = import(&fixture().join("config_2dst.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t0 = 2_000_000_000u64;
    let tx = |t: u64, flow: u64, index: u64, psn: u64, opcode: u64| json!({"t": t0 + t, "flow": flow, "index": index, "kind": "tx_data", "psn": psn, "bytes": 1000, "opcode": opcode});
    let ack = |t: u64, flow: u64, index: u64, psn: u64| json!({"t": t0 + t, "flow": flow, "index": index, "kind": "rx_ack", "psn": psn, "syndrome": 31});
    let cnp = |t: u64, flow: u64, index: u64| json!({"t": t0 + t, "flow": flow, "index": index, "kind": "rx_cnp"});
    let rx = |t: u64, flow: u64, index: u64, psn: u64, opcode: u64, ecn: u64| json!({"t": t0 + t, "flow": flow, "index": index, "kind": "rx_data", "psn": psn, "bytes": 1000, "opcode": opcode, "ecn": ecn});
    assert_eq!(
        lines(&out.join("sender_0.jsonl")),
        vec![
            tx(0, 0, 0, 0, 6),
            tx(84, 1, 0, 0, 10),
            tx(168, 0, 1, 1, 8),
            tx(1000, 2, 0, 0, 10),
            ack(4200, 0, 2, 0),
            ack(4284, 1, 1, 0),
            cnp(4284, 1, 2),
            ack(4368, 0, 3, 1),
            cnp(4400, 1, 3),
            ack(5200, 2, 1, 0),
        ]
    );
    assert_eq!(
        lines(&out.join("receiver_1.jsonl")),
        vec![
            rx(2100, 0, 0, 0, 6, 0),
            rx(2268, 0, 1, 1, 8, 0),
            rx(3100, 1, 0, 0, 10, 0)
        ]
    );
    assert_eq!(
        lines(&out.join("receiver_2.jsonl")),
        vec![rx(2184, 0, 0, 0, 10, 3)]
    );
    // The manifests pair the flows by IP and QP; QPs are 0x01pppp (sender) / 0x02pppp
    // (receiver) of the source port: 0x012710 = 75536 (port 10000), 0x012711 = 75537 (10001).
    let flows = |name: &str| -> Vec<(String, i64, String, i64)> {
        let m: toml::Table = toml::from_str(&fs::read_to_string(out.join(name)).unwrap()).unwrap();
        m["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["local_ip"].as_str().unwrap().to_string(),
                    f["local_qp"].as_integer().unwrap(),
                    f["remote_ip"].as_str().unwrap().to_string(),
                    f["remote_qp"].as_integer().unwrap(),
                )
            })
            .collect()
    };
    let s = |x: &str| x.to_string();
    assert_eq!(
        flows("sender_0.toml"),
        vec![
            (s("11.0.0.1"), 0x012710, s("11.0.1.1"), 0x022710),
            (s("11.0.0.1"), 0x012710, s("11.0.2.1"), 0x022710),
            (s("11.0.0.1"), 0x012711, s("11.0.1.1"), 0x022711),
        ]
    );
    assert_eq!(
        flows("receiver_2.toml"),
        vec![(s("11.0.2.1"), 0x022710, s("11.0.0.1"), 0x012710)]
    );
    assert_eq!(
        summary_line(&o),
        "ccreplay: 21 records: 13 made 14 events, 8 ignored: 1 other traffic (no flow between \
         its hosts), 1 packets between a flow's hosts with ports of no flow, 2 switch records \
         (DCQCN writes no switch events), 3 host queue records (no event), 1 PFC frames"
    );
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    // The pcap made of the events gives the same decisions, flows to both hosts included.
    let a = replay(&out.join("sender_0.toml"), "dcqcn-ns3");
    let b = replay(&out.join("sender_0_capture.toml"), "dcqcn-ns3");
    assert!(!a.is_empty());
    assert_eq!(a, b);
    let _ = fs::remove_dir_all(out);
}

/// The same counts through the library: every record is accounted for once.
#[test]
fn every_record_is_accounted_for_by_reason() {
    use ccreplay::import::ns3::{IgnoreReason as R, Options, import};
    let run = |config: &str| {
        let out = tmpdir(&format!("account-{config}"));
        let s = import(&Options {
            config: fixture().join(config),
            out: out.to_path_buf(),
            mix: None,
        })
        .unwrap();
        let _ = fs::remove_dir_all(out);
        s
    };
    let s = run("config_2dst.txt");
    let a = &s.account;
    assert_eq!(
        (s.records, s.events, a.made_events, a.rebuilt_int),
        (21, 14, 13, 0)
    );
    assert_eq!(
        a.ignored_by_reason(),
        vec![
            (R::OtherTraffic, 1),
            (R::UnknownPorts, 1),
            (R::SwitchDcqcn, 2),
            (R::HostQueue, 3),
            (R::Pfc, 1)
        ]
    );
    // The first fixture (make_mixtr.py `records`), 22 records. HPCC: 6 made 6 events (2 tx,
    // 2 rx, 2 ack); the 12 switch enqueue / dequeue records and host 1's 2 ACK enqueues rebuilt
    // INT; host 1's 2 ACK dequeues are host queue records. 6 + 14 + 2 = 22.
    let s = run("config_hpcc.txt");
    let a = &s.account;
    assert_eq!(
        (s.records, s.events, a.made_events, a.rebuilt_int),
        (22, 6, 6, 14)
    );
    assert_eq!(a.ignored_by_reason(), vec![(R::HostQueue, 2)]);
    // DCQCN: the same 6 records make 7 events (the second ACK's CNP flag: rx_cnp); the 12
    // switch records and host 1's 4 ACK queue records are ignored. 6 + 16 = 22.
    let s = run("config_dcqcn.txt");
    let a = &s.account;
    assert_eq!(
        (s.records, s.events, a.made_events, a.rebuilt_int),
        (22, 7, 6, 0)
    );
    assert_eq!(
        a.ignored_by_reason(),
        vec![(R::SwitchDcqcn, 12), (R::HostQueue, 4)]
    );
    let o = import_cli_quiet_summary("config_hpcc.txt");
    assert_eq!(
        o,
        "ccreplay: 22 records: 6 made 6 events, 14 rebuilt INT, 2 ignored: 2 host queue records \
         (no event)"
    );
}

fn import_cli_quiet_summary(config: &str) -> String {
    let out = tmpdir(&format!("summary-{config}"));
    let o = import(&fixture().join(config), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let _ = fs::remove_dir_all(out);
    summary_line(&o)
}

/// third.cc numbers source ports per (source, destination) pair, from 10000, in file order,
/// with a 16-bit counter.
#[test]
fn source_ports_numbered_per_host_pair() {
    use ccreplay::import::ns3::{Topology, parse_flows};
    let topo = Topology::parse(
        "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n",
        Path::new("t.txt"),
    )
    .unwrap();
    let text =
        "5\n0 1 3 100 10 2\n0 2 3 100 10 2\n0 1 3 100 10 2\n1 0 3 100 10 2\n0 2 3 100 10 2\n";
    let ports: Vec<u16> = parse_flows(text, Path::new("f.txt"), &topo)
        .unwrap()
        .iter()
        .map(|f| f.sport)
        .collect();
    // Pairs (0,1) (0,2) (0,1) (1,0) (0,2): first, first, second, first, second.
    assert_eq!(ports, vec![10000, 10000, 10001, 10000, 10001]);
    // 65536 flows of one pair: the k-th gets (10000 + k) mod 65536, so flow 55536 gets 0 and the
    // last (65535) 9999; one more would get 10000 again, which is an error naming both lines
    // (flow k is on line k + 2).
    let many = |n: usize| {
        let mut t = format!("{n}\n");
        for _ in 0..n {
            t.push_str("0 1 3 100 10 2\n");
        }
        t
    };
    let flows = parse_flows(&many(65536), Path::new("f.txt"), &topo).unwrap();
    assert_eq!(flows[55535].sport, 65535);
    assert_eq!(flows[55536].sport, 0);
    assert_eq!(flows[65535].sport, 9999);
    let e = parse_flows(&many(65537), Path::new("f.txt"), &topo)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("f.txt:65538: host 0 -> host 1: this flow gets UDP source port 10000 like the flow of line 2"),
        "{e}"
    );
}

/// A mix.tr with its header only (what the simulator writes with ENABLE_TRACE 0): an error
/// saying what to set, and no output folder left behind.
#[test]
fn header_only_trace_is_an_error_that_writes_nothing() {
    let dir = tmpdir("header-only");
    copy_all(&dir);
    let out = dir.join("new").join("out");
    let o = run(bin()
        .args(["import", "ns3"])
        .arg(dir.join("config_hpcc.txt"))
        .arg("--mix")
        .arg(dir.join("mix_header_only.tr"))
        .arg("--out")
        .arg(&out));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!(
        "{}: no trace records: the simulator wrote its header only; set ENABLE_TRACE 1 in {} and \
         name the hosts to trace in its TRACE_FILE list",
        dir.join("mix_header_only.tr").display(),
        dir.join("config_hpcc.txt").display()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(
        !dir.join("new").exists(),
        "a failed import left {}",
        out.display()
    );
    // The config of a run with tracing off says so.
    let cfg = fs::read_to_string(dir.join("config_hpcc.txt")).unwrap();
    fs::write(
        dir.join("off.txt"),
        cfg.replace("ENABLE_TRACE 1", "ENABLE_TRACE 0"),
    )
    .unwrap();
    fs::copy(dir.join("mix_header_only.tr"), dir.join("mix.tr")).unwrap();
    let o = import(&dir.join("off.txt"), &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(it has ENABLE_TRACE 0)"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("new").exists());
    let _ = fs::remove_dir_all(dir);
}

/// A trace list that names no host: the simulator records no host, so nothing can be
/// imported. An error naming the list, nothing written.
#[test]
fn trace_list_naming_no_host_is_an_error() {
    let dir = tmpdir("nohost");
    copy_all(&dir);
    let out = dir.join("out");
    // A first import succeeds; the failing ones after it leave its files as they were.
    assert_eq!(
        import(&dir.join("config_hpcc.txt"), &out).status.code(),
        Some(0)
    );
    let before = snapshot(&out);
    // The fixture lists the switch (2) only; then a count of 0; then ids past the node count
    // (3 nodes), which third.cc skips.
    for (list, named) in [
        (None, "switches 2 only"),
        (Some("0\n"), "its count is 0"),
        (
            Some("3\n2 3 7\n"),
            "switches 2 only; 3, 7 not below the node count 3, which the simulator skips",
        ),
    ] {
        if let Some(l) = list {
            fs::write(dir.join("trace_nohost.txt"), l).unwrap();
        }
        let o = import(&dir.join("config_nohost.txt"), &out);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let want = format!(
            "{}: the trace list names no host ({named}): the simulator records only the nodes \
             it names",
            dir.join("trace_nohost.txt").display()
        );
        assert!(stderr(&o).contains(&want), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("hint: name the flows' hosts in"),
            "{}",
            stderr(&o)
        );
        assert!(
            snapshot(&out) == before,
            "a failed import changed {}",
            out.display()
        );
        let fresh = dir.join("fresh");
        assert_eq!(
            import(&dir.join("config_nohost.txt"), &fresh).status.code(),
            Some(2)
        );
        assert!(!fresh.exists());
    }
    let _ = fs::remove_dir_all(dir);
}

/// A flow of the flow file that yields no event: an error naming it with the likeliest cause.
#[test]
fn flow_without_records_is_an_error_naming_it() {
    let dir = tmpdir("unrecorded");
    copy_all(&dir);
    let out = dir.join("out");
    assert_eq!(
        import(&dir.join("config_hpcc.txt"), &out).status.code(),
        Some(0)
    );
    let before = snapshot(&out);
    let mix = dir.join("mix.tr").display().to_string();
    let check = |config: &str, want: &[String]| {
        let o = import(&dir.join(config), &out);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        for w in want {
            assert!(stderr(&o).contains(w.as_str()), "{w}\n---\n{}", stderr(&o));
        }
        assert!(
            snapshot(&out) == before,
            "a failed import changed {}",
            out.display()
        );
    };
    // flow_unrecorded.txt: the fixture's flow, then a second 0 -> 1 flow of 1000 bytes (the
    // pair's second: port 10001). mix.tr has no record with port 10001, and its records run to
    // T0 + 4284 ns, after the flow's start.
    let flows = dir.join("flow_unrecorded.txt").display().to_string();
    check(
        "config_unrecorded.txt",
        &[
            format!("{flows}: 1 of its 2 flows has no event in {mix} (nothing written):"),
            format!(
                "  flow 1 (line 3): host 0 -> host 1, source port 10001, destination port 100, \
                 1000 bytes, starts 2 s: {mix} holds no record of it, though it has records up \
                 to 2000004284 ns"
            ),
        ],
    );
    // The flows in the other order: the 1000-byte flow now has port 10000 and dport 200, the
    // 2000-byte one 10001: the records (ports 10000 / 100) match neither. 8 of them are between
    // the two hosts: host 0's 2 data dequeues, host 1's 2 data receives and 2 ACK enqueues,
    // host 0's 2 ACK receives (host 1's ACK dequeues are host queue records, the switch's
    // rebuild INT). The first is host 0's dequeue: source port 10000, destination port 100.
    fs::write(
        dir.join("flow_unrecorded.txt"),
        "2\n0 1 3 200 1000 2.0\n0 1 3 100 2000 2.0\n",
    )
    .unwrap();
    let ports = format!(
        "{mix} holds 8 records of packets between its hosts with ports of no flow (the first: \
         source port 10000, destination port 100): the flow file is not the one the simulator ran"
    );
    check(
        "config_unrecorded.txt",
        &[
            format!("{flows}: 2 of its 2 flows have no event"),
            format!(
                "flow 0 (line 2): host 0 -> host 1, source port 10000, destination port 200, 1000 \
                 bytes, starts 2 s: {ports}"
            ),
            format!(
                "flow 1 (line 3): host 0 -> host 1, source port 10001, destination port 100, 2000 \
                 bytes, starts 2 s: {ports}"
            ),
        ],
    );
    // A flow starting at SIMULATOR_STOP_TIME (4.00 s) or later never started; one starting
    // at 3 s, after mix.tr's last record (T0 + 4284 ns), was cut off.
    fs::write(
        dir.join("flow_unrecorded.txt"),
        "3\n0 1 3 100 2000 2.0\n0 1 3 100 1000 3.0\n0 1 3 100 1000 4.0\n",
    )
    .unwrap();
    check(
        "config_unrecorded.txt",
        &[
            format!("{flows}: 2 of its 3 flows have no event"),
            format!(
                "flow 1 (line 3): host 0 -> host 1, source port 10001, destination port 100, \
                 1000 bytes, starts 3 s: {mix} ends at 2000004284 ns, before the flow starts"
            ),
            "flow 2 (line 4): host 0 -> host 1, source port 10002, destination port 100, 1000 \
             bytes, starts 4 s: it starts at 4 s, not before SIMULATOR_STOP_TIME 4 s: the \
             simulator never started it"
                .to_string(),
        ],
    );
    // Host 0 to hosts 1 and 2 (the *_2dst fixture) plus a flow 1 -> 2, with only host 0 and
    // the switch traced: the three flows of host 0 keep their records, the fourth has none.
    fs::write(
        dir.join("flow_2dst.txt"),
        "4\n0 1 3 100 2000 2.0\n0 2 3 100 1000 2.0\n0 1 3 100 1000 2.000001\n1 2 3 100 1000 2.0\n",
    )
    .unwrap();
    fs::write(dir.join("trace_2dst.txt"), "2\n0 3\n").unwrap();
    check(
        "config_2dst.txt",
        &[
            format!(
                "{}: 1 of its 4 flows has no event",
                dir.join("flow_2dst.txt").display()
            ),
            format!(
                "flow 3 (line 5): host 1 -> host 2, source port 10000, destination port 100, \
                 1000 bytes, starts 2 s: neither host 1 nor host 2 is in the trace list {}",
                dir.join("trace_2dst.txt").display()
            ),
        ],
    );
    let _ = fs::remove_dir_all(dir);
}

/// A receiver that is not traced: no empty events file for it, and a warning saying why.
#[test]
fn untraced_receiver_gets_no_empty_file() {
    let dir = tmpdir("untraced-receiver");
    copy_fixture(&dir);
    // Drop host 1's records (node id at byte 8, node type 0 at byte 29) and host 1 from the list.
    let mix = fs::read(dir.join("mix.tr")).unwrap();
    let header = 4 + 4 * 11 + 4;
    let mut kept = mix[..header].to_vec();
    for r in mix[header..].chunks(56) {
        if !(r[8] == 1 && r[9] == 0 && r[29] == 0) {
            kept.extend_from_slice(r);
        }
    }
    // 22 records, 6 of them host 1's (2 data receives, 2 ACK enqueues, 2 ACK dequeues).
    assert_eq!(kept.len(), header + 16 * 56);
    fs::write(dir.join("mix.tr"), kept).unwrap();
    fs::write(dir.join("trace.txt"), "2\n0 2\n").unwrap();
    let out = dir.join("out");
    let o = import(&dir.join("config_dcqcn.txt"), &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!out.join("receiver_1.jsonl").exists(), "{err}");
    assert!(!out.join("receiver_1.toml").exists(), "{err}");
    assert!(
        err.contains(&format!(
            "warning: {}: not written: no events (host 1 is not in the trace list)",
            out.join("receiver_1.jsonl").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(
            "warning: 1 flow without receiver events: their receiving hosts are not in the trace \
             list: flow 0 (line 2): host 0 -> host 1"
        ),
        "{err}"
    );
    // The sender keeps its 5 events (2 tx_data, 2 rx_ack, the CNP flag's rx_cnp).
    assert_eq!(lines(&out.join("sender_0.jsonl")).len(), 5);
    let _ = fs::remove_dir_all(dir);
}
