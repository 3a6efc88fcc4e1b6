//! The harness end to end on small captures written here with the codecs' writer: flow
//! pairing, replay (and its `--jobs` invariance), bless, check, and the errors a user meets.

use std::fs;
use std::path::Path;
use std::process::Command;

use ccreplay::extract;
use ccreplay::golden;
use ccreplay::replay::{self, Trace};
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::int::{IntHop, IntStack};

mod common;

use common::synth::{SENDER, frame, write_hpcc_trace};

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("pipeline-{name}"))
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

/// `check` on a manifest whose golden file does not exist yet compared nothing: an error
/// (exit 2, a JUnit `<error>`), never a plain difference (exit 1), and its hint is a `bless`
/// command that works for that manifest wherever it is — here not in a `traces/` folder, and
/// with a golden folder whose name needs quoting — which then makes the same `check` pass.
/// A manifest `bless` would refuse (DCQCN on a capture without CNPs: no decision) is the
/// replay's error instead, and `bless` refusing leaves no folder behind.
#[test]
fn a_missing_golden_file_compares_nothing_and_its_hint_blesses_it() {
    let dir = tmpdir("missing-golden");
    write_hpcc_trace(&dir, "m", 2, 10, "");
    let (code, out, err) = ccreplay(&["check", "m.toml", "--junit", "j.xml"], &dir);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains(
            "MISSING  m / hpcc: no golden file golden/m/hpcc.jsonl: nothing compared (write it \
             from the reference model with `ccreplay bless m.toml`, review it, then check again)"
        ),
        "{out}"
    );
    assert!(
        out.contains("0 of 1 trace/model pairs conform; 1 MISSING a golden file: nothing compared"),
        "{out}"
    );
    let junit = fs::read_to_string(dir.join("j.xml")).unwrap();
    assert!(
        junit.contains("<error message=\"no golden file "),
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    // The HTML report says so too: an ERROR, not DIFFERENCES FOUND, and the same command.
    let (code, _, _) = ccreplay(&["report", "check", "m.toml", "-o", "r.html"], &dir);
    assert_eq!(code, 2);
    let html = fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(
        html.contains("id=\"verdict\">ERROR</span> 0 of 1 comparisons conform; 1 compared nothing"),
        "{html}"
    );
    assert!(
        html.contains("<code>ccreplay bless m.toml</code>"),
        "{html}"
    );
    // `bless` as `check` knew it before: it looked for traces/ only.
    let (code, _, err) = ccreplay(&["bless", "--trace", "m"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("traces: no such trace folder"), "{err}");

    // The hint, run as written (through a shell, as a user pastes it), then the same check.
    let hint = |out: &str| -> String {
        let at = out.find("`ccreplay bless").unwrap() + 1;
        out[at..at + out[at..].find('`').unwrap()].to_string()
    };
    let run_hint = |cmd: &str| {
        let bin = env!("CARGO_BIN_EXE_ccreplay");
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd.replacen("ccreplay", &format!("'{bin}'"), 1))
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run_hint(&hint(&out));
    assert!(dir.join("golden/m/hpcc.jsonl").is_file());
    let (code, out, _) = ccreplay(&["check", "m.toml"], &dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 of 1 trace/model pairs conform\n"), "{out}");
    // Another golden folder, its name with a space in it: the hint names it, quoted.
    let (code, out, _) = ccreplay(&["check", "m.pcap", "--golden", "my golden"], &dir);
    assert_eq!(code, 2, "{out}");
    assert_eq!(hint(&out), "ccreplay bless m.toml --golden 'my golden'");
    run_hint(&hint(&out));
    let (code, out, _) = ccreplay(&["check", "m.toml", "--golden", "my golden"], &dir);
    assert_eq!(code, 0, "{out}");

    // DCQCN's reaction point on the same capture (no CNP): no decision, so no golden file can
    // be made; `check` says so instead of pointing at a `bless` that refuses.
    let text = fs::read_to_string(dir.join("m.toml")).unwrap();
    let dcqcn = text.replace(
        "name = \"hpcc\"\nparams = { w_ai_bytes = 80.0 }",
        "name = \"dcqcn\"",
    );
    assert_ne!(dcqcn, text);
    fs::write(dir.join("n.toml"), dcqcn).unwrap();
    fs::copy(dir.join("m.pcap"), dir.join("n.pcap")).unwrap();
    let (code, out, _) = ccreplay(&["check", "n.toml"], &dir);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("ERROR  n / dcqcn: no golden file golden/n/dcqcn.jsonl, and none can be made (bless refuses): "),
        "{out}"
    );
    // 2 flows × 10 rounds of one data packet and one ACK: 40 events.
    assert!(
        out.contains("dcqcn made no decisions on 40 events (tx_data 20, rx_ack 20): nothing to compare (hint: dcqcn reacts to CNPs only"),
        "{out}"
    );
    assert!(out.contains("1 ERROR: nothing compared"), "{out}");
    let (code, _, err) = ccreplay(&["bless", "n.toml", "--golden", "fresh"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("dcqcn made no decisions"), "{err}");
    assert!(err.contains("no golden file was changed"), "{err}");
    assert!(!dir.join("fresh").exists(), "bless left a folder behind");
    let (code, _, _) = ccreplay(&["bless", "n.toml"], &dir);
    assert_eq!(code, 2);
    assert!(!dir.join("golden/n").exists(), "bless left golden/n behind");
    assert!(dir.join("golden/m/hpcc.jsonl").is_file());
}
