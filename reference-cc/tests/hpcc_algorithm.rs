//! HPCC Algorithm 1 (seed 000) with algorithms.md HPCC-1..8, step by step.
//!
//! Every expected number is computed by hand below or by the Python (IEEE double) commands
//! quoted beside it — never taken from the model's output. Common setting unless a test says
//! otherwise: B_NIC = 100 Gbps, T = 12,000 ns, η = 0.95, maxStage = 5, W_AI = 80 B, MTU 1000 B.
//!   W_init = floor(100e9 × 12000 / 8e9) = 150,000 B;  B (code 2) = 100e9 / 8e9 = 12.5 B/ns;
//!   B·T = 150,000 B.

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};
use rstest::rstest;

fn params() -> hpcc::Params {
    hpcc::Params {
        line_rate_bps: 100_000_000_000,
        base_rtt_ns: 12_000,
        w_ai_bytes: Some(80.0),
        ..hpcc::Params::default()
    }
}

/// An INT record with line-rate code `b`, TS (ns), txBytes (128 B units), qLen (80 B units).
fn hop(b: u8, ts: u32, tx: u32, q: u16) -> IntHop {
    IntHop {
        b,
        ts,
        tx_bytes: tx,
        qlen: q,
    }
}

fn stack(path_id: u16, hops: &[IntHop]) -> IntStack {
    IntStack::from_hops(path_id, hops).unwrap()
}

fn ack_info(psn: u32, int: Option<IntStack>) -> AckInfo {
    AckInfo {
        psn,
        syndrome: 0,
        int,
        n: None,
        cwnd: None,
        rcc_flags: None,
        ts_ns: None,
    }
}

/// Feeds one flow's events with increasing times and indices.
struct Run {
    m: Hpcc,
    out: Vec<Decision>,
    t_ns: u64,
    index: u64,
}

impl Run {
    fn new(p: &hpcc::Params) -> Self {
        Run {
            m: Hpcc::new(p).unwrap(),
            out: Vec::new(),
            t_ns: 0,
            index: 0,
        }
    }

    /// Feed one event; return the decisions it produced.
    fn feed(&mut self, kind: EventKind) -> Vec<Decision> {
        self.t_ns += 1000;
        let ev = Event {
            t_ns: self.t_ns,
            flow: 0,
            index: self.index,
            kind,
        };
        self.index += 1;
        let before = self.out.len();
        self.m.on_event(&ev, &mut self.out);
        self.out[before..].to_vec()
    }

    fn tx(&mut self, psn: u32) {
        let d = self.feed(EventKind::TxData {
            psn,
            bytes: 1000,
            opcode: 0x07,
        });
        assert!(d.is_empty(), "tx_data makes no decision");
    }

    fn tx_range(&mut self, psns: impl IntoIterator<Item = u32>) {
        for p in psns {
            self.tx(p);
        }
    }

    fn one(&mut self, kind: EventKind) -> Decision {
        let d = self.feed(kind);
        assert_eq!(d.len(), 1, "exactly one decision per ACK/NAK");
        d[0]
    }

    fn ack(&mut self, psn: u32, int: IntStack) -> Decision {
        self.one(EventKind::RxAck(ack_info(psn, Some(int))))
    }

    fn nak(&mut self, psn: u32, int: IntStack) -> Decision {
        self.one(EventKind::RxNak(ack_info(psn, Some(int))))
    }
}

fn u64_of(d: &Decision, name: &str) -> u64 {
    match d.state.get(name) {
        Some(StateValue::U64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn f64_of(d: &Decision, name: &str) -> f64 {
    match d.state.get(name) {
        Some(StateValue::F64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn w(d: &Decision) -> u64 {
    d.outputs.window_bytes.unwrap()
}

#[test]
fn state_names_are_the_papers() {
    assert_eq!(
        hpcc::STATE_NAMES,
        &[
            "W",
            "Wc",
            "U",
            "incStage",
            "lastUpdateSeq",
            "snd_nxt",
            "u",
            "tau"
        ]
    );
    let m = Hpcc::new(&params()).unwrap();
    assert_eq!(m.name(), "hpcc");
    assert_eq!(m.next_timer_ns(), None, "HPCC has no timers");
    assert_eq!(m.w_init_bytes(), 150_000); // 100e9 × 12000 / 8e9
    assert_eq!(m.w_min_bytes(), 1000); // 1 MTU (HPCC-6)
}

/// HPCC-5: the first ACK only stores the INT; W = W_init, U = 1 (its initial value),
/// R = W_init × 8e9 / T = 150000 × 8e9 / 12000 = 100,000,000,000 bps (HPCC-1).
#[test]
fn first_ack_only_stores() {
    let mut r = Run::new(&params());
    r.tx_range(0..10); // snd_nxt = 10
    let d = r.ack(0, stack(1, &[hop(2, 1000, 0, 100)]));
    assert_eq!(w(&d), 150_000);
    assert_eq!(d.outputs.rate_bps, Some(100_000_000_000));
    assert_eq!(u64_of(&d, "Wc"), 150_000);
    assert_eq!(f64_of(&d, "U"), 1.0);
    assert_eq!(u64_of(&d, "incStage"), 0);
    assert_eq!(u64_of(&d, "snd_nxt"), 10);
    // The first ACK opens the first RTT: lastUpdateSeq = snd_nxt.
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 10);
    assert_eq!(f64_of(&d, "u"), 0.0);
    assert_eq!(u64_of(&d, "tau"), 0);
}

/// Two hand-computed ACKs after the first, pinning exact f64 bit patterns.
#[test]
fn hand_computed_steps_pin_bits() {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    r.ack(0, stack(1, &[hop(2, 1000, 0, 100)])); // stored; lastUpdateSeq = 10

    // ACK psn 1: seq = 2, not after lastUpdateSeq 10 -> Wc is not updated.
    //   ΔTS = 7000 − 1000 = 6000 ns; ΔtxBytes = 585 × 128 = 74,880 B; txRate = 12.48 B/ns
    //   qLen: min(125, 100) × 80 = 8000 B
    //   u' = 8000 / 150000 + 12.48 / 12.5 = 0.05333… + 0.9984 = 1.0517333…
    //   τ = min(6000, 12000) = 6000; U = (1 − 0.5)·1 + 0.5·u' = 1.0258666…
    //   W = floor(150000 / (U / 0.95) + 80) = 138,986; R = floor(W × 8e9 / 12000)
    // python3 -c "B=12.5;T=12000.0;u=8000/(B*T)+(74880/6000)/B;f=6000/T;U=(1-f)*1.0+f*u;
    //   import struct,math;b=lambda x:hex(struct.unpack('<Q',struct.pack('<d',x))[0]);
    //   print(b(u),b(U),math.floor(150000/(U/0.95)+80.0),math.floor(150000/(U/0.95)+80.0)*8_000_000_000//12000)"
    //   -> 0x3ff0d3e654ec79ca 0x3ff069f32a763ce5 138986 92657333333
    let d = r.ack(1, stack(1, &[hop(2, 7000, 585, 125)]));
    assert_eq!(f64_of(&d, "u").to_bits(), 0x3ff0d3e654ec79ca);
    assert_eq!(f64_of(&d, "U").to_bits(), 0x3ff069f32a763ce5);
    assert_eq!(u64_of(&d, "tau"), 6000);
    assert_eq!(w(&d), 138_986);
    assert_eq!(d.outputs.rate_bps, Some(92_657_333_333));
    assert_eq!(u64_of(&d, "Wc"), 150_000, "no Wc update within the RTT");
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 10);

    // ACK psn 10 after tx 10, 11: seq = 11 is after 10 -> Wc = W, lastUpdateSeq = snd_nxt = 12.
    //   ΔTS = 19800 − 7000 = 12800 -> τ = min(12800, 12000) = 12000, τ/T = 1: U = u'
    //   ΔtxBytes = (1835 − 585) × 128 = 160,000 B; txRate = 12.5 B/ns -> 1.0
    //   qLen: min(1875, 125) × 80 = 10,000 B -> 10000 / 150000 = 0.0666…
    //   u' = 1.0666…; W = floor(150000 / (1.0666…/0.95) + 80) = 133,673
    // python3 -c "B=12.5;T=12000.0;u=10000/(B*T)+(160000/12800)/B;U=(1-1.0)*1.0258666666666667+1.0*u;
    //   import math;print(u.hex(),U.hex(),math.floor(150000/(U/0.95)+80.0))"
    //   -> 0x1.1111111111111p+0 0x1.1111111111111p+0 133673  (bits 0x3ff1111111111111)
    r.tx_range(10..12);
    let d = r.ack(10, stack(1, &[hop(2, 19800, 1835, 1875)]));
    assert_eq!(f64_of(&d, "u").to_bits(), 0x3ff1111111111111);
    assert_eq!(f64_of(&d, "U").to_bits(), 0x3ff1111111111111);
    assert_eq!(u64_of(&d, "tau"), 12_000);
    assert_eq!(w(&d), 133_673);
    assert_eq!(u64_of(&d, "Wc"), 133_673);
    assert_eq!(
        u64_of(&d, "incStage"),
        0,
        "U >= eta: MD round resets incStage"
    );
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 12);
    // R = floor(133673 × 8e9 / 12000) = 89,115,333,333 (133673 × 2e6 / 3 = 89115333333.3)
    assert_eq!(d.outputs.rate_bps, Some(89_115_333_333));
}

/// Seed 000 Figure 5: two ACKs describing the same queue. With η = 1 and W_AI = 0:
///   u' = 150000 / 150000 (qLen 1875 × 80 B) + 12.5 / 12.5 (txRate) = 2, τ = T so U = 2.
///   Per-ACK reaction on Wc: W = Wc / 2 = 75,000 on both ACKs; reacting on the last W
///   would give 150000 / 2 / 2 = 37,500 after the second.
#[test]
fn figure5_reacts_on_wc_not_last_w() {
    let p = hpcc::Params {
        eta: 1.0,
        w_ai_bytes: Some(0.0),
        ..params()
    };
    let mut r = Run::new(&p);
    r.tx_range(0..10);
    r.ack(0, stack(1, &[hop(2, 0, 0, 1875)])); // stored, lastUpdateSeq = 10
    let d1 = r.ack(1, stack(1, &[hop(2, 12_800, 1250, 1875)]));
    assert_eq!(f64_of(&d1, "U"), 2.0);
    assert_eq!(w(&d1), 75_000);
    let d2 = r.ack(2, stack(1, &[hop(2, 25_600, 2500, 1875)]));
    assert_eq!(f64_of(&d2, "U"), 2.0);
    assert_eq!(w(&d2), 75_000, "W(2) = W(1) = Wc/2");
    assert_ne!(w(&d2), 37_500, "not W(1)/2 = Wc/4");
    assert_eq!(u64_of(&d2, "Wc"), 150_000);
}

/// incStage: maxStage = 5 AI rounds (W = Wc + W_AI), then one MI round (line 13).
#[test]
fn additive_increase_for_max_stage_rounds_then_multiplicative() {
    let mut r = Run::new(&params());
    r.tx(0);
    r.ack(0, stack(1, &[hop(2, 0, 0, 1875)])); // stored, lastUpdateSeq = 1
    // Each round k: send psn k, its ACK has seq k + 1 > lastUpdateSeq = k -> Wc update.
    // Round 1 (MD): u' = 1875·80/150000 + (1250·128/12800)/12.5 = 1 + 1 = 2, U = 2
    //   W = floor(150000 / (2/0.95) + 80) = 71,330
    //   python3 -c "print(150000/(2.0/0.95)+80.0)"  -> 71330.0
    let mut ts = 0u32;
    let mut tx = 0u32;
    let mut round = |r: &mut Run, k: u32, dtx: u32, q: u16| {
        ts += 12_800;
        tx += dtx;
        r.tx(k);
        r.ack(k, stack(1, &[hop(2, ts, tx, q)]))
    };
    let d = round(&mut r, 1, 1250, 1875);
    assert_eq!(
        (w(&d), u64_of(&d, "Wc"), u64_of(&d, "incStage")),
        (71_330, 71_330, 0)
    );
    // Rounds 2..6 (AI): qLen 0 -> min(0, ·) = 0; txRate = 1125·128/12800 = 11.25 B/ns,
    //   u' = 11.25/12.5 = 0.9 < η and incStage < 5: W = Wc + 80.
    for (k, expect) in [
        (2, 71_410),
        (3, 71_490),
        (4, 71_570),
        (5, 71_650),
        (6, 71_730),
    ] {
        let d = round(&mut r, k, 1125, 0);
        assert_eq!(f64_of(&d, "U").to_bits(), 0.9f64.to_bits());
        assert_eq!(w(&d), expect, "AI round {k}");
        assert_eq!(u64_of(&d, "Wc"), expect);
        assert_eq!(u64_of(&d, "incStage"), (k - 1) as u64);
    }
    // Round 7: incStage = 5 >= maxStage -> MI: W = floor(71730 / (0.9/0.95) + 80) = 75,795
    //   python3 -c "print(71730/(0.9/0.95)+80.0)"  -> 75795.0
    let d = round(&mut r, 7, 1125, 0);
    assert_eq!(
        (w(&d), u64_of(&d, "Wc"), u64_of(&d, "incStage")),
        (75_795, 75_795, 0)
    );
    // Round 8: AI again from incStage 0: 75795 + 80 = 75,875.
    let d = round(&mut r, 8, 1125, 0);
    assert_eq!((w(&d), u64_of(&d, "incStage")), (75_875, 1));
}

/// Within an RTT (no Wc update) the AI branch leaves incStage alone and W = Wc + W_AI.
#[test]
fn no_stage_change_without_wc_update() {
    let mut r = Run::new(&params());
    r.tx_range(0..5);
    r.ack(0, stack(1, &[hop(2, 0, 0, 0)])); // lastUpdateSeq = 5
    // u' = (1125·128/12800)/12.5 = 0.9: AI branch, seq 2 not after 5.
    let d = r.ack(1, stack(1, &[hop(2, 12_800, 1125, 0)]));
    assert_eq!(w(&d), 150_000, "W = min(150000 + 80, W_init) = W_init");
    assert_eq!(u64_of(&d, "incStage"), 0);
    assert_eq!(u64_of(&d, "Wc"), 150_000);
}

/// HPCC-2 / wire.md 5.1: a TS wrap (24 bits) and a txBytes wrap (20 bits) give the same U
/// as the unwrapped deltas. Unwrapped: TS 1000 -> 7000, tx 0 -> 585 (ΔTS 6000, Δtx 585).
/// Wrapped: TS 0xFFFF00 -> (0xFFFF00 + 6000) mod 2^24 = 5744; tx 0xFFFF0 -> (0xFFFF0 + 585)
/// mod 2^20 = 569. Both are the ACK of `hand_computed_steps_pin_bits`: U bits 0x3ff069f32a763ce5.
#[rstest]
#[case::unwrapped(1000, 0, 7000, 585)]
#[case::ts_wraps(0xFF_FF00, 0, 5744, 585)]
#[case::tx_bytes_wraps(1000, 0xF_FFF0, 7000, 569)]
#[case::both_wrap(0xFF_FF00, 0xF_FFF0, 5744, 569)]
fn wrapped_deltas_give_the_same_u(
    #[case] ts0: u32,
    #[case] tx0: u32,
    #[case] ts1: u32,
    #[case] tx1: u32,
) {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    r.ack(0, stack(1, &[hop(2, ts0, tx0, 100)]));
    let d = r.ack(1, stack(1, &[hop(2, ts1, tx1, 125)]));
    assert_eq!(u64_of(&d, "tau"), 6000);
    assert_eq!(f64_of(&d, "u").to_bits(), 0x3ff0d3e654ec79ca);
    assert_eq!(f64_of(&d, "U").to_bits(), 0x3ff069f32a763ce5);
    assert_eq!(w(&d), 138_986);
}

/// HPCC-3: a hop whose TS delta is 0 contributes nothing and keeps its stored record.
#[test]
fn zero_ts_delta_hop_is_skipped_and_keeps_its_record() {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    r.ack(0, stack(3, &[hop(2, 0, 0, 0), hop(2, 5000, 0, 0)]));
    // Hop 0: ΔTS 12800, Δtx 625 -> txRate 6.25 B/ns -> u' = 0.5.
    // Hop 1: ΔTS 0 (and a full queue): skipped. U = u' of hop 0 = 0.5 (τ = T).
    let d = r.ack(
        1,
        stack(3, &[hop(2, 12_800, 625, 0), hop(2, 5000, 100, 0xFFFF)]),
    );
    assert_eq!(f64_of(&d, "U"), 0.5);
    assert_eq!(f64_of(&d, "u"), 0.5);
    assert!(f64_of(&d, "U").is_finite());
    // Next ACK: hop 1 moves 12800 ns and 1250 units past its *stored* record (TS 5000, tx 0):
    //   txRate = 1250·128/12800 = 12.5 -> u' = 1.0 (qLen min(0, 0) = 0). Had the skipped
    //   record (tx 100, qLen 0xFFFF) been stored: (1150·128/12800)/12.5 = 0.92.
    let d = r.ack(
        2,
        stack(3, &[hop(2, 25_600, 1250, 0), hop(2, 17_800, 1250, 0)]),
    );
    assert_eq!(f64_of(&d, "u"), 1.0);
    assert_eq!(f64_of(&d, "U"), 1.0);
}

/// HPCC-3 with every hop at ΔTS = 0: u = 0 and τ = 0 (no u' > u), so U is unchanged
/// ((1 − 0)·U + 0·0) and ComputeWind runs on it (Algorithm 1 has no early exit).
#[test]
fn all_hops_zero_delta_keep_u() {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    r.ack(0, stack(1, &[hop(2, 1000, 0, 0)]));
    let d = r.ack(1, stack(1, &[hop(2, 1000, 9, 9)]));
    assert_eq!(f64_of(&d, "U"), 1.0);
    assert_eq!(u64_of(&d, "tau"), 0);
    // U = 1 >= η: W = floor(150000 / (1/0.95) + 80) = 142,580
    //   python3 -c "print(150000/(1.0/0.95)+80.0)" -> 142580.0
    assert_eq!(w(&d), 142_580);
}

/// HPCC-5: a pathID change or an nHop change only stores the records (W unchanged); the
/// next ACK measures against the new records.
#[test]
fn path_change_only_stores() {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    r.ack(0, stack(0x00A, &[hop(2, 0, 0, 0)]));
    let d1 = r.ack(1, stack(0x00A, &[hop(2, 12_800, 625, 0)])); // U = 0.5, AI: W = W_init
    assert_eq!(f64_of(&d1, "U"), 0.5);
    // pathID 0x00A -> 0x00B: stored only (a ΔTS that would otherwise give U = 2).
    let d2 = r.ack(2, stack(0x00B, &[hop(2, 40_000, 5000, 10)]));
    assert_eq!(w(&d2), w(&d1));
    assert_eq!(f64_of(&d2, "U"), 0.5, "U unchanged by a path change");
    assert_eq!((f64_of(&d2, "u"), u64_of(&d2, "tau")), (0.0, 0));
    // Against the stored record (TS 40000, tx 5000, qLen 10):
    //   ΔTS 3000, Δtx 300·128 = 38,400 B -> txRate 12.8; qLen min(20, 10)·80 = 800 B
    //   u' = 800/150000 + 12.8/12.5 = 1.0293333…; τ/T = 0.25; U = 0.75·0.5 + 0.25·u'
    //   python3 -c "u=800/150000.0+(38400/3000)/12.5;f=3000/12000.0;print(u.hex(),((1-f)*0.5+f*u).hex())"
    //   -> 0x1.078263ab596dfp+0 0x1.43c131d5acb70p-1  (bits 0x3ff078263ab596df, 0x3fe43c131d5acb70)
    let d3 = r.ack(3, stack(0x00B, &[hop(2, 43_000, 5300, 20)]));
    assert_eq!(f64_of(&d3, "u").to_bits(), 0x3ff078263ab596df);
    assert_eq!(f64_of(&d3, "U").to_bits(), 0x3fe43c131d5acb70);
    // nHop 1 -> 2 with the same pathID: stored only.
    let d4 = r.ack(
        4,
        stack(0x00B, &[hop(2, 90_000, 9000, 50), hop(2, 1, 1, 1)]),
    );
    assert_eq!(w(&d4), w(&d3));
    assert_eq!(f64_of(&d4, "U"), f64_of(&d3, "U"));
    assert_eq!(u64_of(&d4, "tau"), 0);
}

/// HPCC-7: lastUpdateSeq compares with 24-bit serial arithmetic across the PSN wrap.
#[test]
fn last_update_seq_across_psn_wrap() {
    let mut r = Run::new(&params());
    r.tx_range(0xFF_FFFA..=0xFF_FFFD); // snd_nxt = 0xFFFFFE
    let d = r.ack(0xFF_FFFA, stack(1, &[hop(2, 0, 0, 0)]));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 0xFF_FFFE);
    r.tx_range([0xFF_FFFE, 0xFF_FFFF, 0, 1]); // snd_nxt = 2 (0xFFFFFF + 1 wraps to 0)
    // ACK 0xFFFFFC: seq 0xFFFFFD is not after 0xFFFFFE -> no update.
    let d = r.ack(0xFF_FFFC, stack(1, &[hop(2, 12_800, 1125, 0)])); // U = 0.9: AI
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 0xFF_FFFE);
    assert_eq!(u64_of(&d, "incStage"), 0);
    assert_eq!(u64_of(&d, "snd_nxt"), 2);
    // ACK 0xFFFFFF: seq = 0 is after 0xFFFFFE ((0 − 0xFFFFFE) mod 2^24 = 2) although
    // 0 < 0xFFFFFE as integers -> Wc update, lastUpdateSeq = snd_nxt = 2.
    let d = r.ack(0xFF_FFFF, stack(1, &[hop(2, 25_600, 2250, 0)]));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 2);
    assert_eq!(u64_of(&d, "incStage"), 1);
    assert_eq!(u64_of(&d, "Wc"), w(&d));
}

/// NAK (wire.md 5.3: it carries INT) runs Algorithm 1 like an ACK; its seq is its PSN (the
/// PSN it did not accept), where an ACK's seq is PSN + 1.
#[test]
fn nak_runs_algorithm1_with_seq_equal_to_psn() {
    let mut r = Run::new(&params());
    r.tx_range(0..5);
    r.ack(0, stack(1, &[hop(2, 0, 0, 0)])); // lastUpdateSeq = 5
    r.tx_range(5..7); // snd_nxt = 7
    // NAK psn 5: seq 5 is not after 5 -> no update; U is measured from its INT.
    let d = r.nak(5, stack(1, &[hop(2, 12_800, 1250, 0)]));
    assert_eq!(
        d.cause,
        ccreplay_reference_cc::Cause::Event {
            kind: "rx_nak",
            index: 8
        }
    );
    assert_eq!(f64_of(&d, "U"), 1.0); // u' = 12.5/12.5 = 1 (qLen 0), τ = T
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 5);
    assert_eq!(u64_of(&d, "Wc"), 150_000);
    // U = 1 >= η: W = floor(150000 / (1/0.95) + 80) = 142,580 (python: 142580.0)
    assert_eq!(w(&d), 142_580);
    // ACK psn 5: seq 6 is after 5 -> update: Wc = W, lastUpdateSeq = snd_nxt = 7.
    let d = r.ack(5, stack(1, &[hop(2, 25_600, 2500, 0)]));
    assert_eq!(u64_of(&d, "lastUpdateSeq"), 7);
    assert_eq!((w(&d), u64_of(&d, "Wc")), (142_580, 142_580));
}

/// CNP and receiver-side data are not HPCC inputs; an ACK without INT is not feedback
/// (one decision, nothing changes); HPCC-7: a retransmission moves snd_nxt back.
#[test]
fn other_events() {
    let mut r = Run::new(&params());
    r.tx_range(0..10);
    assert!(r.feed(EventKind::RxCnp).is_empty());
    assert!(
        r.feed(EventKind::RxData {
            psn: 0,
            bytes: 10,
            opcode: 4,
            ecn: 3,
            send_ts_ns: None
        })
        .is_empty()
    );
    r.ack(0, stack(1, &[hop(2, 0, 0, 0)]));
    let before = r.ack(1, stack(1, &[hop(2, 12_800, 625, 0)]));
    let d = r.one(EventKind::RxAck(ack_info(2, None)));
    assert_eq!(d.outputs, before.outputs);
    assert_eq!(f64_of(&d, "U"), f64_of(&before, "U"));
    r.tx(3); // go-back-N retransmission of psn 3
    let d = r.ack(2, stack(1, &[hop(2, 25_600, 1250, 0)]));
    assert_eq!(u64_of(&d, "snd_nxt"), 4);
}

/// Reserved line-rate codes: unmapped, the hop contributes nothing (only the other hop
/// counts); mapped to 100 Gbps by configuration it counts exactly like code 2.
#[test]
fn reserved_line_rate_codes() {
    let two_hops = |b1: u8| {
        (
            stack(1, &[hop(2, 0, 0, 0), hop(b1, 0, 0, 0)]),
            // hop 0: u' = 0.5; hop 1: txRate 12.5 -> u' = 1.0 if B = 12.5 B/ns
            stack(1, &[hop(2, 12_800, 625, 0), hop(b1, 12_800, 1250, 0)]),
        )
    };
    let run = |p: &hpcc::Params, b1: u8| {
        let mut r = Run::new(p);
        r.tx_range(0..10);
        let (s0, s1) = two_hops(b1);
        r.ack(0, s0);
        r.ack(1, s1)
    };
    let unmapped = run(&params(), 9);
    assert_eq!(f64_of(&unmapped, "U"), 0.5);
    let mapped_p = hpcc::Params {
        reserved_line_rates: vec![hpcc::ReservedLineRate {
            code: 9,
            bps: 100_000_000_000,
        }],
        ..params()
    };
    let mapped = run(&mapped_p, 9);
    let code2 = run(&params(), 2);
    assert_eq!(f64_of(&mapped, "U"), 1.0);
    assert_eq!(mapped.state, code2.state);
}

/// maxStage = 0 (tried by the paper, footnote 5 of 5.1): every round is MI.
/// U = 0.5: W = floor(150000 / (0.5/0.95) + 80) = 285,080 -> clamped to W_init (HPCC-6).
/// A later U = 2 round: W = floor(150000 / (2/0.95) + 80) = 71,330.
#[test]
fn max_stage_zero_is_always_mi_and_w_is_clamped() {
    let p = hpcc::Params {
        max_stage: 0,
        ..params()
    };
    let mut r = Run::new(&p);
    r.tx(0);
    r.ack(0, stack(1, &[hop(2, 0, 0, 0)]));
    r.tx(1);
    let d = r.ack(1, stack(1, &[hop(2, 12_800, 625, 0)]));
    assert_eq!(f64_of(&d, "U"), 0.5);
    assert_eq!((w(&d), u64_of(&d, "incStage")), (150_000, 0));
    r.tx(2);
    let d = r.ack(2, stack(1, &[hop(2, 25_600, 1875, 1875)])); // q: min(1875, 0) = 0
    // u' = (1250·128/12800)/12.5 = 1.0 -> U = 1: W = floor(150000/(1/0.95) + 80) = 142,580
    assert_eq!(w(&d), 142_580);
}

/// HPCC-6: W never drops below w_min (1 MTU). A full queue (qLen 0xFFFF = 5,242,800 B) and
/// line-rate txRate: u' = 5242800/150000 + 1 = 35.952 (τ = T, so U = u'); every ACK updates Wc:
///   W = floor(150000/(35.952/0.95) + 80) = floor(4043.618…) = 4043
///   W = floor(4043/(35.952/0.95) + 80) = floor(186.83…) -> clamped to 1000, and stays there.
///   python3 -c "u=0xFFFF*80/150000+1.0;print(150000/(u/0.95)+80,4043/(u/0.95)+80)"
#[test]
fn window_floor_is_w_min() {
    let mut r = Run::new(&params());
    r.tx(0);
    r.ack(0, stack(1, &[hop(2, 0, 0, 0xFFFF)]));
    let mut ws = Vec::new();
    for k in 1..4u32 {
        r.tx(k);
        let d = r.ack(k, stack(1, &[hop(2, 12_800 * k, 1250 * k, 0xFFFF)]));
        ws.push(w(&d));
    }
    assert_eq!(ws, [4043, 1000, 1000]);
}

/// Flows are independent: two interleaved flows give the same decisions as each alone.
#[test]
fn flows_are_independent() {
    let evs = |flow: u32| {
        let mut v = Vec::new();
        let s = [
            stack(1, &[hop(2, 0, 0, 5)]),
            stack(1, &[hop(2, 6000, 300, 50)]),
            stack(1, &[hop(2, 20_000, 1700, 10)]),
        ];
        for (i, st) in s.into_iter().enumerate() {
            v.push(EventKind::TxData {
                psn: i as u32,
                bytes: 1000,
                opcode: 7,
            });
            v.push(EventKind::RxAck(ack_info(i as u32, Some(st))));
        }
        v.into_iter()
            .enumerate()
            .map(move |(i, kind)| Event {
                t_ns: i as u64 * 100,
                flow,
                index: i as u64,
                kind,
            })
            .collect::<Vec<_>>()
    };
    let mut alone = Hpcc::new(&params()).unwrap();
    let mut a = Vec::new();
    for e in evs(0) {
        alone.on_event(&e, &mut a);
    }
    let mut both = Hpcc::new(&params()).unwrap();
    let mut b = Vec::new();
    for (e0, e1) in evs(0).into_iter().zip(evs(5)) {
        both.on_event(&e1, &mut b);
        both.on_event(&e0, &mut b);
    }
    let b0: Vec<_> = b.iter().filter(|d| d.flow == 0).copied().collect();
    assert_eq!(a, b0);
    assert!(
        both.flow(3).is_some(),
        "ids below the largest seen exist at initial values"
    );
    assert_eq!(both.flow(3).unwrap().w_bytes, 150_000);
}
