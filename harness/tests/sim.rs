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
//!
//! Runs of other scenarios (errors, losses, PFC, a fat tree, flows from a file, every file in
//! `scenarios/`) and metrics.json are tested in sim_scenarios.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ccreplay::manifest::Manifest;
use ccreplay::sim::{self, Scenario};
use ccreplay_codecs::packet::{AckExt, Packet, Shim};
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::{DecodeConfig, Dialect};
use ccreplay_reference_cc::Decision;
use ccreplay_reference_cc::net::EPOCH_NS;

mod common;

use common::sim::{
    bundled_text, cause, closed_loop, data_packets, records, replay_trace, root, tmp_dir,
};

fn traces_dir() -> PathBuf {
    root().join("traces")
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

/// The bound: every bundled trace is at most 5 MB.
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

fn replay(stem: &str, name: &str) -> (Vec<Decision>, u64) {
    replay_trace(&traces_dir().join(format!("{stem}.toml")), name)
}

/// (rate_bps, window_bytes, ack_cwnd) of a decision.
type OutputKey = (Option<u64>, Option<u64>, Option<u32>, Option<u16>);

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
