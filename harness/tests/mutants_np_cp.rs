//! The DCQCN notification and congestion points' suite worth (issue 17.3 for `dcqcn-np` and
//! `dcqcn-cp`): the example Python DUT `examples/duts/dcqcn_np_cp_dut.py` (`--model np|cp`)
//! conforms on the bundled trace of its model (traces/dcqcn_np, a receiver tap; traces/dcqcn_cp,
//! a switch egress mirror), and each of its single-bug variants is caught there — `diff --state
//! all` exits 1 — with diff's earliest first divergence in the reply where the DUT says its bug
//! first acts (it runs a correct model beside the mutated one and writes `bug first acts at
//! event N (flow F, index I)` into DUT_BUG_LOG, as examples/duts/dcqcn_dut.py does), or is
//! listed as surviving the bundled trace, with why, and then caught on a hand-built events
//! stream whose decisions are derived below. A mutant caught elsewhere than listed, or a
//! survivor the trace starts catching, fails (the table of /tmp/reports/h7-conformance.md,
//! meant for docs/conformance.md, changes with it).

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A mutant: its name (the DUT's `--bug`), whether the bundled trace of its model catches it,
/// and whether the outputs alone (`send_cnp` / `mark_ce`, a decision missing or extra: what
/// `check` and a plain `diff` compare) catch it there too.
struct Mutant {
    bug: &'static str,
    caught: bool,
    by_outputs: bool,
}

const fn m(bug: &'static str, caught: bool, by_outputs: bool) -> Mutant {
    Mutant {
        bug,
        caught,
        by_outputs,
    }
}

/// `NP_BUGS` of the DUT over traces/dcqcn_np (N = `min_time_between_cnps` = 2 µs; 940 rx_data
/// in four flows: 373 CE, 360 ECT(0), 207 ECT(1) (h1's flows 1 and 2); coverage rows: 9 marks
/// exactly N after a CNP, 59 at the ns of a timer's CNP, 160 unmarked packets while a mark is
/// pending — docs/conformance.md).
const NP: [Mutant; 11] = [
    m("interval-gt", true, true),
    // 2 ms: the run is 749 µs, so only each flow's first mark sends a CNP.
    m("interval-ms", true, true),
    m("first-mark-waits", true, true),
    m("timer-forgets-mark", true, true),
    m("cnp-per-mark", true, true),
    // 567 unmarked packets: the first (event 0, ECT(0)) is taken for a mark.
    m("ce-any-ect", true, true),
    // Caught at flow 1's first packet, ECT(1) and unmarked (ECT(0) & 1 = 0 hides it on the
    // others): derived in `the_former_np_survivors_first_act_where_the_events_say`.
    m("ce-ect1", true, true),
    m("timer-from-mark", true, true),
    // Caught at flow 1's first CE mark, within N of flow 0's last CNP (flows 0 and 1 share
    // the bottleneck from 110 µs): derived in the same test.
    m("interval-per-host", true, true),
    m("timer-cnp-no-interval", true, true),
    m("unmarked-clears", true, true),
];

/// `CP_BUGS` of the DUT over traces/dcqcn_cp (Kmin 1,040 B, Kmax 6,560 B, Pmax 0.7; 453
/// dequeues: 36 at q = Kmin, 9 at q = Kmax, 43 above it, 6 where eq. 5's order shows in p's
/// last bit — docs/conformance.md).
const CP: [Mutant; 10] = [
    m("kmin-lt", true, true),
    m("kmax-lt", true, true),
    // Only p's last bit differs (C-3): the state shows it, no mark flips on this trace.
    m("p-scaled-first", true, false),
    m("draw-always", true, true),
    m("draw-at-p1", true, true),
    m("rng-per-flow", true, true),
    m("thresholds-kb", true, true),
    m("no-pmax", true, true),
    m("u-low-bits", true, true),
    m("qlen-with-packet", true, true),
];

fn dut(model: &str, bug: Option<&str>) -> String {
    let bug = bug.map_or(String::new(), |b| format!(" --bug {b}"));
    format!("process:python3 examples/duts/dcqcn_np_cp_dut.py --model {model}{bug}")
}

/// Where a divergence lies: (t, flow, the event index its cause names; None for a timer).
use common::At;

/// One `diff` of the DUT.
struct Diff {
    code: i32,
    /// The earliest first divergence over the flows, either side.
    first: Option<At>,
    /// What the DUT wrote into DUT_BUG_LOG.
    log: String,
}

/// `ccreplay diff TRACE --dut ... --format json [--state all] [--events FILE]`.
fn diff(
    trace: &str,
    model: &str,
    bug: Option<&str>,
    state: bool,
    events: Option<&Path>,
    log: &Path,
) -> Diff {
    let _ = std::fs::remove_file(log);
    let mut c = Command::new(env!("CARGO_BIN_EXE_ccreplay"));
    c.args([
        "diff",
        trace,
        "--dut",
        &dut(model, bug),
        "--format",
        "json",
        "-q",
    ])
    .env("DUT_BUG_LOG", log)
    .current_dir(repo());
    if state {
        c.args(["--state", "all"]);
    }
    if let Some(e) = events {
        c.arg("--events").arg(e);
    }
    let out = c.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{model} {bug:?} on {trace}: not JSON ({e}), exit {code}"));
    let first = common::earliest_divergence(&json);
    Diff {
        code,
        first,
        log: std::fs::read_to_string(log).unwrap_or_default(),
    }
}

/// The DUT's own list (`NP_BUGS` or `CP_BUGS`), sorted.
fn dut_list(name: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sys; sys.path.insert(0, 'examples/duts'); import dcqcn_np_cp_dut as d; \
                 print(' '.join(sorted(d.{name})))"
            ),
        ])
        .current_dir(repo())
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scratch(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("mutants-np-cp-{name}"))
}

fn check_model(model: &str, trace: &str, mutants: &[Mutant], list: &str) {
    let mut ours: Vec<&str> = mutants.iter().map(|m| m.bug).collect();
    ours.sort();
    assert_eq!(
        dut_list(list),
        ours.join(" "),
        "examples/duts/dcqcn_np_cp_dut.py {list}"
    );
    let dir = scratch(model);
    let log = dir.join("bug.log");
    let evs = common::emitted_events(trace, &dir, "trace");

    for state in [false, true] {
        let d = diff(trace, model, None, state, None, &log);
        assert_eq!(d.code, 0, "the correct {model} DUT differs on {trace}");
        assert_eq!(d.log, "", "the correct DUT reports no bug");
    }
    let mut wrong = Vec::new();
    for mt in mutants {
        let bug = mt.bug;
        let d = diff(trace, model, Some(bug), true, None, &log);
        let act = common::first_act(&d.log, &evs);
        if d.code != i32::from(mt.caught) || act.is_some() != mt.caught {
            wrong.push(format!(
                "{bug}: exit {} (expected {}), the DUT: {:?}",
                d.code,
                i32::from(mt.caught),
                d.log
            ));
            continue;
        }
        if let Some(act) = act {
            match d.first {
                Some(at) if common::in_reply(at, act, &evs) => {}
                other => wrong.push(format!(
                    "{bug}: first divergence {other:?}, the bug first acts at {act:?}"
                )),
            }
        }
        // The outputs alone (what `check` compares).
        let plain = diff(trace, model, Some(bug), false, None, &log);
        if plain.code != i32::from(mt.by_outputs) {
            wrong.push(format!(
                "{bug}: outputs only: exit {} (expected {})",
                plain.code,
                i32::from(mt.by_outputs)
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn every_np_mutant_is_caught_by_dcqcn_np_where_it_first_acts_or_listed_as_surviving() {
    check_model("np", "traces/dcqcn_np.toml", &NP, "NP_BUGS");
}

#[test]
fn every_cp_mutant_is_caught_by_dcqcn_cp_where_it_first_acts() {
    check_model("cp", "traces/dcqcn_cp.toml", &CP, "CP_BUGS");
}

/// Which ECN codepoints (the IP header's two bits) an NP takes for a CE mark.
type IsCe = fn(u64) -> bool;

/// DCQCN-2's CNP pacing written again from docs/models/dcqcn.md (NP), for deriving where a
/// pacing mistake first changes the NP's replies on a trace's `rx_data` events: per event, the
/// CNPs of its reply — the `cnp_interval` timers due since the previous event, up to its ns
/// (C-5: before it; earliest first, flows in id order on a tie), then its own. A mark (`ce`
/// of the ECN bits) sends a CNP at once when the pacing state has none or `t − last ≥ n`,
/// else it is remembered and one CNP goes at `last + n`. The pacing state (the last CNP) is
/// the flow's, or with `per_host` the host's, shared by all flows.
fn np_replies(evs: &[serde_json::Value], n: u64, ce: IsCe, per_host: bool) -> Vec<Vec<At>> {
    // Per flow: (its last CNP, the deadline of a pending mark).
    let mut flows: BTreeMap<u64, (Option<u64>, Option<u64>)> = BTreeMap::new();
    let mut host_last: Option<u64> = None;
    let mut replies = Vec::with_capacity(evs.len());
    for e in evs {
        let (t, flow) = (e["t"].as_u64().unwrap(), e["flow"].as_u64().unwrap());
        let mut reply = Vec::new();
        // Timers due up to t, earliest first; on a tie in flow order (BTreeMap order).
        while let Some(d) = flows.values().filter_map(|f| f.1).filter(|d| *d <= t).min() {
            for (id, f) in flows.iter_mut().filter(|(_, f)| f.1 == Some(d)) {
                reply.push((d, *id, None));
                (f.0, f.1) = (Some(d), None);
                host_last = Some(d);
            }
        }
        if ce(e["ecn"].as_u64().unwrap()) {
            let f = flows.entry(flow).or_default();
            let last = if per_host { host_last } else { f.0 };
            match last {
                Some(l) if t - l < n => f.1 = Some(l + n),
                _ => {
                    reply.push((t, flow, e["index"].as_u64()));
                    (f.0, f.1) = (Some(t), None);
                    host_last = Some(t);
                }
            }
        }
        replies.push(reply);
    }
    replies
}

/// `ce-ect1` and `interval-per-host` survived the trace before dcqcn_np had ECT(1) data and
/// two flows marked at once. Where each first acts is derived here from the trace's events
/// (`np_replies`: the first event whose reply differs between DCQCN-2 and the mistake; the
/// correct pacing is checked against every golden decision first), and the DUT's shadow must
/// name that event and diff's earliest divergence must be the first CNP the two replies do
/// not share. On today's trace that is:
/// - `ce-ect1` (ECT(1) = 0b01 read as CE): event 245, flow 1's first packet (h1's 40 KB flow,
///   ECT(1), unmarked, 122.5 µs after event 0). The 245 before it are flow 0's, ECT(0) or CE,
///   where `ecn & 1` and `ecn == 3` agree; flow 1 has sent no CNP, so the mistaken "mark"
///   sends one at once: an extra CNP at event 245's ns (flow 1, index 0).
/// - `interval-per-host` (one last-CNP for the host): event 249, flow 1's first CE mark,
///   about 1 µs after flow 0's timer CNP (< N = 2 µs). Until then only flow 0 had marks, so
///   the host's interval was flow 0's; flow 1 has sent no CNP, so DCQCN-2 sends at once and
///   the mistake holds it: the reference's CNP at event 249 (flow 1, index 2) is missing.
#[test]
fn the_former_np_survivors_first_act_where_the_events_say() {
    let trace = "traces/dcqcn_np.toml";
    let p = common::model_params(&common::manifest(trace), "dcqcn-np");
    // N in µs (docs/models/dcqcn.md): 2 µs = 2,000 ns.
    let n = p["min_time_between_cnps"].as_integer().unwrap() as u64 * 1_000;
    assert_eq!(n, 2_000);
    let dir = scratch("survivors");
    let evs = common::emitted_events(trace, &dir, "trace");
    let golden: Vec<At> = std::fs::read_to_string(repo().join("golden/dcqcn_np/dcqcn-np.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["t"].as_u64().unwrap(),
                v["flow"].as_u64().unwrap(),
                v["cause"]["index"].as_u64(),
            )
        })
        .collect();
    // CE is 0b11 (RFC 3168); the golden decisions come in time order, timers before an
    // event's own CNP, as the replies list them.
    let correct = np_replies(&evs, n, |e| e == 3, false);
    assert_eq!(
        correct.concat(),
        golden,
        "DCQCN-2 re-derived vs golden/dcqcn_np"
    );

    let log = dir.join("bug.log");
    let cases: [(&str, IsCe, bool); 2] = [
        ("ce-ect1", |e| e & 1 == 1, false),
        ("interval-per-host", |e| e == 3, true),
    ];
    let mut acts = Vec::new();
    for (bug, ce, per_host) in cases {
        let buggy = np_replies(&evs, n, ce, per_host);
        let k = (0..evs.len())
            .find(|&k| correct[k] != buggy[k])
            .unwrap_or_else(|| panic!("{bug} never acts on {trace}"));
        // The first CNP one reply has and the other has not.
        let at = correct[k]
            .iter()
            .filter(|c| !buggy[k].contains(c))
            .chain(buggy[k].iter().filter(|c| !correct[k].contains(c)))
            .min()
            .copied();
        let d = diff(trace, "np", Some(bug), true, None, &log);
        assert_eq!(d.code, 1, "{bug}");
        assert_eq!(
            common::first_act(&d.log, &evs),
            Some(Ok(k)),
            "{bug}: {}",
            d.log
        );
        assert_eq!(d.first, at, "{bug}: earliest divergence");
        acts.push((bug, k, evs[k]["flow"].as_u64(), evs[k]["index"].as_u64()));
    }
    // The events named above (docs/conformance.md's table).
    assert_eq!(
        acts,
        [
            ("ce-ect1", 245, Some(1), Some(0)),
            ("interval-per-host", 249, Some(1), Some(2)),
        ]
    );
}

/// The two NP mutants the bundled trace missed before it had ECT(1) data and overlapping
/// flows, caught on the smallest stream that shows each: a hand-built stream, replayed with
/// traces/dcqcn_np.toml's manifest (N = 2 µs = 2,000 ns; four flows), catches each where
/// it first acts. Events (ns, flow, per-flow index, ECN):
///
/// | # | t | flow | index | ECN | reference (DCQCN-2) |
/// |---|---|---|---|---|---|
/// | 0 | 1,000 | 0 | 0 | 3 CE | flow 0's first mark: CNP at once |
/// | 1 | 1,200 | 1 | 0 | 1 ECT(1) | not CE: nothing |
/// | 2 | 1,500 | 1 | 1 | 3 CE | flow 1's first mark: CNP at once |
/// | 3 | 5,000 | 2 | 0 | 2 ECT(0) | not CE: nothing (flow 2 appears, as the manifest lists it) |
///
/// `ce-ect1` (ECN & 1 taken for CE): event 1 is flow 1's first "mark", a CNP at 1,200 (extra);
/// event 2 is 300 ns later, within N: held, its CNP by the timer at 1,200 + 2,000 = 3,200 ns
/// (extra), and the reference's CNP at event 2 is missing. First act: event 1 (flow 1, index
/// 0); earliest divergence: t = 1,200, flow 1, index 0.
/// `interval-per-host` (one interval for all flows): event 2 is 500 ns after the host's last
/// CNP (flow 0's, at 1,000): held, its CNP by the timer at 1,000 + 2,000 = 3,000 ns (extra),
/// the reference's at event 2 missing. First act: event 2 (flow 1, index 1); earliest
/// divergence: t = 1,500, flow 1, index 1 (before the extra timer at 3,000).
#[test]
fn the_np_survivors_are_caught_by_a_hand_built_stream() {
    let dir = scratch("hand");
    let file = dir.join("hand.jsonl");
    let stream = [
        (1_000u64, 0u64, 0u64, 3u8),
        (1_200, 1, 0, 1),
        (1_500, 1, 1, 3),
        (5_000, 2, 0, 2),
    ];
    let text: String = stream
        .iter()
        .map(|(t, flow, index, ecn)| {
            format!(
                "{{\"t\": {t}, \"flow\": {flow}, \"index\": {index}, \"kind\": \"rx_data\", \
                 \"psn\": {index}, \"bytes\": 1000, \"opcode\": 7, \"ecn\": {ecn}}}\n"
            )
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    let trace = "traces/dcqcn_np.toml";
    let log = dir.join("bug.log");

    // The reference's decisions are the two of the table.
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["replay", trace, "-q", "--events"])
        .arg(&file)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let cnps: Vec<At> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["send_cnp"], true);
            (
                v["t"].as_u64().unwrap(),
                v["flow"].as_u64().unwrap(),
                v["cause"]["index"].as_u64(),
            )
        })
        .collect();
    assert_eq!(cnps, [(1_000, 0, Some(0)), (1_500, 1, Some(1))]);
    let d = diff(trace, "np", None, true, Some(&file), &log);
    assert_eq!((d.code, d.log.as_str()), (0, ""), "the correct DUT");

    let events: Vec<serde_json::Value> = stream
        .iter()
        .map(|(t, flow, index, ecn)| {
            serde_json::json!({"t": t, "flow": flow, "index": index, "ecn": ecn})
        })
        .collect();
    // `np_replies`, which derives the bundled trace's expectations above, gives this table's
    // replies: per event, the CNPs (t, flow, index; None for a timer) the table derives.
    let none: Vec<At> = Vec::new();
    assert_eq!(
        np_replies(&events, 2_000, |e| e == 3, false),
        [
            vec![(1_000, 0, Some(0))],
            none.clone(),
            vec![(1_500, 1, Some(1))],
            none.clone()
        ]
    );
    assert_eq!(
        np_replies(&events, 2_000, |e| e & 1 == 1, false),
        [
            vec![(1_000, 0, Some(0))],
            vec![(1_200, 1, Some(0))],
            none.clone(),
            vec![(3_200, 1, None)]
        ]
    );
    assert_eq!(
        np_replies(&events, 2_000, |e| e == 3, true),
        [
            vec![(1_000, 0, Some(0))],
            none.clone(),
            none,
            vec![(3_000, 1, None)]
        ]
    );
    let expected: BTreeMap<&str, (usize, At)> = [
        ("ce-ect1", (1, (1_200, 1, Some(0)))),
        ("interval-per-host", (2, (1_500, 1, Some(1)))),
    ]
    .into_iter()
    .collect();
    for (bug, (act, at)) in expected {
        let d = diff(trace, "np", Some(bug), true, Some(&file), &log);
        assert_eq!(d.code, 1, "{bug} on the hand stream");
        assert_eq!(
            common::first_act(&d.log, &events),
            Some(Ok(act)),
            "{bug}: {}",
            d.log
        );
        assert_eq!(d.first, Some(at), "{bug}: first divergence");
    }
}
