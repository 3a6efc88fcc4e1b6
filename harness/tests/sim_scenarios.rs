//! `ccreplay sim` (`ccreplay::sim`) on scenarios other than the bundled traces' (sim.rs tests
//! those):
//!
//! - A wrong scenario is an error naming the problem.
//! - A receiver tap, a lossy run (NAKs, go-back-N), PFC pauses in a tap and a fat tree's
//!   receiver replay to exactly the closed loop's decisions; `--seed` changes the capture.
//! - metrics.json has the keys of docs/metrics.md, and samples cover the flows, not the idle run.
//! - Flows from a CSV file are the same flows as tables; every file in `scenarios/` builds.

use ccreplay::manifest::{CapturePoint, Manifest};
use ccreplay::sim::{self, Scenario, SimError};

mod common;

use common::sim::{
    bundled_text, cause, closed_loop, data_packets, records, replay_trace, root, tmp_dir,
};

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
