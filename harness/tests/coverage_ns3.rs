//! Rule coverage of the ns-3 simulator profiles (issue 17.1 and 17.2 for `hpcc-ns3` and
//! `dcqcn-ns3`): `check --coverage` counts their rules and branches
//! (`reference_cc::ns3::hpcc::COVERAGE`, `ns3::dcqcn::COVERAGE`: the rows of
//! docs/models/ns3.md) on the bundled traces imported from the HPCC authors' simulator
//! (traces/ns3_*, made by tests/fixtures/ns3-sim/remake.sh). Every count is derived here from
//! the trace's events file (read line by line) and, for what only the model's state can
//! tell (the utilisation EWMAs, the rates before a step), from the golden decisions — each
//! decision's state is the flow's state after it, the flow's previous decision the state
//! before it —, recomputing each step from the formulas of docs/models/ns3.md and checking
//! the result against the golden state as it goes. Every rule a simulator run can reach runs
//! at least three times over the suite; the five it cannot are listed with the reason
//! (docs/models/ns3.md "Coverage").

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// The five `hpcc-ns3` traces: four simulator runs, and hpcc_single's events with its first NAK
/// delivered late (ns3_hpcc_reordered, tests/fixtures/ns3-sim/reorder.py).
const HPCC_TRACES: [&str; 5] = [
    "ns3_hpcc_single",
    "ns3_hpcc_multi",
    "ns3_hpcc_nofast",
    "ns3_hpcc_intmulti",
    "ns3_hpcc_reordered",
];
/// The simulator runs among them: their replies come back in order per flow.
const HPCC_RUNS: [&str; 4] = [
    "ns3_hpcc_single",
    "ns3_hpcc_multi",
    "ns3_hpcc_nofast",
    "ns3_hpcc_intmulti",
];
/// The simulator's two DCQCN runs, and `dcqcn_ns3`: its DCQCN closed loop in `ccreplay sim`
/// with RATE_ON_FIRST_CNP 0.5 (a capture: its events are what `replay --emit-events` writes).
const DCQCN_TRACES: [&str; 3] = ["ns3_dcqcn", "ns3_dcqcn_clamp", "dcqcn_ns3"];

/// `hpcc-ns3` rules no simulator run can put into an imported trace, and why.
const HPCC_UNREACHABLE: [(&str, &str); 4] = [
    (
        "H10 ACK without INT (nhop 0): no rate change",
        "in CC_MODE 3 every data packet gets INT at every switch and the receiver copies it into \
         the ACK; the importer writes an ACK without INT only when a switch was not traced \
         (and then misstates the run)",
    ),
    (
        "C-2 serial and integer order of ack.seq and lastUpdateSeq differ (PSN wrap)",
        "a PSN is the simulator's byte sequence / PACKET_PAYLOAD_SIZE, and that sequence is a \
         uint32: it wraps at 4 GiB (4.3 M packets of 1,000 B), long before the 24-bit PSN \
         (16.8 M packets)",
    ),
    (
        "N4 more than 5 hops: no rate change",
        "a path of 6 switches makes the simulator write past its 5-record INT arrays \
         (IntHeader::maxHop; the NS_ASSERT is compiled out of the optimized build), and the \
         importer writes such ACKs without INT",
    ),
    (
        "H8 a hop skipped: zero TS delta or no line rate",
        "each ACK carries the INT of a different data packet (ReceiveUdp answers a packet at \
         most once) and a port dequeues two packets at least a packet time apart, so no TS \
         delta is 0; IntHop::Set writes only the codes 0..4, which all have a rate",
    ),
];

/// `dcqcn-ns3` rules the bundled suite cannot reach: none. (D7's first CNP below the full rate
/// no simulator run can show — third.cc never sets RdmaHw's RateOnFirstCnp, so every run keeps
/// the attribute default 1.0 — and `dcqcn_ns3` runs it closed loop.)
const DCQCN_UNREACHABLE: [(&str, &str); 0] = [];

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn int(t: &toml::Table, k: &str) -> u64 {
    t[k].as_integer().unwrap_or_else(|| panic!("{k}")) as u64
}

/// A 0/1 flag as the importer writes it, or a bool as `ccreplay sim` does.
fn flag(t: &toml::Table, k: &str) -> bool {
    t[k].as_bool().unwrap_or_else(|| int(t, k) == 1)
}

fn num(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// `check TRACE --coverage` of `model`: rule -> count.
fn reported(model: &str, traces: &[&str]) -> Vec<(String, u64)> {
    let paths: Vec<String> = traces.iter().map(|t| format!("traces/{t}.toml")).collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    common::coverage(model, &args)
}

/// The derived counts equal the reported ones, row by row.
fn assert_same(trace: &str, derived: &BTreeMap<String, u64>, reported: &[(String, u64)]) {
    let names: Vec<&String> = reported.iter().map(|r| &r.0).collect();
    let mine: Vec<&String> = derived.keys().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, mine, "{trace}: rule names");
    for (rule, n) in reported {
        assert_eq!(derived[rule], *n, "{trace}: {rule}");
    }
}

// ---------------------------------------------------------------------------------------
// hpcc-ns3

/// One INT record as the events file has it.
#[derive(Clone, Copy, Default, PartialEq)]
struct Hop {
    b: u64,
    ts: u64,
    tx: u64,
    q: u64,
}

fn hops_of(ev: &Value) -> Option<(u64, u64, Vec<Hop>)> {
    let i = ev.get("int")?;
    let hops = i["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Hop {
            b: num(h, "b"),
            ts: num(h, "ts"),
            tx: num(h, "tx_bytes"),
            q: num(h, "qlen"),
        })
        .collect();
    Some((num(i, "nhop"), num(i, "path_id"), hops))
}

/// A hop's line rate: the simulator's codes 0..4 (25, 50, 100, 200, 400 Gbps), docs/wire.md
/// 5.1's 5..7 (800, 10, 40 Gbps); 8..15 none.
fn line_bps(code: u64) -> Option<u64> {
    const G: u64 = 1_000_000_000;
    [
        25 * G,
        50 * G,
        100 * G,
        200 * G,
        400 * G,
        800 * G,
        10 * G,
        40 * G,
    ]
    .get(code as usize)
    .copied()
}

/// `a` after `b` in 24-bit serial arithmetic (C-2).
fn after(a: u64, b: u64) -> bool {
    let d = a.wrapping_sub(b) & 0xFF_FFFF;
    d != 0 && d < 1 << 23
}

struct HpccSet {
    m: u64,
    t: u64,
    w: u64,
    eta: f64,
    mi: u64,
    rai: u64,
    min: u64,
    multi: bool,
    fast_react: bool,
    var_win: bool,
    sf: bool,
    int_multi: u64,
}

#[derive(Clone, Default)]
struct HpccFlow {
    started: bool,
    snd_nxt: u64,
    snd_una: Option<u64>,
    last_update_seq: u64,
    stored: [Hop; 5],
    path: Option<(u64, u64)>,
    /// The state after the flow's previous decision (None: the initial state).
    prev: Option<Value>,
    /// Per-hop incStage (not in the decision record; N9, N11).
    inc: [u64; 5],
}

/// One hop's tau and u against its stored record (docs/models/ns3.md N5, N6), or None when
/// the hop has no line rate or a zero TS delta (H8).
fn hop_u(s: &HpccSet, now: &Hop, prev: &Hop) -> Option<(u64, f64)> {
    let l = line_bps(now.b)? as f64;
    let tau = now.ts.wrapping_sub(prev.ts) & 0xFF_FFFF;
    if tau == 0 {
        return None;
    }
    let bytes = (now.tx.wrapping_sub(prev.tx) & 0xF_FFFF) * 128 * s.int_multi;
    let tx_rate = (bytes * 8) as f64 / (tau as f64 * 1e-9);
    let qmin = (now.q * 80 * s.int_multi).min(prev.q * 80 * s.int_multi);
    Some((tau, tx_rate / l + qmin as f64 * s.m as f64 / l / s.w as f64))
}

/// N9: the branch (0 MD, 1 MI, 2 AI), the rate before and after the clamps.
fn step(s: &HpccSet, rc: u64, inc: u64, c: f64) -> (usize, u64, u64) {
    let (branch, r) = if c >= 1.0 {
        (0, (rc as f64 / c) as u64 + s.rai)
    } else if inc >= s.mi {
        (1, (rc as f64 / c) as u64 + s.rai)
    } else {
        (2, rc + s.rai)
    };
    (branch, r, r.clamp(s.min, s.m))
}

fn f64_of(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap()
}

/// Every `hpcc-ns3` count of one trace, derived from its events and golden decisions.
fn derive_hpcc(trace: &str) -> BTreeMap<String, u64> {
    let man = common::manifest(&format!("traces/{trace}.toml"));
    let p = common::model_params(&man, "hpcc-ns3");
    let net = man["network"].as_table().unwrap();
    let s = HpccSet {
        m: int(net, "link_rate_bps"),
        t: int(net, "base_rtt_ns"),
        w: int(&p, "win_bytes"),
        eta: p["U_TARGET"].as_float().unwrap(),
        mi: int(&p, "MI_THRESH"),
        rai: int(&p, "RATE_AI"),
        min: int(&p, "MIN_RATE"),
        multi: flag(&p, "MULTI_RATE"),
        fast_react: flag(&p, "FAST_REACT"),
        var_win: flag(&p, "VAR_WIN"),
        sf: flag(&p, "SAMPLE_FEEDBACK"),
        int_multi: int(&p, "INT_MULTI"),
    };
    let repo = common::repo();
    let events = read_jsonl(&repo.join(format!("traces/{trace}.jsonl")));
    let golden = read_jsonl(&repo.join(format!("golden/{trace}/hpcc-ns3.jsonl")));
    let mut decision: BTreeMap<(u64, u64), &Value> = BTreeMap::new();
    for d in &golden {
        decision.insert((num(d, "flow"), num(&d["cause"], "index")), d);
    }
    let mut c: BTreeMap<&str, u64> = BTreeMap::new();
    let mut hit = |k: &'static str, yes: bool| *c.entry(k).or_default() += u64::from(yes);
    let mut flows: BTreeMap<u64, HpccFlow> = BTreeMap::new();
    let mut acks = 0;
    for ev in &events {
        let f = flows.entry(num(ev, "flow")).or_default();
        let kind = ev["kind"].as_str().unwrap();
        if kind == "tx_data" {
            f.snd_nxt = (num(ev, "psn") + 1) & 0xFF_FFFF; // HPCC-7
            continue;
        }
        let nak = match kind {
            "rx_ack" => false,
            "rx_nak" => true,
            _ => continue,
        };
        acks += 1;
        let d = decision[&(num(ev, "flow"), num(ev, "index"))];
        let st = &d["state"];
        let psn = num(ev, "psn");
        let seq = if nak { psn } else { (psn + 1) & 0xFF_FFFF };
        f.snd_una = Some(match f.snd_una {
            Some(u) if !after(seq, u) => u,
            _ => seq,
        });
        if nak {
            f.snd_nxt = f.snd_una.unwrap(); // RecoverQueue, before HandleAckHp
        }
        let int = hops_of(ev);
        let nhop = int.as_ref().map_or(0, |i| i.0);
        let hops: Vec<Hop> = int.as_ref().map_or(Vec::new(), |i| i.2.clone());
        // N2, N3: how HandleAckHp dispatches it.
        let first = !f.started;
        let committed = !first && after(seq, f.last_update_seq);
        let fast = !first && !committed && s.fast_react;
        let ignored = !first && !committed && !s.fast_react;
        hit("H10 ACK without INT (nhop 0): no rate change", nhop == 0);
        hit(
            "N3 first ACK of a flow: INT stored, lastUpdateSeq = snd_nxt",
            first,
        );
        hit(
            "N2 committed update: ack.seq after lastUpdateSeq (once per RTT)",
            committed,
        );
        hit(
            "N2 fast react: ack.seq not after lastUpdateSeq (FAST_REACT 1)",
            fast,
        );
        hit("N2 ACK within the RTT ignored (FAST_REACT 0)", ignored);
        hit(
            "C-2 serial and integer order of ack.seq and lastUpdateSeq differ (PSN wrap)",
            !first && after(seq, f.last_update_seq) != (seq > f.last_update_seq),
        );
        hit("H9 NAK: ack.seq = PSN, snd_nxt = snd_una first", nak);
        hit("N14 VAR_WIN 1: window from the rate", s.var_win);
        hit("N14 VAR_WIN 0: fixed window", !s.var_win);
        let long = !ignored && nhop > 5;
        hit("N4 more than 5 hops: no rate change", long);
        let runs = (committed || fast) && !long;
        let mut updated = [false; 5];
        if first {
            // N3: lastUpdateSeq = snd_nxt; the records stored (none from a stack past 5).
            f.started = true;
            f.last_update_seq = f.snd_nxt;
            if nhop <= 5 {
                f.stored[..hops.len()].copy_from_slice(&hops);
            }
        }
        if runs {
            hit("INT from more than one hop", hops.len() > 1);
            let header = int.as_ref().map(|i| (i.0, i.1));
            hit(
                "H7 path change (nHop or pathID): deltas against another path's records",
                matches!((f.path, header), (Some(a), Some(b)) if a != b),
            );
            let mut ts_wrap = false;
            let mut tx_wrap = false;
            let mut skipped = false;
            let mut sampled = false;
            let mut per_hop: Vec<Option<(u64, f64)>> = Vec::new();
            for (i, h) in hops.iter().enumerate() {
                let prev = f.stored[i];
                if s.sf && fast && h.q == 0 {
                    sampled = true; // N13
                    per_hop.push(None);
                    continue;
                }
                let Some(tu) = hop_u(&s, h, &prev) else {
                    skipped = true;
                    per_hop.push(None);
                    continue;
                };
                updated[i] = true;
                ts_wrap |= h.ts < prev.ts;
                tx_wrap |= h.tx < prev.tx;
                per_hop.push(Some(tu));
                f.stored[i] = *h; // N12
            }
            hit("N5 INT ts delta across the 24-bit wrap", ts_wrap);
            hit("N5 INT txBytes delta across the 20-bit wrap", tx_wrap);
            hit("H8 a hop skipped: zero TS delta or no line rate", skipped);
            hit(
                "N13 SAMPLE_FEEDBACK: a hop with qLen 0 skipped on a fast react",
                sampled,
            );
            let any = updated.contains(&true);
            let mut branch = [false; 3];
            let (mut low, mut high) = (false, false);
            let (mut tau_clamped, mut max_later, mut later, mut stale) =
                (false, false, false, false);
            if any && !s.multi {
                // N7: the first hop with the largest u (strict >, from 0) gives U and dt.
                let (mut u_max, mut dt, mut at) = (0.0f64, 0u64, 0usize);
                for (i, x) in per_hop.iter().enumerate() {
                    if let Some((tau, u)) = *x
                        && u > u_max
                    {
                        (u_max, dt, at) = (u, tau, i);
                    }
                }
                tau_clamped = dt > s.t;
                max_later = at > 0;
                let dt = dt.min(s.t);
                let before = f.prev.as_ref();
                let u0 = before.map_or(1.0, |b| f64_of(b, "U"));
                let rc = before.map_or(s.m, |b| num(b, "Rc"));
                let inc = before.map_or(0, |b| num(b, "incStage"));
                let u = (u0 * (s.t - dt) as f64 + u_max * dt as f64) / s.t as f64;
                assert_eq!(u, f64_of(st, "U"), "{trace}: U at {d}");
                let (b, raw, r) = step(&s, rc, inc, u / s.eta);
                branch[b] = true;
                (low, high) = (raw < s.min, raw > s.m);
                assert_eq!(r, num(st, "R"), "{trace}: R at {d}");
                if committed {
                    assert_eq!(num(st, "Rc"), r, "{trace}: Rc at {d}");
                    let inc_after = if b == 2 { inc + 1 } else { 0 };
                    assert_eq!(num(st, "incStage"), inc_after, "{trace}: incStage at {d}");
                }
            } else if any {
                // N8, N10: per-hop EWMA and step; R = min(line rate, new or kept Rc_i).
                let (mut r, mut from) = (s.m, None);
                let (mut min_new, mut min_kept) = (u64::MAX, u64::MAX);
                for (i, x) in per_hop.iter().enumerate() {
                    let rc_b = f.prev.as_ref().map_or(s.m, |b| num(b, &format!("Rc{i}")));
                    let cand = if let Some((tau, u)) = *x {
                        tau_clamped |= tau > s.t;
                        let tau = tau.min(s.t);
                        let ui = f.prev.as_ref().map_or(1.0, |b| f64_of(b, &format!("u{i}")));
                        let ui = (ui * (s.t - tau) as f64 + u * tau as f64) / s.t as f64;
                        assert_eq!(ui, f64_of(st, &format!("u{i}")), "{trace}: u{i} at {d}");
                        let (b, raw, x) = step(&s, rc_b, f.inc[i], ui / s.eta);
                        branch[b] = true;
                        low |= raw < s.min;
                        high |= raw > s.m;
                        if committed {
                            assert_eq!(num(st, &format!("Rc{i}")), x, "{trace}: Rc{i} at {d}");
                            f.inc[i] = if b == 2 { f.inc[i] + 1 } else { 0 };
                        }
                        min_new = min_new.min(x);
                        x
                    } else {
                        min_kept = min_kept.min(rc_b);
                        rc_b
                    };
                    if cand < r {
                        (r, from) = (cand, Some(i));
                    }
                }
                assert_eq!(r, num(st, "R"), "{trace}: R at {d}");
                later = from.is_some_and(|i| i > 0);
                stale = min_kept < min_new.min(s.m);
            }
            hit(
                "N7 MULTI_RATE 0: one U from the most loaded hop",
                any && !s.multi,
            );
            hit("N7 the most loaded hop is not the first", max_later);
            hit("N7 N8 tau clamped to T", tau_clamped);
            hit("N8 MULTI_RATE 1: u and Rc per hop", any && s.multi);
            hit("N10 MULTI_RATE 1: R from a hop other than the first", later);
            hit(
                "N10 MULTI_RATE 1: R bounded by the Rc of a hop not updated",
                stale,
            );
            hit("N9 MD: c >= 1", branch[0]);
            hit("N9 MI: incStage >= MI_THRESH, c < 1", branch[1]);
            hit("N9 AI: incStage < MI_THRESH", branch[2]);
            hit("N9 rate clamped to MIN_RATE", low);
            hit("N9 rate clamped to the line rate", high);
            if committed && after(f.snd_nxt, f.last_update_seq) {
                f.last_update_seq = f.snd_nxt; // N11
            }
        }
        if !ignored && (1..=5).contains(&nhop) {
            f.path = int.as_ref().map(|i| (i.0, i.1));
        }
        assert_eq!(
            num(st, "lastUpdateSeq"),
            f.last_update_seq,
            "{trace}: lastUpdateSeq at {d}"
        );
        if !s.multi {
            assert_eq!(num(st, "snd_nxt"), f.snd_nxt, "{trace}: snd_nxt at {d}");
        }
        // N14: the window from the rate.
        let r = num(st, "R");
        let win = if s.var_win {
            (s.w * r / s.m).max(1)
        } else {
            s.w
        };
        assert_eq!(num(d, "window_bytes"), win, "{trace}: window at {d}");
        f.prev = Some(st.clone());
    }
    assert_eq!(acks, golden.len(), "{trace}: one decision per ACK / NAK");
    c.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Each `hpcc-ns3` trace's counts follow from its events and golden decisions, and the suite
/// runs every rule a simulator can reach at least three times.
#[test]
fn hpcc_ns3_counts_follow_from_the_events_and_cover_every_reachable_rule() {
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for trace in HPCC_TRACES {
        let derived = derive_hpcc(trace);
        assert_same(trace, &derived, &reported("hpcc-ns3", &[trace]));
        for (k, v) in derived {
            *total.entry(k).or_default() += v;
        }
    }
    assert_same("suite", &total, &reported("hpcc-ns3", &HPCC_TRACES));
    common::assert_full(&total, &HPCC_UNREACHABLE);
}

/// NAKs below an ACK already seen (H9: `Acknowledge`'s max() keeps snd_una, then `RecoverQueue`
/// moves snd_nxt back to it, not to the NAK's PSN): (event position, NAK PSN, snd_una), from
/// the events alone — per flow, the highest ack.seq so far (ACK of PSN p: p + 1, HPCC-7).
fn late_naks(trace: &str) -> Vec<(usize, u64, u64)> {
    let events = read_jsonl(&common::repo().join(format!("traces/{trace}.jsonl")));
    let mut una: BTreeMap<u64, u64> = BTreeMap::new();
    let mut late = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        let (flow, psn) = (num(ev, "flow"), num(ev, "psn"));
        let seq = match ev["kind"].as_str().unwrap() {
            "rx_ack" => (psn + 1) & 0xFF_FFFF,
            "rx_nak" => psn,
            _ => continue,
        };
        match una.get(&flow) {
            Some(&u) if after(u, seq) => late.push((i, psn, u)),
            Some(&u) if !after(seq, u) => {}
            _ => {
                una.insert(flow, seq);
            }
        }
    }
    late
}

/// The simulator's replies come back in order per flow: no run has a NAK below an ACK already
/// seen. ns3_hpcc_reordered has one, and its golden snd_nxt is the ACK's, not the NAK's.
#[test]
fn only_the_reordered_trace_has_a_nak_below_an_ack_already_seen() {
    for trace in HPCC_RUNS {
        assert_eq!(late_naks(trace), [], "{trace}");
    }
    // ns3_hpcc_single's first NAK (event 123, flow 0, PSN 49) moved after flow 0's next ACK
    // (event 163, PSN 49: ack.seq 50), which is event 162 once the NAK is out of the way.
    assert_eq!(late_naks("ns3_hpcc_reordered"), [(163, 49, 50)]);
    let golden = read_jsonl(&common::repo().join("golden/ns3_hpcc_reordered/hpcc-ns3.jsonl"));
    let nak: Vec<&Value> = golden
        .iter()
        .filter(|d| d["cause"]["kind"] == "rx_nak")
        .collect();
    assert_eq!(nak.len(), 1);
    // Acknowledge(49): snd_una = max(50, 49) = 50; RecoverQueue: snd_nxt = 50 (49 without the
    // max: the cargo-mutants survivor of docs/conformance.md).
    assert_eq!(num(&nak[0]["state"], "snd_nxt"), 50, "{}", nak[0]);
}

/// tests/fixtures/ns3-sim/reorder.py, redone: ns3_hpcc_single's events up to the ACK that
/// follows the first NAK, that NAK (at the ACK's time + 1 ns), 40 more events; `index`
/// renumbered per flow in the new order; nothing else changed.
#[test]
fn the_reordered_trace_is_hpcc_single_with_its_first_nak_late() {
    let repo = common::repo();
    let src = read_jsonl(&repo.join("traces/ns3_hpcc_single.jsonl"));
    let out = read_jsonl(&repo.join("traces/ns3_hpcc_reordered.jsonl"));
    let nak = src.iter().position(|e| e["kind"] == "rx_nak").unwrap();
    let flow = num(&src[nak], "flow");
    let ack = (nak + 1..src.len())
        .find(|&i| num(&src[i], "flow") == flow && src[i]["kind"] == "rx_ack")
        .unwrap();
    assert_eq!((nak, ack), (123, 163));
    let order: Vec<usize> = (0..nak)
        .chain(nak + 1..=ack)
        .chain([nak])
        .chain(ack + 1..ack + 41)
        .collect();
    assert_eq!(out.len(), order.len());
    let mut index: BTreeMap<u64, u64> = BTreeMap::new();
    for (o, &i) in out.iter().zip(&order) {
        let mut want = src[i].clone();
        let n = index.entry(num(&want, "flow")).or_default();
        want["index"] = (*n).into();
        *n += 1;
        if i == nak {
            want["t"] = (num(&src[ack], "t") + 1).into();
        }
        assert_eq!(o, &want);
    }
    // The manifest: hpcc_single's model and parameters, its first two flows (flow 2 starts
    // later than the cut).
    let (a, b) = (
        common::manifest("traces/ns3_hpcc_single.toml"),
        common::manifest("traces/ns3_hpcc_reordered.toml"),
    );
    assert_eq!(a["models"], b["models"]);
    assert_eq!(a["network"], b["network"]);
    let flows = |m: &toml::Table| m["flows"].as_array().unwrap().clone();
    assert_eq!(flows(&b)[..], flows(&a)[..2]);
}

/// INT_MULTI 2 (N5: ΔtxBytes = Δunits · 128 · INT_MULTI) by hand on ns3_hpcc_intmulti's first
/// update: flow 0's first ACK (event 26) stored three hops at tx_bytes 0, the second (event 28,
/// ack.seq 2, not after lastUpdateSeq 26: a fast react) has tx_bytes 4 on each, every TS 348 ns
/// later. Hop 2 (code 0, 25 Gbps) is the most loaded: 4 · 128 · 2 = 1,024 B in 348 ns,
/// u = 8,192 / (348e-9 · 25e9) = 8,192 / 8,700, qLen 0. U = (1 · (8,800 − 348) + u · 348) /
/// 8,800 = (8,452 + 327.68) / 8,800 = 54,873 / 55,000 (read with INT_MULTI 1, 512 B:
/// 53,849 / 55,000; ΔtxBytes divided by INT_MULTI, 256 B: 53,337 / 55,000).
/// c = U / 0.95 >= 1: MD, R = ⌊25e9 / c⌋ + RATE_AI = ⌊23,804,967,834.8⌋ + 50,000,000 =
/// 23,854,967,834; window = ⌊104,000 · R / 25e9⌋ = ⌊99,236.67⌋ = 99,236.
#[test]
fn intmulti_2_first_update_by_hand() {
    for trace in HPCC_RUNS {
        let man = common::manifest(&format!("traces/{trace}.toml"));
        let multi = int(&common::model_params(&man, "hpcc-ns3"), "INT_MULTI");
        assert_eq!(multi, if trace == "ns3_hpcc_intmulti" { 2 } else { 1 });
    }
    let repo = common::repo();
    let events = read_jsonl(&repo.join("traces/ns3_hpcc_intmulti.jsonl"));
    let (Some((3, _, h26)), Some((3, _, h28))) = (hops_of(&events[26]), hops_of(&events[28]))
    else {
        panic!("events 26 and 28: three hops each")
    };
    for (a, b) in h26.iter().zip(&h28) {
        assert_eq!((a.tx, b.tx, b.ts - a.ts, a.q, b.q), (0, 4, 348, 0, 0));
    }
    assert_eq!(h28.iter().map(|h| h.b).collect::<Vec<_>>(), [2, 2, 0]);
    let golden = read_jsonl(&repo.join("golden/ns3_hpcc_intmulti/hpcc-ns3.jsonl"));
    let d = golden
        .iter()
        .find(|d| num(d, "flow") == 0 && num(&d["cause"], "index") == 28)
        .unwrap();
    assert!(
        (f64_of(&d["state"], "U") - 54_873.0 / 55_000.0).abs() < 1e-15,
        "{d}"
    );
    assert_eq!(num(d, "rate_bps"), 23_854_967_834, "{d}");
    assert_eq!(num(d, "window_bytes"), 99_236, "{d}");
}

// ---------------------------------------------------------------------------------------
// dcqcn-ns3

/// A whole number of µs, in ns (the bundled manifests write whole µs: no MicroSeconds
/// rounding involved).
fn micros(t: &toml::Table, k: &str) -> u64 {
    let us = t[k].as_float().unwrap();
    assert_eq!(us.fract(), 0.0, "{k} = {us}: whole µs expected");
    us as u64 * 1000
}

/// A trace's events: its events file, or what the harness extracts from its capture.
fn trace_events(trace: &str) -> Vec<Value> {
    let repo = common::repo();
    let file = repo.join(format!("traces/{trace}.jsonl"));
    if file.exists() {
        return read_jsonl(&file);
    }
    let dir = common::Scratch::new(&format!("coverage-ns3-{trace}"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["replay", &format!("traces/{trace}.toml"), "-q", "-o"])
        .arg(dir.join("decisions.jsonl"))
        .arg("--emit-events")
        .arg(dir.join("events.jsonl"))
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    read_jsonl(&dir.join("events.jsonl"))
}

/// Every `dcqcn-ns3` count of one trace, derived from its events (CNP times: the timers'
/// schedules follow from them) and golden decisions (the rates before each step).
fn derive_dcqcn(trace: &str) -> BTreeMap<String, u64> {
    let man = common::manifest(&format!("traces/{trace}.toml"));
    let p = common::model_params(&man, "dcqcn-ns3");
    let line = int(man["network"].as_table().unwrap(), "link_rate_bps");
    let (a_ns, d_ns, rp_ns) = (
        micros(&p, "ALPHA_RESUME_INTERVAL"),
        micros(&p, "RATE_DECREASE_INTERVAL"),
        micros(&p, "RP_TIMER"),
    );
    let f_times = int(&p, "FAST_RECOVERY_TIMES");
    let (rai, rhai, min) = (int(&p, "RATE_AI"), int(&p, "RATE_HAI"), int(&p, "MIN_RATE"));
    let clamp = flag(&p, "CLAMP_TARGET_RATE");
    // The importer never writes it (every simulator run keeps the full rate on a first CNP);
    // dcqcn_ns3's scenario sets 0.5.
    let first_cnp = p
        .get("RATE_ON_FIRST_CNP")
        .map_or(1.0, |v| v.as_float().unwrap());
    let repo = common::repo();
    let events = trace_events(trace);
    let golden = read_jsonl(&repo.join(format!("golden/{trace}/dcqcn-ns3.jsonl")));
    // Timers fire up to the trace's last event (replay's finish at the last time).
    let t_last = num(events.last().unwrap(), "t");
    let mut c: BTreeMap<&str, u64> = BTreeMap::new();
    let mut hit = |k: &'static str, n: u64| *c.entry(k).or_default() += n;
    hit(
        "D5 tx_data: no byte counter, nothing changes",
        events.iter().filter(|e| e["kind"] == "tx_data").count() as u64,
    );
    let mut cnps: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["kind"] == "rx_cnp") {
        cnps.entry(num(e, "flow")).or_default().push(num(e, "t"));
    }
    for (&flow, times) in &cnps {
        let t0 = times[0];
        // Alpha updates at t0 + k·A (k >= 1); decrease checks at t0 + D + 1 + j·D; a timer
        // runs before an event at its ns (C-5), so a CNP at a timer's ns counts for the next.
        let alpha: Vec<u64> = (1..)
            .map(|k| t0 + k * a_ns)
            .take_while(|&t| t <= t_last)
            .collect();
        let checks: Vec<u64> = (0..)
            .map(|j| t0 + d_ns + 1 + j * d_ns)
            .take_while(|&t| t <= t_last)
            .collect();
        let later = &times[1..];
        hit(
            "cnp_received_mlx first CNP: alpha = 1, alpha and decrease timers started",
            1,
        );
        hit(
            "D7 first CNP with RATE_ON_FIRST_CNP < 1: Rc = Rt lowered",
            u64::from(first_cnp < 1.0),
        );
        hit(
            "cnp_received_mlx later CNP: both CNP bits set",
            later.len() as u64,
        );
        // A later CNP finds the decrease bit set when the flow's previous CNP came at or after
        // the last check before it (or no check ran yet).
        let pending = times
            .windows(2)
            .filter(|w| {
                let last_check = checks.iter().rev().find(|&&d| d <= w[1]);
                last_check.is_none_or(|&d| w[0] >= d)
            })
            .count();
        hit(
            "D2 CNP while a cut is already pending (one cut per interval)",
            pending as u64,
        );
        let mut from = t0;
        let raised = alpha
            .iter()
            .filter(|&&t| {
                let r = later.iter().any(|&x| x >= from && x < t);
                from = t;
                r
            })
            .count() as u64;
        hit(
            "D3 alpha timer, CNP in the interval: alpha = (1 - g) alpha + g",
            raised,
        );
        hit(
            "D3 alpha timer, no CNP in the interval: alpha = (1 - g) alpha",
            alpha.len() as u64 - raised,
        );
        let mut from = t0;
        let cut_times: Vec<u64> = checks
            .iter()
            .copied()
            .filter(|&t| {
                let r = times.iter().any(|&x| x >= from && x < t);
                from = t;
                r
            })
            .collect();
        hit(
            "D2 decrease check after a CNP: cut, rate-increase timer restarted",
            cut_times.len() as u64,
        );
        hit(
            "D2 decrease check without a CNP: no cut",
            (checks.len() - cut_times.len()) as u64,
        );
        // The flow's decisions, in the order the model made them.
        let ds: Vec<&Value> = golden.iter().filter(|d| num(d, "flow") == flow).collect();
        let cuts: Vec<u64> = ds
            .iter()
            .filter(|d| d["cause"]["name"] == "rate_decrease")
            .map(|d| num(d, "t"))
            .collect();
        assert_eq!(cuts, cut_times, "{trace} flow {flow}: cut times");
        assert_eq!(
            ds.iter().filter(|d| d["cause"]["kind"] == "rx_cnp").count(),
            times.len(),
            "{trace} flow {flow}: a decision per CNP"
        );
        let mut pending_increase: Option<u64> = None;
        for (i, d) in ds.iter().enumerate() {
            let (t, st) = (num(d, "t"), &d["state"]);
            let b = &ds[i.max(1) - 1]["state"];
            match d["cause"]["name"].as_str() {
                Some("rate_decrease") => {
                    let (rc, rt, stage) = (num(b, "Rc"), num(b, "Rt"), num(b, "timer_stage"));
                    let alpha = f64_of(st, "alpha"); // a cut leaves alpha alone
                    hit(
                        "D4 cut: Rt = Rc, a rate-increase round ran since the last cut",
                        u64::from(stage != 0),
                    );
                    hit(
                        "D4 cut: Rt = Rc on CLAMP_TARGET_RATE alone (no round since the last cut)",
                        u64::from(stage == 0 && clamp),
                    );
                    hit(
                        "D4 cut: Rt kept (no round since the last cut, CLAMP_TARGET_RATE 0)",
                        u64::from(stage == 0 && !clamp),
                    );
                    let product = rc as f64 * (1.0 - alpha / 2.0);
                    let cut = product as u64;
                    hit("D7 cut clamped to MIN_RATE", u64::from(cut < min));
                    hit(
                        "C-3 cut truncated (Rc (1 - alpha/2) not whole), not clamped",
                        u64::from(cut >= min && product.fract() != 0.0),
                    );
                    assert_eq!(num(st, "Rc"), cut.max(min), "{trace}: cut at {d}");
                    let rt_after = if clamp || stage != 0 { rc } else { rt };
                    assert_eq!(num(st, "Rt"), rt_after, "{trace}: Rt at {d}");
                    assert_eq!(num(st, "timer_stage"), 0);
                    // A cut at the ns its pending increase was due cancels it (the pair counts
                    // once); a cut restarts the increase timer.
                    hit(
                        "ns-3 order: a rate increase and a decrease check due at the same ns",
                        u64::from(pending_increase == Some(t)),
                    );
                    pending_increase = Some(t + rp_ns);
                }
                Some("rate_increase") => {
                    let (rc, rt, stage) = (num(b, "Rc"), num(b, "Rt"), num(b, "timer_stage"));
                    hit(
                        "D5 fast recovery: timer_stage < F",
                        u64::from(stage < f_times),
                    );
                    hit(
                        "D5 additive increase: timer_stage = F, Rt += RATE_AI",
                        u64::from(stage == f_times),
                    );
                    hit(
                        "D5 hyper increase: timer_stage > F, Rt += RATE_HAI",
                        u64::from(stage > f_times),
                    );
                    let step = if stage == f_times { rai } else { rhai };
                    let over = stage >= f_times && rt + step > line;
                    hit("Rt clamped at the line rate", u64::from(over));
                    let rt2 = if stage < f_times {
                        rt
                    } else {
                        (rt + step).min(line)
                    };
                    hit(
                        "C-3 Rc/2 + Rt/2 truncated (an odd rate)",
                        u64::from(rc % 2 == 1 || rt2 % 2 == 1),
                    );
                    assert_eq!(num(st, "Rt"), rt2, "{trace}: Rt at {d}");
                    assert_eq!(num(st, "Rc"), rc / 2 + rt2 / 2, "{trace}: Rc at {d}");
                    assert_eq!(num(st, "timer_stage"), stage + 1);
                    assert_eq!(pending_increase, Some(t), "{trace}: increase due at {d}");
                    hit(
                        "ns-3 order: a rate increase and a decrease check due at the same ns",
                        u64::from(checks.contains(&t)),
                    );
                    pending_increase = Some(t + rp_ns);
                }
                _ if i == 0 => {
                    // The first CNP: a flow runs at the line rate until then (no timer runs
                    // before it); `m_rate = m_rateOnFirstCNP * m_rate`, truncated (C-3).
                    assert_eq!(d["cause"]["kind"], "rx_cnp", "{trace}: {d}");
                    let r = (line as f64 * first_cnp) as u64;
                    assert_eq!((num(st, "Rc"), num(st, "Rt")), (r, r), "{trace}: D7 at {d}");
                }
                _ => assert_eq!(d["cause"]["kind"], "rx_cnp", "{trace}: {d}"),
            }
        }
    }
    c.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Each `dcqcn-ns3` trace's counts follow from its events and golden decisions, and the suite
/// runs every rule a simulator can reach at least three times.
#[test]
fn dcqcn_ns3_counts_follow_from_the_events_and_cover_every_reachable_rule() {
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for trace in DCQCN_TRACES {
        let derived = derive_dcqcn(trace);
        assert_same(trace, &derived, &reported("dcqcn-ns3", &[trace]));
        for (k, v) in derived {
            *total.entry(k).or_default() += v;
        }
    }
    assert_same("suite", &total, &reported("dcqcn-ns3", &DCQCN_TRACES));
    common::assert_full(&total, &DCQCN_UNREACHABLE);
}
