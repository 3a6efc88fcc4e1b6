//! `ccreplay sim` (`ccreplay::sim`) and the bundled traces in `traces/`, which are the taps of
//! the scenarios in `scenarios/bundled/`.
//!
//! - The committed traces are exactly what the simulator writes (determinism), and
//!   `regenerate_bundled_traces` (ignored) rewrites them.
//! - Every frame decodes with its manifest's dialect, with a valid ICRC and the QP conventions
//!   of docs/sim.md; the manifests parse and name models that build.
//! - Closed-loop agreement: replaying a tap with the harness reproduces, decision for decision,
//!   what the simulated host's model decided: the capture holds everything the model saw.
//! - Physical figures computed by hand from the topology (serialisation, base RTT, INT fields,
//!   one-way delay, RCC fair shares, CNP spacing) are found in the captures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ccreplay::manifest::{CapturePoint, Manifest};
use ccreplay::replay::{self, Trace};
use ccreplay::sim::{self, Scenario, SimError};
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::{AckExt, Packet, Shim};
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::{DecodeConfig, Dialect};
use ccreplay_reference_cc::net::EPOCH_NS;
use ccreplay_reference_cc::{Cause, Decision};

mod common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn traces_dir() -> PathBuf {
    root().join("traces")
}

/// A fresh folder for this process (several `cargo test` runs may share the target folder).
fn tmp_dir(name: &str) -> common::Scratch {
    common::Scratch::new(name)
}

/// Every bundled trace: (scenario name, capture stem, model that drove the loop, receiver?).
const BUNDLED: &[(&str, &str, &str, bool)] = &[
    ("roce_dcqcn", "roce_dcqcn", "dcqcn", false),
    ("dcqcn_increase", "dcqcn_increase", "dcqcn", false),
    ("hpcc_dumbbell", "hpcc_dumbbell", "hpcc", false),
    ("hpcc_chain", "hpcc_chain", "hpcc", false),
    ("fncc_dumbbell", "fncc_dumbbell", "fncc", false),
    ("fncc_chain", "fncc_chain", "fncc", false),
    ("fncc_chain", "fncc_chain_receiver", "fncc-receiver", true),
    ("rcc_dumbbell", "rcc_sender", "rcc-sender", false),
    ("rcc_dumbbell", "rcc_receiver", "rcc-receiver", true),
    ("rcc_bursts", "rcc_bursts_sender", "rcc-sender", false),
    ("rcc_bursts", "rcc_bursts_receiver", "rcc-receiver", true),
    ("dcqcn_clamp", "dcqcn_clamp", "dcqcn", false),
    ("dcqcn_np", "dcqcn_np", "dcqcn-np", true),
    ("dcqcn_ns3", "dcqcn_ns3", "dcqcn-ns3", false),
    // The tap's manifest names `rcc-receiver` (`models`); `dcqcn-np` drove the loop.
    ("dcqcn_ns3", "roce_rcc_receiver", "dcqcn-np", true),
    // roce_dcqcn's run, its tap as a switch's ERSPAN III session delivers it.
    ("roce_dcqcn_erspan", "roce_dcqcn_erspan", "dcqcn", false),
];

/// Bundled switch taps (scenario, stem): the egress mirror `STEM.out.pcap` and `STEM.toml`
/// (docs/sim.md "Switch port taps"), written after the scenario's host taps.
const BUNDLED_SWITCH: &[(&str, &str)] = &[("dcqcn_cp", "dcqcn_cp")];

/// The text of the bundled scenario `name`.
fn bundled_text(name: &str) -> &'static str {
    sim::BUNDLED.iter().find(|b| b.0 == name).unwrap().1
}

/// Rewrite `traces/` from the bundled scenarios: `cargo test -p ccreplay --test sim --
/// --ignored regenerate_bundled_traces` (or `ccreplay synth`).
#[test]
#[ignore = "writes into traces/; run it after a reviewed simulator change"]
fn regenerate_bundled_traces() {
    let manifests = sim::generate_bundled(&traces_dir()).unwrap();
    assert_eq!(manifests.len(), BUNDLED.len() + BUNDLED_SWITCH.len());
}

#[test]
fn bundled_scenario_files_are_the_compiled_ones() {
    for (name, text) in sim::BUNDLED {
        let on_disk =
            std::fs::read_to_string(root().join(format!("scenarios/bundled/{name}.toml"))).unwrap();
        assert_eq!(&on_disk, text, "{name}");
    }
}

#[test]
fn regenerating_gives_the_committed_bytes() {
    let dir = tmp_dir("sim-bundled");
    let manifests = sim::generate_bundled(&dir).unwrap();
    let stems: Vec<String> = manifests
        .iter()
        .map(|m| m.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let expected: Vec<&str> = BUNDLED
        .iter()
        .map(|b| b.1)
        .chain(BUNDLED_SWITCH.iter().map(|b| b.1))
        .collect();
    assert_eq!(stems, expected);
    for stem in expected {
        let switch = BUNDLED_SWITCH.iter().any(|b| b.1 == stem);
        for ext in [if switch { "out.pcap" } else { "pcap" }, "toml"] {
            let name = format!("{stem}.{ext}");
            let fresh = std::fs::read(dir.join(&name)).unwrap();
            let committed = std::fs::read(traces_dir().join(&name))
                .unwrap_or_else(|e| panic!("traces/{name}: {e} (run regenerate_bundled_traces)"));
            assert!(
                fresh == committed,
                "traces/{name} differs from what the simulator writes now; if the change is \
                 intended, run `cargo test -p ccreplay --test sim -- --ignored \
                 regenerate_bundled_traces`, review, and re-bless golden/"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_runs_are_identical() {
    let s = sim::bundled("rcc_dumbbell").unwrap();
    let a = sim::simulate(&s, None, &mut |_| {}).unwrap();
    let b = sim::simulate(&s, None, &mut |_| {}).unwrap();
    for (x, y) in a.captures.iter().zip(&b.captures) {
        assert!(x.pcap == y.pcap && x.manifest == y.manifest, "{}", x.stem);
        assert_eq!(x.decisions, y.decisions);
    }
    assert_eq!(a.metrics, b.metrics);
}

/// The issue's bound: every bundled trace is at most 5 MB.
#[test]
fn bundled_traces_stay_small() {
    let files = BUNDLED
        .iter()
        .map(|b| format!("{}.pcap", b.1))
        .chain(BUNDLED_SWITCH.iter().map(|b| format!("{}.out.pcap", b.1)));
    for stem in files {
        let len = std::fs::metadata(traces_dir().join(&stem)).unwrap().len();
        assert!(len <= 5_000_000, "{stem} is {len} bytes");
    }
}

fn load(stem: &str) -> (Manifest, Vec<u8>) {
    let m = Manifest::load(&traces_dir().join(format!("{stem}.toml"))).unwrap();
    let pcap = std::fs::read(traces_dir().join(format!("{stem}.pcap"))).unwrap();
    (m, pcap)
}

/// (absolute ns, frame bytes) of every record.
fn records(pcap: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut r = CaptureReader::from_slice(pcap).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        assert_eq!(rec.data.len() as u32, rec.orig_len, "no snaplen cut");
        out.push((rec.ts_ns, rec.data.to_vec()));
    }
    out
}

/// The RoCEv2 data packets of a capture (BTH opcodes that carry a payload).
fn data_packets(pcap: &[u8], cfg: &DecodeConfig) -> usize {
    records(pcap)
        .iter()
        .filter(|(_, d)| {
            Packet::decode_ethernet(d, cfg)
                .roce
                .is_some_and(|r| r.bth.opcode().is_data())
        })
        .count()
}

#[test]
fn manifests_parse_and_name_buildable_models() {
    let expect = [
        (
            "roce_dcqcn",
            Dialect::Roce,
            "sender",
            &["dcqcn", "dcqcn-nic"][..],
        ),
        ("hpcc_dumbbell", Dialect::Hpcc, "sender", &["hpcc"][..]),
        ("fncc_dumbbell", Dialect::Fncc, "sender", &["fncc"][..]),
        ("rcc_sender", Dialect::Rcc, "sender", &["rcc-sender"][..]),
        (
            "rcc_receiver",
            Dialect::Rcc,
            "receiver",
            &["rcc-receiver"][..],
        ),
    ];
    for (stem, dialect, point, models) in expect {
        let path = traces_dir().join(format!("{stem}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let m = Manifest::parse(&text, &path).unwrap();
        assert_eq!(m.dialect, dialect, "{stem}");
        assert_eq!(m.capture_point.kind(), point, "{stem}");
        assert_eq!(m.capture.as_deref(), Some(format!("{stem}.pcap").as_str()));
        let names: Vec<&str> = m.models.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, models, "{stem}");
        for spec in &m.models {
            ccreplay::models::build(&spec.name, &m.model_params(spec))
                .unwrap_or_else(|e| panic!("{stem}/{}: {e}", spec.name));
        }
        // The tapped sender h0 sends scenario flows 0, 1 and 3 (flow 2 is h1's): QPs
        // 0x100001 + f and 0x200001 + f (docs/sim.md "Addresses").
        if point == "sender" {
            let qps: Vec<(u32, u32)> = m.flows.iter().map(|f| (f.local_qp, f.remote_qp)).collect();
            assert_eq!(
                qps,
                [
                    (0x100001, 0x200001),
                    (0x100002, 0x200002),
                    (0x100004, 0x200004)
                ],
                "{stem}"
            );
        }
    }
}

/// Base RTT by hand: a full 1000-byte WRITE_MIDDLE out and its ACK back, h0 -> sw0 at 25 Gbps
/// (320 ps/B), sw0 -> h2 at 10 Gbps (800 ps/B), the ACK the other way, four 1 µs links:
/// - roce: 1058 B and 62 B: 338 560 + 846 400 + 49 600 + 19 840 + 4 000 000 = 5 254 400 ps
///   -> 5255 ns.
/// - hpcc (+42 B INT stack on both): 1100 B and 104 B: 352 000 + 880 000 + 83 200 + 33 280
///   + 4 000 000 = 5 348 480 ps -> 5349 ns.
/// - fncc (ACK + 2 B N + 42 B stack): 1058 B and 106 B: 338 560 + 846 400 + 84 800 + 33 920
///   + 4 000 000 = 5 303 680 ps -> 5304 ns.
/// - rcc (+8 B timestamp on both, +8 B ACK extension): 1066 B and 78 B: 341 120 + 852 800
///   + 62 400 + 24 960 + 4 000 000 = 5 281 280 ps -> 5282 ns.
///
/// h1's path has the same rates, so the largest RTT over the flows is the same.
#[test]
fn base_rtt_by_hand() {
    for (stem, t) in [
        ("roce_dcqcn", 5255),
        ("hpcc_dumbbell", 5349),
        ("fncc_dumbbell", 5304),
        ("rcc_sender", 5282),
        ("rcc_receiver", 5282),
    ] {
        let (m, _) = load(stem);
        assert_eq!(m.network.base_rtt_ns, t, "{stem}");
    }
}

/// Frame lengths by hand (Ethernet 14 + IPv4 20 + UDP 8 + shim + BTH 12 + headers + payload +
/// ICRC 4); the first packet of a message is a WRITE_FIRST and carries a 16-byte RETH.
#[test]
fn frame_lengths_by_hand() {
    let expect: [(&str, &[usize]); 5] = [
        // data 1058, first 1074, ACK/NAK 62, CNP 14+20+8+12+16+4 = 74
        ("roce_dcqcn", &[1058, 1074, 62, 74]),
        // data 1100, first 1116, ACK 104
        ("hpcc_dumbbell", &[1100, 1116, 104]),
        // data 1058, first 1074, ACK 62 + 2 + 42 = 106
        ("fncc_dumbbell", &[1058, 1074, 106]),
        // data 1066, first 1082, ACK 78
        ("rcc_sender", &[1066, 1082, 78]),
        // the receiver's NIC: data in, ACKs out
        ("rcc_receiver", &[1066, 1082, 78]),
    ];
    for (stem, lens) in expect {
        let (_, pcap) = load(stem);
        let seen: BTreeSet<usize> = records(&pcap).iter().map(|r| r.1.len()).collect();
        let want: BTreeSet<usize> = lens.iter().copied().collect();
        assert_eq!(seen, want, "{stem}");
    }
}

/// What the decoder reports for every packet of every bundled sender trace.
#[test]
fn every_frame_decodes_with_valid_icrc_and_qps() {
    const SENDER: [u8; 4] = [10, 0, 0, 1];
    for (scen, stem, _, receiver) in BUNDLED {
        let (m, pcap) = load(stem);
        let cfg: DecodeConfig = m.decode_config();
        // Flow f of the scenario (ranges expanded) uses QPs 0x100001 + f and 0x200001 + f.
        let flows = sim::bundled(scen)
            .unwrap()
            .flows
            .iter()
            .map(|f| match f.src.split_once("..") {
                Some((a, b)) => {
                    let n = |h: &str| h.trim_start_matches('h').parse::<u32>().unwrap();
                    (n(b) - n(a) + 1) as usize
                }
                None => 1,
            })
            .sum::<usize>() as u32;
        // Senders whose NIC writes ECT(1) (`[hosts.NAME] ecn = "ect1"`): host i is 10.0.0.(i + 1).
        let ect1: Vec<std::net::IpAddr> = sim::bundled(scen)
            .unwrap()
            .hosts
            .iter()
            .filter(|(_, o)| o.ecn.as_deref() == Some("ect1"))
            .map(|(h, _)| {
                let i = h.trim_start_matches('h').parse::<u32>().unwrap() + 1;
                std::net::IpAddr::from([10, 0, (i >> 8) as u8, i as u8])
            })
            .collect();
        let mut firsts: BTreeMap<u32, u32> = BTreeMap::new();
        let mut wrapped = false;
        let mut sent0 = 0u32;
        for (i, (_, data)) in records(&pcap).iter().enumerate() {
            let p = Packet::decode_ethernet(data, &cfg);
            assert!(p.error.is_none(), "{stem} #{}: {:?}", i + 1, p.error);
            assert_eq!(p.warnings, 0, "{stem} #{}: {:?}", i + 1, p.warning);
            let (c, w) = p.icrc_check().unwrap();
            assert_eq!(c, w, "{stem} #{}: ICRC", i + 1);
            let ip = p.ip.unwrap();
            let r = p.roce.as_ref().unwrap();
            let qp = r.bth.dest_qp();
            let from_h0 = ip.addrs.src() == std::net::IpAddr::from(SENDER);
            if r.bth.opcode().is_data() {
                assert!(
                    *receiver || from_h0,
                    "{stem}: data from the tapped sender only"
                );
                // Data carries the receiver QP 0x200001 + f.
                assert!(
                    (0x200001..0x200001 + flows).contains(&qp),
                    "{stem}: data DestQP {qp:#x}"
                );
                let psn = r.bth.psn();
                let first = *firsts.entry(qp).or_insert(psn);
                wrapped |= qp == 0x200001 && psn < first;
                sent0 += u32::from(qp == 0x200001);
                if m.dialect == Dialect::Roce {
                    // The sender sends ECT(0), or ECT(1) where its host says so; only the switch
                    // downstream marks CE, so a receiver's tap sees the sender's ECT or CE.
                    let ect = if ect1.contains(&ip.addrs.src()) { 1 } else { 2 };
                    if *receiver {
                        assert!(ip.ecn == ect || ip.ecn == 3, "{stem}: ECN {}", ip.ecn);
                    } else {
                        assert_eq!(ip.ecn, ect, "{stem}");
                    }
                }
            } else {
                // ACKs, NAKs and CNPs carry the sender QP 0x100001 + f.
                assert!(!from_h0, "{stem}");
                assert!(
                    (0x100001..0x100001 + flows).contains(&qp),
                    "{stem}: DestQP {qp:#x}"
                );
            }
        }
        // Flow 0 starts 192 PSNs below 2^24 (where the scenario says so: dcqcn_increase's
        // flows are short) and crosses the wrap once it has sent more than 192 packets.
        if sim::bundled(scen).unwrap().flows[0].first_psn == Some(0xFF_FF40) {
            assert_eq!(firsts.get(&0x200001), Some(&0xFF_FF40), "{stem}");
            assert!(
                wrapped || sent0 <= 192,
                "{stem}: flow 0 sent {sent0} packets without crossing the 24-bit PSN wrap"
            );
        }
    }
}

/// Decisions of a reference replay of `stem` with model `name`, in the harness's order, and
/// the time of the trace's last event.
fn replay_trace(manifest: &Path, name: &str) -> (Vec<Decision>, u64) {
    let trace = Trace::load(manifest).unwrap();
    let spec = trace.model(name).unwrap().clone();
    let mut got = Vec::new();
    let mut last_t = 0;
    let stats = replay::replay_reference(&trace, &spec, 1, |d| {
        got.push(*d);
        Ok(())
    })
    .unwrap();
    assert_eq!(stats.extract.malformed, 0, "{}", manifest.display());
    assert!(stats.extract.unpaired_acks.is_empty());
    replay::for_each_event(&trace, |e| last_t = last_t.max(e.t_ns)).unwrap();
    (got, last_t)
}

fn replay(stem: &str, name: &str) -> (Vec<Decision>, u64) {
    replay_trace(&traces_dir().join(format!("{stem}.toml")), name)
}

/// The closed loop's decisions up to the trace's last event, in the replay's order: per-flow
/// models sorted by (time, flow), stable within a flow.
fn closed_loop(decisions: &[Decision], last_t: u64, per_flow: bool) -> Vec<Decision> {
    let mut v: Vec<Decision> = decisions
        .iter()
        .filter(|d| d.t_ns <= last_t)
        .copied()
        .collect();
    if per_flow {
        v.sort_by_key(|d| (d.t_ns, d.flow));
    }
    v
}

/// (rate_bps, window_bytes, ack_cwnd) of a decision.
type OutputKey = (Option<u64>, Option<u64>, Option<u32>, Option<u16>);

fn cause(d: &Decision) -> &'static str {
    match d.cause {
        Cause::Event { kind, .. } => kind,
        Cause::Timer { name } => name,
    }
}

/// Closed-loop agreement, one case per bundled trace: the simulated host's model decisions
/// (recorded during the run) are exactly what a replay of its tap gives, state included.
#[rstest::rstest]
#[case::roce_dcqcn(0)]
#[case::dcqcn_increase(1)]
#[case::hpcc_dumbbell(2)]
#[case::hpcc_chain(3)]
#[case::fncc_dumbbell(4)]
#[case::fncc_chain(5)]
#[case::fncc_chain_receiver(6)]
#[case::rcc_sender(7)]
#[case::rcc_receiver(8)]
#[case::rcc_bursts_sender(9)]
#[case::rcc_bursts_receiver(10)]
#[case::dcqcn_clamp(11)]
#[case::dcqcn_np(12)]
#[case::dcqcn_ns3(13)]
#[case::roce_dcqcn_erspan(15)]
fn replay_reproduces_the_closed_loop(#[case] i: usize) {
    let (scen, stem, model, receiver) = BUNDLED[i];
    let out = sim::simulate(&sim::bundled(scen).unwrap(), None, &mut |_| {}).unwrap();
    let cap = out.captures.iter().find(|c| c.stem == stem).unwrap();
    let (got, last_t) = replay(stem, model);
    let want = closed_loop(&cap.decisions, last_t, !receiver);
    assert_eq!(got.len(), want.len(), "{stem}/{model}: decision count");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{stem}/{model}: decision {i}");
    }
    // Every flow's window or rate moved.
    let mut outputs: BTreeMap<u32, BTreeSet<OutputKey>> = BTreeMap::new();
    for d in &got {
        let o = &d.outputs;
        outputs.entry(d.flow).or_default().insert((
            o.rate_bps,
            o.window_bytes,
            o.ack_cwnd,
            o.ack_n,
        ));
    }
    // A sender decides for the flows its host sends, a receiver for those its host receives
    // (counted from the scenario's [[flows]]).
    let scenario = sim::bundled(scen).unwrap();
    let host = &scenario.taps.iter().find(|t| t.stem == stem).unwrap().host;
    let flows = scenario
        .flows
        .iter()
        .map(|f| {
            // `hA..hB`: one flow from each host of the range.
            let srcs = match f.src.split_once("..") {
                Some((a, b)) => {
                    let n = |h: &str| h.trim_start_matches('h').parse::<u32>().unwrap();
                    (n(a)..=n(b)).map(|i| format!("h{i}")).collect()
                }
                None => vec![f.src.clone()],
            };
            if receiver {
                if &f.dst == host { srcs.len() } else { 0 }
            } else {
                srcs.iter().filter(|s| *s == host).count()
            }
        })
        .sum::<usize>();
    assert_eq!(outputs.len(), flows, "{stem}/{model}");
    // The loop moved windows or rates (a one-packet message has a single decision, and a
    // receiver's N may stay put for a flow: not every flow has to). The DCQCN NP decides only
    // to send a CNP, whose outputs are always the same.
    if model != "dcqcn-np" {
        assert!(outputs.values().any(|s| s.len() >= 2), "{stem}/{model}");
    }
}

/// The roce trace exercises every DCQCN path: CNP cuts, both timers, byte-counter expiries on
/// tx_data; `dcqcn-nic` replays on the same events.
#[test]
fn dcqcn_trace_exercises_every_path() {
    let (got, _) = replay("roce_dcqcn", "dcqcn");
    let kinds: BTreeSet<&str> = got.iter().map(cause).collect();
    assert_eq!(
        kinds,
        ["alpha", "rate_increase", "rx_cnp", "tx_data"]
            .into_iter()
            .collect()
    );
    let (nic, _) = replay("roce_dcqcn", "dcqcn-nic");
    assert!(nic.iter().any(|d| cause(d) == "rx_cnp"));
    assert!(nic.iter().any(|d| cause(d) == "rate_decrease"));
}

/// DCQCN-2 in the capture: the receiver sends at most one CNP per flow per 50 µs, judged on
/// event times floored to ns, so two CNPs of a flow leave at least 50 000 − 1 ns apart. On the
/// way back a CNP can be held by at most one ACK on each link (62 B at 10 Gbps = 49.6 ns, at
/// 25 Gbps = 19.84 ns: ACKs are one per data packet, ≥ 846 ns apart), and the sender tap floors
/// to ns again: at the sender two CNPs of a flow are at least 50 000 − 1 − 49.6 − 19.84 − 1 =
/// 49 928.56, so 49 929 ns apart.
#[test]
fn cnps_are_paced_per_flow() {
    let (m, pcap) = load("roce_dcqcn");
    let cfg = m.decode_config();
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    let mut cnps = 0;
    for (t, data) in records(&pcap) {
        let p = Packet::decode_ethernet(&data, &cfg);
        let r = p.roce.as_ref().unwrap();
        if r.bth.opcode().is_cnp() {
            assert!(r.bth.becn());
            cnps += 1;
            if let Some(prev) = last.insert(r.bth.dest_qp(), t) {
                assert!(t - prev >= 49_929, "CNPs {} ns apart", t - prev);
            }
        }
    }
    assert!(cnps >= 10, "{cnps} CNPs");
    assert_eq!(last.len(), 3, "every flow of h0 got CNPs");
}

fn hop0(p: &Packet<'_>) -> (u8, u16, IntHop) {
    let r = p.roce.as_ref().unwrap();
    let view = match (r.shim, r.ack_ext) {
        (Shim::Int(s), _) => s,
        (_, AckExt::Fncc(f)) => f.int,
        _ => panic!("no INT stack"),
    };
    let h = view.hops().next().unwrap();
    (view.header.n_hop, view.header.path_id, h)
}

/// HPCC ACKs echo the one hop the switch (ID 0x0A1) stamped on egress: B = 6 (10 Gbps,
/// wire.md 5.1). Two data packets dequeued back to back leave 1100 B × 8 / 10 Gbps = 880 ns
/// apart exactly (880 000 ps, a whole number of ns), so the smallest TS step between
/// consecutive ACKs is 880 ns, and txBytes then grows by 1100 B: floor((x + 1100) / 128) −
/// floor(x / 128) is 8 or 9 units.
#[test]
fn hpcc_int_fields_by_hand() {
    let (m, pcap) = load("hpcc_dumbbell");
    let cfg = m.decode_config();
    let mut prev: Option<IntHop> = None;
    let mut min_step = u64::MAX;
    let mut max_qlen = 0;
    for (_, data) in records(&pcap) {
        let p = Packet::decode_ethernet(&data, &cfg);
        let r = p.roce.as_ref().unwrap();
        if !r.bth.opcode().is_ack() {
            // Data as the sender writes it: an empty stack.
            let Shim::Int(s) = r.shim else { panic!() };
            assert_eq!((s.header.n_hop, s.header.path_id), (0, 0));
            continue;
        }
        let (n, path, h) = hop0(&p);
        assert_eq!((n, path, h.b), (1, 0x0A1, 6));
        max_qlen = max_qlen.max(h.qlen);
        if let Some(q) = prev {
            let dt = h.ts_delta_ns(q);
            if dt > 0 && dt < min_step {
                min_step = dt;
            }
            if dt == 880 {
                let units = h.tx_bytes.wrapping_sub(q.tx_bytes) & 0xF_FFFF;
                // h1's packets may leave between two of h0's: then more units.
                assert!(units >= 8, "{units}");
            }
        }
        prev = Some(h);
    }
    assert_eq!(min_step, 880);
    assert!(max_qlen > 0, "the queue was seen");
}

/// FNCC ACKs carry N from the receiver and one record written by the switch on the way back
/// (FNCC-3), B = 6; N takes the values 1 to 3 (h0's flows and h1's) as flows join and leave.
#[test]
fn fncc_acks_carry_n_and_the_data_egress_int() {
    let (m, pcap) = load("fncc_dumbbell");
    let cfg = m.decode_config();
    let mut ns = BTreeSet::new();
    for (t, data) in records(&pcap) {
        let p = Packet::decode_ethernet(&data, &cfg);
        let r = p.roce.as_ref().unwrap();
        if let AckExt::Fncc(f) = r.ack_ext {
            ns.insert(f.n);
            let (n_hop, path, h) = hop0(&p);
            assert_eq!((n_hop, path, h.b), (1, 0x0A1, 6));
            // Written as the ACK passed the switch, which then sends it to the sender
            // (106 B at 25 Gbps = 33.92 ns, plus the 1 µs link; only ACKs and CNPs go to h0,
            // ≥ 846 ns apart, so none waits): TS is 1033.92 ns older than the tap time, 1033
            // or 1034 after both are floored to ns.
            let age = (t as u32).wrapping_sub(h.ts) & 0xFF_FFFF;
            assert!((1_033..=1_034).contains(&age), "INT age {age} ns");
        }
    }
    assert!(ns.is_subset(&[1, 2, 3, 4].into_iter().collect()), "{ns:?}");
    assert!(ns.is_superset(&[1, 2, 3].into_iter().collect()), "{ns:?}");
}

/// RCC at the receiver: the one-way delay of an unqueued 1066-byte data packet is
/// 1066 × 320 ps (25 Gbps) plus 1 µs plus 1066 × 800 ps (10 Gbps) plus 1 µs = 3 193 920 ps;
/// with both timestamps floored to ns the smallest delay in the capture is 3193 or 3194 ns.
/// At the sender, ACKs outside PID mode carry the fair share floor(C × T / 8e9 / N) with
/// C = 10 Gbps, T = 5282 ns: 10e9 × 5282 / 8e9 = 6602.5 bytes, so N = 1, 2, 3, 4 give 6602,
/// 3301, 2200, 1650.
#[test]
fn rcc_fields_by_hand() {
    let (m, pcap) = load("rcc_receiver");
    let cfg = m.decode_config();
    let mut min_delay = u64::MAX;
    for (t, data) in records(&pcap) {
        let p = Packet::decode_ethernet(&data, &cfg);
        let r = p.roce.as_ref().unwrap();
        if !r.bth.opcode().is_data() {
            continue;
        }
        let Shim::RccTimestamp(ts) = r.shim else {
            panic!()
        };
        assert!(ts >= EPOCH_NS && ts <= t);
        min_delay = min_delay.min(t - ts);
    }
    assert!((3193..=3194).contains(&min_delay), "{min_delay}");

    let (m, pcap) = load("rcc_sender");
    let cfg = m.decode_config();
    let mut fair = BTreeSet::new();
    let mut pid = 0;
    for (_, data) in records(&pcap) {
        let p = Packet::decode_ethernet(&data, &cfg);
        if let AckExt::Rcc(e) = p.roce.as_ref().unwrap().ack_ext {
            if e.flags & 1 == 0 {
                fair.insert((e.n, e.cwnd));
            } else {
                pid += 1;
                assert!(e.cwnd >= 1000, "PID window clamped to 1 MTU");
            }
        }
    }
    let allowed: BTreeSet<(u16, u32)> = [(1, 6602), (2, 3301), (3, 2200), (4, 1650)]
        .into_iter()
        .collect();
    assert!(fair.is_subset(&allowed), "{fair:?}");
    assert!(
        fair.contains(&(1, 6602)) && fair.contains(&(2, 3301)),
        "{fair:?}"
    );
    // h0 never has more than 3 flows: N = 4 counts h1's flow too (the receiver is shared).
    assert!(fair.iter().any(|&(n, _)| n >= 3), "{fair:?}");
    assert!(pid > 0, "some ACKs come from PID mode");
}

#[test]
fn scenario_errors_name_the_problem() {
    let base = bundled_text("hpcc_dumbbell");
    let run = |text: &str| sim::simulate(&Scenario::parse(text)?, None, &mut |_| {});

    let e = run(&base.replace(
        "receiver_bps = 10_000_000_000",
        "receiver_bps = 12_000_000_000",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("line-rate code"), "{e}");

    let e = run(&base.replace("expected_flows = 4", "eta = 1.5")).unwrap_err();
    assert!(matches!(e, SimError::Net(_)), "{e}");
    assert!(e.to_string().contains("eta"), "{e}");

    let e = run(&base.replace("dst = \"h2\"", "dst = \"h9\""))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no node named `h9`"), "{e}");

    let e = run(&base.replace("model = \"hpcc\"", "model = \"cubic\""))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("use dcqcn, hpcc, fncc, rcc, hpcc-ns3 or dcqcn-ns3"),
        "{e}"
    );

    let e = run(&format!("{base}\nbogus = 1\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bogus"), "{e}");

    let e = sim::bundled("nope").unwrap_err().to_string();
    assert!(e.contains("unknown bundled scenario `nope`"), "{e}");
}

/// A receiver tap's capture and manifest are a valid trace too: FNCC's receiver makes one
/// decision per data packet (FNCC-2).
#[test]
fn receiver_taps_replay() {
    let text = sim::BUNDLED
        .iter()
        .find(|b| b.0 == "fncc_dumbbell")
        .unwrap()
        .1
        .replace("duration_ns = 1_500_000", "duration_ns = 800_000")
        .replace(
            "host = \"h0\"\npoint = \"sender\"\nstem = \"fncc_dumbbell\"",
            "host = \"h2\"\npoint = \"receiver\"\nstem = \"fncc_rx\"",
        );
    let out = sim::simulate(&Scenario::parse(&text).unwrap(), None, &mut |_| {}).unwrap();
    let dir = tmp_dir("sim-receiver");
    sim::write(&out, &dir, true).unwrap();
    let manifest = dir.join("fncc_rx.toml");
    let m = Manifest::load(&manifest).unwrap();
    assert!(matches!(m.capture_point, CapturePoint::Receiver { .. }));
    assert_eq!(m.models[0].name, "fncc-receiver");
    let (got, last_t) = replay_trace(&manifest, "fncc-receiver");
    let pcap = std::fs::read(dir.join("fncc_rx.pcap")).unwrap();
    let cfg = m.decode_config();
    let data = data_packets(&pcap, &cfg);
    assert_eq!(got.len(), data);
    assert_eq!(got, closed_loop(&out.captures[0].decisions, last_t, false));
    assert!(dir.join("metrics.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Losses: with an 8 KB shared buffer the HPCC start bursts (W_init = 16 715 B at 25 Gbps
/// into 10 Gbps) overflow it. The responder NAKs each gap, the requester goes back, every
/// packet of the 400 KB message is acknowledged in the end, and the replay of the lossy capture
/// still reproduces the closed loop, `rx_nak` events included.
#[test]
fn losses_are_recovered_and_replayed() {
    let text = bundled_text("hpcc_dumbbell")
        .replace("buffer_bytes = 500_000", "buffer_bytes = 8_000")
        .replace("stem = \"hpcc_dumbbell\"", "stem = \"lossy\"");
    let out = sim::simulate(&Scenario::parse(&text).unwrap(), None, &mut |_| {}).unwrap();
    assert!(out.metrics.drops > 0);
    // Flow 1's 400 KB message is 400 packets, all acknowledged.
    assert_eq!(out.metrics.flows[1].bytes_acked, 400_000);
    assert!(out.metrics.flows[1].fct_ns.is_some());
    let dir = tmp_dir("sim-lossy");
    sim::write(&out, &dir, false).unwrap();
    let (got, last_t) = replay_trace(&dir.join("lossy.toml"), "hpcc");
    assert!(got.iter().any(|d| cause(d) == "rx_nak"));
    assert_eq!(got, closed_loop(&out.captures[0].decisions, last_t, true));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Four 40 Gbps DCQCN senders into one 40 Gbps receiver with PFC (XOFF 20 000 B, XON
/// 10 000 B) and RED from 5 KB to 20 KB: the queue crosses XOFF (at 120 Gbps of excess, in
/// about 1.3 µs) before the first CNP can arrive (one base RTT, over 4 µs), so pauses come
/// first, then DCQCN cuts the rates. h0's
/// tap holds the pause frames (60 B, ignored by the extraction), nothing is lost, and the
/// replay of the tap still reproduces the closed loop.
const PFC_SCENARIO: &str = r#"
name = "pfc_incast_4"
seed = 7
model = "dcqcn"
duration_ns = 300_000

[topology]
kind = "incast"
senders = 4
host_bps = 40_000_000_000

[switch]
buffer_bytes = 2_000_000
[switch.red]
kmin_bytes = 5_000
kmax_bytes = 20_000
pmax = 1.0
[switch.pfc]
xoff_bytes = 20_000
xon_bytes = 10_000

[[flows]]
src = "h0..h3"
dst = "h4"
size_bytes = 10_000_000

[[taps]]
host = "h0"
point = "sender"
stem = "h0"
"#;

#[test]
fn pfc_frames_in_a_tap_and_closed_loop_agreement() {
    let out = sim::simulate(&Scenario::parse(PFC_SCENARIO).unwrap(), None, &mut |_| {}).unwrap();
    assert_eq!(out.metrics.flows.len(), 4, "h0..h3: one flow each");
    assert_eq!(out.metrics.drops, 0);
    assert!(out.metrics.pfc.pause_frames > 0);
    let pfc = records(&out.captures[0].pcap)
        .iter()
        .filter(|(_, d)| d.len() == 60 && d[12..14] == [0x88, 0x08])
        .count();
    assert!(pfc > 0);
    let dir = tmp_dir("sim-pfc");
    sim::write(&out, &dir, true).unwrap();
    let (got, last_t) = replay_trace(&dir.join("h0.toml"), "dcqcn");
    assert!(got.iter().any(|d| cause(d) == "rx_cnp"));
    assert_eq!(got, closed_loop(&out.captures[0].decisions, last_t, true));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A k = 4 fat tree with four cross-pod flows into h15 (host range syntax), tapped at the
/// receiver: the `dcqcn-np` replay reproduces the receiver's decisions, and `--seed` changes
/// the drawn first PSNs (a different capture) while the same seed gives the same bytes.
#[test]
fn fat_tree_receiver_tap_and_seed_override() {
    let text = r#"
name = "ft"
model = "dcqcn"
duration_ns = 100_000
[topology]
kind = "fat_tree"
k = 4
link_bps = 100_000_000_000
[[flows]]
src = "h0..h3"
dst = "h15"
size_bytes = 1_000_000
[[taps]]
host = "h15"
point = "receiver"
stem = "h15"
"#;
    let sc = Scenario::parse(text).unwrap();
    let run = |seed| sim::simulate(&sc, Some(seed), &mut |_| {}).unwrap();
    let (a, b, c) = (run(1), run(1), run(2));
    assert!(a.captures[0].pcap == b.captures[0].pcap);
    assert!(a.captures[0].pcap != c.captures[0].pcap);
    assert_eq!(a.metrics.seed, 1);
    let dir = tmp_dir("sim-ft");
    sim::write(&a, &dir, false).unwrap();
    let (got, last_t) = replay_trace(&dir.join("h15.toml"), "dcqcn-np");
    assert_eq!(got, closed_loop(&a.captures[0].decisions, last_t, false));
    let m = Manifest::load(&dir.join("h15.toml")).unwrap();
    assert_eq!(m.flows.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// metrics.json has the keys of docs/metrics.md, in that order.
#[test]
fn metrics_json_keys_follow_the_doc() {
    let out = sim::simulate(&Scenario::parse(PFC_SCENARIO).unwrap(), None, &mut |_| {}).unwrap();
    let dir = tmp_dir("sim-metrics");
    sim::write(&out, &dir, true).unwrap();
    let text = std::fs::read_to_string(dir.join("metrics.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    // serde_json keeps insertion order only with preserve_order; check the text order instead.
    let pos = |k: &str| text.find(&format!("\"{k}\":")).unwrap_or(usize::MAX);
    let top = [
        "version",
        "scenario",
        "seed",
        "model",
        "duration_ns",
        "sample_interval_ns",
        "events",
        "base_rtt_ns",
        "flows",
        "ports",
        "pfc",
        "drops",
        "jain_index",
    ];
    assert!(top.windows(2).all(|w| pos(w[0]) < pos(w[1])), "{text:.400}");
    let mut k = keys(&v);
    k.sort();
    let mut want: Vec<String> = top.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(k, want);
    let mut fk = keys(&v["flows"][0]);
    fk.sort();
    assert_eq!(
        fk,
        [
            "bytes_acked",
            "dst",
            "fct_ns",
            "finish_ns",
            "id",
            "rate_bps",
            "size_bytes",
            "src",
            "start_ns",
            "throughput_bps",
            "window_bytes"
        ]
    );
    let mut pk = keys(&v["ports"][0]);
    pk.sort();
    assert_eq!(
        pk,
        [
            "dropped",
            "ecn_marked",
            "name",
            "node",
            "peer",
            "pfc",
            "port",
            "queue_bytes",
            "queue_max_bytes",
            "queue_p95_bytes",
            "rate_bps",
            "tx_bytes",
            "utilization"
        ]
    );
    // 300 µs at 1 µs samples (t = 1, 2, …, 300 µs): 300 points per series.
    assert_eq!(
        v["ports"][0]["queue_bytes"]["t_ns"]
            .as_array()
            .unwrap()
            .len(),
        300
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One flow from 40.5 µs into a 1 ms run, sampled every 1 µs (docs/metrics.md): samples
/// begin at the first multiple of 1 µs at or after the earliest start, ceil(40,500 / 1,000)
/// × 1,000 = 41,000 ns, for the flow and every port alike; once the flow has had its last
/// sample (the first at or after its finish) and no packet is left, the ports take one more
/// sample (all queues 0) and sampling stops. A flow still sending at the end keeps every
/// sample to `duration_ns`.
#[test]
fn samples_cover_the_flows_not_the_idle_run() {
    let text = |size: u64| {
        format!(
            "name = \"window\"\nmodel = \"hpcc\"\nduration_ns = 1_000_000\n\
             sample_interval_ns = 1_000\n[topology]\nkind = \"incast\"\nsenders = 1\nhost_bps = 100_000_000_000\n\
             [[flows]]\nsrc = \"h0\"\ndst = \"h1\"\nsize_bytes = {size}\n\
             start_ns = 40_500\n"
        )
    };
    let every = 1_000;
    // 20 KB at 100 Gbps is done in a few µs.
    let out = sim::simulate(&Scenario::parse(&text(20_000)).unwrap(), None, &mut |_| {}).unwrap();
    let m = &out.metrics;
    let f = &m.flows[0];
    let fin = f.finish_ns.expect("20 KB finish in 1 ms");
    let last = fin.div_ceil(every) * every;
    assert_eq!(f.rate_bps.t_ns.first(), Some(&41_000));
    assert_eq!(f.rate_bps.t_ns.last(), Some(&last));
    assert!(!m.ports.is_empty());
    for p in &m.ports {
        let t = &p.queue_bytes.t_ns;
        assert_eq!(t.first(), Some(&41_000), "{}", p.name);
        assert_eq!(t.last(), Some(&(last + every)), "{}", p.name);
        assert_eq!(
            t.len() as u64,
            (last + every - 41_000) / every + 1,
            "{}",
            p.name
        );
        assert!(t.windows(2).all(|w| w[1] - w[0] == every), "{}", p.name);
        assert_eq!(p.queue_bytes.v.last(), Some(&0), "{}", p.name);
    }
    // 1 GB does not finish in 1 ms: every sample from 41 µs to 1 ms, 960 of them.
    let out = sim::simulate(&Scenario::parse(&text(1 << 30)).unwrap(), None, &mut |_| {}).unwrap();
    assert_eq!(out.metrics.flows[0].finish_ns, None);
    for p in &out.metrics.ports {
        let t = &p.queue_bytes.t_ns;
        assert_eq!(
            (t[0], *t.last().unwrap(), t.len()),
            (41_000, 1_000_000, 960)
        );
    }
}

/// `flows_file` (docs/sim.md "Flows from a file"): the CSV's rows are flows after the
/// `[[flows]]` entries, exactly as if written as tables — the engine's configuration and the
/// run's metrics.json are the same bytes — and a wrong file is an error with its line.
#[test]
fn flows_from_a_csv_file_are_the_same_flows() {
    let dir = tmp_dir("sim-flows-file");
    let head = "name = \"csv\"\nmodel = \"hpcc\"\nduration_ns = 200_000\n";
    let topo = "[topology]\nkind = \"incast\"\nsenders = 3\nhost_bps = 100_000_000_000\n";
    let first = "[[flows]]\nsrc = \"h0\"\ndst = \"h3\"\nsize_bytes = 30_000\n";
    let inline = format!(
        "{head}{topo}{first}[[flows]]\nsrc = \"h1\"\ndst = \"h3\"\nsize_bytes = 20_000\n\
         start_ns = 5_000\nfirst_psn = 7\n[[flows]]\nsrc = \"h2\"\ndst = \"h3\"\n\
         size_bytes = 10_000\nstart_ns = 9_000\n"
    );
    // The columns in another order, spaces around values, an empty first_psn: drawn.
    std::fs::write(
        dir.join("f.csv"),
        "dst,src,start_ns,size_bytes,first_psn\nh3,h1,5000,20000,7\nh3, h2 ,9000,10000,\n",
    )
    .unwrap();
    std::fs::write(dir.join("a.toml"), &inline).unwrap();
    std::fs::write(
        dir.join("b.toml"),
        format!("{head}flows_file = \"f.csv\"\n{topo}{first}"),
    )
    .unwrap();
    let a = Scenario::load(&dir.join("a.toml")).unwrap();
    let b = Scenario::load(&dir.join("b.toml")).unwrap();
    assert_eq!(b.flows.len(), 3);
    assert_eq!(a.to_config(None).unwrap().0, b.to_config(None).unwrap().0);
    for (s, out) in [(&a, "a"), (&b, "b")] {
        let run = sim::simulate(s, None, &mut |_| {}).unwrap();
        sim::write(&run, &dir.join(out), true).unwrap();
    }
    let metrics = |d: &str| std::fs::read(dir.join(d).join("metrics.json")).unwrap();
    assert!(metrics("a") == metrics("b"), "metrics.json differ");

    let refused = |csv: &str| {
        std::fs::write(dir.join("f.csv"), csv).unwrap();
        match Scenario::load(&dir.join("b.toml")) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{csv:?} accepted"),
        }
    };
    let e = refused("src,dst,size_bytes,start_ns\nh1,h3,20000,0\nh2,h3,lots,0\n");
    assert!(e.contains("f.csv: line 3:"), "{e}");
    let e = refused("src,dst,size_bytes\nh1,h3,20000\n");
    assert!(e.contains("the header has no `start_ns`"), "{e}");
    let e = refused("src,dst,size_bytes,start_ns,queue\nh1,h3,20000,0,4\n");
    assert!(e.contains("line 2:") && e.contains("queue"), "{e}");
    std::fs::remove_file(dir.join("f.csv")).unwrap();
    let e = Scenario::load(&dir.join("b.toml")).unwrap_err().to_string();
    assert!(e.contains("f.csv"), "{e}");
    // Text has no folder to read it from.
    let s = Scenario::parse(&std::fs::read_to_string(dir.join("b.toml")).unwrap()).unwrap();
    let e = s.to_config(None).unwrap_err().to_string();
    assert!(
        e.contains("flows_file `f.csv` is read when the scenario is loaded"),
        "{e}"
    );
}

/// Every scenario file in `scenarios/` parses and makes a network the engine accepts.
#[test]
fn every_scenario_file_builds() {
    let mut n = 0;
    for sub in ["bundled", "papers", "examples", "observed", "switch"] {
        let Ok(dir) = std::fs::read_dir(root().join("scenarios").join(sub)) else {
            continue;
        };
        for e in dir {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let sc = Scenario::load(&p).unwrap();
            let (cfg, _) = sc.to_config(None).unwrap();
            ccreplay_reference_cc::net::Network::new(&cfg)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 10, "{n} scenario files");
}

/// A tap's `models` key: the bundled `roce_rcc_receiver` is `dcqcn_ns3`'s receiver tap replayed
/// by `rcc-receiver` alone. Plain RoCEv2 data carry no send timestamp, so every decision is
/// RCC choice 5 (no delay sample: `rtt_ns` -1, the run of delays never starts).
#[test]
fn tap_models_name_what_the_manifest_replays() {
    let (m, pcap) = load("roce_rcc_receiver");
    assert_eq!(m.dialect, Dialect::Roce);
    let names: Vec<&str> = m.models.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["rcc-receiver"]);
    // The tapped host's link (10 Gbps), the roce base RTT of `base_rtt_by_hand` (5255 ns),
    // the scenario's MTU; the rest RCC's defaults (docs/models/rcc.md).
    let p = m.model_params(&m.models[0]);
    assert_eq!(p["line_rate_bps"].as_integer(), Some(10_000_000_000));
    assert_eq!(p["base_rtt_ns"].as_integer(), Some(5255));
    assert_eq!(p["mtu_bytes"].as_integer(), Some(1000));
    assert_eq!(p["n"].as_integer(), Some(3));
    let (got, _) = replay("roce_rcc_receiver", "rcc-receiver");
    // One decision per data packet in: `tshark -r traces/roce_rcc_receiver.pcap -Y
    // 'ip.dst==10.0.0.3 && infiniband' -T fields -e infiniband.bth.opcode`: 4 FIRST (6),
    // 462 MIDDLE (7), 3 LAST (8) = 469 (and 469 ACKs and 17 CNPs out: 955 frames).
    let cfg = m.decode_config();
    let data = data_packets(&pcap, &cfg);
    assert_eq!((got.len(), data, records(&pcap).len()), (469, 469, 955));
    for d in &got {
        assert_eq!(
            d.state.get("rtt_ns"),
            Some(ccreplay_reference_cc::StateValue::I64(-1))
        );
        assert_eq!(
            d.state.get("consecutive"),
            Some(ccreplay_reference_cc::StateValue::U64(0))
        );
    }

    // Naming the loop's own model first keeps its closed-loop decisions.
    let text = bundled_text("dcqcn_ns3").replace(
        "models = [\"rcc-receiver\"]",
        "models = [\"dcqcn-np\", \"rcc-receiver\"]",
    );
    let out = sim::simulate(&Scenario::parse(&text).unwrap(), None, &mut |_| {}).unwrap();
    let cap = out
        .captures
        .iter()
        .find(|c| c.stem == "roce_rcc_receiver")
        .unwrap();
    assert_eq!(cap.pcap, pcap, "the key changes the manifest only");
    let dir = tmp_dir("sim-tap-models");
    sim::write(&out, &dir, true).unwrap();
    let manifest = dir.join("roce_rcc_receiver.toml");
    let both = Manifest::load(&manifest).unwrap();
    let names: Vec<&str> = both.models.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dcqcn-np", "rcc-receiver"]);
    let (np, last_t) = replay_trace(&manifest, "dcqcn-np");
    assert_eq!(np, closed_loop(&cap.decisions, last_t, false));
    let _ = std::fs::remove_dir_all(&dir);

    let err = |from: &str, to: &str| {
        let text = bundled_text("dcqcn_ns3").replace(from, to);
        let e = match Scenario::parse(&text) {
            Err(e) => e,
            Ok(s) => sim::simulate(&s, None, &mut |_| {}).unwrap_err(),
        };
        e.to_string()
    };
    let rx = "models = [\"rcc-receiver\"]";
    let e = err(rx, "models = [\"fncc-receiver\"]");
    assert!(
        e.contains(
            "`fncc-receiver` cannot replay this roce receiver tap; use dcqcn-np, rcc-receiver"
        ),
        "{e}"
    );
    let e = err(rx, "models = []");
    assert!(e.contains("tap roce_rcc_receiver: models = []"), "{e}");
    let e = err(rx, "models = [\"rcc-receiver\", \"rcc-receiver\"]");
    assert!(e.contains("`rcc-receiver` named twice"), "{e}");
    // At a sender tap only the sender's own model.
    let e = err(
        "stem = \"dcqcn_ns3\"",
        "stem = \"dcqcn_ns3\"\nmodels = [\"rcc-receiver\"]",
    );
    assert!(
        e.contains("`rcc-receiver` cannot replay this roce sender tap; use dcqcn-ns3"),
        "{e}"
    );
    // HPCC has no receiver model: a receiver tap needs `models`, and may name rcc-receiver
    // (HPCC data carry INT, not RCC's timestamp: choice 5 on every packet).
    let hpcc = bundled_text("hpcc_dumbbell")
        .replace("duration_ns = 1_500_000", "duration_ns = 800_000")
        .replace(
            "host = \"h0\"\npoint = \"sender\"\nstem = \"hpcc_dumbbell\"",
            "host = \"h2\"\npoint = \"receiver\"\nstem = \"hpcc_rx\"",
        );
    let e = sim::simulate(&Scenario::parse(&hpcc).unwrap(), None, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("HPCC has no receiver model"), "{e}");
    let hpcc = hpcc.replace(
        "stem = \"hpcc_rx\"",
        "stem = \"hpcc_rx\"\nmodels = [\"rcc-receiver\"]",
    );
    let out = sim::simulate(&Scenario::parse(&hpcc).unwrap(), None, &mut |_| {}).unwrap();
    let dir = tmp_dir("sim-tap-models-hpcc");
    sim::write(&out, &dir, true).unwrap();
    let manifest = dir.join("hpcc_rx.toml");
    let m = Manifest::load(&manifest).unwrap();
    assert_eq!(m.dialect, Dialect::Hpcc);
    assert_eq!(m.models.len(), 1);
    assert_eq!(m.models[0].name, "rcc-receiver");
    let (got, _) = replay_trace(&manifest, "rcc-receiver");
    let pcap = std::fs::read(dir.join("hpcc_rx.pcap")).unwrap();
    let cfg = m.decode_config();
    let data = data_packets(&pcap, &cfg);
    assert!(data > 0);
    assert_eq!(got.len(), data);
    assert!(
        got.iter()
            .all(|d| d.state.get("rtt_ns") == Some(ccreplay_reference_cc::StateValue::I64(-1)))
    );
    let _ = std::fs::remove_dir_all(&dir);

    // An RCC run's receiver tap carries the shim: its own rcc-receiver, nothing added.
    let rcc = bundled_text("rcc_dumbbell").replace(
        "stem = \"rcc_receiver\"",
        "stem = \"rcc_receiver\"\nmodels = [\"dcqcn-np\"]",
    );
    let e = sim::simulate(&Scenario::parse(&rcc).unwrap(), None, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`dcqcn-np` cannot replay this rcc receiver tap; use rcc-receiver"),
        "{e}"
    );
}
