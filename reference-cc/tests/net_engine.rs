//! The network engine (`net`): timing, RED, PFC, INT and topologies, each against numbers
//! computed by hand from the link rates, frame lengths and thresholds (arithmetic in the
//! comments).

use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NpParams, RpParams};
use ccreplay_reference_cc::hpcc;
use ccreplay_reference_cc::net::{
    Cc, EPOCH_NS, FlowSpec, Metrics, NetConfig, NetError, Network, NoTaps, Packet, PacketKind,
    PfcConfig, TapSink, Topology,
};

const G100: u64 = 100_000_000_000;
const G10: u64 = 10_000_000_000;

fn dcqcn() -> Cc {
    Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    }
}

fn flow(src: u32, dst: u32, size_bytes: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        size_bytes,
        start_ns: 0,
        first_psn: Some(0),
    }
}

/// Records (tap, ns from the start, kind, outgoing, ECN, INT nHop, pathID, PFC quanta).
type Row = (usize, u64, PacketKind, bool, u8, u8, u16, u16);

#[derive(Default)]
struct Rec(Vec<Row>);

impl TapSink for Rec {
    fn record(
        &mut self,
        tap: usize,
        t: u64,
        p: &Packet,
        int: &IntStack,
        out: bool,
    ) -> Result<(), NetError> {
        self.0.push((
            tap,
            t - EPOCH_NS,
            p.kind,
            out,
            p.ecn,
            int.n_hop(),
            int.path_id(),
            p.pfc_quanta,
        ));
        Ok(())
    }
}

/// One 1000-byte WRITE_ONLY over h0 -> sw0 -> h1, 100 Gbps (80 ps per byte), 1 µs links:
/// - the frame is 14 + 20 + 8 + 12 (BTH) + 16 (RETH) + 1000 + 4 (ICRC) = 1074 B: 85 920 ps;
/// - it reaches the switch at 85 920 + 1 000 000 = 1 085 920 ps, leaves it at once and reaches
///   h1 at 1 085 920 + 85 920 + 1 000 000 = 2 171 840 ps: tap time 2171 ns;
/// - the ACK (62 B: 4960 ps) leaves h1 then, reaches the switch at 3 176 800 ps and h0 at
///   4 181 760 ps: tap time 4181 ns, which is also the flow's completion time.
/// - T: a 1058-byte WRITE_MIDDLE and a 62-byte ACK over both links: (1058 + 62) × 80 × 2
///   = 179 200 ps + 4 × 1 µs = 4 179 200 ps, rounded up to 4180 ns.
#[test]
fn serialisation_and_propagation_by_hand() {
    let mut cfg = NetConfig::new("one", Topology::incast(1, G100, G100, 1_000), dcqcn());
    cfg.duration_ns = 20_000;
    cfg.flows.push(flow(0, 1, 1000));
    cfg.taps = vec![0, 1];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    let times: Vec<(usize, u64, PacketKind, bool)> =
        rec.0.iter().map(|r| (r.0, r.1, r.2, r.3)).collect();
    assert_eq!(
        times,
        [
            (0, 0, PacketKind::Data, true),
            (1, 2171, PacketKind::Data, false),
            (1, 2171, PacketKind::Ack, true),
            (0, 4181, PacketKind::Ack, false),
        ]
    );
    let m = &run.metrics;
    assert_eq!(m.base_rtt_ns, 4180);
    assert_eq!(m.flows[0].fct_ns, Some(4181));
    assert_eq!(m.flows[0].bytes_acked, 1000);
    // The switch's port towards h1 sent the data frame; the one towards h0 the ACK.
    let tx: Vec<(String, u64)> = m
        .ports
        .iter()
        .map(|p| (p.peer.clone(), p.tx_bytes))
        .collect();
    assert_eq!(tx, [("h0".to_string(), 62), ("h1".to_string(), 1074)]);
}

/// RED with Kmin = Kmax = 0: a packet that finds any byte waiting is marked (p = 1), one that
/// finds the queue empty is not (p = 0). Three senders each send one 1074-byte frame at t = 0;
/// all reach the switch at 1 085 920 ps. The first starts transmitting at once (the frame on
/// the wire is not counted), the second finds 0 bytes waiting, the third 1074: exactly one
/// mark, and the receiver sees two ECT(0) frames and one CE.
#[test]
fn red_marks_by_hand() {
    let mut cfg = NetConfig::new("red", Topology::incast(3, G100, G100, 1_000), dcqcn());
    cfg.duration_ns = 20_000;
    cfg.switch.red = Some(RedParams {
        kmin_bytes: 0,
        kmax_bytes: 0,
        pmax: 1.0,
    });
    for s in 0..3 {
        cfg.flows.push(flow(s, 3, 1000));
    }
    cfg.taps = vec![3];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    let mut ecn: Vec<u8> = rec
        .0
        .iter()
        .filter(|r| r.2 == PacketKind::Data)
        .map(|r| r.4)
        .collect();
    ecn.sort_unstable();
    assert_eq!(ecn, [2, 2, 3]);
    let port = run.metrics.ports.iter().find(|p| p.peer == "h3").unwrap();
    assert_eq!(port.ecn_marked, 1);
    // The largest queue: 2 × 1074 bytes waiting behind the one on the wire.
    assert_eq!(port.queue_max_bytes, 2148);
}

/// A 100 Gbps sender into a 10 Gbps receiver link, no ECN, 60 KB of shared buffer:
/// - without PFC the queue grows at 90 Gbps and the 1 MB message loses packets;
/// - with PFC (XOFF 20 000 B, XON 10 000 B) nothing is lost. The queue stays below XOFF plus
///   what is in flight when the pause lands: the frame that crossed XOFF (1074 B), the frame
///   h0 is sending when the pause arrives (1074 B), the XOFF frame itself (60 B at 100 Gbps =
///   4.8 ns) behind at most one 62-byte ACK (4.96 ns) and its 1 µs trip, during which h0 sends
///   100 Gbps × 1.00976 µs = 12 622 B, and the 1 µs of frames already on the link (12 500 B,
///   plus one frame 1074 B): 20 000 + 1074 + 1074 + 12 622 + 12 500 + 1074 = 48 344 B.
#[test]
fn pfc_prevents_loss_within_its_headroom() {
    let mk = |pfc: Option<PfcConfig>| {
        let mut cfg = NetConfig::new("pfc", Topology::incast(1, G100, G10, 1_000), dcqcn());
        cfg.duration_ns = 1_500_000;
        cfg.switch.buffer_bytes = 60_000;
        cfg.switch.red = None;
        cfg.switch.pfc = pfc;
        cfg.flows.push(flow(0, 1, 1_000_000));
        cfg.taps = vec![0];
        cfg
    };
    let lossy = Network::new(&mk(None)).unwrap().run(&mut NoTaps).unwrap();
    assert!(lossy.metrics.drops > 0);
    assert_eq!(lossy.metrics.pfc.pause_frames, 0);

    let pfc = PfcConfig {
        xoff_bytes: 20_000,
        xon_bytes: 10_000,
        pause_quanta: 0xFFFF,
    };
    let mut rec = Rec::default();
    let run = Network::new(&mk(Some(pfc))).unwrap().run(&mut rec).unwrap();
    let m = &run.metrics;
    assert_eq!(m.drops, 0);
    let down = m.ports.iter().find(|p| p.peer == "h1").unwrap();
    assert!(down.queue_max_bytes > 20_000, "{}", down.queue_max_bytes);
    assert!(down.queue_max_bytes <= 48_344, "{}", down.queue_max_bytes);
    let up = m.ports.iter().find(|p| p.peer == "h0").unwrap();
    assert!(up.pfc.pause_frames_sent > 0);
    assert_eq!(m.pfc.pause_frames, up.pfc.pause_frames_sent);
    assert!(m.pfc.paused_ns > 0);
    // The 1 MB message completes: 1000 packets at no more than 10 Gbps take at least
    // 1000 × 1058 B × 0.8 ns/B = 846 400 ns.
    assert_eq!(m.flows[0].bytes_acked, 1_000_000);
    assert!(m.flows[0].fct_ns.unwrap() >= 846_400);
    // The sender's tap shows every pause frame: the XOFFs counted at the switch, and an XON
    // after each pause episode but perhaps the last.
    let xoff = rec
        .0
        .iter()
        .filter(|r| r.2 == PacketKind::Pfc && r.7 > 0)
        .count() as u64;
    let xon = rec
        .0
        .iter()
        .filter(|r| r.2 == PacketKind::Pfc && r.7 == 0)
        .count() as u64;
    assert_eq!(xoff, up.pfc.pause_frames_sent);
    assert!(xon >= 1 && xon <= xoff, "{xon} XON, {xoff} XOFF");
}

/// A pause of 100 quanta at 100 Gbps lasts 100 × 512 bits / 100 Gbps = 512 ns; while the
/// ingress stays above XON the switch refreshes it every 256 ns (half of it). A 100 Gbps
/// sender into a 1 Gbps receiver link, XOFF 5000 B, XON 0: the queue drains at 1 Gbps, so an
/// episode lasts microseconds and holds refreshes. Consecutive XOFFs at the sender within one
/// episode are 256 ns apart, give or take one 62-byte ACK ahead of the frame on the switch
/// port (4.96 ns) and the flooring of both tap times to ns: 250..=262 ns.
#[test]
fn pfc_refreshes_pauses_at_half_their_time() {
    let mut cfg = NetConfig::new(
        "refresh",
        Topology::incast(1, G100, 1_000_000_000, 1_000),
        dcqcn(),
    );
    cfg.duration_ns = 300_000;
    cfg.switch.red = None;
    cfg.switch.pfc = Some(PfcConfig {
        xoff_bytes: 5_000,
        xon_bytes: 0,
        pause_quanta: 100,
    });
    cfg.flows.push(flow(0, 1, 10_000_000));
    cfg.taps = vec![0];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    assert_eq!(run.metrics.drops, 0);
    let mut prev: Option<u64> = None;
    let mut gaps = 0;
    for r in rec.0.iter().filter(|r| r.2 == PacketKind::Pfc) {
        if r.7 == 0 {
            prev = None; // XON: the episode ended
            continue;
        }
        if let Some(p) = prev {
            assert!(
                (250..=262).contains(&(r.1 - p)),
                "XOFFs {} ns apart",
                r.1 - p
            );
            gaps += 1;
        }
        prev = Some(r.1);
    }
    assert!(gaps > 10, "{gaps} refreshes");
}

/// HPCC over a chain of three switches (`sw0`–`sw1`–`sw2`, INT IDs 0x0A1, 0x0A2, 0x0A3): the
/// ACKs at h0 echo three hops and pathID 0x0A1 ^ 0x0A2 ^ 0x0A3 = 0x0A0.
/// T: four links each way at 100 Gbps with a 1100-byte data frame (1058 + 42 B INT stack)
/// and a 104-byte ACK: 4 × (1100 + 104) × 80 = 385 280 ps + 8 µs = 8 385 280 ps -> 8386 ns.
#[test]
fn chain_int_path_by_hand() {
    let t = Topology::chain(3, 1, G100, G100, 1_000);
    let mut cfg = NetConfig::new("chain", t, Cc::Hpcc(hpcc::Params::default()));
    cfg.duration_ns = 50_000;
    cfg.flows.push(flow(0, 2, 100_000));
    cfg.taps = vec![0];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    assert_eq!(run.metrics.base_rtt_ns, 8386);
    let acks: Vec<_> = rec.0.iter().filter(|r| r.2 == PacketKind::Ack).collect();
    assert!(!acks.is_empty());
    assert!(acks.iter().all(|r| (r.5, r.6) == (3, 0x0A0)));
    assert_eq!(run.metrics.flows[0].bytes_acked, 100_000);
}

/// k = 4 fat tree: 16 hosts, 8 edge, 8 aggregation, 4 core switches, 48 links. A cross-pod
/// path has 6 links: T = 6 × (1058 + 62) × 80 = 537 600 ps + 12 µs = 12 537 600 ps -> 12 538
/// ns. ECMP spreads 16 cross-pod flows over more than one core switch.
#[test]
fn fat_tree_paths_and_ecmp() {
    let t = Topology::fat_tree(4, G100, 1_000).unwrap();
    assert_eq!(t.hosts().count(), 16);
    assert_eq!(t.nodes.len(), 36);
    assert_eq!(t.links.len(), 48);
    let mut cfg = NetConfig::new("ft", t.clone(), dcqcn());
    cfg.duration_ns = 30_000;
    cfg.flows.push(flow(0, 15, 10_000));
    let run = Network::new(&cfg).unwrap().run(&mut NoTaps).unwrap();
    assert_eq!(run.metrics.base_rtt_ns, 12_538);

    let mut cfg = NetConfig::new("ft", t, dcqcn());
    cfg.duration_ns = 100_000;
    for i in 0..4 {
        for j in 12..16 {
            cfg.flows.push(flow(i, j, 20_000));
        }
    }
    let run = Network::new(&cfg).unwrap().run(&mut NoTaps).unwrap();
    let cores = run
        .metrics
        .ports
        .iter()
        .filter(|p| p.node.starts_with('c') && p.tx_bytes > 0)
        .map(|p| p.node.clone())
        .collect::<std::collections::BTreeSet<_>>();
    assert!(cores.len() >= 2, "{cores:?}");
    assert!(run.metrics.flows.iter().all(|f| f.bytes_acked == 20_000));
}

#[test]
fn bad_configs_are_errors() {
    let t = Topology::incast(1, G100, G100, 1_000);
    let mut cfg = NetConfig::new("bad", t, dcqcn());
    cfg.flows.push(flow(0, 0, 1000));
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("two distinct hosts"), "{e}");
    cfg.flows[0] = flow(0, 1, 1000);
    cfg.mtu_bytes = 1001;
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("multiple of 4"), "{e}");
    cfg.mtu_bytes = 1000;
    cfg.switch.pfc = Some(PfcConfig {
        xoff_bytes: 10,
        xon_bytes: 20,
        pause_quanta: 1,
    });
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("xon_bytes"), "{e}");
    assert!(Topology::fat_tree(3, G100, 1).is_err());
}

/// Nearest-rank percentile: of 1..=20 the 95th is the ceil(0.95 × 20) = 19th smallest, 19;
/// of one sample, that sample. Jain's index of goodputs 1 and 3: (1 + 3)² / (2 × (1 + 9))
/// = 16 / 20 = 0.8; of equal goodputs, 1.
#[test]
fn percentile_and_jain_by_hand() {
    use ccreplay_reference_cc::net::metrics::{jain_index, percentile};
    let s: Vec<u64> = (1..=20).rev().collect();
    assert_eq!(percentile(&s, 0.95), 19);
    assert_eq!(percentile(&[7], 0.95), 7);
    assert_eq!(percentile(&[], 0.95), 0);
    // Cumulative delivered bytes at samples 10, 20, 30 ns; both flows start at 0, unfinished:
    // between the first sample after 0 (10 ns) and the last (30 ns) they deliver 1 and 3.
    let times = [10, 20, 30];
    let a = [0u64, 0, 1];
    let b = [0u64, 1, 3];
    let j = jain_index(&[(0, None, &a[..]), (0, None, &b[..])], &times).unwrap();
    assert_eq!(j, 0.8);
    let j = jain_index(&[(0, None, &b[..]), (0, None, &b[..])], &times).unwrap();
    assert_eq!(j, 1.0);
    // A flow that finishes at 15 ns leaves one sample: no window.
    assert_eq!(
        jain_index(&[(0, Some(15), &a[..]), (0, None, &b[..])], &times),
        None
    );
}

/// `metrics.json` reads back into the same `Metrics` (what `ccreplay report sim` relies on),
/// and a file with keys it does not know or missing ones still reads.
#[test]
fn metrics_json_round_trips() {
    let mut cfg = NetConfig::new("rt", Topology::incast(2, G100, G10, 1_000), dcqcn());
    cfg.duration_ns = 200_000;
    cfg.switch.pfc = Some(PfcConfig::default());
    cfg.flows.push(flow(0, 2, 200_000));
    cfg.flows.push(flow(1, 2, 200_000));
    let m = Network::new(&cfg)
        .unwrap()
        .run(&mut NoTaps)
        .unwrap()
        .metrics;
    assert!(!m.flows[0].throughput_bps.t_ns.is_empty() && m.jain_index.is_some());
    let text = serde_json::to_string(&m).unwrap();
    let back: Metrics = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);

    let sparse: Metrics =
        serde_json::from_str(r#"{"version": 1, "future_key": [1, 2], "flows": [{"id": 3}]}"#)
            .unwrap();
    assert_eq!((sparse.version, sparse.flows[0].id), (1, 3));
    assert!(sparse.ports.is_empty() && sparse.flows[0].finish_ns.is_none());
}
