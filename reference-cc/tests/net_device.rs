//! The sender NIC's hardware and bugs (`net::device`, docs/sim.md "NIC hardware and bugs"):
//! each behaviour against numbers computed by hand (arithmetic in the comments), each bug
//! against the formula it breaks, and the wrappers against scripted models.

use std::cell::RefCell;
use std::rc::Rc;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NpParams, RpParams};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::net::device::{
    CutTwice, IgnoreCnp, IntWrongHop, NeverGrows, StaleRate, Start,
};
use ccreplay_reference_cc::net::packet::{WRITE_FIRST, WRITE_MIDDLE};
use ccreplay_reference_cc::net::{
    Cc, DeviceConfig, EPOCH_NS, FlowSpec, NetConfig, NetError, Network, NicBug, NoTaps, Packet,
    PacketKind, RunResult, TapSink, Topology, frame_len,
};
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Model, Outputs, StateValue, hpcc};

const G10: u64 = 10_000_000_000;
const G25: u64 = 25_000_000_000;
const G100: u64 = 100_000_000_000;

fn flow(src: u32, dst: u32, size_bytes: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        size_bytes,
        start_ns: 0,
        first_psn: Some(0),
    }
}

/// Outgoing data frames of tap 0: ns from the start.
#[derive(Default)]
struct DataOut(Vec<u64>, u64);

impl TapSink for DataOut {
    fn record(
        &mut self,
        tap: usize,
        t: u64,
        p: &Packet,
        _: &IntStack,
        out: bool,
    ) -> Result<(), NetError> {
        if tap == 0 && out && p.kind == PacketKind::Data {
            self.0.push(t - EPOCH_NS);
        }
        if tap == 0 && !out && p.kind == PacketKind::Cnp {
            self.1 += 1; // CNPs that reached the tapped sender
        }
        Ok(())
    }
}

/// One DCQCN flow h0 -> h1 over 10 Gbps links, no RED (so no CNP: the rate stays the start
/// rate), 20 packets.
fn one_dcqcn_flow(device: DeviceConfig) -> Vec<u64> {
    let cc = Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    };
    let mut cfg = NetConfig::new("one", Topology::incast(1, G10, G10, 1_000), cc);
    cfg.duration_ns = 30_000;
    cfg.flows.push(flow(0, 1, 20_000));
    cfg.taps = vec![0];
    cfg.device = device;
    let mut rec = DataOut::default();
    Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    rec.0.truncate(6);
    rec.0
}

/// Frames: WRITE_FIRST = 14 + 20 + 8 + 12 (BTH) + 16 (RETH) + 1000 + 4 (ICRC) = 1074 B, then
/// WRITE_MIDDLE = 1058 B; at 10 Gbps a byte takes 800 ps.
#[test]
fn frame_lengths_used_below() {
    assert_eq!(
        frame_len(Dialect::Roce, PacketKind::Data, WRITE_FIRST, 1000),
        1074
    );
    assert_eq!(
        frame_len(Dialect::Roce, PacketKind::Data, WRITE_MIDDLE, 1000),
        1058
    );
}

/// The ideal NIC sends at line rate: the pacer (10 Gbps) spaces frames by their own
/// serialisation, 1074 × 800 = 859 200 ps, then 1058 × 800 = 846 400 ps each:
/// 0, 859 200, 1 705 600, 2 552 000, 3 398 400, 4 244 800 ps.
///
/// With `rate_mantissa_bits` = 4 the limiter runs at 10^10 floored to 4 significant bits:
/// 10^10 has 34 bits, 10^10 >> 30 = 9 (9 × 2^30 = 9 663 676 416 <= 10^10 < 10 × 2^30), so
/// R = 9 663 676 416 bps. The pacer spaces frames by ser(1074, R) = floor(1074 × 8e12 / R) =
/// 889 102 ps, then ser(1058, R) = floor(1058 × 8e12 / R) = 875 857 ps: 0, 889 102,
/// 1 764 959, 2 640 816, 3 516 673, 4 392 530 ps.
#[test]
fn rate_mantissa_bits_paces_at_the_floored_rate() {
    assert_eq!(
        one_dcqcn_flow(DeviceConfig::default()),
        [0, 859, 1705, 2552, 3398, 4244]
    );
    let dev = DeviceConfig {
        rate_mantissa_bits: 4,
        ..DeviceConfig::default()
    };
    assert_eq!(one_dcqcn_flow(dev), [0, 889, 1764, 2640, 3516, 4392]);
    // 34 or more bits keep 10^10 exactly: line rate again.
    let dev = DeviceConfig {
        rate_mantissa_bits: 34,
        ..DeviceConfig::default()
    };
    assert_eq!(one_dcqcn_flow(dev), [0, 859, 1705, 2552, 3398, 4244]);
}

/// `burst_bytes` = 3000 at R = 9 663 676 416 bps (as above): the first batch is p0 at 0, p1
/// when the link is free at 859 200, p2 at 859 200 + 846 400 = 1 705 600 (1074 + 1058 = 2132
/// < 3000 B, 3190 >= 3000 ends the batch). The pacer advanced 889 102 + 875 857 + 875 857 =
/// 2 640 816 ps: p3 goes then (as with per-packet pacing), p4 at 2 640 816 + 846 400 =
/// 3 487 216 and p5 at 4 333 616 ps.
#[test]
fn burst_bytes_sends_batches_back_to_back() {
    let dev = DeviceConfig {
        rate_mantissa_bits: 4,
        burst_bytes: 3000,
        ..DeviceConfig::default()
    };
    assert_eq!(one_dcqcn_flow(dev), [0, 859, 1705, 2640, 3487, 4333]);
    // A burst of at most one frame (every frame here is >= 1058 B) is per-packet pacing.
    let dev = DeviceConfig {
        rate_mantissa_bits: 4,
        burst_bytes: 1058,
        ..DeviceConfig::default()
    };
    assert_eq!(one_dcqcn_flow(dev), [0, 889, 1764, 2640, 3516, 4392]);
}

/// Two 25 Gbps DCQCN senders into a 10 Gbps receiver link, RED 5 / 20 KB / p = 1 (as the
/// bundled roce_dcqcn): CNPs come within tens of µs. h0 is tapped; 1 ns metric samples.
fn dcqcn_incast(rp: RpParams, device: DeviceConfig, duration_ns: u64) -> (RunResult, DataOut) {
    let cc = Cc::Dcqcn {
        rp,
        np: NpParams::default(),
    };
    let mut cfg = NetConfig::new("incast", Topology::incast(2, G25, G10, 1_000), cc);
    cfg.switch.red = Some(RedParams {
        kmin_bytes: 5_000,
        kmax_bytes: 20_000,
        pmax: 1.0,
    });
    cfg.duration_ns = duration_ns;
    cfg.sample_interval_ns = 1;
    cfg.flows = vec![flow(0, 2, 10_000_000), flow(1, 2, 10_000_000)];
    cfg.taps = vec![0];
    cfg.device = device;
    let mut rec = DataOut::default();
    let run = Network::new(&cfg).unwrap().run(&mut rec).unwrap();
    (run, rec)
}

/// The first sample (ns) at which flow 0's applied rate differs from the start rate, and it.
fn first_rate_change(run: &RunResult) -> (u64, u64) {
    let s = &run.metrics.flows[0].rate_bps;
    let i = s.v.iter().position(|&v| v != s.v[0]).unwrap();
    (s.t_ns[i], s.v[i])
}

fn cnp_decisions(run: &RunResult) -> Vec<&Decision> {
    run.taps[0]
        .sender_decisions
        .iter()
        .filter(|d| d.flow == 0 && matches!(d.cause, Cause::Event { kind: "rx_cnp", .. }))
        .collect()
}

/// The first decision is h0's first CNP: eq. 1 with alpha = 1 halves the line rate, 25e9 / 2 =
/// 12.5e9. Without a latency the pacer runs at it from the first 1 ns sample at or after the
/// CNP; with `reaction_ns` = 5000, exactly 5000 samples later (the runs are the same until
/// the decision takes effect, so the CNP comes at the same ps).
#[test]
fn reaction_ns_delays_the_first_rate_change_exactly() {
    let (a, _) = dcqcn_incast(RpParams::default(), DeviceConfig::default(), 100_000);
    let dev = DeviceConfig {
        reaction_ns: 5_000,
        ..DeviceConfig::default()
    };
    let (b, _) = dcqcn_incast(RpParams::default(), dev, 100_000);
    let (da, db) = (cnp_decisions(&a)[0], cnp_decisions(&b)[0]);
    assert_eq!(da, db);
    assert_eq!(da.outputs.rate_bps, Some(12_500_000_000));
    let (ta, ra) = first_rate_change(&a);
    let (tb, rb) = first_rate_change(&b);
    let t_cnp = da.t_ns - EPOCH_NS;
    assert!(ta == t_cnp || ta == t_cnp + 1, "{ta} vs CNP at {t_cnp}");
    assert_eq!(tb, ta + 5_000);
    assert_eq!((ra, rb), (12_500_000_000, 12_500_000_000));
}

/// `cut-twice` with alpha starting at 0.5 (g = 1/256): eq. 1 once gives Rc = floor(25e9 ×
/// (1 − 0.25)) = 18 750 000 000 and alpha = (1 − 1/256) × 0.5 + 1/256 = 0.501953125; the
/// second pass gives Rc = floor(18.75e9 × (1 − 0.2509765625)) = floor(18.75e9 × 0.75 −
/// 18.75e9 × 0.0009765625) = floor(14 062 500 000 − 18 310 546.875) = 14 044 189 453. The
/// ideal NIC stops after the first.
#[test]
fn cut_twice_applies_the_dcqcn_cut_twice() {
    let rp = RpParams {
        initial_alpha_value: 0.5,
        ..RpParams::default()
    };
    let (ideal, _) = dcqcn_incast(rp.clone(), DeviceConfig::default(), 60_000);
    let dev = DeviceConfig {
        bug: Some(NicBug::CutTwice),
        ..DeviceConfig::default()
    };
    let (buggy, _) = dcqcn_incast(rp, dev, 60_000);
    let i = cnp_decisions(&ideal);
    let b = cnp_decisions(&buggy);
    assert_eq!(i[0].outputs.rate_bps, Some(18_750_000_000));
    assert_eq!(i[0].state.get("alpha"), Some(StateValue::F64(0.501953125)));
    // Both passes at the first CNP's time, for the same event.
    assert_eq!((b[0].t_ns, b[0].cause), (i[0].t_ns, i[0].cause));
    assert_eq!((b[1].t_ns, b[1].cause), (i[0].t_ns, i[0].cause));
    assert_eq!(b[0].outputs.rate_bps, Some(18_750_000_000));
    assert_eq!(b[1].outputs.rate_bps, Some(14_044_189_453));
    assert_eq!(first_rate_change(&buggy).1, 14_044_189_453);
    assert_eq!(first_rate_change(&ideal).1, 18_750_000_000);
}

/// `alpha-gain` 1/16 with alpha starting at 0.5: the first CNP leaves alpha =
/// (1 − 1/16) × 0.5 + 1/16 = 0.53125 (the configured g = 1/256 gives 0.501953125); the rate
/// cut uses the alpha before it, so it is the same 18.75e9.
#[test]
fn alpha_gain_runs_the_model_with_that_g() {
    let rp = RpParams {
        initial_alpha_value: 0.5,
        ..RpParams::default()
    };
    let dev = DeviceConfig {
        bug: Some(NicBug::AlphaGain {
            alpha_g: 1.0 / 16.0,
        }),
        ..DeviceConfig::default()
    };
    let (run, _) = dcqcn_incast(rp, dev, 60_000);
    let d = cnp_decisions(&run)[0];
    assert_eq!(d.outputs.rate_bps, Some(18_750_000_000));
    assert_eq!(d.state.get("alpha"), Some(StateValue::F64(0.53125)));
}

fn u(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        v => panic!("{name}: {v:?}"),
    }
}

/// Per decision of flow 0 after a CNP: (Rt before, Rt after, timer stage, byte stage) for the
/// increases (rate_increase timer or byte counter) in the additive-increase region of DCQCN-3
/// (max(stages) >= F = 5 and min(stages) <= F).
fn additive_steps(run: &RunResult) -> Vec<(u64, u64)> {
    let mut prev_rt = None;
    let mut out = Vec::new();
    for d in run.taps[0].sender_decisions.iter().filter(|d| d.flow == 0) {
        let (rt, ts, bs) = (u(d, "Rt"), u(d, "timer_stage"), u(d, "byte_stage"));
        let increase = match d.cause {
            Cause::Timer { name } => name == "rate_increase",
            Cause::Event { kind, .. } => kind == "tx_data",
        };
        if increase && ts.max(bs) >= 5 && ts.min(bs) <= 5 {
            out.push((prev_rt.unwrap_or(rt), rt));
        }
        prev_rt = Some(rt);
    }
    out
}

/// `no-additive-increase`: in the additive-increase stages eq. 4 adds R_AI (here 400 Mbps) to
/// Rt (clamped to the line rate); the buggy NIC adds 0.
#[test]
fn no_additive_increase_keeps_rt_in_the_ai_stages() {
    let rp = RpParams {
        rpg_byte_reset: 100_000,
        rpg_ai_rate: 400,
        rpg_hai_rate: 4_000,
        ..RpParams::default()
    };
    let (ideal, _) = dcqcn_incast(rp.clone(), DeviceConfig::default(), 1_000_000);
    let steps = additive_steps(&ideal);
    assert!(
        steps
            .iter()
            .any(|&(a, b)| b == (a + 400_000_000).min(G25) && b != a),
        "the ideal run has additive increases: {steps:?}"
    );
    let dev = DeviceConfig {
        bug: Some(NicBug::NoAdditiveIncrease),
        ..DeviceConfig::default()
    };
    let (buggy, _) = dcqcn_incast(rp, dev, 1_000_000);
    let steps = additive_steps(&buggy);
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|&(a, b)| a == b), "{steps:?}");
}

/// `ignore-cnp` in the loop: the model's CNP decisions of a flow are at least `ignore_cnp_ns`
/// apart, and fewer than the CNPs that came (the ideal NIC's are only DCQCN-2's 50 µs apart).
#[test]
fn ignore_cnp_in_the_loop_spaces_the_cuts() {
    let gaps = |run: &RunResult| -> Vec<u64> {
        cnp_decisions(run)
            .windows(2)
            .map(|w| w[1].t_ns - w[0].t_ns)
            .collect()
    };
    let (ideal, _) = dcqcn_incast(RpParams::default(), DeviceConfig::default(), 1_000_000);
    assert!(gaps(&ideal).iter().any(|&g| g < 100_000));
    let dev = DeviceConfig {
        bug: Some(NicBug::IgnoreCnp {
            ignore_cnp_ns: 100_000,
        }),
        ..DeviceConfig::default()
    };
    let (buggy, rec) = dcqcn_incast(RpParams::default(), dev, 1_000_000);
    let g = gaps(&buggy);
    assert!(!g.is_empty() && g.iter().all(|&g| g >= 100_000), "{g:?}");
    let decided = buggy.taps[0]
        .sender_decisions
        .iter()
        .filter(|d| matches!(d.cause, Cause::Event { kind: "rx_cnp", .. }))
        .count() as u64;
    assert!(decided < rec.1, "{decided} CNP decisions, {} CNPs", rec.1);
}

/// A model that answers every event with the next scripted (window, rate) and keeps what it
/// was fed.
struct Script {
    outputs: Vec<(Option<u64>, Option<u64>)>,
    fed: Rc<RefCell<Vec<Event>>>,
}

impl Model for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let i = self.fed.borrow().len();
        self.fed.borrow_mut().push(*ev);
        let (window_bytes, rate_bps) = self.outputs.get(i).copied().unwrap_or_default();
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                rate_bps,
                window_bytes,
                ..Outputs::default()
            },
            state: Default::default(),
        });
    }
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    fn on_timer(&mut self, _: u64, _: &mut Vec<Decision>) {}
}

fn script(outputs: &[(Option<u64>, Option<u64>)]) -> (Box<dyn Model>, Rc<RefCell<Vec<Event>>>) {
    let fed = Rc::new(RefCell::new(Vec::new()));
    let m = Script {
        outputs: outputs.to_vec(),
        fed: fed.clone(),
    };
    (Box::new(m), fed)
}

fn ev(t_ns: u64, index: u64, kind: EventKind) -> Event {
    Event {
        t_ns,
        flow: 0,
        index,
        kind,
    }
}

fn feed(m: &mut dyn Model, evs: &[Event]) -> Vec<(Option<u64>, Option<u64>)> {
    let mut out = Vec::new();
    for e in evs {
        m.on_event(e, &mut out);
    }
    out.iter()
        .map(|d| (d.outputs.window_bytes, d.outputs.rate_bps))
        .collect()
}

/// CNPs at 0, 50, 99.999, 100, 150 and 230 µs with a 100 µs window: 0 passes, 50 and
/// 99.999 are within 100 µs of it, 100 is not (100 − 0 = 100 µs), 150 is within 100 µs of 100,
/// 230 is not. Other events always pass.
#[test]
fn ignore_cnp_passes_one_cnp_per_window() {
    let (inner, fed) = script(&[]);
    let mut m = IgnoreCnp::new(inner, 100_000);
    let cnps = [0, 50_000, 99_999, 100_000, 150_000, 230_000];
    let mut evs: Vec<Event> = cnps
        .iter()
        .enumerate()
        .map(|(i, &t)| ev(t, i as u64, EventKind::RxCnp))
        .collect();
    let data = EventKind::TxData {
        psn: 0,
        bytes: 1000,
        opcode: 6,
    };
    evs.insert(5, ev(160_000, 6, data));
    feed(&mut m, &evs);
    let times: Vec<u64> = fed.borrow().iter().map(|e| e.t_ns).collect();
    assert_eq!(times, [0, 100_000, 160_000, 230_000]);
}

#[test]
fn cut_twice_feeds_each_cnp_twice() {
    let (inner, fed) = script(&[]);
    let mut m = CutTwice::new(inner);
    let data = EventKind::TxData {
        psn: 0,
        bytes: 1000,
        opcode: 6,
    };
    feed(&mut m, &[ev(5, 0, data), ev(7, 1, EventKind::RxCnp)]);
    let got: Vec<(u64, u64)> = fed.borrow().iter().map(|e| (e.t_ns, e.index)).collect();
    assert_eq!(got, [(5, 0), (7, 1), (7, 1)]);
}

/// Start: window 100, rate 1000. Decisions (window, rate): (90, 900) both lower: applied;
/// (95, 950) both higher: dropped; (80, 900) window lower, rate equal: window applied only;
/// (80, 800) window equal: dropped, rate lower: applied; (None, 2000): dropped.
#[test]
fn window_never_grows_keeps_only_lower_values() {
    let (inner, _) = script(&[
        (Some(90), Some(900)),
        (Some(95), Some(950)),
        (Some(80), Some(900)),
        (Some(80), Some(800)),
        (None, Some(2000)),
    ]);
    let start = Start {
        window_bytes: Some(100),
        rate_bps: 1000,
    };
    let mut m = NeverGrows::new(inner, start);
    let evs: Vec<Event> = (0..5).map(|i| ev(i, i, EventKind::RxCnp)).collect();
    assert_eq!(
        feed(&mut m, &evs),
        [
            (Some(90), Some(900)),
            (None, None),
            (Some(80), None),
            (None, Some(800)),
            (None, None),
        ]
    );
}

/// T = 10 ns. Rates 100 at 0 (first: kept), 50 at 5 (same RTT: 100), 40 at 10 (10 − 0 >= T:
/// a new RTT keeps 40), 60 at 19 (40), 70 at 20 (new RTT: 70). Windows pass unchanged.
#[test]
fn stale_window_keeps_the_first_rate_of_each_rtt() {
    let (inner, _) = script(&[
        (Some(1), Some(100)),
        (Some(2), Some(50)),
        (Some(3), Some(40)),
        (Some(4), Some(60)),
        (Some(5), Some(70)),
    ]);
    let mut m = StaleRate::new(inner, 10);
    let evs: Vec<Event> = [0, 5, 10, 19, 20]
        .iter()
        .enumerate()
        .map(|(i, &t)| ev(t, i as u64, EventKind::RxCnp))
        .collect();
    assert_eq!(
        feed(&mut m, &evs),
        [
            (Some(1), Some(100)),
            (Some(2), Some(100)),
            (Some(3), Some(40)),
            (Some(4), Some(40)),
            (Some(5), Some(70)),
        ]
    );
}

#[test]
fn int_wrong_hop_feeds_hop_zero_only() {
    let (inner, fed) = script(&[]);
    let mut m = IntWrongHop::new(inner);
    let hop = |q| IntHop {
        b: 5,
        ts: 1000,
        tx_bytes: 10,
        qlen: q,
    };
    let int = IntStack::from_hops(0x0A1 ^ 0x0A2, &[hop(0), hop(40)]).unwrap();
    let ack = AckInfo {
        psn: 3,
        syndrome: 0x1F,
        int: Some(int),
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    };
    feed(
        &mut m,
        &[
            ev(1, 0, EventKind::RxAck(ack)),
            ev(2, 1, EventKind::RxNak(ack)),
        ],
    );
    for e in fed.borrow().iter() {
        let (EventKind::RxAck(a) | EventKind::RxNak(a)) = e.kind else {
            panic!("{e:?}")
        };
        let s = a.int.unwrap();
        assert_eq!(s.hops(), &[hop(0)]);
        assert_eq!(s.path_id(), 0x0A1 ^ 0x0A2);
        assert_eq!(a.psn, 3);
    }
}

/// HPCC over `sw0 – sw1`, h0 and h1 on sw0, h2 and h3 on sw1, 100 Gbps everywhere; h0 -> h2
/// and h3 -> h2 share only sw1's port to h2, the second hop of h0's path. h0 is tapped.
fn hpcc_second_hop(device: DeviceConfig) -> RunResult {
    let mut cfg = NetConfig::new(
        "chain",
        Topology::chain(2, 2, G100, G100, 1_000),
        Cc::Hpcc(hpcc::Params {
            expected_flows: 2,
            ..hpcc::Params::default()
        }),
    );
    cfg.duration_ns = 200_000;
    cfg.flows = vec![flow(0, 2, 100_000_000), flow(3, 2, 100_000_000)];
    cfg.taps = vec![0];
    cfg.device = device;
    Network::new(&cfg).unwrap().run(&mut NoTaps).unwrap()
}

fn mean_window_second_half(run: &RunResult) -> f64 {
    let v = &run.metrics.flows[0].window_bytes.v;
    let h = &v[v.len() / 2..];
    h.iter().sum::<u64>() as f64 / h.len() as f64
}

/// With the INT of both hops, h0's HPCC sees the shared port and the two flows share it:
/// about half of W_init each. Reading hop 0 only (its own uplink, which only it loads), h0's
/// window stays near what fills its uplink, and the shared port's queue grows.
#[test]
fn int_wrong_hop_in_the_loop_misses_the_second_hop() {
    let ideal = hpcc_second_hop(DeviceConfig::default());
    let buggy = hpcc_second_hop(DeviceConfig {
        bug: Some(NicBug::IntWrongHop),
        ..DeviceConfig::default()
    });
    let (wi, wb) = (
        mean_window_second_half(&ideal),
        mean_window_second_half(&buggy),
    );
    assert!(wb > 1.3 * wi, "windows: ideal {wi}, int-wrong-hop {wb}");
    let q = |r: &RunResult| {
        r.metrics
            .ports
            .iter()
            .find(|p| p.node == "sw1" && p.peer == "h2")
            .unwrap()
            .queue_max_bytes
    };
    assert!(q(&buggy) > q(&ideal), "{} vs {}", q(&buggy), q(&ideal));
}

/// `window-never-grows` in the loop: the window h0's NIC applies (the metric series) never
/// rises, where the ideal NIC's does.
#[test]
fn window_never_grows_in_the_loop() {
    let rises = |r: &RunResult| {
        r.metrics.flows[0]
            .window_bytes
            .v
            .windows(2)
            .filter(|w| w[1] > w[0])
            .count()
    };
    let ideal = hpcc_second_hop(DeviceConfig::default());
    assert!(rises(&ideal) > 0);
    let buggy = hpcc_second_hop(DeviceConfig {
        bug: Some(NicBug::WindowNeverGrows),
        ..DeviceConfig::default()
    });
    assert_eq!(rises(&buggy), 0);
    let rate = &buggy.metrics.flows[0].rate_bps.v;
    assert!(rate.windows(2).all(|w| w[1] <= w[0]));
    assert!(rate.last() < rate.first());
}

#[test]
fn device_errors_name_the_key() {
    let base = || {
        let mut cfg = NetConfig::new(
            "x",
            Topology::incast(1, G10, G10, 1_000),
            Cc::Hpcc(hpcc::Params::default()),
        );
        cfg.flows.push(flow(0, 1, 1000));
        cfg
    };
    let err = |d: DeviceConfig| {
        let mut cfg = base();
        cfg.device = d;
        match Network::new(&cfg) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{:?} accepted", cfg.device),
        }
    };
    let e = err(DeviceConfig {
        bug: Some(NicBug::CutTwice),
        ..DeviceConfig::default()
    });
    assert!(e.contains("cut-twice") && e.contains("dcqcn"), "{e}");
    assert!(e.contains("int-wrong-hop"), "names hpcc's bugs: {e}");
    let e = err(DeviceConfig {
        rate_mantissa_bits: 64,
        ..DeviceConfig::default()
    });
    assert!(e.contains("rate_mantissa_bits"), "{e}");
    let e = err(DeviceConfig {
        reaction_ns: 2_000_000_000,
        ..DeviceConfig::default()
    });
    assert!(e.contains("reaction_ns"), "{e}");
    let mut cfg = base();
    cfg.cc = Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    };
    for alpha_g in [0.0, 1.5, f64::NAN] {
        cfg.device.bug = Some(NicBug::AlphaGain { alpha_g });
        let e = Network::new(&cfg).err().unwrap().to_string();
        assert!(e.contains("alpha_g"), "{e}");
    }
    assert!(DeviceConfig::default().is_ideal());
    assert!(base().device.is_ideal());
}
