//! Switch port taps (`[[switch_taps]]`, docs/sim.md "Switch port taps") and the switch bugs of
//! `[switch_device]` through `ccreplay::sim`, on `scenarios/switch/dcqcn_marking.toml` (RED
//! and PFC at an incast port) and `scenarios/switch/hpcc_int.toml` (INT at the second switch
//! of a chain): the egress mirror against the engine's truth file, the ingress captures
//! against the senders' own taps, marks and INT records present only after the switch, the
//! manifest replaying, the switch's configuration file, and a lossy mirror; and
//! `scenarios/switch/fncc_int.toml` (FNCC on the same chain): the ACKs that got the port's INT
//! record (`STEM.ack.pcap`) against `STEM.ack_truth.jsonl`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use ccreplay::replay::Trace;
use ccreplay::sim::scenario::Override;
use ccreplay::sim::{Scenario, SimOutput, SwitchCapture, simulate, write};
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::{DecodeConfig, Packet, Shim};
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::{Dialect, LinkStart};

fn scenario(name: &str) -> PathBuf {
    common::repo().join(format!("scenarios/switch/{name}.toml"))
}

fn run(name: &str, sets: &[&str]) -> SimOutput {
    let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let sc = Scenario::load_with(&scenario(name), &sets).unwrap();
    simulate(&sc, None, &mut |_| {}).unwrap()
}

/// The scenario with extra TOML appended (host taps to compare with).
fn run_with(name: &str, extra: &str) -> SimOutput {
    let text = fs::read_to_string(scenario(name)).unwrap() + extra;
    simulate(&Scenario::parse(&text).unwrap(), None, &mut |_| {}).unwrap()
}

/// (ts ns, frame bytes) of every record.
fn records(pcap: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut r = CaptureReader::from_slice(pcap).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        out.push((rec.ts_ns, rec.data.to_vec()));
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
struct Truth {
    t_in: u64,
    t_out: u64,
    ingress: String,
    bytes: u64,
    psn: u32,
    q_enq: u64,
    q_deq: u64,
    marked: bool,
    p: f64,
}

fn truth(c: &SwitchCapture) -> Vec<Truth> {
    c.truth
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(
                keys,
                [
                    "t_in",
                    "t_out",
                    "ingress",
                    "bytes",
                    "flow",
                    "psn",
                    "qlen_at_enqueue",
                    "qlen_at_dequeue",
                    "marked",
                    "p"
                ]
            );
            Truth {
                t_in: v["t_in"].as_u64().unwrap(),
                t_out: v["t_out"].as_u64().unwrap(),
                ingress: v["ingress"].as_str().unwrap().to_string(),
                bytes: v["bytes"].as_u64().unwrap(),
                psn: v["psn"].as_u64().unwrap() as u32,
                q_enq: v["qlen_at_enqueue"].as_u64().unwrap(),
                q_deq: v["qlen_at_dequeue"].as_u64().unwrap(),
                marked: v["marked"].as_bool().unwrap(),
                p: v["p"].as_f64().unwrap(),
            }
        })
        .collect()
}

/// What a test needs of one frame.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    t: u64,
    len: usize,
    /// Data: (source IP's last octet, PSN, ECN, INT records).
    data: Option<(u8, u32, u8, Vec<IntHop>)>,
    /// PFC: the quanta of priority 3.
    pfc: Option<u16>,
    bytes: Vec<u8>,
}

fn frames(pcap: &[u8], dialect: Dialect) -> Vec<Frame> {
    let cfg = DecodeConfig::for_dialect(dialect);
    records(pcap)
        .into_iter()
        .map(|(t, d)| {
            let p = Packet::decode(&d, d.len(), LinkStart::Ethernet, &cfg);
            assert!(p.error.is_none(), "{:?}", p.error);
            let data = p.roce.as_ref().and_then(|r| {
                if !r.bth.opcode().is_data() {
                    return None;
                }
                let ip = p.ip.unwrap();
                let std::net::IpAddr::V4(src) = ip.addrs.src() else {
                    panic!()
                };
                let hops = match r.shim {
                    Shim::Int(s) => s.hops().collect(),
                    _ => Vec::new(),
                };
                Some((src.octets()[3], r.bth.psn(), ip.ecn, hops))
            });
            Frame {
                t,
                len: d.len(),
                data,
                pfc: p.pfc.map(|f| f.quanta[3]),
                bytes: d.clone(),
            }
        })
        .collect()
}

/// The last octet of host `hN`'s address (10.0.0.N+1).
fn octet(host: &str) -> u8 {
    host[1..].parse::<u8>().unwrap() + 1
}

/// The egress mirror holds exactly the truth file's packets, in order, at its `t_out`, with its
/// length and PSN, CE-marked exactly where the truth says; its other frames are PFC frames
/// arriving from the peer (none here: h2 is a host). The run marks thousands of packets with
/// 0 < p < 1, and as many as the p's predict (the sum of p over them, within 5 standard
/// deviations).
#[test]
fn egress_mirror_is_the_truth_file() {
    let out = run("dcqcn_marking", &[]);
    assert!(out.captures.is_empty());
    let c = &out.switch_captures[0];
    assert_eq!((c.stem.as_str(), c.switch.as_str()), ("sw0_h2", "sw0"));
    let tr = truth(c);
    let fr = frames(&c.out_pcap, Dialect::Roce);
    assert_eq!(fr.len() as u64, c.out_packets);
    assert_eq!(tr.len() as u64, c.truth_packets);
    assert_eq!(fr.len(), tr.len());
    for (f, t) in fr.iter().zip(&tr) {
        let (_, psn, ecn, _) = f.data.clone().unwrap();
        assert_eq!(f.t, t.t_out);
        assert_eq!(f.len as u64, t.bytes);
        assert_eq!(psn, t.psn);
        assert_eq!(ecn == 3, t.marked);
        assert!(t.t_in <= t.t_out);
        assert_eq!(octet(&t.ingress), f.data.as_ref().unwrap().0);
    }
    let ramp: Vec<&Truth> = tr.iter().filter(|t| t.p > 0.0 && t.p < 1.0).collect();
    assert!(ramp.len() > 2_000, "{} packets in the ramp", ramp.len());
    // p as DCQCN-1 gives it from the queue at enqueue: (q − 5000) / 45 000 × 0.2.
    for t in &tr {
        let want = if t.q_enq <= 5_000 {
            0.0
        } else if t.q_enq <= 50_000 {
            (t.q_enq - 5_000) as f64 / 45_000.0 * 0.2
        } else {
            1.0
        };
        assert_eq!(t.p, want);
    }
    let expect: f64 = ramp.iter().map(|t| t.p).sum();
    let var: f64 = ramp.iter().map(|t| t.p * (1.0 - t.p)).sum();
    let got = ramp.iter().filter(|t| t.marked).count() as f64;
    assert!(
        (got - expect).abs() < 5.0 * var.sqrt(),
        "{got} marks, {expect:.1} expected"
    );
    assert!(tr.iter().filter(|t| t.p == 0.0).all(|t| !t.marked));
    assert!(tr.iter().filter(|t| t.p >= 1.0).all(|t| t.marked));
}

/// Each ingress capture holds what arrived on that port: compared with the sender's own tap,
/// every data frame the host sent, byte for byte (unmarked), its serialisation (320 ps per byte
/// at 25 Gbps: 343.68 ns for a 1074-byte WRITE_FIRST, 338.56 ns for a 1058-byte WRITE_MIDDLE)
/// and 1 µs later, floored to ns like the host's time (so 1343 or 1344, 1338 or 1339 ns after
/// it); and every PFC
/// frame the switch sent out of that port, which the host receives 60 B × 8 / 25 Gbps
/// = 19.2 ns + 1 µs later (1019 or 1020 ns). The truth's packets of each ingress are the
/// first data frames of its capture, in order, at their `t_in` (the rest were still queued
/// when the run ended).
#[test]
fn ingress_captures_hold_what_arrived_per_port() {
    let extra = "\n[[taps]]\nhost = \"h0\"\npoint = \"sender\"\nstem = \"h0\"\n\
                 [[taps]]\nhost = \"h1\"\npoint = \"sender\"\nstem = \"h1\"\n";
    let out = run_with("dcqcn_marking", extra);
    let c = &out.switch_captures[0];
    let names: Vec<&str> = c.ingress.iter().map(|i| i.peer.as_str()).collect();
    assert_eq!(names, ["h0", "h1"]);
    let tr = truth(c);
    let mut pfc_total = 0;
    for (i, host) in [(0, "h0"), (1, "h1")] {
        let ing = &c.ingress[i];
        assert_eq!(ing.file, format!("sw0_h2.in.{host}.pcap"));
        assert_eq!(ing.rate_bps, 25_000_000_000);
        let at_switch = frames(&ing.pcap, Dialect::Roce);
        assert_eq!(at_switch.len() as u64, ing.packets);
        let tap = out.captures.iter().find(|t| t.stem == host).unwrap();
        let at_host = frames(&tap.pcap, Dialect::Roce);
        let sent: Vec<&Frame> = at_host
            .iter()
            .filter(|f| f.data.as_ref().is_some_and(|d| d.0 == octet(host)))
            .collect();
        let arrived: Vec<&Frame> = at_switch.iter().filter(|f| f.data.is_some()).collect();
        // The last frames the host sent may still be on the link when the run ends.
        assert!(arrived.len() <= sent.len() && sent.len() - arrived.len() <= 3);
        for (a, s) in arrived.iter().zip(&sent) {
            assert_eq!(a.bytes, s.bytes);
            assert_eq!(a.data.as_ref().unwrap().2, 2, "ECT(0) as sent");
            let lo = (a.len as u64 * 320 + 1_000_000) / 1000;
            assert!((lo..=lo + 1).contains(&(a.t - s.t)), "{}", a.t - s.t);
        }
        let pauses_sent: Vec<&Frame> = at_switch.iter().filter(|f| f.pfc.is_some()).collect();
        let pauses_rx: Vec<&Frame> = at_host.iter().filter(|f| f.pfc.is_some()).collect();
        assert_eq!(pauses_sent.len(), pauses_rx.len());
        for (a, b) in pauses_sent.iter().zip(&pauses_rx) {
            assert_eq!(a.bytes, b.bytes);
            assert!((1019..=1020).contains(&(b.t - a.t)), "{}", b.t - a.t);
        }
        pfc_total += pauses_sent.len();
        // Its packets in the truth file, in order.
        let mine: Vec<&Truth> = tr.iter().filter(|t| t.ingress == host).collect();
        assert!(!mine.is_empty() && mine.len() <= arrived.len());
        for (t, a) in mine.iter().zip(&arrived) {
            assert_eq!((t.t_in, t.psn), (a.t, a.data.as_ref().unwrap().1));
        }
    }
    // XOFF / XON cycles happened, each XOFF of 250 quanta, each XON 0.
    assert!(pfc_total >= 4, "{pfc_total} pause frames");
    let xoff = c
        .ingress
        .iter()
        .flat_map(|i| frames(&i.pcap, Dialect::Roce))
        .filter_map(|f| f.pfc)
        .collect::<Vec<u16>>();
    assert!(xoff.iter().all(|&q| q == 250 || q == 0));
    assert!(xoff.contains(&0) && xoff.contains(&250));
}

/// HPCC at the second switch: frames from sw0 arrive with sw0's record (nHop 1), h3's with an
/// empty stack, and every frame leaves with one more record, sw1's (ID 0x0C2), whose qLen is
/// the truth's queue at dequeue in 80-byte units, whose ts is the departure time plus the
/// switch's clock offset mod 2^24, and whose ts and txBytes wrap during the run.
#[test]
fn int_is_stamped_only_on_egress() {
    let out = run("hpcc_int", &[]);
    let c = &out.switch_captures[0];
    let tr = truth(c);
    let fr = frames(&c.out_pcap, Dialect::Hpcc);
    assert_eq!(fr.len(), tr.len());
    let names: Vec<&str> = c.ingress.iter().map(|i| i.peer.as_str()).collect();
    assert_eq!(names, ["sw0", "h3"]);
    for ing in &c.ingress {
        let want = usize::from(ing.peer == "sw0");
        for f in frames(&ing.pcap, Dialect::Hpcc) {
            assert_eq!(f.data.unwrap().3.len(), want);
        }
    }
    let offset = 10_775_584u64 + 100_000; // int_ts_offset_ns + 1 × int_ts_step_ns
    let (mut ts_wraps, mut tx_wraps) = (0, 0);
    let mut prev: Option<IntHop> = None;
    for (f, t) in fr.iter().zip(&tr) {
        let hops = &f.data.as_ref().unwrap().3;
        assert_eq!(hops.len(), if t.ingress == "sw0" { 2 } else { 1 });
        let h = *hops.last().unwrap();
        assert_eq!(u64::from(h.qlen), t.q_deq / 80);
        assert_eq!(u64::from(h.ts), (t.t_out + offset) % (1 << 24));
        if let Some(p) = prev {
            ts_wraps += usize::from(h.ts < p.ts);
            tx_wraps += usize::from(h.tx_bytes < p.tx_bytes);
        }
        prev = Some(h);
    }
    assert_eq!((ts_wraps, tx_wraps), (1, 1));
    assert!(tr.iter().any(|t| t.q_deq > 0));
    let toml: toml::Table = c.switch_toml.parse().unwrap();
    assert_eq!(toml["int"]["switch_id"].as_integer(), Some(0x0C2));
    assert_eq!(toml["int"]["switch_index"].as_integer(), Some(1));
}

/// `STEM.toml` is a manifest of the egress mirror that `ccreplay replay --model dcqcn-cp`
/// reads: a decision per data packet at the HPCC port (its own INT record gives the queue); at
/// the RoCE port every data packet is a `dequeue` event, but without INT there is no queue
/// length for `dcqcn-cp` to decide on, which `replay` reports as nothing to compare (exit 2):
/// the queue has to be rebuilt from the ingress captures. `STEM.switch.toml` holds the
/// configuration under the documented keys, and names the ingress captures written beside it.
#[test]
fn manifest_replays_and_switch_file_reads() {
    let dir = common::Scratch::new("switch-taps");
    for (name, stem, dialect) in [
        ("dcqcn_marking", "sw0_h2", "roce"),
        ("hpcc_int", "sw1_h2", "hpcc"),
    ] {
        let d = dir.join(name);
        let (code, _, err) = common::run(
            &common::repo(),
            &[
                "sim",
                scenario(name).to_str().unwrap(),
                "--out",
                d.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{err}");
        let manifest = d.join(format!("{stem}.toml"));
        let trace = Trace::load(&manifest).unwrap();
        assert_eq!(trace.manifest.capture_point.kind(), "switch_port");
        assert_eq!(trace.manifest.dialect.to_string(), dialect);
        let (code, stdout, err) = common::run(
            &d,
            &["replay", &format!("{stem}.toml"), "--model", "dcqcn-cp"],
        );
        let decisions = stdout.lines().count();
        let packets = fs::read_to_string(d.join(format!("{stem}.truth.jsonl")))
            .unwrap()
            .lines()
            .count();
        if dialect == "hpcc" {
            assert_eq!(code, 0, "{err}");
            assert_eq!(decisions, packets);
        } else {
            assert_eq!((code, decisions), (2, 0), "{err}");
            let n = format!("{},{:03}", packets / 1000, packets % 1000);
            assert!(err.contains(&format!("{n} events (dequeue {n})")), "{err}");
            assert!(err.contains("dcqcn-cp made no decisions"), "{err}");
        }
        let sw: toml::Table = fs::read_to_string(d.join(format!("{stem}.switch.toml")))
            .unwrap()
            .parse()
            .unwrap();
        let mut keys: Vec<&str> = sw.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = vec![
            "buffer_bytes",
            "capture",
            "dialect",
            "ingress",
            "port_peer",
            "port_rate_bps",
            "seed",
            "switch",
        ];
        want.extend(if dialect == "hpcc" {
            &["int"][..]
        } else {
            &["pfc", "red"][..]
        });
        want.sort_unstable();
        assert_eq!(keys, want);
        for i in sw["ingress"].as_array().unwrap() {
            let f = i["capture"].as_str().unwrap();
            assert!(d.join(f).is_file(), "{f}");
            assert!(f.starts_with(&format!("{stem}.in.")));
            assert!(i["rate_bps"].as_integer().unwrap() > 0);
        }
        if dialect == "roce" {
            assert_eq!(sw["switch"].as_str(), Some("sw0"));
            assert_eq!(sw["port_peer"].as_str(), Some("h2"));
            assert_eq!(sw["capture"].as_str(), Some("sw0_h2.out.pcap"));
            assert_eq!(sw["dialect"].as_str(), Some("roce"));
            assert_eq!(sw["port_rate_bps"].as_integer(), Some(25_000_000_000));
            assert_eq!(sw["buffer_bytes"].as_integer(), Some(1_000_000));
            // sw0's RED generator is seeded with the scenario seed.
            assert_eq!(sw["seed"].as_integer(), Some(0x5C0E_0001));
            assert_eq!(sw["red"]["kmax_bytes"].as_integer(), Some(50_000));
            assert_eq!(sw["red"]["pmax"].as_float(), Some(0.2));
            assert_eq!(sw["pfc"]["xoff_bytes"].as_integer(), Some(20_000));
            assert_eq!(sw["pfc"]["xon_bytes"].as_integer(), Some(10_000));
            assert_eq!(sw["pfc"]["pause_quanta"].as_integer(), Some(250));
        } else {
            let int = &sw["int"];
            assert_eq!(int["int_ts_offset_ns"].as_integer(), Some(10_775_584));
            assert_eq!(int["int_ts_step_ns"].as_integer(), Some(100_000));
            assert_eq!(int["int_tx_bytes_offset"].as_integer(), Some(134_017_728));
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// `drop_ppm` = 100 000 (10 %): every capture of the tap keeps a subsequence of the exact one,
/// about 90 % of it, the same frames on every run with the seed; the truth file keeps every
/// packet.
#[test]
fn drop_ppm_loses_its_share_reproducibly() {
    let exact = run("dcqcn_marking", &[]);
    let lossy = run("dcqcn_marking", &["switch_taps.0.drop_ppm=100000"]);
    let again = run("dcqcn_marking", &["switch_taps.0.drop_ppm=100000"]);
    let (e, l, a) = (
        &exact.switch_captures[0],
        &lossy.switch_captures[0],
        &again.switch_captures[0],
    );
    assert_eq!(l.out_pcap, a.out_pcap);
    assert_eq!(l.truth, e.truth);
    let mut pairs = vec![(&e.out_pcap, &l.out_pcap)];
    for (x, y) in e.ingress.iter().zip(&l.ingress) {
        assert_eq!(x.file, y.file);
        pairs.push((&x.pcap, &y.pcap));
    }
    let (mut kept_all, mut total_all) = (0usize, 0usize);
    for (x, y) in pairs {
        let (x, y) = (records(x), records(y));
        let mut it = x.iter();
        for r in &y {
            assert!(it.any(|q| q == r), "not a subsequence");
        }
        kept_all += y.len();
        total_all += x.len();
    }
    let share = kept_all as f64 / total_all as f64;
    assert!(
        (0.88..=0.92).contains(&share),
        "{share} kept of {total_all}"
    );
    // Another seed loses other frames.
    let other = run(
        "dcqcn_marking",
        &["switch_taps.0.drop_ppm=100000", "seed=7"],
    );
    assert_ne!(other.switch_captures[0].out_pcap, l.out_pcap);
}

/// The bugs show where they should: RED bugs change which packets the DCQCN port marks (the
/// in-captures stay unmarked), INT bugs change the records at the HPCC port; with every
/// `[switch_device]` key at its default the outputs are the same bytes.
#[test]
fn switch_bugs_change_the_captures() {
    let base = run("dcqcn_marking", &[]);
    let same = run("dcqcn_marking", &["switch_device.clock_drift_ppm=0"]);
    assert_eq!(
        same.switch_captures[0].out_pcap,
        base.switch_captures[0].out_pcap
    );
    let marks = |o: &SimOutput| {
        truth(&o.switch_captures[0])
            .iter()
            .filter(|t| t.marked)
            .count()
    };
    for bug in ["mark-average-queue", "mark-on-dequeue"] {
        let b = run("dcqcn_marking", &[&format!("switch_device.bug={bug}")]);
        let c = &b.switch_captures[0];
        assert_ne!(c.out_pcap, base.switch_captures[0].out_pcap, "{bug}");
        assert_ne!(marks(&b), marks(&base), "{bug}");
        for i in &c.ingress {
            let f = frames(&i.pcap, Dialect::Roce);
            assert!(f.iter().filter_map(|f| f.data.as_ref()).all(|d| d.2 == 2));
        }
    }
    let pauses = |o: &SimOutput| o.metrics.pfc.pause_frames;
    let b = run("dcqcn_marking", &["switch_device.bug=no-pause-refresh"]);
    assert!(
        pauses(&b) < pauses(&base),
        "{} {}",
        pauses(&b),
        pauses(&base)
    );
    let b = run("dcqcn_marking", &["switch_device.bug=xoff-threshold-off"]);
    assert_ne!(
        b.switch_captures[0].out_pcap,
        base.switch_captures[0].out_pcap
    );

    let base = run("hpcc_int", &[]);
    let last_hops = |o: &SimOutput| -> Vec<IntHop> {
        frames(&o.switch_captures[0].out_pcap, Dialect::Hpcc)
            .into_iter()
            .map(|f| *f.data.unwrap().3.last().unwrap())
            .collect()
    };
    let h0 = last_hops(&base);
    // qLen in bytes: the records of the same truth queues are 80 times larger (saturated).
    let b = run("hpcc_int", &["switch_device.bug=qlen-wrong-unit"]);
    for (h, t) in last_hops(&b).iter().zip(truth(&b.switch_captures[0])) {
        assert_eq!(u64::from(h.qlen), t.q_deq.min(0xFFFF));
    }
    // The INT ts reads the arrival: the truth's t_in.
    let b = run("hpcc_int", &["switch_device.bug=ingress-timestamp"]);
    let offset = 10_775_584u64 + 100_000;
    for (h, t) in last_hops(&b).iter().zip(truth(&b.switch_captures[0])) {
        assert_eq!(u64::from(h.ts), (t.t_in + offset) % (1 << 24));
    }
    for set in [
        "switch_device.bug=txbytes-no-headers",
        "switch_device.clock_drift_ppm=100",
    ] {
        assert_ne!(last_hops(&run("hpcc_int", &[set])), h0, "{set}");
    }
}

/// Scenario mistakes name the problem and the valid choices.
#[test]
fn switch_tap_and_device_errors() {
    let text = fs::read_to_string(scenario("hpcc_int")).unwrap();
    let err = |sets: &[&str]| -> String {
        let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        match Scenario::parse_with(&text, &sets).and_then(|s| simulate(&s, None, &mut |_| {})) {
            Ok(_) => panic!("{sets:?} ran"),
            Err(e) => e.to_string(),
        }
    };
    let cases: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "switch_device.bug=late",
            "use one of mark-average-queue, mark-on-dequeue",
        ),
        (
            "switch_device.colour=1",
            "expected one of `bug`, `avg_weight`",
        ),
        ("switch_device.bug=mark-on-dequeue", "not of hpcc"),
        ("switch_device.bug=no-pause-refresh", "add [switch.pfc]"),
        (
            "switch_device.xoff_error_bytes=5",
            "a key of bug = \"xoff-threshold-off\"",
        ),
        ("switch_device.clock_drift_ppm=5000", "-1000..=1000"),
        (
            "switch_taps.0.peer=h0",
            "h0 is not a neighbour of it (neighbours: sw0, h2, h3)",
        ),
        ("switch_taps.0.switch=h2", "switch tap on h2: not a switch"),
        ("switch_taps.0.switch=sw9", "no node named `sw9`"),
        ("switch_taps.0.stem=a.b", "use letters, digits"),
        ("switch_taps.0.drop_ppm=2000000", "at most 1_000_000"),
        ("switch_taps.0.mirror=1", "unknown field `mirror`"),
    ]);
    for (set, want) in cases {
        let e = err(&[set]);
        assert!(e.contains(want), "{set}: {e}");
    }
}

/// One line of `STEM.ack_truth.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AckTruth {
    t: u64,
    hop_index: usize,
    tx: u64,
    queued: u64,
}

fn ack_truth(c: &SwitchCapture) -> Vec<AckTruth> {
    c.ack_truth
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys, ["t", "hop_index", "tx_bytes_sent", "queued_bytes"]);
            AckTruth {
                t: v["t"].as_u64().unwrap(),
                hop_index: v["hop_index"].as_u64().unwrap() as usize,
                tx: v["tx_bytes_sent"].as_u64().unwrap(),
                queued: v["queued_bytes"].as_u64().unwrap(),
            }
        })
        .collect()
}

/// FNCC-3 seen from the port under test: `STEM.ack.pcap` holds exactly the ACKs of
/// `STEM.ack_truth.jsonl`, in order, at its `t`, each from the data flows' receiver h2 and
/// leaving the switch with the switch's record as its last one, at `hop_index`: 0 at sw1 (the
/// data path's last hop, the first switch the ACK crosses), 1 at sw0 (h0's flow only, after
/// sw1's record). Each record is the port's counters at that instant, computed here from the
/// truth line and the `[int]` settings of `STEM.switch.toml`: ts = (t + int_ts_offset_ns +
/// switch_index × int_ts_step_ns) mod 2^24, txBytes = floor((tx_bytes_sent +
/// int_tx_bytes_offset) / 128) mod 2^20, qLen = floor(queued_bytes / 80); sw1's ts and txBytes
/// each wrap once. Written to disk, the two files sit beside the others and `acks` names the
/// pcap; an HPCC tap has neither.
#[test]
fn fncc_ack_int_is_the_ack_truth() {
    let out = run("fncc_int", &[]);
    let stems: Vec<&str> = out
        .switch_captures
        .iter()
        .map(|c| c.stem.as_str())
        .collect();
    assert_eq!(stems, ["sw1_h2", "sw0_sw1"]);
    for (c, want_index, want_n) in [
        (&out.switch_captures[0], 0usize, 1300..1500),
        (&out.switch_captures[1], 1, 650..800),
    ] {
        let tr = ack_truth(c);
        assert!(want_n.contains(&tr.len()), "{}: {}", c.stem, tr.len());
        assert_eq!(c.ack_truth_packets, tr.len() as u64);
        assert_eq!(c.ack_packets, tr.len() as u64);
        let sw: toml::Table = c.switch_toml.parse().unwrap();
        assert_eq!(
            sw["acks"].as_str(),
            Some(format!("{}.ack.pcap", c.stem).as_str())
        );
        let int = |k: &str| sw["int"][k].as_integer().unwrap() as u64;
        let ts_offset = int("int_ts_offset_ns") + int("switch_index") * int("int_ts_step_ns");
        let tx_offset = int("int_tx_bytes_offset");
        let cfg = DecodeConfig::for_dialect(Dialect::Fncc);
        let recs = records(c.ack_pcap.as_ref().unwrap());
        assert_eq!(recs.len(), tr.len());
        let (mut ts_wraps, mut tx_wraps, mut b) = (0, 0, None);
        let mut prev: Option<IntHop> = None;
        for ((t_ns, d), t) in recs.iter().zip(&tr) {
            assert_eq!(*t_ns, t.t);
            assert_eq!(t.hop_index, want_index);
            let p = Packet::decode(d, d.len(), LinkStart::Ethernet, &cfg);
            assert!(p.error.is_none(), "{:?}", p.error);
            let r = p.roce.unwrap();
            assert!(r.bth.opcode().is_ack());
            let std::net::IpAddr::V4(src) = p.ip.unwrap().addrs.src() else {
                panic!()
            };
            assert_eq!(src.octets()[3], octet("h2"));
            let stack = r.int_stack().unwrap();
            assert_eq!(usize::from(stack.n_hop()), t.hop_index + 1);
            let h = stack.hop(t.hop_index).unwrap();
            assert_eq!(u64::from(h.ts), (t.t + ts_offset) % (1 << 24));
            assert_eq!(
                u64::from(h.tx_bytes),
                ((t.tx + tx_offset) / 128) % (1 << 20)
            );
            assert_eq!(u64::from(h.qlen), (t.queued / 80).min(0xFFFF));
            assert_eq!(*b.get_or_insert(h.b), h.b);
            if let Some(p) = prev {
                ts_wraps += usize::from(h.ts < p.ts);
                tx_wraps += usize::from(h.tx_bytes < p.tx_bytes);
            }
            prev = Some(h);
        }
        assert!(
            tr.windows(2)
                .all(|w| w[0].t <= w[1].t && w[0].tx <= w[1].tx)
        );
        if c.stem == "sw1_h2" {
            assert_eq!((ts_wraps, tx_wraps), (1, 1));
            assert!(tr.iter().filter(|t| t.queued > 0).count() > 100);
        }
    }
    let dir = common::Scratch::new("ack-taps");
    write(&out, &dir, false).unwrap();
    for c in &out.switch_captures {
        let pcap = fs::read(dir.join(format!("{}.ack.pcap", c.stem))).unwrap();
        assert_eq!(Some(&pcap), c.ack_pcap.as_ref());
        let lines = fs::read_to_string(dir.join(format!("{}.ack_truth.jsonl", c.stem))).unwrap();
        assert_eq!(lines, c.ack_truth);
    }
    let _ = fs::remove_dir_all(&dir);
    let hpcc = run("hpcc_int", &[]);
    let c = &hpcc.switch_captures[0];
    assert!(c.ack_pcap.is_none() && c.ack_truth.is_empty());
    assert!(!c.switch_toml.contains("acks"));
}

/// With `drop_ppm` the ACK mirror loses frames like the other files (its own generator), the
/// ACK truth file keeps every line, and the egress mirror still loses the same frames as
/// without the ACK file.
#[test]
fn fncc_ack_mirror_drops_frames() {
    let exact = run("fncc_int", &[]);
    let lossy = run("fncc_int", &["switch_taps.0.drop_ppm=100000"]);
    let (e, l) = (&exact.switch_captures[0], &lossy.switch_captures[0]);
    assert_eq!(e.ack_truth, l.ack_truth);
    let all = records(e.ack_pcap.as_ref().unwrap());
    let kept = records(l.ack_pcap.as_ref().unwrap());
    let ratio = kept.len() as f64 / all.len() as f64;
    assert!((0.85..0.95).contains(&ratio), "{ratio}");
    let mut it = all.iter();
    assert!(kept.iter().all(|k| it.any(|a| a == k)));
    // The other entry is exact.
    assert_eq!(
        exact.switch_captures[1].ack_pcap,
        lossy.switch_captures[1].ack_pcap
    );
}
