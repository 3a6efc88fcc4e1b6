//! The scenario keys of docs/sim.md "Custom topologies", "Link failures" and "One switch, one
//! host" (`kind = "custom"`, `[[link_events]]`, `[switch] int_ts_resolution_ns`,
//! `[switches.NAME]`, `[hosts.NAME]`): what the engine is given, the errors, and what the
//! bundled fncc_chain capture shows of them, each against values worked out by hand.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ccreplay::manifest::Manifest;
use ccreplay::replay::{self, Trace};
use ccreplay::sim::scenario::Override;
use ccreplay::sim::{self, Scenario};
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::{AckExt, Packet};
use ccreplay_reference_cc::Decision;
use ccreplay_reference_cc::net::{LinkEvent, SwitchClock};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A chain of three switches, two hosts on each, h0 -> h4 and h1 -> h2: as `kind = "chain"`
/// (`TOPOLOGY` replaced by it) or as the same links listed.
const SMALL: &str = r#"
name = "small"
seed = 7
model = "hpcc"
duration_ns = 60_000
TOPOLOGY
[[flows]]
src = "h0"
dst = "h4"
size_bytes = 200_000
[[flows]]
src = "h1"
dst = "h2"
size_bytes = 100_000
start_ns = 20_000
[[taps]]
host = "h0"
point = "sender"
stem = "t"
"#;

const CHAIN: &str = r#"[topology]
kind = "chain"
switches = 3
hosts_per_switch = 2
host_bps = 25_000_000_000
bottleneck_bps = 40_000_000_000
"#;

/// The chain's links in its order: switch to switch first, then the hosts (a node's ports
/// are numbered in the order of its links, so the order matters).
const CUSTOM: &str = r#"[topology]
kind = "custom"
hosts = 6
switches = 3
links = [
  { a = "sw0", b = "sw1", rate_bps = 40_000_000_000 },
  { a = "sw1", b = "sw2", rate_bps = 40_000_000_000 },
  { a = "h0", b = "sw0", rate_bps = 25_000_000_000 },
  { a = "h1", b = "sw0", rate_bps = 25_000_000_000 },
  { a = "h2", b = "sw1", rate_bps = 25_000_000_000 },
  { a = "h3", b = "sw1", rate_bps = 25_000_000_000 },
  { a = "h4", b = "sw2", rate_bps = 25_000_000_000 },
  { a = "h5", b = "sw2", rate_bps = 25_000_000_000, prop_ns = 1_000 },
]
"#;

fn small(topology: &str) -> Scenario {
    Scenario::parse(&SMALL.replace("TOPOLOGY", topology)).unwrap()
}

/// Listing a chain's links gives the chain: the same bytes and decisions (prop_ns defaults to
/// 1 µs on both sides).
#[test]
fn a_custom_topology_of_the_chain_links_is_the_chain() {
    let a = sim::simulate(&small(CHAIN), None, &mut |_| {}).unwrap();
    let b = sim::simulate(&small(CUSTOM), None, &mut |_| {}).unwrap();
    assert!(a.captures[0].pcap == b.captures[0].pcap);
    assert_eq!(a.captures[0].decisions, b.captures[0].decisions);
    assert!(a.captures[0].packets > 100);
}

/// What the keys become: the link between two switches by its index in the list (either
/// order of its ends), every switch's tick and one switch's own, a host without N. Nodes:
/// h0..h4 are 0..4, sw0..sw3 5..8.
#[test]
fn the_keys_reach_the_engine() {
    let text = r#"
name = "keys"
model = "fncc"
duration_ns = 100_000
[topology]
kind = "custom"
hosts = 5
switches = 4
prop_ns = 200
links = [
  { a = "sw0", b = "sw1", rate_bps = 10_000_000_000 },
  { a = "sw1", b = "sw2", rate_bps = 25_000_000_000 },
  { a = "sw1", b = "sw3", rate_bps = 25_000_000_000 },
  { a = "sw3", b = "sw2", rate_bps = 25_000_000_000 },
  { a = "h0", b = "sw0", rate_bps = 25_000_000_000 },
  { a = "h1", b = "sw0", rate_bps = 25_000_000_000 },
  { a = "h2", b = "sw1", rate_bps = 25_000_000_000, prop_ns = 870 },
  { a = "h3", b = "sw2", rate_bps = 10_000_000_000 },
  { a = "h4", b = "sw2", rate_bps = 25_000_000_000 },
]
[switch]
int_ts_resolution_ns = 1_024
[switches.sw3]
int_ts_resolution_ns = 1
[hosts.h4]
writes_n = false
[hosts.h3]
writes_n = true
[[flows]]
src = "h0"
dst = "h3"
size_bytes = 10_000
[[link_events]]
at_ns = 30_000
a = "sw2"
b = "sw1"
[[link_events]]
at_ns = 40_000
a = "sw1"
b = "sw2"
up = true
"#;
    let (cfg, _) = Scenario::parse(text).unwrap().to_config(None).unwrap();
    assert_eq!(
        cfg.link_events,
        [
            LinkEvent {
                at_ns: 30_000,
                link: 1,
                up: false
            },
            LinkEvent {
                at_ns: 40_000,
                link: 1,
                up: true
            },
        ]
    );
    assert_eq!(cfg.switch.int_ts_resolution_ns, 1024);
    assert_eq!(
        cfg.switch_clocks,
        [SwitchClock {
            switch: 8,
            int_ts_resolution_ns: 1
        }]
    );
    assert_eq!(cfg.hosts_without_n, [4]);
    let t = &cfg.topology;
    assert_eq!(t.links.len(), 9);
    assert_eq!(
        (t.links[6].a, t.links[6].b, t.links[6].prop_ns),
        (2, 6, 870)
    );
    assert_eq!(t.links[7].prop_ns, 200);
    // The same through --set, from a file without them.
    let plain = text
        .replace("[switches.sw3]\nint_ts_resolution_ns = 1\n", "")
        .replace("[hosts.h4]\nwrites_n = false\n", "");
    let sets: Vec<Override> = [
        "switches.sw3.int_ts_resolution_ns=1",
        "hosts.h4.writes_n=false",
        "link_events.0.at_ns=35_000",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let (cfg2, _) = Scenario::parse_with(&plain, &sets)
        .unwrap()
        .to_config(None)
        .unwrap();
    assert_eq!(cfg2.switch_clocks, cfg.switch_clocks);
    assert_eq!(cfg2.hosts_without_n, cfg.hosts_without_n);
    assert_eq!(cfg2.link_events[0].at_ns, 35_000);
    // And a run: h0's 10 KB arrive (sw1 - sw2, down at 30 µs, is back by 40 µs).
    let out = sim::simulate(&Scenario::parse(text).unwrap(), None, &mut |_| {}).unwrap();
    assert_eq!(out.metrics.flows[0].bytes_acked, 10_000);
}

/// The errors name the key and the nodes.
#[test]
fn wrong_keys_are_errors() {
    let base = SMALL.replace("TOPOLOGY", CUSTOM);
    assert!(Scenario::parse(&base).unwrap().to_config(None).is_ok());
    let err = |extra: &str| -> String {
        let text = format!("{base}{extra}");
        match Scenario::parse(&text) {
            Err(e) => e.to_string(),
            Ok(s) => match s.to_config(None) {
                Err(e) => e.to_string(),
                Ok(_) => match sim::simulate(&s, None, &mut |_| {}) {
                    Err(e) => e.to_string(),
                    Ok(_) => panic!("accepted: {extra}"),
                },
            },
        }
    };
    let e = err("[[link_events]]\nat_ns = 1\na = \"sw0\"\nb = \"sw2\"\n");
    assert!(
        e.contains("sw0 and sw2 must be joined by exactly one link"),
        "{e}"
    );
    let e = err("[[link_events]]\nat_ns = 1\na = \"sw0\"\nb = \"sw9\"\n");
    assert!(e.contains("no node named `sw9`"), "{e}");
    let e = err("[[link_events]]\nat_ns = 1\na = \"h0\"\nb = \"sw0\"\n");
    assert!(e.contains("only a link between two switches"), "{e}");
    // Down for good: the chain has no other path.
    let e = err("[[link_events]]\nat_ns = 1\na = \"sw0\"\nb = \"sw1\"\n");
    assert!(e.contains("cannot reach"), "{e}");
    let e = err("[switches.h0]\nint_ts_resolution_ns = 8\n");
    assert!(e.contains("[switches.h0]: `h0` is not a switch"), "{e}");
    let e = err("[switches.sw0]\nint_ts = 8\n");
    assert!(e.contains("unknown field `int_ts`"), "{e}");
    let e = err("[hosts.sw0]\nwrites_n = false\n");
    assert!(e.contains("[hosts.sw0]: `sw0` is not a host"), "{e}");
    let e = err("[hosts.h4]\nwrites_n = false\n");
    assert!(e.contains("only an FNCC receiver writes N"), "{e}");
    let bad_link = SMALL.replace(
        "TOPOLOGY",
        &CUSTOM.replace("{ a = \"h5\", b = \"sw2\"", "{ a = \"h9\", b = \"sw2\""),
    );
    let e = Scenario::parse(&bad_link)
        .unwrap()
        .to_config(None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("topology.links: no node `h9` (h0..h5, sw0..sw2)"),
        "{e}"
    );
}

/// (ns, frame) of every record of `traces/STEM.pcap`, and the decode configuration.
fn capture(stem: &str) -> (Manifest, Vec<(u64, Vec<u8>)>) {
    let m = Manifest::load(&root().join(format!("traces/{stem}.toml"))).unwrap();
    let pcap = std::fs::read(root().join(format!("traces/{stem}.pcap"))).unwrap();
    let mut r = CaptureReader::from_slice(&pcap).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        out.push((rec.ts_ns, rec.data.to_vec()));
    }
    (m, out)
}

/// fncc_chain's sender capture (scenarios/bundled/fncc_chain.toml): every ACK holds N and the
/// records of the switches it crossed, and:
/// - every ts is a multiple of 1024: each switch's clock is floored to its 1,024 ns tick,
///   and 2^24 is a multiple of it;
/// - h0's second flow (to h4, whose NIC has no FNCC-2; sender QP 0x100001 + 1) gets N = 0,
///   the others N >= 1;
/// - nHop 3 with pathID 0x0C1 ^ 0x0C2 ^ 0x0C3 = 0x0C0 (sw0, sw1, sw2), but while sw1 - sw2 is
///   down, from 300 µs to 400 µs, 4 with 0x0C0 ^ 0x0C4 = 0x004 (sw3 too): an ACK crosses
///   sw2 while that link is down, so it reaches h0 after 300 µs and at most the ACK's
///   four-link trip after 400 µs (4 × (106 B at 10-25 Gbps + 200 ns) < 1.6 µs).
#[test]
fn fncc_chain_shows_the_coarse_clock_the_missing_n_and_the_reroute() {
    let (m, records) = capture("fncc_chain");
    let cfg = m.decode_config();
    let start = 1_735_689_600_000_000_000u64;
    let mut paths = BTreeSet::new();
    let (mut n0, mut acks) = (0, 0);
    for (t, data) in &records {
        let p = Packet::decode_ethernet(data, &cfg);
        let r = p.roce.as_ref().unwrap();
        let AckExt::Fncc(f) = r.ack_ext else {
            continue;
        };
        acks += 1;
        for h in f.int.hops() {
            assert_eq!(h.ts % 1024, 0, "ts {} at {t}", h.ts);
        }
        let to_h4 = r.bth.dest_qp() == 0x10_0002;
        assert_eq!(f.n == 0, to_h4, "N {} at {t}", f.n);
        n0 += u32::from(to_h4);
        let at = t - start;
        let path = (f.int.header.n_hop, f.int.header.path_id);
        if path == (4, 0x004) {
            assert!(at > 300_000 && at < 401_600, "detour at {at}");
        } else {
            assert_eq!(path, (3, 0x0C0), "at {at}");
        }
        paths.insert(path);
    }
    assert!(acks > 300 && n0 > 100, "{acks} ACKs, {n0} with N = 0");
    assert_eq!(paths.len(), 2);
}

/// Closed-loop agreement through reroutes, coarse clocks and a NIC without N: what each
/// tapped model decided during the run is exactly what a replay of its capture gives, state
/// included (per-flow senders in the replay's order, by time then flow), for both taps of
/// fncc_chain and for hpcc_chain.
#[test]
fn the_new_bundled_traces_replay_the_closed_loop() {
    for (scenario, stem, model, per_flow) in [
        ("fncc_chain", "fncc_chain", "fncc", true),
        ("fncc_chain", "fncc_chain_receiver", "fncc-receiver", false),
        ("hpcc_chain", "hpcc_chain", "hpcc", true),
    ] {
        let out = sim::simulate(&sim::bundled(scenario).unwrap(), None, &mut |_| {}).unwrap();
        let cap = out.captures.iter().find(|c| c.stem == stem).unwrap();
        let trace = Trace::load(&root().join(format!("traces/{stem}.toml"))).unwrap();
        let spec = trace.model(model).unwrap().clone();
        let mut got: Vec<Decision> = Vec::new();
        let stats = replay::replay_reference(&trace, &spec, 1, |d| {
            got.push(*d);
            Ok(())
        })
        .unwrap();
        assert_eq!(stats.extract.malformed, 0, "{stem}");
        let mut want = cap.decisions.clone();
        if per_flow {
            want.sort_by_key(|d| (d.t_ns, d.flow));
        }
        assert_eq!(got.len(), want.len(), "{stem}: decision count");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{stem}: decision {i}");
        }
    }
}
