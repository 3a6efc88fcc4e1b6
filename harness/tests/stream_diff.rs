//! The streaming comparison (`diff::StreamDiff`, issue 18 item 4) gives the report of the
//! whole-stream one (`diff::diff`) — the same `Debug` dump, text and JSON — whatever order the
//! two streams interleave their flows in, holding per flow only the decisions of the side that
//! is ahead; and past `HOLD_LIMIT` it counts the oldest as unmatched and says so.

use ccreplay::diff::{
    self, DiffOptions, DiffReport, HOLD_LIMIT, Side, StateCompare, StreamDiff, Which,
};
use ccreplay_reference_cc::{Cause, Decision, Outputs, State, StateValue};
use rstest::rstest;

const NAMES: &[&str] = &["W", "U"];

/// A sender decision: window `w` (and W = w, U = w / 1e4 as state), rate 8 w.
fn dec(flow: u32, t_ns: u64, cause: Cause, w: u64) -> Decision {
    Decision {
        t_ns,
        flow,
        cause,
        outputs: Outputs {
            window_bytes: Some(w),
            rate_bps: Some(8 * w),
            ..Outputs::default()
        },
        state: State::new(
            NAMES,
            &[StateValue::U64(w), StateValue::F64(w as f64 / 1e4)],
        ),
    }
}

fn ack(index: u64) -> Cause {
    Cause::Event {
        kind: "rx_ack",
        index,
    }
}

const ALPHA: Cause = Cause::Timer { name: "alpha" };

const FLOWS: u32 = 64;
const ACKS: u64 = 1000;
/// Per flow: 1,000 ACK decisions and a timer firing after every 50th: 1,020.
const PER_FLOW: u64 = ACKS + ACKS / 50;

/// Flow `f`'s decisions: ACK `i` (event index 2i + 1, at 1,000,000 + 10 f + 1,000 i ns,
/// window 10,000 + i); after every 50th, timer `alpha` 500 ns later. With `perturbed`, the
/// DUT's version: window + 1 where i mod 100 = 7, no decision for i = 500 on flows 0, 8, ...,
/// 56, and on odd flows an extra `rx_cnp` decision (event 2i + 2) after i = 900.
fn flow(f: u32, perturbed: bool) -> Vec<Decision> {
    let mut v = Vec::new();
    for i in 0..ACKS {
        let t = 1_000_000 + 10 * u64::from(f) + 1_000 * i;
        let w = 10_000 + i + u64::from(perturbed && i % 100 == 7);
        if !(perturbed && i == 500 && f.is_multiple_of(8)) {
            v.push(dec(f, t, ack(2 * i + 1), w));
        }
        if perturbed && i == 900 && f % 2 == 1 {
            let cnp = Cause::Event {
                kind: "rx_cnp",
                index: 2 * i + 2,
            };
            v.push(dec(f, t + 1, cnp, w));
        }
        if i % 50 == 49 {
            v.push(dec(f, t + 500, ALPHA, w));
        }
    }
    v
}

/// Every flow's decisions in turn, one at a time (the reference's order).
fn round_robin(flows: &[Vec<Decision>]) -> Vec<Decision> {
    let mut out = Vec::new();
    let longest = flows.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for f in flows {
            if let Some(d) = f.get(i) {
                out.push(*d);
            }
        }
    }
    out
}

/// Flow 63's decisions, then flow 62's, ..., flow 0's last: far ahead of the reference on the
/// flows it starts with, far behind on the others.
fn reverse_flow_major(flows: &[Vec<Decision>]) -> Vec<Decision> {
    flows.iter().rev().flatten().copied().collect()
}

fn whole(r: &[Decision], d: &[Decision], opts: &DiffOptions) -> DiffReport {
    let (mut a, mut b) = (Side::default(), Side::default());
    r.iter().for_each(|x| a.push(x));
    d.iter().for_each(|x| b.push(x));
    diff::diff(&a, &b, opts)
}

/// The same report, however printed.
fn assert_same(streamed: &DiffReport, whole: &DiffReport) {
    assert_eq!(format!("{streamed:?}"), format!("{whole:?}"));
    assert_eq!(
        diff::render_text(streamed, "reference", "dut"),
        diff::render_text(whole, "reference", "dut")
    );
    assert_eq!(diff::render_json(streamed), diff::render_json(whole));
}

fn all_state() -> DiffOptions {
    DiffOptions {
        state: StateCompare::All,
        ..DiffOptions::default()
    }
}

#[test]
fn one_side_far_ahead_on_some_flows_holds_the_skew_and_reports_the_same() {
    let r = round_robin(&(0..FLOWS).map(|f| flow(f, false)).collect::<Vec<_>>());
    let d = reverse_flow_major(&(0..FLOWS).map(|f| flow(f, false)).collect::<Vec<_>>());
    let n = (u64::from(FLOWS) * PER_FLOW) as usize;
    assert_eq!((r.len(), d.len()), (n, n)); // 64 × 1,020 = 65,280
    let opts = all_state();
    let mut sd = StreamDiff::new(&opts);
    // Held, counted apart: both sides make the same decisions per flow, so what waits is, per
    // flow, the decisions one side has made beyond the other's count.
    let (mut count, mut most) = ([[0i64; 2]; FLOWS as usize], 0);
    let mut step = |count: &mut [[i64; 2]; FLOWS as usize], side: usize, x: &Decision| {
        count[x.flow as usize][side] += 1;
        let held: i64 = count.iter().map(|c| (c[0] - c[1]).abs()).sum();
        most = most.max(held);
    };
    // The two streams in step, a decision of each in turn.
    for k in 0..n {
        sd.push(Which::Reference, &r[k]);
        step(&mut count, 0, &r[k]);
        sd.push(Which::Dut, &d[k]);
        step(&mut count, 1, &d[k]);
        if k + 1 == n / 2 {
            // 32,640 each: the reference has made 32,640 / 64 = 510 decisions of every flow;
            // the DUT all 1,020 of flows 63 down to 32. So the DUT holds 1,020 - 510 of each
            // of those 32 flows, the reference its 510 of each of flows 0..31: 16,320 each.
            assert_eq!(sd.held(Which::Reference), 16_320);
            assert_eq!(sd.held(Which::Dut), 16_320);
        }
    }
    // The DUT completes a flow every 1,020 steps (m flows after 1,020 m) while the reference
    // has made 1,020 m / 64 of each: held ≈ m (1,020 - 15.94 m) + (64 - m) 15.94 m = 2,040 m
    // - 31.875 m², largest at m = 32: 32,640, the midpoint above (a few more between steps).
    assert_eq!(sd.max_held(), most as usize);
    assert!(
        (32_640..32_640 + 64).contains(&sd.max_held()),
        "{}",
        sd.max_held()
    );
    let streamed = sd.finish();
    assert!(streamed.ok());
    assert_eq!(streamed.reference_count(), 65_280);
    assert_same(&streamed, &whole(&r, &d, &opts));
}

#[test]
fn perturbed_far_ahead_streams_report_as_the_whole_diff() {
    let r = round_robin(&(0..FLOWS).map(|f| flow(f, false)).collect::<Vec<_>>());
    let d = reverse_flow_major(&(0..FLOWS).map(|f| flow(f, true)).collect::<Vec<_>>());
    let opts = all_state();
    let expected = whole(&r, &d, &opts);
    // By construction: 10 windows + 1 per flow (i = 7, 107, ..., 907) = 640 mismatches; i = 500
    // missing on the 8 flows 0, 8, ..., 56; one extra rx_cnp on each of the 32 odd flows.
    assert_eq!(expected.mismatches(), 640);
    assert_eq!(expected.missing_extra(), (8, 32));
    assert_eq!(expected.reference_count(), 65_280);
    let f0 = &expected.flows[0];
    let div = f0.first.as_ref().unwrap();
    // The first is ACK i = 7 (event 15): window 10,007 against 10,008, so W too, and the rate
    // 80,056 against 80,064; U 1.0007 against 1.0008.
    assert_eq!(div.reference.unwrap().cause, ack(15));
    let fields: Vec<&str> = div.fields.iter().map(|x| x.field.as_str()).collect();
    assert_eq!(fields, ["rate_bps", "window_bytes", "state.W", "state.U"]);
    assert_eq!(
        (div.fields[1].reference.as_str(), div.fields[1].dut.as_str()),
        ("10007", "10008")
    );
    // Largest window error 1 byte, relative 1 / 10,007 (the smallest window that differs).
    assert_eq!(
        f0.largest[1],
        ("window_bytes".to_string(), 1.0, 1.0 / 10_007.0)
    );

    // In step, a decision of each in turn.
    let mut sd = StreamDiff::new(&opts);
    for k in 0..r.len().max(d.len()) {
        if let Some(x) = r.get(k) {
            sd.push(Which::Reference, x);
        }
        if let Some(x) = d.get(k) {
            sd.push(Which::Dut, x);
        }
    }
    assert!(sd.in_order());
    assert_same(&sd.finish(), &expected);

    // The whole reference first: every one of its 65,280 decisions waits (none can be ruled
    // out before the DUT decides on its flow), the most a stream can be ahead.
    let mut sd = StreamDiff::new(&opts);
    r.iter().for_each(|x| sd.push(Which::Reference, x));
    assert_eq!(sd.held(Which::Reference), 65_280);
    d.iter().for_each(|x| sd.push(Which::Dut, x));
    assert_eq!(sd.max_held(), 65_280);
    assert_eq!(sd.dropped(), 0);
    assert_same(&sd.finish(), &expected);

    // The DUT's stream first, then the reference's.
    let mut sd = StreamDiff::new(&opts);
    d.iter().for_each(|x| sd.push(Which::Dut, x));
    r.iter().for_each(|x| sd.push(Which::Reference, x));
    assert_same(&sd.finish(), &expected);
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KINDS: [&str; 3] = ["rx_ack", "rx_cnp", "rx_nak"];
const TIMERS: [&str; 2] = ["alpha", "rate_increase"];

/// A random flow: events in index order (gaps, some with two or three decisions of one or two
/// kinds), timers between them.
fn random_flow(g: &mut Lcg, f: u32) -> Vec<Decision> {
    let mut v = Vec::new();
    let mut index = 0;
    let mut t = 1_000 * u64::from(f);
    for _ in 0..g.below(60) {
        index += g.below(3);
        t += g.below(5);
        if g.below(5) == 0 {
            let name = TIMERS[g.below(2) as usize];
            v.push(dec(f, t, Cause::Timer { name }, 100 + g.below(4)));
            continue;
        }
        for _ in 0..1 + g.below(3) / 2 {
            let kind = KINDS[g.below(2) as usize];
            v.push(dec(f, t, Cause::Event { kind, index }, 100 + g.below(4)));
        }
    }
    v
}

/// The DUT's version: values changed, decisions dropped, extra ones (new events, more timer
/// firings), timer firings moved a few ns earlier or later — the event order and each
/// timer's time order kept, as a DUT's answers keep them (docs/dut.md rule 2).
fn perturb(g: &mut Lcg, ds: &[Decision]) -> Vec<Decision> {
    let mut v: Vec<Decision> = Vec::new();
    for d in ds {
        match g.below(10) {
            0 => continue,
            1 => {
                let mut x = *d;
                x.outputs.window_bytes = Some(100 + g.below(4));
                x.t_ns += g.below(2);
                v.push(x);
            }
            2 => {
                v.push(*d);
                let mut x = *d;
                x.cause = match d.cause {
                    Cause::Event { index, .. } => Cause::Event {
                        kind: KINDS[2],
                        index,
                    },
                    timer => timer,
                };
                v.push(x);
            }
            _ => v.push(*d),
        }
    }
    // Some timer firings up to 6 ns earlier or later, then all of them merged back among the
    // event decisions in time order (timers first on ties, C-5).
    let is_timer = |d: &Decision| matches!(d.cause, Cause::Timer { .. });
    let mut timers: Vec<Decision> = v.iter().filter(|d| is_timer(d)).copied().collect();
    for x in &mut timers {
        if g.below(3) == 0 {
            x.t_ns = (x.t_ns + g.below(13)).saturating_sub(6);
        }
    }
    timers.sort_by_key(|d| d.t_ns);
    let mut out = Vec::with_capacity(v.len());
    let mut ti = timers.into_iter().peekable();
    for e in v.into_iter().filter(|d| !is_timer(d)) {
        while let Some(x) = ti.next_if(|x| x.t_ns <= e.t_ns) {
            out.push(x);
        }
        out.push(e);
    }
    out.extend(ti);
    out
}

/// An independent alignment by the rule of docs/diff.md, for outputs and time compared
/// exactly (`DiffOptions::default()`): per flow, each side's decisions grouped by what they
/// pair on — the event (kind, index) or the timer (name, t) —, the k-th of a group on one
/// side with the k-th on the other; a flow's first divergence the least (t, timer before
/// event, event index, reference before extra, position on its side), t the earlier of a
/// pair's two. Per flow: (mismatches, missing, extra, the first divergence's two sides).
type Oracle = Vec<(u64, u64, u64, Option<(Option<Decision>, Option<Decision>)>)>;

fn oracle(r: &[Decision], d: &[Decision], flows: u32) -> Oracle {
    use std::collections::BTreeMap;
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum K {
        Event(&'static str, u64),
        Timer(&'static str, u64),
    }
    let k = |x: &Decision| match x.cause {
        Cause::Event { kind, index } => K::Event(kind, index),
        Cause::Timer { name } => K::Timer(name, x.t_ns),
    };
    let rank = |x: &Decision| match x.cause {
        Cause::Timer { .. } => (0, 0),
        Cause::Event { index, .. } => (1, index),
    };
    (0..flows)
        .map(|f| {
            // (key) -> each side's (position, decision), in stream order.
            let mut groups: BTreeMap<K, [Vec<(u64, Decision)>; 2]> = BTreeMap::new();
            for (side, ds) in [r, d].into_iter().enumerate() {
                for (pos, x) in ds.iter().filter(|x| x.flow == f).enumerate() {
                    groups.entry(k(x)).or_default()[side].push((pos as u64, *x));
                }
            }
            let (mut mis, mut missing, mut extra) = (0, 0, 0);
            let mut first = None;
            let mut consider = |place, a: Option<Decision>, b: Option<Decision>| {
                if first.as_ref().is_none_or(|(p, _)| place < *p) {
                    first = Some((place, (a, b)));
                }
            };
            for [rs, ds] in groups.values() {
                for i in 0..rs.len().max(ds.len()) {
                    match (rs.get(i), ds.get(i)) {
                        (Some(&(p, a)), Some(&(_, b))) => {
                            if a.outputs != b.outputs || a.t_ns != b.t_ns {
                                mis += 1;
                                consider(
                                    (a.t_ns.min(b.t_ns), rank(&a), false, p),
                                    Some(a),
                                    Some(b),
                                );
                            }
                        }
                        (Some(&(p, a)), None) => {
                            missing += 1;
                            consider((a.t_ns, rank(&a), false, p), Some(a), None);
                        }
                        (None, Some(&(q, b))) => {
                            extra += 1;
                            consider((b.t_ns, rank(&b), true, q), None, Some(b));
                        }
                        (None, None) => {}
                    }
                }
            }
            (mis, missing, extra, first.map(|(_, x)| x))
        })
        .collect()
}

/// The flows' decisions merged in a random order (each flow's kept).
fn random_merge(g: &mut Lcg, flows: &[Vec<Decision>]) -> Vec<Decision> {
    let mut at = vec![0; flows.len()];
    let mut out = Vec::new();
    let total: usize = flows.iter().map(Vec::len).sum();
    while out.len() < total {
        let f = g.below(flows.len() as u64) as usize;
        // Runs of one flow, up to 30 long, so flows get far ahead of each other.
        for _ in 0..1 + g.below(30) {
            if let Some(d) = flows[f].get(at[f]) {
                out.push(*d);
                at[f] += 1;
            }
        }
    }
    out
}

#[test]
fn random_streams_and_interleavings_report_as_the_whole_diff() {
    let mut g = Lcg(0x5EED_0018_0004);
    let options = [
        DiffOptions::default(),
        all_state(),
        DiffOptions {
            tolerances: vec!["window_bytes=abs:2".parse().unwrap()],
            state: StateCompare::Fields(vec!["U".into(), "W".into()]),
        },
    ];
    for case in 0..400 {
        let flows = 1 + g.below(6) as u32;
        let refs: Vec<Vec<Decision>> = (0..flows).map(|f| random_flow(&mut g, f)).collect();
        let duts: Vec<Vec<Decision>> = refs.iter().map(|r| perturb(&mut g, r)).collect();
        let r = random_merge(&mut g, &refs);
        let d = random_merge(&mut g, &duts);
        let opts = &options[case % options.len()];
        let expected = whole(&r, &d, opts);
        if case % options.len() == 0 {
            // Outputs and time exact: the whole diff is the independent alignment.
            let want = oracle(&r, &d, flows);
            let got: Oracle = (0..flows)
                .map(|f| match expected.flows.iter().find(|x| x.flow == f) {
                    None => (0, 0, 0, None),
                    Some(x) => (
                        x.mismatches,
                        x.missing,
                        x.extra,
                        x.first.as_ref().map(|v| (v.reference, v.dut)),
                    ),
                })
                .collect();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "case {case}");
        }
        let mut sd = StreamDiff::new(opts);
        let (mut i, mut j) = (0, 0);
        while i < r.len() || j < d.len() {
            // Either side next, in runs.
            let side = g.below(2) == 0;
            for _ in 0..1 + g.below(20) {
                if side && i < r.len() {
                    sd.push(Which::Reference, &r[i]);
                    i += 1;
                } else if !side && j < d.len() {
                    sd.push(Which::Dut, &d[j]);
                    j += 1;
                }
            }
        }
        assert!(sd.in_order(), "case {case}");
        assert_eq!(sd.dropped(), 0);
        let streamed = sd.finish();
        assert_eq!(
            format!("{streamed:?}"),
            format!("{expected:?}"),
            "case {case}"
        );
    }
}

#[test]
fn a_timer_out_of_phase_waits_one_firing_and_diverges_where_it_first_fires() {
    // Per event i < 1,000 (ACK, event index i, at 1,000 i + 500 ns): the reference fires
    // `rate_increase` at 1,000 i + 100, the DUT 50 ns earlier, at 1,000 i + 50; the ACKs agree.
    // Fed in step as `diff --dut` feeds them (each side's answer to event i: the timer, then
    // the ACK; the reference's first):
    //   the reference's firing at 1,000 i + 100 waits (the DUT has fired only up to
    //   1,000 (i - 1) + 50), with its ACK: 2 held, plus the firing i - 1 still waiting: 3;
    //   the DUT's firing at 1,000 i + 50 passes the reference's 1,000 (i - 1) + 100: that one
    //   is missing; its own is extra at once (the reference has fired at 1,000 i + 100 > it);
    //   its ACK pairs. So at most 3 held, and 1,000 missing and 1,000 extra, no mismatch.
    const RI: Cause = Cause::Timer {
        name: "rate_increase",
    };
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    let (mut r, mut d) = (Vec::new(), Vec::new());
    for i in 0..1_000u64 {
        let (tr, td, ta) = (1_000 * i + 100, 1_000 * i + 50, 1_000 * i + 500);
        for (which, side, t) in [(Which::Reference, &mut r, tr), (Which::Dut, &mut d, td)] {
            let answer = [dec(0, t, RI, 100), dec(0, ta, ack(i), 100)];
            answer.iter().for_each(|x| sd.push(which, x));
            side.extend(answer);
        }
    }
    assert_eq!(sd.max_held(), 3);
    let streamed = sd.finish();
    let f = &streamed.flows[0];
    assert_eq!((f.mismatches, f.missing, f.extra), (0, 1_000, 1_000));
    // The earliest divergence: the DUT's firing at 50 ns (the reference's first is at 100).
    let first = f.first.as_ref().unwrap();
    assert!(first.reference.is_none());
    assert_eq!(first.dut.unwrap().t_ns, 50);
    assert_same(&streamed, &whole(&r, &d, &opts));
}

#[test]
fn a_timer_going_back_in_time_is_noticed() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    sd.push(Which::Dut, &dec(0, 10, ALPHA, 100));
    sd.push(Which::Dut, &dec(0, 10, ALPHA, 100));
    sd.push(Which::Dut, &dec(0, 20, ALPHA, 100));
    assert!(sd.in_order());
    // Another timer may fire earlier; `alpha` firing before its last firing breaks the order.
    sd.push(Which::Dut, &dec(0, 5, Cause::Timer { name: "beta" }, 100));
    assert!(sd.in_order());
    sd.push(Which::Dut, &dec(0, 15, ALPHA, 100));
    assert!(!sd.in_order());
}

#[test]
fn an_event_index_going_back_is_noticed() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    sd.push(Which::Reference, &dec(0, 1, ack(5), 100));
    sd.push(Which::Reference, &dec(0, 2, ack(6), 100));
    assert!(sd.in_order());
    // Flow 1 may start anywhere; flow 0 going back to 5 breaks the order.
    sd.push(Which::Dut, &dec(1, 3, ack(9), 100));
    sd.push(Which::Dut, &dec(1, 4, ack(2), 100));
    assert!(!sd.in_order());
}

#[test]
fn a_timer_the_dut_never_fires_is_dropped_at_the_hold_limit_without_changing_the_report() {
    // The reference fires `alpha` 200,000 times, the DUT names its timer `beta`: no firing
    // ever pairs, so each waits. Pushed in turn, the held count passes HOLD_LIMIT
    // (131,072) at the 131,073rd push, and the oldest are dropped down to 3/4 of it (98,304):
    // 32,769 at a time, again every 32,769 pushes — at pushes 131,073 + 32,769 j ≤ 400,000,
    // j = 0..8: 9 × 32,769 = 294,921 dropped. None had a counterpart: the report is exact.
    assert_eq!(HOLD_LIMIT, 131_072);
    let opts = DiffOptions::default();
    let beta = Cause::Timer { name: "beta" };
    let r: Vec<Decision> = (0..200_000).map(|i| dec(0, i, ALPHA, 100)).collect();
    let d: Vec<Decision> = (0..200_000).map(|i| dec(0, i, beta, 100)).collect();
    let mut sd = StreamDiff::new(&opts);
    for (a, b) in r.iter().zip(&d) {
        sd.push(Which::Reference, a);
        sd.push(Which::Dut, b);
    }
    assert_eq!(sd.dropped(), 294_921);
    assert_eq!(sd.uncertain(), 0);
    assert_eq!(sd.alignment_note(), None);
    assert!(sd.max_held() <= HOLD_LIMIT + 1);
    let streamed = sd.finish();
    assert_eq!(streamed.missing_extra(), (200_000, 200_000));
    assert_same(&streamed, &whole(&r, &d, &opts));
}

#[test]
fn streams_further_apart_than_the_hold_limit_are_flagged() {
    // The reference's 150,000 firings all come first: at the 131,073rd the oldest 32,769
    // (firings 0..32,768) are dropped, leaving 98,304 + the last 18,927 = 117,231. The DUT's
    // firings 0..32,768 then find theirs gone: counted extra, and flagged as uncertain; its
    // later ones pair. The whole diff pairs all 150,000 (no difference at all).
    let opts = DiffOptions::default();
    let r: Vec<Decision> = (0..150_000).map(|i| dec(0, i, ALPHA, 100)).collect();
    let mut sd = StreamDiff::new(&opts);
    r.iter().for_each(|x| sd.push(Which::Reference, x));
    assert_eq!(sd.held(Which::Reference), 117_231);
    r.iter().for_each(|x| sd.push(Which::Dut, x));
    assert_eq!((sd.dropped(), sd.uncertain()), (32_769, 32_769));
    let note = sd.alignment_note().unwrap();
    assert!(
        note.contains("more than 131072 apart: 32769 waited longer"),
        "{note}"
    );
    let streamed = sd.finish();
    assert_eq!(streamed.missing_extra(), (32_769, 32_769));
    assert_eq!(streamed.mismatches(), 0);
    assert!(whole(&r, &r, &opts).ok());
}

#[test]
fn closing_a_side_counts_the_other_side_s_decisions_at_once() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    assert!(!sd.is_closed(Which::Reference) && !sd.is_closed(Which::Dut));
    // The reference decides on event 1 of flow 0 before the DUT decides on the flow: it waits.
    sd.push(Which::Reference, &dec(0, 10, ack(1), 100));
    assert_eq!(sd.held(Which::Reference), 1);
    // The DUT will push nothing more: the waiting decision has no counterpart, and is no
    // longer held (counted missing).
    sd.close(Which::Dut);
    assert!(sd.is_closed(Which::Dut));
    assert!(!sd.is_closed(Which::Reference));
    assert_eq!(sd.held(Which::Reference), 0);
    // Nor have the reference's later ones, an event's and a timer's: counted at once.
    sd.push(Which::Reference, &dec(0, 20, ack(2), 100));
    sd.push(Which::Reference, &dec(0, 30, ALPHA, 100));
    assert_eq!(sd.held(Which::Reference), 0);
    assert_eq!(sd.max_held(), 1);
    // 3 reference decisions, none paired: 3 missing, no extra.
    assert_eq!(sd.finish().missing_extra(), (3, 0));
}

#[test]
fn a_decision_on_an_event_the_other_side_is_past_is_counted_at_once() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    // The DUT decides on event 5 of flow 0: it waits for the reference's.
    sd.push(Which::Dut, &dec(0, 50, ack(5), 100));
    assert_eq!(sd.held(Which::Dut), 1);
    // The reference decides on event 3, which the DUT (deciding in index order, past it) will
    // not decide on: missing at once, not held; the DUT's event 5 still waits.
    sd.push(Which::Reference, &dec(0, 30, ack(3), 100));
    assert_eq!((sd.held(Which::Reference), sd.held(Which::Dut)), (0, 1));
    // The reference's event 5, the same decision: they pair.
    sd.push(Which::Reference, &dec(0, 50, ack(5), 100));
    assert_eq!((sd.held(Which::Reference), sd.held(Which::Dut)), (0, 0));
    let report = sd.finish();
    // Event 3 missing; event 5 paired, equal.
    assert_eq!(report.mismatches(), 0);
    assert_eq!(report.missing_extra(), (1, 0));
}

/// Reference decisions pushed alone (the DUT silent) until [`HOLD_LIMIT`] is passed, among them
/// two on one event (or two firings of one timer at one ns), the first dropped, the second not:
/// the DUT's two still pair by ordinal (docs/diff.md, "Pairing"), the second with the second.
#[rstest]
#[case::event(ack(5))]
#[case::timer(ALPHA)]
fn after_a_drop_the_rest_of_a_key_pairs_by_ordinal(#[case] cause: Cause) {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    let filler = |i: u64| dec(1, i, ack(i), 100);
    // Flow 1's events 0..32,767 (32,768), then on flow 0 two decisions on `cause` at 1 ms —
    // window 100 (ordinal 0), then 200 (ordinal 1) —, then flow 1's events 32,768..131,070
    // (98,303): 131,073 in all, every one held. At the last the held count passes HOLD_LIMIT
    // (131,072), and the oldest are dropped down to 3/4 of it (98,304): 32,769, flow 1's
    // first 32,768 and flow 0's window 100 (counted missing). Flow 0's window 200 is held.
    (0..32_768).for_each(|i| sd.push(Which::Reference, &filler(i)));
    sd.push(Which::Reference, &dec(0, 1_000_000, cause, 100));
    sd.push(Which::Reference, &dec(0, 1_000_000, cause, 200));
    (32_768..131_071).for_each(|i| sd.push(Which::Reference, &filler(i)));
    assert_eq!(sd.dropped(), 32_769);
    assert_eq!(sd.held(Which::Reference), 98_304);
    // The DUT makes the same two. Its first (ordinal 0) pairs with the reference's ordinal 0,
    // dropped: it has none (extra). Its second (ordinal 1, window 200) pairs with the
    // reference's ordinal 1 (window 200): equal.
    sd.push(Which::Dut, &dec(0, 1_000_000, cause, 100));
    sd.push(Which::Dut, &dec(0, 1_000_000, cause, 200));
    let report = sd.finish();
    let f0 = &report.flows[0];
    assert_eq!(f0.flow, 0);
    // Flow 0: no mismatch, the reference's window 100 missing, the DUT's extra.
    assert_eq!((f0.mismatches, f0.missing, f0.extra), (0, 1, 1));
}

#[test]
fn an_event_decision_is_uncertain_only_where_the_other_side_dropped() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    // The reference decides on flow 0's even events 0, 2, ..., 262,144 (131,073 decisions),
    // the DUT on none: at the last the held count passes HOLD_LIMIT (131,072) and the oldest
    // are dropped down to 98,304: 32,769, events 2k for k < 32,769, i.e. 0..=65,536.
    (0..=131_072u64).for_each(|k| sd.push(Which::Reference, &dec(0, k, ack(2 * k), 100)));
    assert_eq!((sd.dropped(), sd.uncertain()), (32_769, 0));
    // The DUT decides on event 0, which the reference is past: it made it and dropped it, so
    // they might have paired: uncertain.
    sd.push(Which::Dut, &dec(0, 0, ack(0), 100));
    assert_eq!(sd.uncertain(), 1);
    // Event 65,536, the last dropped: likewise.
    sd.push(Which::Dut, &dec(0, 32_768, ack(65_536), 100));
    assert_eq!(sd.uncertain(), 2);
    // Event 65,537: the reference is past it (at 262,144) and dropped none after 65,536: the
    // DUT's decision has no counterpart, and is not uncertain.
    sd.push(Which::Dut, &dec(0, 32_768, ack(65_537), 100));
    assert_eq!(sd.uncertain(), 2);
    // Event 65,538, the oldest the reference still holds: they pair.
    sd.push(Which::Dut, &dec(0, 32_769, ack(65_538), 100));
    assert_eq!(sd.uncertain(), 2);
    assert_eq!(sd.held(Which::Reference), 98_304 - 1);
    let report = sd.finish();
    // The 32,769 dropped and the 98,303 the DUT never reached missing; its 0, 65,536, 65,537
    // extra; 65,538 paired.
    assert_eq!(report.missing_extra(), (32_769 + 98_303, 3));
    assert_eq!(report.mismatches(), 0);
}

#[test]
fn a_timer_firing_is_uncertain_only_where_the_other_side_dropped() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    // The DUT fires `alpha` on flow 0 at 1,000 ns, then decides on flow 1's events
    // 0..131,071 (131,072), the reference on nothing: at the last the held count passes
    // HOLD_LIMIT (131,072) and the oldest are dropped down to 98,304: 32,769, the firing at
    // 1,000 and flow 1's events 0..32,767.
    sd.push(Which::Dut, &dec(0, 1_000, ALPHA, 100));
    (0..131_072).for_each(|i| sd.push(Which::Dut, &dec(1, i, ack(i), 100)));
    assert_eq!((sd.dropped(), sd.uncertain()), (32_769, 0));
    // The reference fires `alpha` at 3,000: the DUT may still fire it at 3,000 (its latest
    // firing is at 1,000): held.
    sd.push(Which::Reference, &dec(0, 3_000, ALPHA, 100));
    assert_eq!(sd.held(Which::Reference), 1);
    // The DUT fires it at 4,000: it will not fire it at 3,000, so the reference's firing has
    // no counterpart; the DUT dropped its firing at 1,000 only, which could not pair with one
    // at 3,000: not uncertain.
    sd.push(Which::Dut, &dec(0, 4_000, ALPHA, 100));
    assert_eq!(sd.held(Which::Reference), 0);
    assert_eq!(sd.uncertain(), 0);
    assert_eq!(sd.alignment_note(), None);
    let report = sd.finish();
    let f0 = &report.flows[0];
    assert_eq!(f0.flow, 0);
    // Flow 0: the reference's 3,000 missing; the DUT's 1,000 (dropped) and 4,000 extra.
    assert_eq!((f0.mismatches, f0.missing, f0.extra), (0, 1, 2));
}

/// `check`'s streaming of a golden file beside the replay ([`golden::GoldenFeed`]): the two
/// come in the same (time, flow) order, so what is held is at most one group of decisions of
/// one flow at one time — counted here from the golden file itself.
#[test]
fn golden_files_stream_beside_the_replay_holding_one_time_step() {
    use ccreplay::golden::{self, GoldenFeed};
    use ccreplay::replay::{self, Trace};
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut compared = 0;
    for m in golden::find_traces(&root.join("traces")).unwrap() {
        let trace = Trace::load(&m).unwrap();
        for spec in &trace.manifest.models {
            let path = golden::golden_path(&root.join("golden"), &trace, &spec.name);
            let Ok(g) = golden::read_golden(&path) else {
                continue;
            };
            // The largest group of golden decisions sharing (time, flow).
            let mut all: Vec<(u64, u32)> = (0..g.len())
                .flat_map(|f| g.flow(f).iter().map(|d| (d.t_ns, d.flow)))
                .collect();
            all.sort_unstable();
            let group = all
                .chunk_by(|a, b| a == b)
                .map(<[_]>::len)
                .max()
                .unwrap_or(0);
            let opts = golden::golden_options();
            let mut sd = StreamDiff::new(&opts);
            let mut feed = GoldenFeed::open(&path, Which::Reference);
            replay::replay_reference(&trace, spec, 1, |d| {
                sd.push(Which::Dut, d);
                feed.feed_to(&mut sd, d);
                Ok(())
            })
            .unwrap();
            feed.drain(&mut sd);
            assert!(feed.error().is_none());
            let most = sd.max_held();
            let report = sd.finish();
            // Only where the replay still makes the golden decisions (a model being changed
            // makes other ones, in another order).
            if report.ok() {
                assert!(
                    most <= group.max(1),
                    "{}: {most} held, groups of {group}",
                    path.display()
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 0);
}

/// `diff --dut`'s streaming: one extraction feeds the reference and the DUT each event in turn
/// (`replay::replay_pair`), so what is held is at most the reference's decisions on one event
/// (and the timers it fires first) — the longest run of one side's decisions, counted here
/// from the order they arrive in. The DUT is the reference model itself: conformant.
#[test]
fn a_dut_fed_in_step_holds_one_event_s_decisions() {
    use ccreplay::dut::ModelDut;
    use ccreplay::golden;
    use ccreplay::replay::{self, Trace};
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    for m in golden::find_traces(&root.join("traces")).unwrap() {
        let trace = Trace::load(&m).unwrap();
        let spec = &trace.manifest.models[0];
        let mut reference = ModelDut::new(replay::build_model(&trace, spec).unwrap());
        let mut dut = ModelDut::new(replay::build_model(&trace, spec).unwrap());
        let opts = all_state();
        let mut sd = StreamDiff::new(&opts);
        let (mut run, mut longest, mut last) = (0, 0, None);
        replay::replay_pair(&trace, &mut reference, &mut dut, |is_ref, d| {
            run = if last == Some(is_ref) { run + 1 } else { 1 };
            longest = longest.max(run);
            last = Some(is_ref);
            sd.push(if is_ref { Which::Reference } else { Which::Dut }, d);
        })
        .unwrap();
        let most = sd.max_held();
        let report = sd.finish();
        assert!(report.ok(), "{}", m.display());
        assert!(report.reference_count() > 0);
        assert!(
            most <= longest,
            "{}: {most} held, runs of {longest}",
            m.display()
        );
    }
}

/// A firing counts as uncertain once, where its counterpart may be among the other side's
/// dropped ones — not again when a later firing retires it.
#[test]
fn a_firing_the_other_side_made_once_and_dropped_is_uncertain_once() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    // The DUT fires `alpha` on flow 0 at 1,000 ns, then decides on flow 1's events
    // 0..131,071: the held count passes HOLD_LIMIT (131,072) and the oldest 32,769 are
    // dropped, the firing at 1,000 first.
    sd.push(Which::Dut, &dec(0, 1_000, ALPHA, 100));
    (0..131_072).for_each(|i| sd.push(Which::Dut, &dec(1, i, ack(i), 100)));
    assert_eq!((sd.dropped(), sd.uncertain()), (32_769, 0));
    // The reference fires it twice at 1,000. Its first (ordinal 0): the DUT made one at 1,000
    // and dropped it — they might have paired: uncertain, counted missing at once.
    sd.push(Which::Reference, &dec(0, 1_000, ALPHA, 100));
    assert_eq!((sd.uncertain(), sd.held(Which::Reference)), (1, 0));
    // Its second (ordinal 1): the DUT made one firing at 1,000 so far, so it may make a
    // second: held.
    sd.push(Which::Reference, &dec(0, 1_000, ALPHA, 100));
    assert_eq!(sd.held(Which::Reference), 1);
    // The DUT fires at 2,000: it made one firing at 1,000, never a second, so the held one
    // has no counterpart, dropped or not: missing, and still 1 uncertain.
    sd.push(Which::Dut, &dec(0, 2_000, ALPHA, 100));
    assert_eq!((sd.uncertain(), sd.held(Which::Reference)), (1, 0));
    let f0 = sd.finish().flows[0].clone();
    // Flow 0: the reference's two missing; the DUT's 1,000 (dropped) and 2,000 extra.
    assert_eq!((f0.mismatches, f0.missing, f0.extra), (0, 2, 2));
}

#[test]
fn a_held_decision_retired_where_the_other_side_dropped_is_uncertain() {
    let opts = DiffOptions::default();
    let mut sd = StreamDiff::new(&opts);
    // The reference makes 131,073 decisions on flow 0's event 7 (ordinals 0..=131,072), the
    // DUT none: past HOLD_LIMIT the oldest 32,769 (ordinals 0..=32,768) are dropped, so the
    // reference dropped decisions of event 7 only.
    (0..=131_072u64).for_each(|k| sd.push(Which::Reference, &dec(0, k, ack(7), 100)));
    assert_eq!((sd.dropped(), sd.uncertain()), (32_769, 0));
    // The DUT's first decision on event 7 (ordinal 0): its counterpart was dropped, but the
    // reference is still at event 7 and may yet make it, so it is held, not yet counted.
    sd.push(Which::Dut, &dec(0, 200_000, ack(7), 100));
    assert_eq!((sd.uncertain(), sd.held(Which::Dut)), (0, 1));
    // The DUT on event 20: held too (the reference has not reached it).
    sd.push(Which::Dut, &dec(0, 200_001, ack(20), 100));
    assert_eq!(sd.held(Which::Dut), 2);
    // The reference on event 8 retires event 7's: it might have paired with the dropped
    // ordinal 0: uncertain.
    sd.push(Which::Reference, &dec(0, 200_002, ack(8), 100));
    assert_eq!((sd.uncertain(), sd.held(Which::Dut)), (1, 1));
    // On event 21 it retires event 20's, which could not (it dropped nothing there).
    sd.push(Which::Reference, &dec(0, 200_003, ack(21), 100));
    assert_eq!((sd.uncertain(), sd.held(Which::Dut)), (1, 0));
}
