//! The network features a real fabric has that the bundled FNCC and HPCC traces need
//! (docs/sim.md "Link failures", "One switch, one host"): links that go down and up (the
//! switches reroute, what the link held is lost), a coarse INT clock, and an FNCC receiver NIC
//! without FNCC-2. Every expected number is computed by hand in the comments.

use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::dcqcn::{NpParams, RpParams};
use ccreplay_reference_cc::net::{
    Cc, EPOCH_NS, FlowSpec, LinkEvent, NetConfig, NetError, Network, NodeKind, Packet, PacketKind,
    SwitchClock, SwitchTap, TapSink, Topology,
};
use ccreplay_reference_cc::{StateValue, fncc, hpcc};

const G100: u64 = 100_000_000_000;
const G10: u64 = 10_000_000_000;

fn flow(src: u32, dst: u32, size_bytes: u64, start_ns: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        size_bytes,
        start_ns,
        first_psn: Some(0),
    }
}

/// A frame a tap saw: (tap, ns from the start, kind, outgoing, nHop, pathID, INT ts of every
/// record, N).
type Row = (usize, u64, PacketKind, bool, u8, u16, Vec<u32>, u16);

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
            int.n_hop(),
            int.path_id(),
            int.hops().iter().map(|h| h.ts).collect(),
            p.ack_n,
        ));
        Ok(())
    }
}

/// h0 - sw0 - sw1 - h1 with sw2 beside sw0 - sw1: nodes h0, h1, sw0, sw1, sw2; links 0 sw0 -
/// sw1 (at `direct_bps`), 1 sw0 - sw2, 2 sw2 - sw1, 3 h0 - sw0, 4 h1 - sw1 (100 Gbps), 1 µs
/// each. INT switch IDs 0x0A1, 0x0A2, 0x0A3.
fn diamond(direct_bps: u64) -> Topology {
    let mut t = Topology::default();
    let h0 = t.add_node("h0", NodeKind::Host);
    let h1 = t.add_node("h1", NodeKind::Host);
    let s: Vec<u32> = (0..3)
        .map(|i| t.add_node(format!("sw{i}"), NodeKind::Switch))
        .collect();
    t.add_link(s[0], s[1], direct_bps, 1_000);
    t.add_link(s[0], s[2], G100, 1_000);
    t.add_link(s[2], s[1], G100, 1_000);
    t.add_link(h0, s[0], G100, 1_000);
    t.add_link(h1, s[1], G100, 1_000);
    t
}

fn down(at_ns: u64, link: u32) -> LinkEvent {
    LinkEvent {
        at_ns,
        link,
        up: false,
    }
}

/// HPCC, three one-packet flows h0 -> h1 (a 1000-byte WRITE_ONLY: 14 + 20 + 8 + 42 (INT
/// stack) + 12 + 16 (RETH) + 1000 + 4 = 1116 B, 89 280 ps at 100 Gbps; its ACK 104 B, 8320 ps)
/// at 0, 20 and 40 µs; sw0 - sw1 is down from 10 µs to 30 µs.
/// - 0 µs: sw0, sw1 (nHop 2, pathID 0x0A1 ^ 0x0A2 = 0x003), three links: at h1 after
///   3 × (89 280 + 1 000 000) = 3 267 840 ps (3267 ns), its ACK at h0 3 × 1 008 320 ps later,
///   6 292 800 ps (6292 ns);
/// - 20 µs: through sw2 (nHop 3, pathID 0x0A1 ^ 0x0A3 ^ 0x0A2 = 0x0A0), four links: at h1
///   at 20 000 + 4 357.12 -> 24 357 ns, the ACK at h0 4 × 1 008.32 ns later, 28 390 ns;
/// - 40 µs: sw0 - sw1 again: 43 267 and 46 292 ns.
///
/// Nothing was in flight at the events: no drop. T (base RTT, the initial routes): three links
/// of a 1100-byte WRITE_MIDDLE and its ACK, 3 × (1100 + 104) × 80 = 288 960 ps + 6 µs ->
/// 6289 ns.
#[test]
fn a_link_down_reroutes_and_changes_the_int_path() {
    let mut cfg = NetConfig::new("diamond", diamond(G100), Cc::Hpcc(hpcc::Params::default()));
    cfg.duration_ns = 60_000;
    for start in [0, 20_000, 40_000] {
        cfg.flows.push(flow(0, 1, 1000, start));
    }
    cfg.link_events = vec![
        down(10_000, 0),
        LinkEvent {
            at_ns: 30_000,
            link: 0,
            up: true,
        },
    ];
    cfg.taps = vec![0, 1];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    let seen: Vec<(usize, u64, PacketKind, u8, u16)> = rec
        .0
        .iter()
        .filter(|r| !r.3)
        .map(|r| (r.0, r.1, r.2, r.4, r.5))
        .collect();
    assert_eq!(
        seen,
        [
            (1, 3267, PacketKind::Data, 2, 0x003),
            (0, 6292, PacketKind::Ack, 2, 0x003),
            (1, 24_357, PacketKind::Data, 3, 0x0A0),
            (0, 28_390, PacketKind::Ack, 3, 0x0A0),
            (1, 43_267, PacketKind::Data, 2, 0x003),
            (0, 46_292, PacketKind::Ack, 2, 0x003),
        ]
    );
    let m = &run.metrics;
    assert_eq!(m.base_rtt_ns, 6289);
    assert_eq!(m.drops, 0);
    assert!(m.flows.iter().all(|f| f.bytes_acked == 1000));
    // sw0 sent the 20 µs flow's frame towards sw2 (1116 B) and nothing else.
    let to_sw2: Vec<u64> = m
        .ports
        .iter()
        .filter(|p| p.node == "sw0" && p.peer == "sw2")
        .map(|p| p.tx_bytes)
        .collect();
    assert_eq!(to_sw2, [1116]);
}

/// DCQCN (line rate from the start, no window), one 10 000-byte WRITE h0 -> h1 over the
/// diamond with a 10 Gbps sw0 - sw1 (800 ps per byte), which goes down at 3 µs. Frames:
/// WRITE_FIRST 1074 B, then nine 1058 B (14 + 20 + 8 + 12 + 1000 + 4); at 100 Gbps 85 920 and
/// 84 640 ps. Packet k >= 1 leaves h0 at 85 920 + (k − 1) × 84 640 ps and is in sw0 1 µs plus
/// its 84 640 ps later: all ten by 1 847 680 ps. On sw0 - sw1:
/// - packet 0 from 1 085 920 ps for 859 200 ps, at sw1 at 2 945 120 ps: before the failure,
///   delivered (at h1 85 920 ps + 1 µs later, 4 031 040 ps);
/// - packet 1 from 1 945 120 ps for 846 400 ps, on the wire at 3 µs (due at sw1 at
///   3 791 520 ps): lost;
/// - packet 2 from 2 791 520 ps, being sent at 3 µs: lost;
/// - packets 3..9, queued at 3 µs: dropped.
///
/// 9 drops, all counted at sw0's port to sw1. Packet 0's ACK (62 B, 4960 ps a link) leaves
/// h1 at 4 031 040 ps and comes back through sw2 (4 links): 4 031 040 + 4 × 1 004 960 =
/// 8 050 880 ps. That progress restarts the 20 µs RTO: at 28 050 880 ps h0 goes back to
/// packet 1 and sends 1..9 back to back through sw2 (all 100 Gbps, no queue): packet 9 leaves
/// at 28 050 880 + 8 × 84 640 = 28 728 000 ps, is at h1 4 × 1 084 640 ps later
/// (33 066 560 ps) and its ACK at h0 4 × 1 004 960 ps after that: 37 086 400 ps, the FCT
/// (37 086 ns). h1 gets each packet once: 10 data frames.
#[test]
fn a_link_going_down_loses_what_it_holds() {
    let cc = Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    };
    let mut cfg = NetConfig::new("loss", diamond(G10), cc);
    cfg.duration_ns = 60_000;
    cfg.rto_ns = 20_000;
    cfg.flows.push(flow(0, 1, 10_000, 0));
    cfg.link_events = vec![down(3_000, 0)];
    cfg.taps = vec![1];
    let mut rec = Rec::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    let m = &run.metrics;
    assert_eq!(m.drops, 9);
    let dropped: Vec<(String, String, u64)> = m
        .ports
        .iter()
        .filter(|p| p.dropped > 0)
        .map(|p| (p.node.clone(), p.peer.clone(), p.dropped))
        .collect();
    assert_eq!(dropped, [("sw0".to_string(), "sw1".to_string(), 9)]);
    assert_eq!(m.flows[0].fct_ns, Some(37_086));
    assert_eq!(m.flows[0].bytes_acked, 10_000);
    let data: Vec<u64> = rec
        .0
        .iter()
        .filter(|r| r.2 == PacketKind::Data)
        .map(|r| r.1)
        .collect();
    assert_eq!(data.len(), 10);
    assert_eq!(data[0], 4031);
}

/// The INT ts of each data packet sw0 forwards, h0 -> sw0 -> h1 at 100 Gbps, HPCC, twelve
/// 1000-byte packets (12 000 B, within W_init). T = 2 × (1100 + 104) × 80 = 192 640 ps + 4 µs
/// -> 4193 ns; W_init = floor(100e9 × 4193 / 8e9) = 52 412 B; R = floor(52 412 × 8e9 / 4193)
/// = 99 999 046 029 bps, which paces 1116 B at floor(8.928e15 / R) = 89 280 ps and 1100 B at
/// 88 000 ps: the line rate. Packet 0 (1116 B) is in sw0 at 1 089 280 ps and leaves at once;
/// packet k >= 1 (1100 B) is in sw0 at 1 089 280 + 88 000 k ps but the port is busy until
/// 1 178 560 + 88 000 (k − 1) ps, when it leaves: 1089, 1178, 1266, 1354, 1442, 1530, 1618,
/// 1706, 1794, 1882, 1970, 2058 ns into the run. The capture clock starts at
/// 1 735 689 600 × 10^9 ns, which is 5 701 632 mod 2^24, a multiple of 256; with a 256 ns tick
/// the ts are 5 701 632 plus those times floored to 256: 1024 (three), 1280 (three), 1536
/// (two), 1792 (three), 2048.
#[test]
fn a_coarse_int_clock_floors_ts_to_its_tick() {
    let exact: [u32; 12] = [
        1089, 1178, 1266, 1354, 1442, 1530, 1618, 1706, 1794, 1882, 1970, 2058,
    ];
    let coarse: [u32; 12] = [
        1024, 1024, 1024, 1280, 1280, 1280, 1536, 1536, 1792, 1792, 1792, 2048,
    ];
    let ts = |global: u64, clocks: Vec<SwitchClock>| {
        let t = Topology::incast(1, G100, G100, 1_000);
        let mut cfg = NetConfig::new("tick", t, Cc::Hpcc(hpcc::Params::default()));
        cfg.duration_ns = 20_000;
        cfg.flows.push(flow(0, 1, 12_000, 0));
        cfg.taps = vec![1];
        cfg.switch.int_ts_resolution_ns = global;
        cfg.switch_clocks = clocks;
        let mut rec = Rec::default();
        let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
        assert_eq!(run.metrics.base_rtt_ns, 4193);
        rec.0
            .iter()
            .filter(|r| r.2 == PacketKind::Data)
            .map(|r| (r.6[0] & 0xFF_FFFF) - 5_701_632) // the 24-bit field
            .collect::<Vec<u32>>()
    };
    let sw0 = |tick| {
        vec![SwitchClock {
            switch: 2, // h0, h1, sw0
            int_ts_resolution_ns: tick,
        }]
    };
    assert_eq!(ts(1, vec![]), exact);
    assert_eq!(ts(256, vec![]), coarse);
    // One switch's tick instead of every switch's.
    assert_eq!(ts(1, sw0(256)), coarse);
    assert_eq!(ts(256, sw0(1)), exact);
}

/// FNCC, h0 and h1 each send one 1000-byte WRITE_ONLY (1074 B: 85 920 ps at 100 Gbps) to h2 at
/// 0 through sw0: both are in sw0 at 1 085 920 ps; h0's leaves at once and is at h2 at
/// 2 171 840 ps (2171 ns), h1's waits for it and is at h2 at 2 257 760 ps (2257 ns), 86 ns
/// later, well within T_active = T = 2 × (1058 + 106) × 80 = 186 240 ps + 4 µs -> 4187 ns:
/// the receiver's N is 1, then 2, and its ACKs carry it — or 0 ("unknown", wire.md 4) from a
/// NIC without FNCC-2, whose model still counts 1, 2.
#[test]
fn a_receiver_without_fncc_2_writes_n_zero() {
    let run = |without_n: Vec<u32>| {
        let t = Topology::incast(2, G100, G100, 1_000);
        let mut cfg = NetConfig::new("n", t, Cc::Fncc(fncc::Params::default()));
        cfg.duration_ns = 20_000;
        cfg.flows.push(flow(0, 2, 1000, 0));
        cfg.flows.push(flow(1, 2, 1000, 0));
        cfg.taps = vec![2];
        cfg.hosts_without_n = without_n;
        let mut rec = Rec::default();
        let r = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
        assert_eq!(r.metrics.base_rtt_ns, 4187);
        let acks: Vec<(u64, u16)> = rec
            .0
            .iter()
            .filter(|r| r.2 == PacketKind::Ack)
            .map(|r| (r.1, r.7))
            .collect();
        let n: Vec<u64> = r.taps[0]
            .receiver_decisions
            .iter()
            .map(|d| match d.state.get("N") {
                Some(StateValue::U64(n)) => n,
                v => panic!("N: {v:?}"),
            })
            .collect();
        (acks, n)
    };
    assert_eq!(run(vec![]), (vec![(2171, 1), (2257, 2)], vec![1, 2]));
    assert_eq!(run(vec![2]), (vec![(2171, 0), (2257, 0)], vec![1, 2]));
}

#[test]
fn bad_link_events_and_clocks_are_errors() {
    let hpcc = || Cc::Hpcc(hpcc::Params::default());
    let err = |f: &dyn Fn(&mut NetConfig)| {
        let mut cfg = NetConfig::new("bad", diamond(G100), hpcc());
        cfg.flows.push(flow(0, 1, 1000, 0));
        f(&mut cfg);
        Network::new(&cfg).err().unwrap().to_string()
    };
    let e = err(&|c| c.link_events = vec![down(1_000, 3)]);
    assert!(
        e.contains("h0–sw0: only a link between two switches"),
        "{e}"
    );
    let e = err(&|c| c.link_events = vec![down(1_000, 9)]);
    assert!(e.contains("no link 9"), "{e}");
    let e = err(&|c| c.link_events = vec![down(0, 0)]);
    assert!(e.contains("inside the run"), "{e}");
    let e = err(&|c| c.link_events = vec![down(1_000, 0), down(2_000, 0)]);
    assert!(e.contains("already down"), "{e}");
    // sw0 - sw1 and sw0 - sw2 down: sw0 is cut off.
    let e = err(&|c| c.link_events = vec![down(1_000, 0), down(2_000, 1)]);
    assert!(
        e.contains("with link sw0–sw2 down from 2000 ns") && e.contains("cannot reach"),
        "{e}"
    );
    let e = err(&|c| c.switch.int_ts_resolution_ns = 0);
    assert!(e.contains("1..=2^24"), "{e}");
    let e = err(&|c| {
        c.switch_clocks = vec![SwitchClock {
            switch: 0,
            int_ts_resolution_ns: 8,
        }]
    });
    assert!(e.contains("not a switch"), "{e}");
    let e = err(&|c| {
        c.switch.int_ts_resolution_ns = 1024;
        c.switch_taps = vec![SwitchTap { switch: 2, peer: 3 }];
    });
    assert!(
        e.contains("switch tap on sw0: its INT clock ticks every 1024 ns"),
        "{e}"
    );
    let e = err(&|c| c.hosts_without_n = vec![1]);
    assert!(e.contains("only an FNCC receiver writes N"), "{e}");
}
