//! The harness end to end on small captures written here with the codecs' writer: flow
//! pairing, replay (and its `--jobs` invariance), bless, check, and the errors a user meets.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ccreplay::extract;
use ccreplay::golden;
use ccreplay::replay::{self, Trace};
use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::{FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::IntConfig;
use ccreplay_codecs::shim::int::{IntHop, IntStack};

mod common;

const SENDER: [u8; 4] = [10, 0, 0, 1];

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("pipeline-{name}"))
}

fn frame(
    src: [u8; 4],
    dst: [u8; 4],
    bth: BthRepr,
    int: IntStack,
    aeth: Option<AethRepr>,
    payload: usize,
) -> Vec<u8> {
    let mut roce = RoceRepr::for_opcode(bth);
    roce.shim = ShimRepr::Int(int);
    if aeth.is_some() {
        roce.aeth = aeth;
    }
    roce.payload = vec![0x5A; payload];
    let f = FrameRepr {
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_mac: [2, 0, 0, 0, 0, 1],
        vlans: [None, None],
        ip: IpRepr::V4 {
            src,
            dst,
            dscp: 26,
            ecn: 2,
            ttl: 64,
            identification: 0,
            options: vec![],
        },
        udp_src_port: 49152,
        udp_dst_port: 4791,
        roce,
    };
    let mut out = Vec::new();
    f.emit(Dialect::Hpcc, IntConfig::default(), &mut out)
        .unwrap();
    out
}

/// An hpcc sender-side capture: `flows` flows from 10.0.0.1 to 10.0.1.(1+i); flow i sends to
/// remote QP 0x100+i and is acknowledged on local QP 0x10+i. Each ACK echoes a one-hop INT
/// whose queue grows, so HPCC's window moves.
fn write_hpcc_trace(dir: &Path, name: &str, flows: u32, rounds: u32, pairing: &str) -> PathBuf {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let mut t = 1_700_000_000_000_000_000u64;
    for r in 0..rounds {
        for f in 0..flows {
            let remote = [10, 0, 1, 1 + f as u8];
            let data = BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: 0x100 + f,
                psn: r,
                ..Default::default()
            };
            w.write(t, &frame(SENDER, remote, data, IntStack::new(), None, 1000))
                .unwrap();
            t += 80;
        }
        for f in 0..flows {
            let remote = [10, 0, 1, 1 + f as u8];
            let hop = IntHop {
                b: 2,
                ts: (r * 1000 + f * 10) & 0xFF_FFFF,
                tx_bytes: r * 8 * flows,
                qlen: (r % 20) as u16 * 200,
            };
            let int = IntStack::from_hops(0x001, &[hop]).unwrap();
            let ack = BthRepr {
                opcode: Opcode::RC_ACK,
                dest_qp: 0x10 + f,
                psn: r,
                ..Default::default()
            };
            w.write(
                t,
                &frame(
                    remote,
                    SENDER,
                    ack,
                    int,
                    Some(AethRepr {
                        syndrome: 0x1F,
                        msn: r,
                    }),
                    0,
                ),
            )
            .unwrap();
            t += 80;
        }
    }
    w.flush().unwrap();
    let manifest = format!(
        r#"dialect = "hpcc"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "hpcc"
params = {{ w_ai_bytes = 80.0 }}
{pairing}
[source]
kind = "synthesized"
generator = "harness/tests/pipeline.rs"
seed = 0
"#
    );
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, manifest).unwrap();
    path
}

fn decisions(trace: &Trace, jobs: usize) -> Vec<u8> {
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    replay::replay_reference(trace, &trace.manifest.models[0], jobs, |d| {
        ccreplay::protocol::write_decision(&mut buf, d, &mut scratch);
        Ok(())
    })
    .unwrap();
    buf
}

#[test]
fn flows_pair_by_ip_and_by_manifest() {
    let dir = tmpdir("pairing");
    let m = write_hpcc_trace(&dir, "ip", 3, 4, "");
    let trace = Trace::load(&m).unwrap();
    let (table, report) = extract::build_flow_table(&trace.capture, &trace.manifest).unwrap();
    // Three remote IPs, one data QP and one ACK QP each: every flow pairs by IP pair.
    assert_eq!(table.flows.len(), 3);
    for (i, f) in table.flows.iter().enumerate() {
        assert_eq!(f.paired_by, "ip pair");
        assert_eq!(f.remote_qp, Some(0x100 + i as u32));
        assert_eq!(f.local_qp, Some(0x10 + i as u32));
    }
    assert!(report.unpaired_acks.is_empty());

    // An explicit pairing wins, and a pairing naming a wrong QP leaves that ACK direction
    // unpaired: reported, not dropped silently.
    let pairing = r#"[[flows]]
local_ip = "10.0.0.1"
local_qp = 0x10
remote_ip = "10.0.1.1"
remote_qp = 0x100
[[flows]]
local_ip = "10.0.0.1"
local_qp = 0x99
remote_ip = "10.0.1.2"
remote_qp = 0x101
"#;
    let m = write_hpcc_trace(&dir, "explicit", 2, 2, pairing);
    let trace = Trace::load(&m).unwrap();
    let (table, report) = extract::build_flow_table(&trace.capture, &trace.manifest).unwrap();
    assert_eq!(table.flows[0].paired_by, "manifest");
    assert_eq!(table.flows[1].local_qp, Some(0x99));
    assert_eq!(report.unpaired_acks.len(), 1);
    assert_eq!(report.unpaired_acks[0].1, 0x11);
    // The same pairing in one pass (as replay takes it): flows numbered 0, 1 in order of
    // their first packet — the ids DUTs are given.
    let (table, _) = replay::for_each_event(&trace, |_| {}).unwrap();
    let ids: Vec<(u32, Option<u32>)> = table.flows.iter().map(|f| (f.id, f.remote_qp)).collect();
    assert_eq!(ids, [(0, Some(0x100)), (1, Some(0x101))]);
}

#[test]
fn replay_counts_and_jobs_invariance() {
    let dir = tmpdir("jobs");
    let m = write_hpcc_trace(&dir, "many", 8, 50, "");
    let trace = Trace::load(&m).unwrap();
    let one = decisions(&trace, 1);
    // 8 flows × 50 rounds: one HPCC decision per ACK.
    assert_eq!(one.iter().filter(|&&b| b == b'\n').count(), 400);
    for jobs in [2, 3] {
        assert_eq!(
            decisions(&trace, jobs),
            one,
            "--jobs {jobs} changed the output"
        );
    }
}

// More events than one replay chunk (8,192): the bytes are the same whether the chunks are
// written on the replaying thread (`--jobs` 1 and 2) or by a thread of their own while the
// next one is replayed (from `WRITER_THREAD_JOBS`), and a sink that fails stops the replay
// with its error either way.
#[test]
fn jobs_invariance_across_chunks_and_sink_errors() {
    let dir = tmpdir("chunks");
    // 16 flows × 600 rounds × (data + ACK) = 19,200 events: three chunks.
    let m = write_hpcc_trace(&dir, "chunks", 16, 600, "");
    let trace = Trace::load(&m).unwrap();
    let one = decisions(&trace, 1);
    assert_eq!(one.iter().filter(|&&b| b == b'\n').count(), 16 * 600);
    let writer = replay::WRITER_THREAD_JOBS;
    for jobs in [2, writer] {
        assert!(
            decisions(&trace, jobs) == one,
            "--jobs {jobs} changed the output"
        );
    }
    for jobs in [1, 2, writer] {
        let mut n = 0;
        let r = replay::replay_reference(&trace, &trace.manifest.models[0], jobs, |_| {
            n += 1;
            if n == 3_000 {
                Err(std::io::Error::other("disk full"))
            } else {
                Ok(())
            }
        });
        match r {
            Err(replay::ReplayError::Io(e)) => assert_eq!(e.to_string(), "disk full"),
            other => panic!("--jobs {jobs}: {:?}", other.map(|s| s.decisions)),
        }
    }
}

#[test]
fn bless_then_check_then_a_change_is_caught() {
    let dir = tmpdir("golden");
    let traces = dir.join("traces");
    let gold = dir.join("golden");
    fs::create_dir_all(&traces).unwrap();
    let m = write_hpcc_trace(&traces, "t1", 2, 20, "");
    let written = golden::bless(&traces, &gold, None, 1).unwrap();
    assert_eq!(
        written,
        vec![(gold.join("t1/hpcc.jsonl"), golden::Blessed::New)]
    );
    // Blessed again with nothing changed: the file is left as it was, not rewritten.
    let before = fs::metadata(gold.join("t1/hpcc.jsonl")).unwrap();
    let again = golden::bless(&traces, &gold, None, 1).unwrap();
    assert_eq!(
        again,
        vec![(gold.join("t1/hpcc.jsonl"), golden::Blessed::Unchanged)]
    );
    let after = fs::metadata(gold.join("t1/hpcc.jsonl")).unwrap();
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.ino(), after.ino(), "rewritten");
    }
    let results = golden::check_all(&traces, &gold, 2).unwrap();
    assert!(results.iter().all(|r| r.ok()), "{results:?}");

    // Change a parameter: the same trace now gives other windows; check must fail and point
    // at the first ACK whose window changed.
    let text = fs::read_to_string(&m)
        .unwrap()
        .replace("w_ai_bytes = 80.0", "w_ai_bytes = 160.0");
    fs::write(&m, text).unwrap();
    let results = golden::check_all(&traces, &gold, 1).unwrap();
    assert!(!results[0].ok());
    let golden::Outcome::Compared { report, .. } = &results[0].outcome else {
        panic!()
    };
    assert!(report.mismatches() > 0);
    let div = report.flows[0].first.as_ref().unwrap();
    assert!(!div.events.is_empty(), "the causing events are attached");
    // Blessed now, the file changes and says so.
    let changed = golden::bless(&traces, &gold, None, 1).unwrap();
    assert_eq!(
        changed,
        vec![(gold.join("t1/hpcc.jsonl"), golden::Blessed::Changed)]
    );

    // A replay failure (bad parameter) makes bless refuse and leaves the golden file alone.
    let before = fs::read(gold.join("t1/hpcc.jsonl")).unwrap();
    let text = fs::read_to_string(&m)
        .unwrap()
        .replace("w_ai_bytes = 160.0", "w_ai_bytes = -1.0");
    fs::write(&m, text).unwrap();
    let err = golden::bless(&traces, &gold, None, 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no golden file was changed"), "{err}");
    assert_eq!(fs::read(gold.join("t1/hpcc.jsonl")).unwrap(), before);
    assert!(
        fs::read_dir(gold.join("t1")).unwrap().count() == 1,
        "no temporary file left behind"
    );
}

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

#[test]
fn cli_exit_codes_and_messages() {
    let dir = tmpdir("cli");
    let traces = dir.join("traces");
    fs::create_dir_all(&traces).unwrap();
    write_hpcc_trace(&traces, "t1", 2, 10, "");
    let (code, out, _) = ccreplay(&["bless"], &dir);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = ccreplay(&["check"], &dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 of 1 trace/model pairs conform"), "{out}");

    // Replay to a file: the file appears whole, with one decision per ACK.
    let (code, _, err) = ccreplay(&["replay", "traces/t1.pcap", "--out", "d.jsonl"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fs::read_to_string(dir.join("d.jsonl"))
            .unwrap()
            .lines()
            .count(),
        20
    );

    // diff against itself through the in-process DUT adapter: conformant.
    let (code, out, _) = ccreplay(&["diff", "traces/t1.toml", "--dut", "model:hpcc"], &dir);
    assert_eq!(code, 0, "{out}");
    // ... and against the golden file of another parameter set: exit 1, a first divergence.
    fs::write(
        dir.join("other.toml"),
        fs::read_to_string(traces.join("t1.toml"))
            .unwrap()
            .replace("w_ai_bytes = 80.0", "w_ai_bytes = 400.0"),
    )
    .unwrap();
    fs::copy(traces.join("t1.pcap"), dir.join("other.pcap")).unwrap();
    let (code, _, err) = ccreplay(&["replay", "other.toml", "--out", "other.jsonl"], &dir);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = ccreplay(
        &[
            "diff",
            "traces/t1.toml",
            "--golden",
            "other.jsonl",
            "--format",
            "json",
            "--junit",
            "j.xml",
        ],
        &dir,
    );
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["mismatches"].as_u64().unwrap() > 0);
    assert!(
        fs::read_to_string(dir.join("j.xml"))
            .unwrap()
            .contains("<failure")
    );

    // Bad input: exit 2 with a one-line cause and a hint.
    let (code, _, err) = ccreplay(&["replay", "traces/nope.toml"], &dir);
    assert_eq!(code, 2);
    assert!(err.contains("nope.toml") && err.contains("hint:"), "{err}");
    fs::write(traces.join("bad.toml"), "dialect = \"hpcc\"\nwhat = 1\n").unwrap();
    let (code, _, err) = ccreplay(&["replay", "traces/bad.toml"], &dir);
    assert_eq!(code, 2);
    assert!(err.contains("unknown field `what`"), "{err}");
    let (code, _, err) = ccreplay(&["replay", "traces/t1.toml", "--model", "tcp"], &dir);
    assert_eq!(code, 2);
    assert!(err.contains("no model `tcp`"), "{err}");
    let (code, _, _) = ccreplay(&["check"], &dir);
    assert_eq!(code, 2, "a broken manifest in the folder is bad input");
}

/// A switch-port capture: data packets leaving the port, each with the port's INT record as
/// the last hop. `dcqcn-cp` decides RED marks from those queue lengths.
#[test]
fn switch_port_capture_gives_dequeue_events_and_cp_decisions() {
    let dir = tmpdir("port");
    let mut w = PcapWriter::create(dir.join("port.pcap")).unwrap();
    // Two flows through the port; queue lengths (80-byte units) 50, 150, 250, 400 per flow:
    // 4 000, 12 000, 20 000, 32 000 bytes. A first hop upstream, then this port's record.
    let q_units = [50u16, 150, 250, 400];
    let mut t = 1_000_000u64;
    for (i, q) in q_units.iter().enumerate() {
        for f in 0..2u32 {
            let upstream = IntHop {
                b: 2,
                ts: 1,
                tx_bytes: 1,
                qlen: 999,
            };
            let here = IntHop {
                b: 2,
                ts: 2,
                tx_bytes: 2,
                qlen: *q,
            };
            let int = IntStack::from_hops(0x3, &[upstream, here]).unwrap();
            let data = BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: 0x200 + f,
                psn: i as u32,
                ..Default::default()
            };
            w.write(
                t,
                &frame(
                    [10, 0, 0, 1 + f as u8],
                    [10, 0, 9, 9],
                    data,
                    int,
                    None,
                    1000,
                ),
            )
            .unwrap();
            t += 100;
        }
    }
    w.flush().unwrap();
    let manifest = r#"dialect = "hpcc"
[capture_point]
kind = "switch_port"
port = "tor1:17"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "dcqcn-cp"
params = { kmin_bytes = 5_000, kmax_bytes = 20_000, pmax = 1.0, seed = 1 }
[source]
kind = "synthesized"
generator = "harness/tests/pipeline.rs"
"#;
    let m = dir.join("port.toml");
    fs::write(&m, manifest).unwrap();
    let trace = Trace::load(&m).unwrap();
    let mut events = Vec::new();
    let (table, _) = replay::for_each_event(&trace, |e| events.push(*e)).unwrap();
    assert_eq!(table.flows.len(), 2);
    assert_eq!(table.flows[1].local_ip.to_string(), "10.0.0.2");
    assert_eq!(table.flows[1].remote_qp, Some(0x201));
    assert_eq!(events.len(), 8);
    // The port's own record is the last one: 150 units × 80 = 12 000 bytes for round 1.
    let ccreplay_reference_cc::EventKind::Dequeue {
        qlen_bytes, bytes, ..
    } = events[2].kind
    else {
        panic!()
    };
    assert_eq!(qlen_bytes, Some(12_000));
    assert_eq!(bytes as usize, 14 + 20 + 8 + 42 + 12 + 1000 + 4);
    let mut marks = Vec::new();
    replay::replay_reference(&trace, &trace.manifest.models[0], 1, |d| {
        marks.push((d.flow, d.outputs.mark_ce.unwrap(), d.state.get("p")));
        Ok(())
    })
    .unwrap();
    use ccreplay_reference_cc::StateValue::F64;
    // p by DCQCN-1: 4 000 <= Kmin: 0; 12 000: (12 000 - 5 000) / 15 000 = 0.4666…; 20 000 = Kmax:
    // 1.0 × Pmax = 1; 32 000 > Kmax: 1. Draws only where 0 < p < 1 (rounds 1, for both flows):
    // SplitMix64(seed 1) gives 0.56656 then 0.74578 (high halves / 2^32, computed in Python:
    // docs/models/dcqcn.md CP3), both >= 0.46667: neither is marked.
    let p1 = 7_000.0 / 15_000.0;
    assert_eq!(
        marks,
        vec![
            (0, false, Some(F64(0.0))),
            (1, false, Some(F64(0.0))),
            (0, false, Some(F64(p1))),
            (1, false, Some(F64(p1))),
            (0, true, Some(F64(1.0))),
            (1, true, Some(F64(1.0))),
            (0, true, Some(F64(1.0))),
            (1, true, Some(F64(1.0))),
        ]
    );
}

/// With `[[flows]]` the extraction reads the capture once; without, twice (pairing by IP).
/// Both number flows by their first packet of either direction — here an ACK that comes
/// before its flow's first data packet — and give the same events and decisions.
#[test]
fn single_and_two_pass_extraction_agree() {
    let dir = tmpdir("passes");
    let mut w = PcapWriter::create(dir.join("t.pcap")).unwrap();
    let hop = |r: u32| {
        IntStack::from_hops(
            1,
            &[IntHop {
                b: 2,
                ts: 1000 * r,
                tx_bytes: 8 * r,
                qlen: 300,
            }],
        )
        .unwrap()
    };
    let mut t = 1_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 100;
    };
    // Flow to 10.0.1.2 shows its ACK first (the capture started mid-flow).
    let ack = |qp: u32, psn: u32| BthRepr {
        opcode: Opcode::RC_ACK,
        dest_qp: qp,
        psn,
        ..Default::default()
    };
    let data = |qp: u32, psn: u32| BthRepr {
        opcode: Opcode::RC_WRITE_MIDDLE,
        dest_qp: qp,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    put(
        &mut w,
        frame([10, 0, 1, 2], SENDER, ack(0x11, 5), hop(1), aeth, 0),
    );
    for r in 0..20u32 {
        put(
            &mut w,
            frame(
                SENDER,
                [10, 0, 1, 1],
                data(0x100, r),
                IntStack::new(),
                None,
                1000,
            ),
        );
        put(
            &mut w,
            frame(
                SENDER,
                [10, 0, 1, 2],
                data(0x101, 6 + r),
                IntStack::new(),
                None,
                1000,
            ),
        );
        put(
            &mut w,
            frame([10, 0, 1, 1], SENDER, ack(0x10, r), hop(r + 2), aeth, 0),
        );
        put(
            &mut w,
            frame([10, 0, 1, 2], SENDER, ack(0x11, 6 + r), hop(r + 2), aeth, 0),
        );
    }
    w.flush().unwrap();
    let base = fs::read_to_string(write_hpcc_trace(&dir, "unused", 1, 1, ""))
        .unwrap()
        .replace("unused.pcap", "t.pcap");
    let base = format!("capture = \"t.pcap\"\n{base}");
    fs::write(dir.join("two.toml"), &base).unwrap();
    let pairing = "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x10\nremote_ip = \"10.0.1.1\"\nremote_qp = 0x100\n\
                   [[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x11\nremote_ip = \"10.0.1.2\"\nremote_qp = 0x101\n";
    fs::write(
        dir.join("one.toml"),
        base.replace("[source]", &format!("{pairing}[source]")),
    )
    .unwrap();
    let run = |name: &str| {
        let trace = Trace::load(&dir.join(name)).unwrap();
        let mut evs = Vec::new();
        let (table, _) = replay::for_each_event(&trace, |e| evs.push(*e)).unwrap();
        (
            table
                .flows
                .iter()
                .map(|f| (f.remote_ip, f.local_qp, f.remote_qp))
                .collect::<Vec<_>>(),
            evs,
            decisions(&trace, 1),
        )
    };
    let (flows_two, ev_two, d_two) = run("two.toml");
    let (flows_one, ev_one, d_one) = run("one.toml");
    // Flow 0 is the one whose ACK came first.
    assert_eq!(
        flows_two[0],
        ("10.0.1.2".parse().unwrap(), Some(0x11), Some(0x101))
    );
    assert_eq!(flows_one, flows_two);
    assert_eq!(ev_one, ev_two);
    assert_eq!(ev_one.len(), 81);
    assert_eq!(d_one, d_two);
}

/// A header-only capture (snaplen 128) replays to the same decisions as the full one: every
/// header is there, and the payload length comes from the length fields.
#[test]
fn snaplen_cut_capture_replays_like_the_full_one() {
    let dir = tmpdir("snaplen");
    let m = write_hpcc_trace(&dir, "full", 3, 30, "");
    let mut r = ccreplay_codecs::capture::CaptureReader::open(dir.join("full.pcap")).unwrap();
    let mut w = PcapWriter::create(dir.join("cut.pcap")).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let n = rec.data.len().min(128);
        w.write_truncated(rec.ts_ns, &rec.data[..n], rec.orig_len)
            .unwrap();
    }
    w.flush().unwrap();
    fs::write(dir.join("cut.toml"), fs::read_to_string(&m).unwrap()).unwrap();
    let full = Trace::load(&m).unwrap();
    let cut = Trace::load(&dir.join("cut.toml")).unwrap();
    let mut evs_full = Vec::new();
    let (_, rep_full) = replay::for_each_event(&full, |e| evs_full.push(*e)).unwrap();
    let mut evs_cut = Vec::new();
    let (_, rep_cut) = replay::for_each_event(&cut, |e| evs_cut.push(*e)).unwrap();
    assert_eq!(rep_full.snaplen_cut, 0);
    // Data packets (14 + 20 + 8 + 42 + 12 + 1000 + 4 = 1100 bytes) are cut; ACKs (104) are not.
    assert_eq!(rep_cut.snaplen_cut, 90);
    assert_eq!(rep_cut.malformed, 0);
    assert_eq!(evs_cut, evs_full);
    let ccreplay_reference_cc::EventKind::TxData { bytes, .. } = evs_cut[0].kind else {
        panic!()
    };
    assert_eq!(bytes, 1000);
    assert_eq!(decisions(&cut, 1), decisions(&full, 1));
}

/// Two QPs of 10.0.0.1 sending to the same peer (neither the manifest nor the IP pair can
/// pair them): each ACK direction goes to the flow whose PSNs it acknowledges — flow A from PSN
/// 0xFFFFF0 through the 24-bit wrap to 0x21, flow B from 0x100 (C-2 serial arithmetic).
#[test]
fn two_qps_to_one_peer_pair_by_psn_continuity() {
    let dir = tmpdir("psn-continuity");
    let mut w = PcapWriter::create(dir.join("two.pcap")).unwrap();
    let mut t = 1_700_000_000_000_000_000u64;
    let peer = [10, 0, 1, 1];
    // (data DestQP, ACK DestQP, first PSN)
    let flows = [(0x100u32, 0x10u32, 0xFF_FFF0u32), (0x101, 0x11, 0x100)];
    for r in 0..50u32 {
        for &(qp, _, first) in &flows {
            let data = BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: qp,
                psn: first.wrapping_add(r) & 0xFF_FFFF,
                ..Default::default()
            };
            w.write(t, &frame(SENDER, peer, data, IntStack::new(), None, 1000))
                .unwrap();
            t += 80;
        }
        for &(_, ack_qp, first) in &flows {
            let ack = BthRepr {
                opcode: Opcode::RC_ACK,
                dest_qp: ack_qp,
                psn: first.wrapping_add(r) & 0xFF_FFFF,
                ..Default::default()
            };
            let aeth = Some(AethRepr {
                syndrome: 0x1F,
                msn: r,
            });
            w.write(t, &frame(peer, SENDER, ack, IntStack::new(), aeth, 0))
                .unwrap();
            t += 80;
        }
    }
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "two.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "psn continuity"),
            (Some(0x101), Some(0x11), "psn continuity")
        ]
    );
    assert!(report.unpaired_acks.is_empty());
}

/// The flow table a DUT's hello lists, at a switch port (traces/dcqcn_cp: the egress mirror of
/// sw0's port to h3): each flow's local IP is its sender's, as tshark 4.0 reads the capture
/// with contrib/wireshark/ccreplay.lua and `-o ccreplay.dialect:hpcc` (`ip.src`, `ip.dst`,
/// `infiniband.bth.destqp`: 10.0.0.1 / .2 / .3 to 10.0.0.4, DestQP 0x200001 / 2 / 3, 178, 146
/// and 129 packets, in order of first packet).
#[test]
fn a_switch_ports_flows_name_their_senders() {
    let trace = Trace::load(&common::repo().join("traces/dcqcn_cp.toml")).unwrap();
    let (table, _) = ccreplay::events_in::flow_table(&trace).unwrap();
    let got: Vec<(String, String, Option<u32>)> = table
        .flows
        .iter()
        .map(|f| (f.local_ip.to_string(), f.remote_ip.to_string(), f.remote_qp))
        .collect();
    let want: Vec<(String, String, Option<u32>)> = (1..=3)
        .map(|i| {
            (
                format!("10.0.0.{i}"),
                "10.0.0.4".into(),
                Some(0x20_0000 + i),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// (remote QP, local QP, how paired) of a flow.
type Pairing = (Option<u32>, Option<u32>, &'static str);

/// The pairing of each flow of `table`, in flow order.
fn pairs(table: &extract::FlowTable) -> Vec<Pairing> {
    table
        .flows
        .iter()
        .map(|f| (f.remote_qp, f.local_qp, f.paired_by))
        .collect()
}

/// Pass 1 over `dir/capture` for an hpcc sender at 10.0.0.1 whose manifest lists no flows
/// (so pairing is by IP pair, then PSN continuity): each flow's pairing, and the report.
fn pass1(dir: &Path, capture: &str) -> (Vec<Pairing>, extract::ExtractReport) {
    let manifest = write_hpcc_trace(dir, "unused", 1, 1, "");
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (table, report) = extract::build_flow_table(&dir.join(capture), &m).unwrap();
    (pairs(&table), report)
}

/// One data frame of `qp` at `psn` from 10.0.0.1 to `peer`, or the ACK of `psn` on `ack_qp`
/// coming back (hpcc dialect, no INT: pairing reads QPs and PSNs only).
fn data_to(peer: [u8; 4], qp: u32, psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_WRITE_MIDDLE,
        dest_qp: qp,
        psn,
        ..Default::default()
    };
    frame(SENDER, peer, bth, IntStack::new(), None, 1000)
}

fn ack_from(peer: [u8; 4], ack_qp: u32, psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_ACK,
        dest_qp: ack_qp,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    frame(peer, SENDER, bth, IntStack::new(), aeth, 0)
}

/// Pairing by PSN continuity when the receiver coalesces its ACKs and the capture lost a
/// frame. Three QPs of 10.0.0.1 to one peer, so neither the IP pair nor a manifest pairs them:
/// - A sends PSNs 0x100..=0x10F and is acknowledged every fourth packet (ACK PSNs 0x103,
///   0x107, 0x10B, 0x10F: 3, 7, 11 and 15 past its first; its sent range spans 15);
/// - B the same from 0x5000 (ACKs 0x5003 .. 0x500F);
/// - C sends 0x9000..=0x9003 but the capture dropped 0x9003 (tcpdump at line rate does), so
///   its sent range spans 2 and its one ACK, of 0x9003, is 3 past its first: the rule's
///   allowance of one PSN past the range (docs/manifest.md "Flows": a range holds one PSN
///   more than was sent).
///
/// Every ACK lies 3 or more past its flow's first PSN, so pairing needs the spans (a span
/// left at 0 would pair none), and C's needs the allowance of one.
#[test]
fn coalesced_acks_and_a_dropped_frame_still_pair_by_psn_continuity() {
    let dir = tmpdir("psn-coalesced");
    let mut w = PcapWriter::create(dir.join("c.pcap")).unwrap();
    let peer = [10, 0, 1, 1];
    let mut t = 1_700_000_000_000_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 80;
    };
    for i in 0..16u32 {
        put(&mut w, data_to(peer, 0x100, 0x100 + i));
        put(&mut w, data_to(peer, 0x101, 0x5000 + i));
        if i < 3 {
            put(&mut w, data_to(peer, 0x102, 0x9000 + i));
        }
        if i % 4 == 3 {
            put(&mut w, ack_from(peer, 0x10, 0x100 + i));
            put(&mut w, ack_from(peer, 0x11, 0x5000 + i));
        }
        if i == 3 {
            put(&mut w, ack_from(peer, 0x12, 0x9003));
        }
    }
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "c.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "psn continuity"),
            (Some(0x101), Some(0x11), "psn continuity"),
            (Some(0x102), Some(0x12), "psn continuity"),
        ]
    );
    assert!(report.unpaired_acks.is_empty());
}

/// The manifest's `[[flows]]` in the two-pass table (`build_flow_table`, which `--jobs` and
/// the library use whatever the manifest says): a listed flow of which the capture holds only
/// ACKs is still a flow (paired by the manifest, its data QP from the list); a listed flow of
/// which it holds nothing is not one. The capture: flow 0x100 / 0x10 whole (4 data, 4 ACKs);
/// of the listed 0x200 / 0x20 its 2 ACKs only; of the listed 0x300 / 0x30 nothing.
#[test]
fn listed_flows_seen_by_their_acks_only_or_not_at_all() {
    let dir = tmpdir("listed");
    let mut w = PcapWriter::create(dir.join("l.pcap")).unwrap();
    let (peer, peer2, peer3) = ([10, 0, 1, 1], [10, 0, 1, 2], [10, 0, 1, 3]);
    let mut t = 1_000_000u64;
    for i in 0..4u32 {
        w.write(t, &data_to(peer, 0x100, i)).unwrap();
        w.write(t + 10, &ack_from(peer, 0x10, i)).unwrap();
        if i < 2 {
            w.write(t + 20, &ack_from(peer2, 0x20, 0x40 + i)).unwrap();
        }
        t += 100;
    }
    w.flush().unwrap();
    let listed = format!(
        "{}{}{}",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x10\nremote_ip = \"10.0.1.1\"\nremote_qp = 0x100\n",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x20\nremote_ip = \"10.0.1.2\"\nremote_qp = 0x200\n",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x30\nremote_ip = \"10.0.1.3\"\nremote_qp = 0x300\n",
    );
    let manifest = write_hpcc_trace(&dir, "unused", 1, 1, &listed);
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (table, report) = extract::build_flow_table(&dir.join("l.pcap"), &m).unwrap();
    let got: Vec<_> = table
        .flows
        .iter()
        .map(|f| {
            (
                f.remote_ip.to_string(),
                f.remote_qp,
                f.local_qp,
                f.paired_by,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("10.0.1.1".into(), Some(0x100), Some(0x10), "manifest"),
            ("10.0.1.2".into(), Some(0x200), Some(0x20), "manifest"),
        ]
    );
    assert_eq!(table.data_flow(peer3.into(), 0x300), None);
    assert!(report.unpaired_acks.is_empty());
}

/// At a receiver that also sends (a host with flows both ways): only the data it receives
/// are events. Host 10.0.1.1 receives 3 data frames from 10.0.0.1 (QP 0x100) and ACKs them
/// (receiver feedback); it also sends 2 data frames to 10.0.0.9 and receives their 2 ACKs —
/// both directions of its own sending flow are the wrong direction here.
#[test]
fn a_receiver_that_also_sends_replays_only_the_data_it_receives() {
    let dir = tmpdir("receiver-both-ways");
    let mut w = PcapWriter::create(dir.join("r.pcap")).unwrap();
    let (host, sender, other) = ([10, 0, 1, 1], SENDER, [10, 0, 0, 9]);
    let bth = |opcode, dest_qp, psn| BthRepr {
        opcode,
        dest_qp,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    let no = IntStack::new();
    let mut t = 1_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 100;
    };
    for i in 0..3u32 {
        let d = bth(Opcode::RC_WRITE_MIDDLE, 0x10, i);
        put(&mut w, frame(sender, host, d, no, None, 1000));
        let a = bth(Opcode::RC_ACK, 0x100, i);
        put(&mut w, frame(host, sender, a, no, aeth, 0));
        if i < 2 {
            let d = bth(Opcode::RC_WRITE_MIDDLE, 0x900, 0x70 + i);
            put(&mut w, frame(host, other, d, no, None, 1000));
            let a = bth(Opcode::RC_ACK, 0x90, 0x70 + i);
            put(&mut w, frame(other, host, a, no, aeth, 0));
        }
    }
    w.flush().unwrap();
    let manifest = "capture = \"r.pcap\"\ndialect = \"hpcc\"\n[capture_point]\nkind = \"receiver\"\n\
                    host = \"10.0.1.1\"\n[network]\nlink_rate_bps = 100_000_000_000\n\
                    base_rtt_ns = 8_000\nmtu_bytes = 1000\n[[models]]\nname = \"hpcc\"\n\
                    [source]\nkind = \"synthesized\"\ngenerator = \"harness/tests/pipeline.rs\"\n\
                    seed = 0\n";
    fs::write(dir.join("r.toml"), manifest).unwrap();
    let m = ccreplay::manifest::Manifest::load(&dir.join("r.toml")).unwrap();
    let (mut table, report) = extract::build_flow_table(&dir.join("r.pcap"), &m).unwrap();
    let mut kinds = Vec::new();
    let report = extract::stream_events(&dir.join("r.pcap"), &m, &mut table, report, |e| {
        kinds.push(e.kind)
    })
    .unwrap();
    assert_eq!(table.flows.len(), 1);
    assert_eq!(kinds.len(), 3);
    assert!(
        kinds
            .iter()
            .all(|k| matches!(k, ccreplay_reference_cc::EventKind::RxData { .. }))
    );
    use ccreplay::extract::Skip;
    assert_eq!(report.packets, 10);
    assert_eq!(report.skipped.get(Skip::ReceiverFeedback), 3);
    assert_eq!(report.skipped.get(Skip::WrongDirection), 4);
}

/// A RoCEv2 frame from `src` to `dst` whose UDP payload (8 bytes) is too short for a BTH:
/// Ethernet 14 + IPv4 20 (total length 36) + UDP 8 (length 16, port 4791) + 8 zero bytes.
fn bth_cut_short(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7, 0, 16, 0, 0]);
    f.extend_from_slice(&[0; 8]);
    f
}

/// Damage counts where it is the capture point's own traffic (the warning, and `--strict`'s
/// error): at sender 10.0.0.1, four frames too short for a BTH — one it sends, one it
/// receives, two between other hosts — are 4 malformed, 2 of them damage in its traffic.
#[test]
fn damage_is_counted_in_the_hosts_own_traffic_only() {
    let dir = tmpdir("damage");
    let mut w = PcapWriter::create(dir.join("d.pcap")).unwrap();
    let (peer, a, b) = ([10, 0, 1, 1], [10, 0, 0, 7], [10, 0, 0, 8]);
    let frames = [
        data_to(peer, 0x100, 0),
        bth_cut_short(SENDER, peer),
        bth_cut_short(a, b),
        bth_cut_short(peer, SENDER),
        bth_cut_short(b, a),
    ];
    for (i, f) in frames.iter().enumerate() {
        w.write(1_000_000 + 100 * i as u64, f).unwrap();
    }
    w.flush().unwrap();
    let manifest = write_hpcc_trace(&dir, "unused", 1, 1, "");
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (mut table, report) = extract::build_flow_table(&dir.join("d.pcap"), &m).unwrap();
    let report =
        extract::stream_events(&dir.join("d.pcap"), &m, &mut table, report, |_| {}).unwrap();
    assert_eq!((report.packets, report.events), (5, 1));
    assert_eq!(report.malformed, 4);
    assert_eq!(report.damaged_in_traffic, 2);
}

/// A sender manifest's `[[flows]]` is the whole pairing (docs/manifest.md): the capture is
/// read once, and a flow it does not list keeps its data as a flow of its own ("data only")
/// while its ACK direction is reported unpaired — not paired by IP, as a manifest without
/// `[[flows]]` would. Listed: 0x100 / 0x10 to 10.0.1.1; not listed: 0x101 / 0x11 to
/// 10.0.1.2; 3 data frames and 3 ACKs each.
#[test]
fn a_manifest_that_lists_flows_pairs_those_only() {
    let dir = tmpdir("listed-only");
    let mut w = PcapWriter::create(dir.join("t.pcap")).unwrap();
    let (p1, p2) = ([10, 0, 1, 1], [10, 0, 1, 2]);
    let mut t = 1_000_000u64;
    for i in 0..3u32 {
        for f in [
            data_to(p1, 0x100, i),
            data_to(p2, 0x101, i),
            ack_from(p1, 0x10, i),
            ack_from(p2, 0x11, i),
        ] {
            w.write(t, &f).unwrap();
            t += 100;
        }
    }
    w.flush().unwrap();
    let listed = "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x10\nremote_ip = \"10.0.1.1\"\nremote_qp = 0x100\n";
    let base = fs::read_to_string(write_hpcc_trace(&dir, "unused", 1, 1, listed)).unwrap();
    fs::write(dir.join("t.toml"), format!("capture = \"t.pcap\"\n{base}")).unwrap();
    let trace = Trace::load(&dir.join("t.toml")).unwrap();
    let mut events = 0;
    let (table, report) = replay::for_each_event(&trace, |_| events += 1).unwrap();
    let got = pairs(&table);
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "manifest"),
            (Some(0x101), None, "data only"),
        ]
    );
    assert_eq!(
        report.unpaired_acks,
        [("10.0.1.2".parse().unwrap(), 0x11, 3)]
    );
    // 3 + 3 data frames and flow 0x100's 3 ACKs; the other 3 ACKs are skipped.
    assert_eq!(events, 9);
    assert_eq!(report.skipped.get(extract::Skip::UnpairedAck), 3);
}

/// C-2 at the pairing's edge: a PSN exactly half the 24-bit space (2^23) past a flow's first
/// is not after it, so it does not widen the flow's sent range. Flow 0x102 sends PSNs 0 and
/// 0x800000 and its one ACK names 0x800000: no flow's range holds it (0x102's spans 0, flow
/// 0x101's is 0x100000..=0x100003), so the direction stays unpaired.
#[test]
fn a_psn_half_the_space_ahead_does_not_widen_a_flows_range() {
    let dir = tmpdir("psn-half");
    let mut w = PcapWriter::create(dir.join("h.pcap")).unwrap();
    let peer = [10, 0, 1, 1];
    let mut t = 1_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 100;
    };
    for i in 0..4u32 {
        put(&mut w, data_to(peer, 0x101, 0x10_0000 + i));
    }
    put(&mut w, ack_from(peer, 0x11, 0x10_0003));
    put(&mut w, data_to(peer, 0x102, 0));
    put(&mut w, data_to(peer, 0x102, 0x80_0000));
    put(&mut w, ack_from(peer, 0x12, 0x80_0000));
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "h.pcap");
    assert_eq!(
        got,
        [
            (Some(0x101), Some(0x11), "psn continuity"),
            (Some(0x102), None, "data only"),
        ]
    );
    assert_eq!(
        report.unpaired_acks,
        [("10.0.1.1".parse().unwrap(), 0x12, 1)]
    );
}
