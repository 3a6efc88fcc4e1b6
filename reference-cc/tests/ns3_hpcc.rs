//! `hpcc-ns3`: the HPCC of the authors' ns-3 simulator (`rdma-hw.cc` `HandleAckHp`,
//! `UpdateRateHp`, `FastReactHp`), step by step.
//!
//! Every expected number is computed from the simulator's C++ formulas by the Python (IEEE
//! double) commands quoted beside it, never taken from the model's output. Python's `float`
//! operations are the same IEEE-754 double operations as the C++ (`int(x)` truncates like the
//! C++ conversion for in-range values). Common setting unless a test says otherwise:
//! line rate (`m_max_rate`) 100 Gbps, `m_baseRtt` T = 13,000 ns, `m_win` = 100e9 × 13000 /
//! 1e9 / 8 = 162,500 B, U_TARGET 0.95, RATE_AI 50 Mb/s, MIN_RATE 100 Mb/s.
//!
//! The per-hop `u` the simulator computes, with `d` txBytes units (× 128 B), `tau` ns, `q` the
//! smaller of the two qLen readings in units (× 80 B) and `L` the hop's line rate:
//!   `u = d*128*8 / (tau*1e-9) / L + float(q*80) * 1e11 / L / 162500`
//! (in the Python below: `u_of(d, tau, q, L)`).

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::ns3::{HpccNs3, HpccNs3Params};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

const G100: u64 = 100_000_000_000;

fn single() -> HpccNs3Params {
    HpccNs3Params {
        multi_rate: false,
        mi_thresh: 5,
        ..HpccNs3Params::default()
    }
}

/// An INT record: line-rate code `b`, TS ns, txBytes units (128 B), qLen units (80 B).
fn hop(b: u8, ts: u32, tx: u32, q: u16) -> IntHop {
    IntHop {
        b,
        ts,
        tx_bytes: tx,
        qlen: q,
    }
}

fn ack_info(psn: u32, hops: Option<&[IntHop]>) -> AckInfo {
    AckInfo {
        psn,
        syndrome: 0,
        int: hops.map(|h| IntStack::from_hops(0, h).unwrap()),
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    }
}

/// Feeds one flow's events with increasing times and indices.
struct Run {
    m: HpccNs3,
    out: Vec<Decision>,
    t_ns: u64,
    index: u64,
}

impl Run {
    fn new(p: &HpccNs3Params) -> Self {
        Run {
            m: HpccNs3::new(p).unwrap(),
            out: Vec::new(),
            t_ns: 0,
            index: 0,
        }
    }

    fn feed(&mut self, kind: EventKind) -> Option<Decision> {
        self.t_ns += 1000;
        let ev = Event {
            t_ns: self.t_ns,
            flow: 0,
            index: self.index,
            kind,
        };
        self.index += 1;
        let n = self.out.len();
        self.m.on_event(&ev, &mut self.out);
        assert!(self.out.len() <= n + 1);
        self.out.get(n).copied()
    }

    /// Transmit PSNs `from..to`.
    fn tx(&mut self, from: u32, to: u32) {
        for psn in from..to {
            assert!(
                self.feed(EventKind::TxData {
                    psn,
                    bytes: 1000,
                    opcode: 4
                })
                .is_none()
            );
        }
    }

    fn ack(&mut self, psn: u32, hops: &[IntHop]) -> Decision {
        self.feed(EventKind::RxAck(ack_info(psn, Some(hops))))
            .expect("one decision per ACK")
    }

    fn nak(&mut self, psn: u32, hops: &[IntHop]) -> Decision {
        self.feed(EventKind::RxNak(ack_info(psn, Some(hops))))
            .expect("one decision per NAK")
    }
}

fn u64_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn f64_bits(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::F64(v)) => v.to_bits(),
        other => panic!("{name}: {other:?}"),
    }
}

/// Defaults are `mix/config.txt`'s (docs/models/ns3.md table).
#[test]
fn defaults_are_config_txt() {
    let p = HpccNs3Params::default();
    assert_eq!(p.u_target, 0.95); // U_TARGET 0.95
    assert_eq!(p.mi_thresh, 0); // MI_THRESH 0
    assert_eq!(p.rate_ai, 50_000_000); // RATE_AI 50Mb/s
    assert_eq!(p.min_rate, 100_000_000); // MIN_RATE 100Mb/s
    assert!(p.multi_rate && p.fast_react && p.var_win && p.has_win); // 1 1 1 1
    assert!(!p.sample_feedback); // SAMPLE_FEEDBACK 0
    assert_eq!(p.int_multi, 1); // INT_MULTI 1
    assert_eq!(p.window_bytes(), 162_500); // 100e9 × 13000 / 1e9 / 8
}

#[rstest]
#[case::zero_line_rate(HpccNs3Params { line_rate_bps: 0, ..HpccNs3Params::default() }, "line_rate_bps")]
#[case::zero_rtt(HpccNs3Params { base_rtt_ns: 0, ..HpccNs3Params::default() }, "base_rtt_ns")]
#[case::huge_rtt(HpccNs3Params { base_rtt_ns: (1 << 53) + 1, win_bytes: Some(1000), ..HpccNs3Params::default() }, "base_rtt_ns")]
#[case::no_window(HpccNs3Params { has_win: false, ..HpccNs3Params::default() }, "HAS_WIN")]
#[case::zero_window(HpccNs3Params { win_bytes: Some(0), ..HpccNs3Params::default() }, "win_bytes")]
#[case::window_past_u32(HpccNs3Params { win_bytes: Some(1 << 32), ..HpccNs3Params::default() }, "win_bytes")]
#[case::derived_window_past_u32(HpccNs3Params { base_rtt_ns: 1 << 40, ..HpccNs3Params::default() }, "win_bytes")]
#[case::eta_zero(HpccNs3Params { u_target: 0.0, ..HpccNs3Params::default() }, "U_TARGET")]
#[case::eta_above_one(HpccNs3Params { u_target: 1.01, ..HpccNs3Params::default() }, "U_TARGET")]
#[case::eta_nan(HpccNs3Params { u_target: f64::NAN, ..HpccNs3Params::default() }, "U_TARGET")]
#[case::ai_above_line(HpccNs3Params { rate_ai: G100 + 1, ..HpccNs3Params::default() }, "RATE_AI")]
#[case::min_rate_zero(HpccNs3Params { min_rate: 0, ..HpccNs3Params::default() }, "MIN_RATE")]
#[case::min_rate_above_line(HpccNs3Params { min_rate: G100 + 1, ..HpccNs3Params::default() }, "MIN_RATE")]
#[case::int_multi_zero(HpccNs3Params { int_multi: 0, ..HpccNs3Params::default() }, "INT_MULTI")]
#[case::mtu_zero(HpccNs3Params { mtu_bytes: 0, ..HpccNs3Params::default() }, "mtu_bytes")]
fn rejected_params(#[case] p: HpccNs3Params, #[case] name: &str) {
    let e = HpccNs3::new(&p).expect_err("rejected");
    assert_eq!(e.name, name, "{e}");
}

/// Single rate (MULTI_RATE 0, MI_THRESH 5): first ACK stores INT; a fast react sets R but
/// not Rc; the committed update restarts from Rc and from the U the fast react moved; an
/// update with τ = T replaces U by the new u and takes the additive step.
#[test]
fn single_rate_first_fast_committed_additive() {
    let mut r = Run::new(&single());
    r.tx(0, 10);
    // ACK 0: first RTT — INT stored, lastUpdateSeq = snd_nxt = 10, nothing else moves.
    let d = r.ack(0, &[hop(2, 1000, 100, 20)]);
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(d.outputs.window_bytes, Some(162_500));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 10);
    assert_eq!(f64_bits(&d, "U"), 1.0f64.to_bits());

    // ACK 1 (seq 2 <= 10): fast react. τ = 1000, d = 98 units, q = min(10, 20) = 10.
    //   u  = u_of(98, 1000, 10, 1e11)                  = 1.0084430769230768
    //   U  = (1.0*(13000-1000) + u*1000) / 13000       = 1.0006494674556212 (0x3ff002a90417b515)
    //   c  = U / 0.95 = 1.053315228900654 >= 1 → MI: R = int(1e11 / c) + 50000000 = 94988340637
    let d = r.ack(1, &[hop(2, 2000, 198, 10)]);
    assert_eq!(d.outputs.rate_bps, Some(94_988_340_637));
    assert_eq!(f64_bits(&d, "U"), 0x3ff0_02a9_0417_b515);
    assert_eq!(u64_of(&d, "Rc"), G100); // fast react commits nothing
    assert_eq!(u64_of(&d, "incStage"), 0);
    // VAR_WIN: window = 162500 × R / 1e11 = 162500*94988340637 // 10**11 = 154356
    assert_eq!(d.outputs.window_bytes, Some(154_356));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 10);

    // ACK 10 (seq 11 > 10): committed update from Rc = 1e11 and the U of ACK 1.
    //   U = (1.0006494674556212*12000 + 1.0084430769230768*1000) / 13000
    //     = 1.0012489758761947 (0x3ff0051da568ab01); c = 1.0539462903959944
    //   R = Rc = int(1e11 / c) + 50000000 = 94931495301; incStage = 0
    r.tx(10, 20);
    let d = r.ack(10, &[hop(2, 3000, 296, 30)]);
    assert_eq!(d.outputs.rate_bps, Some(94_931_495_301));
    assert_eq!(u64_of(&d, "Rc"), 94_931_495_301);
    assert_eq!(f64_bits(&d, "U"), 0x3ff0_051d_a568_ab01);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 20);
    // 162500*94931495301 // 10**11 = 154263
    assert_eq!(d.outputs.window_bytes, Some(154_263));

    // ACK 20 (seq 21 > 20): τ = 13000 = T, d = 50, q = min(0, 30) = 0.
    //   u = u_of(50, 13000, 0, 1e11) = 0.039384615384615386 = U (the old U has weight T − T = 0)
    //   c = 0.04145748987854252 < 1 and incStage 0 < 5 → AI: R = Rc + 50e6 = 94981495301
    r.tx(20, 30);
    let d = r.ack(20, &[hop(2, 16000, 346, 0)]);
    assert_eq!(f64_bits(&d, "U"), 0x3fa4_2a38_6615_bd85);
    assert_eq!(d.outputs.rate_bps, Some(94_981_495_301));
    assert_eq!(u64_of(&d, "Rc"), 94_981_495_301);
    assert_eq!(u64_of(&d, "incStage"), 1);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 30);
}

/// MULTI_RATE 1 (the default, with MI_THRESH 0): each hop keeps u, Rc, incStage; R is the
/// smallest per-hop rate; a fast react moves R and the hops' u, not their Rc.
#[test]
fn per_hop_rates() {
    let mut r = Run::new(&HpccNs3Params::default());
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20), hop(0, 500, 1000, 0)]);
    r.tx(10, 20);
    // ACK 10, committed. Hop 0 (100G): as ACK 1 above, u0 = 1.0006494674556212,
    //   R0 = 94988340637. Hop 1 (25G): τ = 2000, d = 20, q = 0:
    //   u = u_of(20, 2000, 0, 25e9) = 0.4095999999999999
    //   u1 = (1.0*11000 + u*2000) / 13000 = 0.9091692307692308 (0x3fed17ea1215ddc9)
    //   c = 0.9570202429149799 < 1 but incStage 0 >= MI_THRESH 0 → MI:
    //   int(1e11 / c) + 50e6 = 104540997698 > 1e11 → clamped to 1e11.
    //   R = min(1e11, 94988340637, 1e11) = 94988340637.
    let d = r.ack(10, &[hop(2, 2000, 198, 10), hop(0, 2500, 1020, 0)]);
    assert_eq!(d.outputs.rate_bps, Some(94_988_340_637));
    assert_eq!(f64_bits(&d, "u0"), 0x3ff0_02a9_0417_b515);
    assert_eq!(f64_bits(&d, "u1"), 0x3fed_17ea_1215_ddc9);
    assert_eq!(f64_bits(&d, "u2"), 1.0f64.to_bits()); // never reported: initial 1
    assert_eq!(u64_of(&d, "Rc0"), 94_988_340_637);
    assert_eq!(u64_of(&d, "Rc1"), G100);
    assert_eq!(u64_of(&d, "Rc2"), G100);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 20);

    // ACK 11 (seq 12 <= 20): fast react. Hop 0: u0 = 1.0012489758761947 (as above),
    //   c = 1.0539462903959944, R0 = int(94988340637 / c) + 50e6 = 90176357958.
    //   Hop 1: τ = 1000, d = 20: u = 0.8191999999999998,
    //   u1 = (0.9091692307692308*12000 + u*1000) / 13000 = 0.9022485207100592 (0x3fecdf384a2a0cf8)
    //   → MI, int(1e11/0.9497352849579571) + 50e6 = 105342497376 → 1e11. R = 90176357958.
    let d = r.ack(11, &[hop(2, 3000, 296, 30), hop(0, 3500, 1040, 0)]);
    assert_eq!(d.outputs.rate_bps, Some(90_176_357_958));
    assert_eq!(f64_bits(&d, "u0"), 0x3ff0_051d_a568_ab01);
    assert_eq!(f64_bits(&d, "u1"), 0x3fec_df38_4a2a_0cf8);
    assert_eq!(u64_of(&d, "Rc0"), 94_988_340_637); // not committed
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 20);
}

/// FAST_REACT 0: an ACK not past lastUpdateSeq does nothing at all — not even store INT —
/// so the next committed update takes its deltas from the record of the first ACK.
#[test]
fn fast_react_off_ignores_the_ack() {
    let p = HpccNs3Params {
        fast_react: false,
        ..single()
    };
    let mut r = Run::new(&p);
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    let d = r.ack(1, &[hop(2, 2000, 198, 10)]);
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(f64_bits(&d, "U"), 1.0f64.to_bits());
    // ACK 10 against the record of ACK 0: τ = 2000, d = 296 − 100 = 196, q = min(30, 20) = 20
    //   u = u_of(196, 2000, 20, 1e11) = 1.0133661538461536
    //   U = (1.0*11000 + u*2000) / 13000 = 1.0020563313609467 (0x3ff0086c383f1ebe)
    //   R = int(1e11 / (U/0.95)) + 50e6 = 94855049403
    let d = r.ack(10, &[hop(2, 3000, 296, 30)]);
    assert_eq!(f64_bits(&d, "U"), 0x3ff0_086c_383f_1ebe);
    assert_eq!(d.outputs.rate_bps, Some(94_855_049_403));
}

/// INT_MULTI 2 doubles the byte and queue units (`IntHop::multi`).
#[test]
fn int_multi_scales_bytes_and_queue() {
    let p = HpccNs3Params {
        int_multi: 2,
        ..single()
    };
    let mut r = Run::new(&p);
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    // u = (2*98*128*8)/(1000*1e-9)/1e11 + float(2*10*80)*1e11/1e11/162500 = 2.0168861538461536
    // U = (1.0*12000 + u*1000)/13000 = 1.0782220118343195 (0x3ff14065b96a7ddc)
    // R = int(1e11/(U/0.95)) + 50e6 = 88158013894
    let d = r.ack(1, &[hop(2, 2000, 198, 10)]);
    assert_eq!(f64_bits(&d, "U"), 0x3ff1_4065_b96a_7ddc);
    assert_eq!(d.outputs.rate_bps, Some(88_158_013_894));
}

/// VAR_WIN 0: the window stays `m_win` whatever the rate.
#[test]
fn fixed_window_without_var_win() {
    let p = HpccNs3Params {
        var_win: false,
        ..single()
    };
    let mut r = Run::new(&p);
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    let d = r.ack(1, &[hop(2, 2000, 198, 10)]);
    assert_eq!(d.outputs.rate_bps, Some(94_988_340_637)); // as in the single-rate test
    assert_eq!(d.outputs.window_bytes, Some(162_500));
}

/// A NAK runs `RecoverQueue` (snd_nxt = snd_una) before HandleAckHp: the committed update it
/// triggers sets lastUpdateSeq to the NAK's PSN, not to the old snd_nxt.
#[test]
fn nak_moves_snd_nxt_back() {
    let mut r = Run::new(&single());
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]); // lastUpdateSeq 10
    r.tx(10, 30);
    // NAK of PSN 12: seq 12 > 10 → committed update; snd_una = 12, snd_nxt = 12.
    let d = r.nak(12, &[hop(2, 2000, 198, 10)]);
    assert_eq!(u64_of(&d, "snd_nxt"), 12);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 12);
    // Same INT as ACK 1 of the single-rate test, but committed: Rc = R = 94988340637.
    assert_eq!(u64_of(&d, "Rc"), 94_988_340_637);
}

/// More than `IntHeader::maxHop` = 5 records: no rate change (`if (ih.nhop <= maxHop)`), but
/// the committed update still moves lastUpdateSeq.
#[test]
fn stack_longer_than_five_changes_no_rate() {
    let mut r = Run::new(&single());
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    r.tx(10, 15);
    let six = [hop(2, 2000, 198, 10); 6];
    let d = r.ack(10, &six);
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(f64_bits(&d, "U"), 1.0f64.to_bits());
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 15);
}

/// SAMPLE_FEEDBACK 1: a fast-react ACK skips hops reporting qLen 0 (not stored either);
/// a committed update does not skip them.
#[test]
fn sample_feedback_skips_idle_hops_on_fast_react() {
    let p = HpccNs3Params {
        sample_feedback: true,
        ..single()
    };
    let mut r = Run::new(&p);
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    let d = r.ack(1, &[hop(2, 2000, 198, 0)]); // fast react, qLen 0: skipped
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(f64_bits(&d, "U"), 1.0f64.to_bits());
    // Committed, qLen 0 now counts; deltas from ACK 0's record (the skipped one was not
    // stored): same numbers as `fast_react_off_ignores_the_ack` except q = min(0, 20) = 0:
    //   u = u_of(196, 2000, 0, 1e11); U = (1.0*11000 + u*2000)/13000; R = int(1e11/(U/0.95)) + 50e6
    //   python3 -c "u=(196*128*8)/(2000*1e-9)/1e11; U=(1.0*11000+u*2000)/13000; print(u, U, int(1e11/(U/0.95))+50000000)"
    //   -> 1.0035199999999997 1.0005415384615384 94998581691
    let d = r.ack(10, &[hop(2, 3000, 296, 0)]);
    assert_eq!(d.outputs.rate_bps, Some(94_998_581_691));
}

/// A hop utilisation of exactly 0 in the MI branch: the simulator computes `Rc / 0` = +inf,
/// converts it to uint64 (x86-64: 0), adds RATE_AI (50 Mb/s) and clamps to MIN_RATE.
#[test]
fn zero_utilisation_in_mi_drops_to_min_rate() {
    let mut r = Run::new(&HpccNs3Params::default()); // MULTI_RATE 1, MI_THRESH 0
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 0)]);
    // τ = 13000 = T, no bytes, no queue: u = 0, u0 = (1.0*0 + 0*13000)/13000 = 0, c = 0.
    let d = r.ack(10, &[hop(2, 14000, 100, 0)]);
    assert_eq!(f64_bits(&d, "u0"), 0.0f64.to_bits());
    assert_eq!(d.outputs.rate_bps, Some(100_000_000));
    assert_eq!(u64_of(&d, "Rc0"), 100_000_000);
}

/// Hops the simulator would divide by zero on (ΔTS = 0; a line-rate code with no rate) are
/// skipped like sampled-out hops: not stored, not updated; with MULTI_RATE their Rc still
/// bounds R.
#[rstest]
#[case::zero_time_delta(hop(2, 1000, 198, 10))]
#[case::reserved_code(hop(9, 2000, 198, 10))]
fn undefined_hops_are_skipped(#[case] second: IntHop) {
    let mut r = Run::new(&single());
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    let d = r.ack(1, &[second]);
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(f64_bits(&d, "U"), 1.0f64.to_bits());
    // The record of ACK 0 is still the reference: the next ACK gives the numbers of
    // `fast_react_off_ignores_the_ack` (τ = 2000, d = 196, q = 20) → R = 94855049403.
    let d = r.ack(2, &[hop(2, 3000, 296, 30)]);
    assert_eq!(d.outputs.rate_bps, Some(94_855_049_403));
}

/// lastUpdateSeq and the ACK sequence compare in 24-bit serial arithmetic (C-2), where the
/// simulator compares byte offsets: PSN 0xFFFFFE..0x000004 is one RTT.
#[test]
fn last_update_seq_across_psn_wrap() {
    let mut r = Run::new(&single());
    r.tx(0xFF_FFF0, 0xFF_FFFF);
    r.feed(EventKind::TxData {
        psn: 0xFF_FFFF,
        bytes: 1000,
        opcode: 4,
    });
    let d = r.ack(0xFF_FFF0, &[hop(2, 1000, 100, 20)]);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 0); // snd_nxt = 0xFFFFFF + 1 mod 2^24
    // ACK of 0xFFFFFE: seq 0xFFFFFF is not after 0 → fast react (Rc unchanged)
    let d = r.ack(0xFF_FFFE, &[hop(2, 2000, 198, 10)]);
    assert_eq!(u64_of(&d, "Rc"), G100);
    r.tx(0, 5);
    // ACK of 0xFFFFFF: seq 0 is not after 0 → fast react; ACK of 0: seq 1 after 0 → commit
    let d = r.ack(0xFF_FFFF, &[hop(2, 3000, 296, 30)]);
    assert_eq!(u64_of(&d, "Rc"), G100);
    let d = r.ack(0, &[hop(2, 4000, 394, 30)]);
    assert_ne!(u64_of(&d, "Rc"), G100);
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 5);
}

/// An ACK without INT is a stack of nHop 0: nothing to measure; a committed update still
/// moves lastUpdateSeq. Other events make no decision.
#[test]
fn ack_without_int_and_other_events() {
    let mut r = Run::new(&single());
    r.tx(0, 10);
    r.ack(0, &[hop(2, 1000, 100, 20)]);
    r.tx(10, 12);
    let d = r
        .feed(EventKind::RxAck(ack_info(10, None)))
        .expect("decision");
    assert_eq!(d.outputs.rate_bps, Some(G100));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 12);
    assert!(r.feed(EventKind::RxCnp).is_none());
    assert!(
        r.feed(EventKind::RxData {
            psn: 1,
            bytes: 1000,
            opcode: 4,
            ecn: 3,
            send_ts_ns: None
        })
        .is_none()
    );
    assert_eq!(r.m.next_timer_ns(), None);
    assert_eq!(r.m.name(), "hpcc-ns3");
}

/// Flows are independent.
#[test]
fn flows_are_independent() {
    let mut m = HpccNs3::new(&single()).unwrap();
    let mut out = Vec::new();
    let ev = |flow, index, t_ns, kind| Event {
        t_ns,
        flow,
        index,
        kind,
    };
    let h0 = [hop(2, 1000, 100, 20)];
    let h1 = [hop(2, 2000, 198, 10)];
    m.on_event(
        &ev(0, 0, 1, EventKind::RxAck(ack_info(0, Some(&h0)))),
        &mut out,
    );
    m.on_event(
        &ev(1, 0, 2, EventKind::RxAck(ack_info(0, Some(&h0)))),
        &mut out,
    );
    m.on_event(
        &ev(0, 1, 3, EventKind::RxAck(ack_info(0, Some(&h1)))),
        &mut out,
    );
    assert_eq!(out[2].outputs.rate_bps, Some(94_988_340_637));
    assert_eq!(m.flow(1).unwrap().rate_bps, G100);
    assert_eq!(m.flow(7), None);
}
