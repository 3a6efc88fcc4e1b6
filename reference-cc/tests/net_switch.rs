//! Switch port taps (`NetConfig::switch_taps`, `TapSink::record_switch`) and the switch's bugs
//! and imperfections (`net::switch_device`, docs/sim.md "Switch bugs and imperfections"):
//! each against numbers computed by hand (arithmetic in the comments).
//!
//! Frame lengths used below: a RoCE WRITE_ONLY of 1000 bytes is 14 + 20 + 8 (Ethernet, IPv4,
//! UDP) + 12 (BTH) + 16 (RETH) + 1000 + 4 (ICRC) = 1074 B; with HPCC's padded 5-record INT
//! stack (2 + 5 × 8 = 42 B) 1116 B; an HPCC WRITE_MIDDLE (no RETH) 1100 B. At 100 Gbps a byte
//! takes 80 ps. The capture clock starts at 1 735 689 600 s, whose ns mod 2^24 is 5 701 632
//! (python3: 1_735_689_600_000_000_000 % 2**24).

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NpParams, RpParams};
use ccreplay_reference_cc::hpcc;
use ccreplay_reference_cc::net::{
    Cc, DequeueTruth, EPOCH_NS, FlowSpec, NetConfig, NetError, Network, NoTaps, Packet, PacketKind,
    PfcConfig, SwitchBug, SwitchDeviceConfig, SwitchTap, SwitchTapPoint, TapSink, Topology,
};

const G100: u64 = 100_000_000_000;
const G10: u64 = 10_000_000_000;
/// The capture clock's ns at simulated time 0, mod 2^24.
const TS0: u32 = 5_701_632;

fn dcqcn() -> Cc {
    Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    }
}

fn hpcc() -> Cc {
    Cc::Hpcc(hpcc::Params::default())
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

fn bug(b: SwitchBug) -> SwitchDeviceConfig {
    SwitchDeviceConfig {
        bug: Some(b),
        clock_drift_ppm: 0.0,
    }
}

/// Everything the sinks see.
#[derive(Default)]
struct Rec {
    /// Host taps: (tap, ns from the start, packet, outgoing).
    host: Vec<(usize, u64, Packet, bool)>,
    /// The INT stack of each `host` entry.
    host_int: Vec<IntStack>,
    /// Switch taps: (tap, ns from the start, packet, where).
    switch: Vec<(usize, u64, Packet, SwitchTapPoint)>,
}

impl TapSink for Rec {
    fn record(
        &mut self,
        tap: usize,
        t: u64,
        p: &Packet,
        int: &IntStack,
        out: bool,
    ) -> Result<(), NetError> {
        self.host.push((tap, t - EPOCH_NS, *p, out));
        self.host_int.push(*int);
        Ok(())
    }

    fn record_switch(
        &mut self,
        tap: usize,
        t: u64,
        p: &Packet,
        _: &IntStack,
        at: SwitchTapPoint,
    ) -> Result<(), NetError> {
        self.switch.push((tap, t - EPOCH_NS, *p, at));
        Ok(())
    }
}

impl Rec {
    /// Data frames the receiver tap (tap 0) got, in order, with their INT stacks.
    fn rx_data(&self) -> Vec<(Packet, IntStack)> {
        self.host
            .iter()
            .zip(&self.host_int)
            .filter(|(r, _)| !r.3 && r.2.kind == PacketKind::Data)
            .map(|(r, int)| (r.2, *int))
            .collect()
    }

    /// The INT record the switch (the data's only hop) wrote into each received data packet,
    /// as on the wire.
    fn hop0(&self) -> Vec<IntHop> {
        self.rx_data()
            .iter()
            .map(|(_, int)| wire(int.hops()[0]))
            .collect()
    }
}

/// A record as the wire carries it (the engine keeps the counters wide; encoding masks them
/// to their widths: ts mod 2^24, txBytes mod 2^20).
fn wire(h: IntHop) -> IntHop {
    IntHop::from_bytes(h.to_bytes())
}

/// `n` senders, one 1000-byte WRITE_ONLY each at t = 0, into h`n` over one switch, 100 Gbps,
/// 1 µs links; the receiver tapped.
fn burst(n: u32, cc: Cc) -> NetConfig {
    let mut cfg = NetConfig::new("burst", Topology::incast(n, G100, G100, 1_000), cc);
    cfg.duration_ns = 20_000;
    for s in 0..n {
        cfg.flows.push(flow(s, n, 1000));
    }
    cfg.taps = vec![n];
    cfg
}

fn run(cfg: &NetConfig) -> Rec {
    let mut rec = Rec::default();
    Network::new(cfg).unwrap().run(&mut rec).unwrap();
    rec
}

/// RED with Kmin = Kmax = 600 (p = 0 up to 600 bytes, 1 above), four 1074-byte frames reaching
/// sw0 at the same instant, 1 000 000 + 85 920 = 1 085 920 ps; the port under test is sw0's
/// port to h4 (node 4; sw0 is node 5).
/// - Enqueue: the first finds nothing waiting and starts at once, the second finds 0 bytes
///   waiting (the first is on the wire), the third 1074, the fourth 2148: q_enq 0, 0, 1074,
///   2148; p 0, 0, 1, 1; the third and fourth are marked.
/// - Dequeue at 1 085 920, + 85 920 = 1 171 840, 1 257 760, 1 343 680 ps (1085, 1171, 1257,
///   1343 ns), leaving 0, 2148, 1074, 0 bytes behind.
/// - The tap sees each frame arrive at 1085 ns from h0..h3, unmarked, and leave marked or not.
#[test]
fn switch_tap_events_and_truth_by_hand() {
    let mut cfg = burst(4, dcqcn());
    cfg.switch.red = Some(RedParams {
        kmin_bytes: 600,
        kmax_bytes: 600,
        pmax: 1.0,
    });
    cfg.switch_taps = vec![SwitchTap { switch: 5, peer: 4 }];
    let rec = run(&cfg);
    let arrived: Vec<(u64, u32, u8)> = rec
        .switch
        .iter()
        .filter_map(|r| match r.3 {
            SwitchTapPoint::Arrived { from } => Some((r.1, from, r.2.ecn)),
            _ => None,
        })
        .collect();
    assert_eq!(
        arrived,
        [(1085, 0, 2), (1085, 1, 2), (1085, 2, 2), (1085, 3, 2)]
    );
    let departed: Vec<(u64, u8, DequeueTruth)> = rec
        .switch
        .iter()
        .filter_map(|r| match r.3 {
            SwitchTapPoint::Departed { truth } => Some((r.1, r.2.ecn, truth.unwrap())),
            _ => None,
        })
        .collect();
    let t = |from, q_enq, q_deq, marked, p| DequeueTruth {
        t_in_ns: EPOCH_NS + 1085,
        from,
        qlen_at_enqueue: q_enq,
        qlen_at_dequeue: q_deq,
        marked,
        p,
    };
    assert_eq!(
        departed,
        [
            (1085, 2, t(0, 0, 0, false, 0.0)),
            (1171, 2, t(1, 0, 2148, false, 0.0)),
            (1257, 3, t(2, 1074, 1074, true, 1.0)),
            (1343, 3, t(3, 2148, 0, true, 1.0)),
        ]
    );
    // Nothing else: the ACKs go to the senders' ports, no PFC.
    assert_eq!(rec.switch.len(), 8);
    assert!(rec.switch.iter().all(|r| r.0 == 0));
    // Not a neighbour, not a switch, twice the same port: errors.
    cfg.switch_taps = vec![SwitchTap { switch: 5, peer: 5 }];
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(
        e.contains("not a neighbour of it (neighbours: h0, h1, h2, h3, h4)"),
        "{e}"
    );
    cfg.switch_taps = vec![SwitchTap { switch: 0, peer: 5 }];
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("h0: not a switch"), "{e}");
    cfg.switch_taps = vec![SwitchTap { switch: 5, peer: 4 }; 2];
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("two switch taps on port sw0:h4"), "{e}");
}

/// `mark-average-queue` with w = 1/2 on the burst above: the average after each enqueue is
/// 0, 0, (0 + 1074) / 2 = 537, (537 + 2148) / 2 = 1342.5 (floored: 1342): only the fourth is
/// above 600. The correct switch marks the third and the fourth.
/// `mark-on-dequeue`: the queue behind each as it leaves is 0, 2148, 1074, 0: the second and
/// the third are marked.
#[test]
fn red_bugs_mark_other_packets() {
    let mut cfg = burst(4, dcqcn());
    cfg.switch.red = Some(RedParams {
        kmin_bytes: 600,
        kmax_bytes: 600,
        pmax: 1.0,
    });
    cfg.switch_taps = vec![SwitchTap { switch: 5, peer: 4 }];
    let ecn = |cfg: &NetConfig| -> (Vec<u8>, Vec<f64>) {
        let rec = run(cfg);
        let p = rec
            .switch
            .iter()
            .filter_map(|r| match r.3 {
                SwitchTapPoint::Departed { truth } => truth.map(|t| t.p),
                _ => None,
            })
            .collect();
        (rec.rx_data().iter().map(|(p, _)| p.ecn).collect(), p)
    };
    assert_eq!(ecn(&cfg), (vec![2, 2, 3, 3], vec![0.0, 0.0, 1.0, 1.0]));
    cfg.switch_device = bug(SwitchBug::MarkAverageQueue { avg_weight: 0.5 });
    assert_eq!(ecn(&cfg), (vec![2, 2, 2, 3], vec![0.0, 0.0, 0.0, 1.0]));
    cfg.switch_device = bug(SwitchBug::MarkOnDequeue);
    assert_eq!(ecn(&cfg), (vec![2, 3, 3, 2], vec![0.0, 1.0, 1.0, 0.0]));
}

/// HPCC, three 1116-byte WRITE_ONLYs reaching sw0 at 1 000 000 + 89 280 = 1 089 280 ps and
/// leaving at 1 089 280, 1 178 560 and 1 267 840 ps with 0, 1116 and 0 bytes behind them.
/// - qLen: 0, floor(1116 / 80) = 13, 0; with `qlen-wrong-unit` 0, 1116, 0.
/// - ts (no offset): TS0 + 1089 = 5 702 721, TS0 + 1178 = 5 702 810, TS0 + 1267 = 5 702 899;
///   with `ingress-timestamp` all three read their arrival, 5 702 721.
#[test]
fn int_qlen_unit_and_timestamp_bugs_by_hand() {
    let cfg = burst(3, hpcc());
    let hops = run(&cfg).hop0();
    let q: Vec<u16> = hops.iter().map(|h| h.qlen).collect();
    let ts: Vec<u32> = hops.iter().map(|h| h.ts).collect();
    assert_eq!(q, [0, 13, 0]);
    assert_eq!(ts, [TS0 + 1089, TS0 + 1178, TS0 + 1267]);

    let mut b = cfg.clone();
    b.switch_device = bug(SwitchBug::QlenWrongUnit);
    let hops = run(&b).hop0();
    assert_eq!(
        hops.iter().map(|h| h.qlen).collect::<Vec<_>>(),
        [0, 1116, 0]
    );
    assert_eq!(hops.iter().map(|h| h.ts).collect::<Vec<_>>(), ts);

    let mut b = cfg.clone();
    b.switch_device = bug(SwitchBug::IngressTimestamp);
    let hops = run(&b).hop0();
    assert_eq!(
        hops.iter().map(|h| h.ts).collect::<Vec<_>>(),
        [TS0 + 1089; 3]
    );
    assert_eq!(hops.iter().map(|h| h.qlen).collect::<Vec<_>>(), q);
}

/// HPCC, one 10 000-byte message h0 -> h1: ten packets, a 1116-byte WRITE_FIRST then nine
/// 1100-byte frames, all sent at once (the initial window, C × T ≈ 52 KB, holds them), and the
/// switch's port to h1 carries nothing else. txBytes counts the bytes sent before the packet,
/// in 128-byte units: packet k (k >= 1) has 1116 + (k − 1) × 1100 frame bytes before it —
/// floor(1116 / 128) = 8, floor(2216 / 128) = 17, ..., floor(9916 / 128) = 77 — but
/// k × 1000 payload bytes with `txbytes-no-headers`: floor(1000 / 128) = 7, 15, ...,
/// floor(9000 / 128) = 70. With int_tx_bytes_offset = 2^27 − 1000 the counter starts 1000
/// bytes below its wrap: packet 0 of the buggy switch reads floor((2^27 − 1000) / 128)
/// = 1 048 568, packet 1 floor(2^27 / 128) mod 2^20 = 0, packet 9 floor((2^27 + 8000) / 128)
/// mod 2^20 = 62.
#[test]
fn txbytes_without_headers_by_hand() {
    let mut cfg = NetConfig::new("tx", Topology::incast(1, G100, G100, 1_000), hpcc());
    cfg.duration_ns = 50_000;
    cfg.flows.push(flow(0, 1, 10_000));
    cfg.taps = vec![1];
    let tx = |cfg: &NetConfig| -> Vec<u32> { run(cfg).hop0().iter().map(|h| h.tx_bytes).collect() };
    let frames: Vec<u32> = (0..10u32)
        .map(|k| {
            if k == 0 {
                0
            } else {
                (1116 + (k - 1) * 1100) / 128
            }
        })
        .collect();
    assert_eq!(frames[..3], [0, 8, 17]);
    assert_eq!(frames[9], 77);
    assert_eq!(tx(&cfg), frames);
    let mut b = cfg.clone();
    b.switch_device = bug(SwitchBug::TxBytesNoHeaders);
    let payload: Vec<u32> = (0..10u32).map(|k| k * 1000 / 128).collect();
    assert_eq!(payload[..3], [0, 7, 15]);
    assert_eq!(payload[9], 70);
    assert_eq!(tx(&b), payload);
    b.switch.int_tx_bytes_offset = (1 << 27) - 1000;
    let wrapped = tx(&b);
    assert_eq!(wrapped[0], 1_048_568);
    assert_eq!(wrapped[1], 0);
    assert_eq!(wrapped[9], 62);
}

/// `clock_drift_ppm` = 1000 over a chain h0 - sw0 - sw1 - h1 (100 Gbps, 1 µs links), one
/// 1116-byte WRITE_ONLY sent at 1 ms: it leaves sw0 (switch 0: exact) at 1 000 000 000 ps
/// plus 89 280 + 1 000 000, 1 001 089 280 ps, and sw1 (switch 1: 1 × 1000 ppm fast) at
/// 1 002 178 560 ps. sw0's ts: TS0 + 1 001 089 = 6 702 721; sw1's: TS0 + 1 002 178 plus
/// floor(1 002 178 × 0.001), 6 703 810 + 1002 = 6 704 812.
#[test]
fn clock_drift_by_hand() {
    let mut cfg = NetConfig::new("drift", Topology::chain(2, 1, G100, G100, 1_000), hpcc());
    cfg.duration_ns = 1_100_000;
    cfg.flows.push(FlowSpec {
        start_ns: 1_000_000,
        ..flow(0, 1, 1000)
    });
    cfg.taps = vec![1];
    let ts = |cfg: &NetConfig| -> Vec<u32> {
        run(cfg).rx_data()[0]
            .1
            .hops()
            .iter()
            .map(|&h| wire(h).ts)
            .collect()
    };
    assert_eq!(ts(&cfg), [6_702_721, 6_703_810]);
    cfg.switch_device.clock_drift_ppm = 1000.0;
    assert_eq!(ts(&cfg), [6_702_721, 6_704_812]);
}

/// A 100 Gbps sender into a 10 Gbps link, PFC XOFF 20 000 B, XON 10 000 B, no ECN: the switch
/// with `xoff-threshold-off` and an error of 20 000 bytes is, byte for byte, the correct
/// switch with XOFF at 40 000 bytes — the XOFF is sent exactly 20 000 bytes later. At its first
/// XOFF the ingress holds more than 40 000 bytes: the frames that arrived from h0, less those
/// that left, until the XOFF starts (one more arrival at most while a 62-byte ACK is ahead of
/// it on the port to h0).
#[test]
fn xoff_later_by_exactly_the_error() {
    let mk = |xoff_bytes: u64, dev: SwitchDeviceConfig| {
        let mut cfg = NetConfig::new("xoff", Topology::incast(1, G100, G10, 1_000), dcqcn());
        cfg.duration_ns = 400_000;
        cfg.switch.buffer_bytes = 200_000;
        cfg.switch.red = None;
        cfg.switch.pfc = Some(PfcConfig {
            xoff_bytes,
            xon_bytes: 10_000,
            pause_quanta: 0xFFFF,
        });
        cfg.switch_device = dev;
        cfg.flows.push(flow(0, 1, 1_000_000));
        cfg.taps = vec![0];
        cfg.switch_taps = vec![SwitchTap { switch: 2, peer: 1 }];
        cfg
    };
    let go = |cfg: &NetConfig| {
        let mut rec = Rec::default();
        let m = Network::new(cfg).unwrap().run(&mut rec).unwrap().metrics;
        (rec, m)
    };
    let buggy = mk(
        20_000,
        bug(SwitchBug::XoffThresholdOff {
            xoff_error_bytes: 20_000,
        }),
    );
    let (rb, mb) = go(&buggy);
    let (rl, ml) = go(&mk(40_000, SwitchDeviceConfig::default()));
    let (_, mc) = go(&mk(20_000, SwitchDeviceConfig::default()));
    assert_eq!(mb, ml);
    assert_ne!(mb, mc);
    assert_eq!(rb.host.len(), rl.host.len());
    assert!(rb.host.iter().zip(&rl.host).all(|(a, b)| a == b));
    assert!(mb.pfc.pause_frames > 0);
    // The ingress bytes at the first XOFF, from the tap's records.
    let mut held: i64 = 0;
    for r in &rb.switch {
        match r.3 {
            SwitchTapPoint::Arrived { .. } => held += i64::from(r.2.wire_bytes),
            SwitchTapPoint::Departed { truth: Some(_) } => held -= i64::from(r.2.wire_bytes),
            SwitchTapPoint::PauseSent { to } => {
                assert_eq!(to, 0);
                assert!(r.2.pfc_quanta > 0);
                assert!((40_001..=40_000 + 2 * 1058).contains(&held), "{held}");
                break;
            }
            _ => {}
        }
    }
}

/// The refresh set-up of net_engine.rs (100 Gbps into 1 Gbps, XOFF 5000 B, XON 0, 100-quanta
/// pauses of 100 × 512 / 100 Gbps = 512 ns): the correct switch refreshes its XOFF every
/// 256 ns for as long as the ingress stays above XON; with `no-pause-refresh` the sender gets
/// one XOFF and no XON in the whole run (the ingress never drains to 0 again at 1 Gbps), and
/// sends its next data frame exactly 512 ns after the XOFF reached it (both times multiples of
/// 1000 ps apart, so the floors to ns differ by 512 exactly).
#[test]
fn no_pause_refresh_by_hand() {
    let mut cfg = NetConfig::new(
        "refresh",
        Topology::incast(1, G100, 1_000_000_000, 1_000),
        dcqcn(),
    );
    cfg.duration_ns = 100_000;
    cfg.switch.red = None;
    cfg.switch.pfc = Some(PfcConfig {
        xoff_bytes: 5_000,
        xon_bytes: 0,
        pause_quanta: 100,
    });
    cfg.flows.push(flow(0, 1, 10_000_000));
    cfg.taps = vec![0];
    let pauses = |rec: &Rec| -> Vec<(u64, u16)> {
        rec.host
            .iter()
            .filter(|r| r.2.kind == PacketKind::Pfc)
            .map(|r| (r.1, r.2.pfc_quanta))
            .collect()
    };
    let good = run(&cfg);
    assert!(pauses(&good).len() > 10);
    cfg.switch_device = bug(SwitchBug::NoPauseRefresh);
    let rec = run(&cfg);
    let p = pauses(&rec);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].1, 100);
    let at = rec
        .host
        .iter()
        .position(|r| r.2.kind == PacketKind::Pfc)
        .unwrap();
    let next = rec.host[at..]
        .iter()
        .find(|r| r.3 && r.2.kind == PacketKind::Data)
        .unwrap();
    assert_eq!(next.1 - p[0].0, 512);
    let m = Network::new(&cfg)
        .unwrap()
        .run(&mut NoTaps)
        .unwrap()
        .metrics;
    assert_eq!(m.pfc.pause_frames, 1);
}

/// Bugs that cannot show are configuration errors naming the valid ones.
#[test]
fn switch_bugs_are_checked() {
    let mut cfg = burst(2, hpcc());
    cfg.switch_device = bug(SwitchBug::MarkOnDequeue);
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("is a switch bug of dcqcn, not of hpcc"), "{e}");
    cfg.switch_device = bug(SwitchBug::NoPauseRefresh);
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("add [switch.pfc]"), "{e}");
    let mut cfg = burst(2, dcqcn());
    cfg.switch_device = bug(SwitchBug::MarkOnDequeue);
    let e = Network::new(&cfg).err().unwrap().to_string();
    assert!(e.contains("add [switch.red]"), "{e}");
    cfg.switch.red = Some(RedParams::default());
    assert!(Network::new(&cfg).is_ok());
}
