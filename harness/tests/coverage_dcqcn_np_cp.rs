//! Rule coverage of DCQCN's notification point (`dcqcn-np`, DCQCN-2) and congestion point
//! (`dcqcn-cp`, DCQCN-1) (issue 17.1 and 17.2): `check --coverage` counts their rules and
//! branches (`reference_cc::dcqcn::np::COVERAGE`, `dcqcn::port::COVERAGE`). Every count the
//! bundled traces give is derived here from the trace's events by an independent
//! implementation of the rule — DCQCN-2's CNP pacing per flow with C-5's timer order from the
//! CE marks, and DCQCN-1's RED ramp with its own SplitMix64 from the queue lengths — checked
//! against the golden decisions as it goes (and, for the NP, against the CNPs the simulated NIC
//! put on the wire), and must equal what the model reports. Every rule a capture can hold runs
//! at least three times; those it cannot are listed with the reason (docs/conformance.md,
//! "DCQCN-2 and DCQCN-1").

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `dcqcn-np` rules no capture can exercise, and why.
const NP_UNREACHABLE: [(&str, &str); 2] = [
    (
        "CE-marked rx_data before the last CNP (out-of-order input): inside its interval",
        "model time never goes back: extract clamps a capture's clock (C-2) and an events file \
         must be in time order, so a mark is never earlier than its flow's last CNP",
    ),
    (
        "choice 13 interval ending beyond u64 time: the mark is dropped",
        "last CNP + N overflows u64 only past 2^64 - 10^15 ns (capture times are ~1.7e18 ns, N \
         at most 10^9 us)",
    ),
];

/// `dcqcn-cp` rules no bundled capture can exercise, and why.
const CP_UNREACHABLE: [(&str, &str); 1] = [(
    "dequeue without a queue length: no decision, no draw",
    "dcqcn-cp replays hpcc egress mirrors, where every data packet carries the port's INT \
     record (a roce mirror has no queue length at all, and `check` refuses a trace with no \
     decision)",
)];

fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events the harness extracts from `trace` (`replay --emit-events`).
fn events(trace: &str, model: &str) -> Vec<serde_json::Value> {
    let dir = common::Scratch::new(&format!("coverage-{model}"));
    let file = dir.join("events.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["replay", trace, "--model", model, "-q", "-o"])
        .arg(dir.join("decisions.jsonl"))
        .arg("--emit-events")
        .arg(&file)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    read_jsonl(&file)
}

/// The model's counts (`check TRACE --coverage`) must be the derived ones, rule for rule.
fn assert_derived(model: &str, trace: &str, want: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let got = common::coverage(model, &[trace]);
    let derived: Vec<(String, u64)> = got
        .iter()
        .map(|(rule, _)| (rule.clone(), want.get(rule).copied().unwrap_or(0)))
        .collect();
    assert_eq!(got, derived);
    assert_eq!(want.len(), got.len(), "rules derived here: {want:?}");
    got
}

/// `frame.time_epoch` ("S.NNNNNNNNN") in ns.
fn epoch_ns(s: &str) -> u64 {
    let (sec, frac) = s.split_once('.').unwrap();
    assert_eq!(frac.len(), 9, "{s}");
    sec.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap()
}

/// Per flow, what DCQCN-2 keeps (docs/models/dcqcn.md, NP): the last CNP, whether a mark
/// waits for the interval's end, and whether the last CNP was the timer's.
#[derive(Default)]
struct NpFlow {
    last_cnp: Option<u64>,
    pending: bool,
    by_timer: bool,
}

const TIMER_CNP: &str = "DCQCN-2 timer cnp_interval with a mark pending: one CNP at last CNP + N";

/// The flow's `cnp_interval` timer, if due at or before `now` (C-5: before an event at the same
/// ns): one CNP at last CNP + N when a mark is pending.
fn fire_np_timer(
    f: &mut NpFlow,
    flow: u64,
    now: u64,
    n: u64,
    cnps: &mut Vec<(u64, u64, String)>,
    want: &mut BTreeMap<String, u64>,
) {
    let Some(last) = f.last_cnp else { return };
    let due = last
        .checked_add(n)
        .expect("no interval beyond u64 time here");
    if f.pending && due <= now {
        cnps.push((due, flow, "timer".into()));
        *want.entry(TIMER_CNP.into()).or_default() += 1;
        (f.last_cnp, f.pending, f.by_timer) = (Some(due), false, true);
    }
}

/// Every `dcqcn-np` count on dcqcn_np, derived from the marks of its `rx_data` events with
/// DCQCN-2 written again here (per flow: a CNP at once when none was sent or `t − last ≥ N`,
/// else the mark waits for `last + N`; the timer before an event at the same ns, C-5); the
/// CNPs it gives are the golden decisions and, to the ns, the CNPs the receiver NIC sent.
#[test]
fn dcqcn_np_counts_follow_from_the_marks() {
    let man = common::manifest("traces/dcqcn_np.toml");
    let p = common::model_params(&man, "dcqcn-np");
    // N in ns: min_time_between_cnps is in µs.
    let n = p["min_time_between_cnps"].as_integer().unwrap() as u64 * 1_000;
    let events = events("traces/dcqcn_np.toml", "dcqcn-np");
    let golden = read_jsonl(&repo().join("golden/dcqcn_np/dcqcn-np.jsonl"));
    let last_t = events.last().unwrap()["t"].as_u64().unwrap();

    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut add =
        |rule: &str, hit: bool| *want.entry(rule.to_string()).or_default() += u64::from(hit);
    let mut flows: BTreeMap<u64, NpFlow> = BTreeMap::new();
    let mut cnps: Vec<(u64, u64, String)> = Vec::new();
    let mut timer_cnps: BTreeMap<String, u64> = BTreeMap::new();
    // Per flow: its rx_data by ECN codepoint (Not-ECT, ECT(1), ECT(0), CE).
    let mut per_flow_events: BTreeMap<u64, [u64; 4]> = BTreeMap::new();
    for e in &events {
        assert_eq!(e["kind"], "rx_data");
        let (t, flow) = (e["t"].as_u64().unwrap(), e["flow"].as_u64().unwrap());
        let ecn = e["ecn"].as_u64().unwrap();
        let ce = ecn == 3;
        per_flow_events.entry(flow).or_default()[ecn as usize] += 1;
        let f = flows.entry(flow).or_default();
        fire_np_timer(f, flow, t, n, &mut cnps, &mut timer_cnps);
        if !ce {
            add("DCQCN-2 rx_data not CE-marked: no CNP", true);
            add(
                "DCQCN-2 rx_data not CE-marked while a mark is pending: the mark stays",
                f.pending,
            );
            continue;
        }
        let at_once = match f.last_cnp {
            None => {
                add(
                    "DCQCN-2 CE-marked rx_data, no CNP yet for the flow: CNP at once",
                    true,
                );
                true
            }
            Some(last) => {
                add(
                    "CE-marked rx_data before the last CNP (out-of-order input): inside its interval",
                    t < last,
                );
                let since = t.checked_sub(last).expect("model time in order");
                add(
                    "DCQCN-2 CE-marked rx_data, t - last CNP > N: CNP at once",
                    since > n,
                );
                add(
                    "DCQCN-2 CE-marked rx_data, t - last CNP = N exactly: CNP at once (>=)",
                    since == n,
                );
                if since < n {
                    add(
                        "DCQCN-2 CE-marked rx_data within N of the last CNP: remembered, timer at last CNP + N",
                        !f.pending,
                    );
                    add(
                        "DCQCN-2 CE-marked rx_data within N, a mark already pending: no second CNP",
                        f.pending,
                    );
                    add(
                        "C-5 CE-marked rx_data at the ns the timer's CNP went: inside the new interval",
                        since == 0 && f.by_timer,
                    );
                }
                since >= n
            }
        };
        if at_once {
            cnps.push((t, flow, "rx_data".into()));
            (f.last_cnp, f.pending, f.by_timer) = (Some(t), false, false);
        } else {
            f.pending = true;
        }
        add(
            "choice 13 interval ending beyond u64 time: the mark is dropped",
            false,
        );
    }
    // The replay fires every timer due up to the trace's last event.
    for (flow, f) in &mut flows {
        fire_np_timer(f, *flow, last_t, n, &mut cnps, &mut timer_cnps);
    }
    want.extend(timer_cnps);

    // The golden decisions: one per CNP, in (time, flow) order, each with its cause and
    // `last_cnp_ns` = its time, no mark pending.
    cnps.sort();
    assert_eq!(golden.len(), cnps.len());
    for (d, (t, flow, cause)) in golden.iter().zip(&cnps) {
        assert_eq!(
            (d["t"].as_u64(), d["flow"].as_u64()),
            (Some(*t), Some(*flow))
        );
        assert_eq!(d["cause"]["kind"].as_str(), Some(cause.as_str()), "{d}");
        assert_eq!(d["send_cnp"], true);
        assert_eq!(d["state"]["last_cnp_ns"].as_u64(), Some(*t));
        assert_eq!(d["state"]["pending_mark"], false);
    }

    // The wire: the capture's own frames (`inspect -e`), flows by QP from the manifest. Each
    // flow's data frames, codepoint by codepoint, are its events; its CNPs left the NIC when
    // derived (at most an ACK's 62 B, 19.84 ns at 25 Gbps, later), and any further CNP of the
    // closed loop was sent by a timer after the trace's last event.
    let qps: Vec<(u64, u64)> = man["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let qp = |k: &str| f[k].as_integer().unwrap() as u64;
            (qp("local_qp"), qp("remote_qp"))
        })
        .collect();
    let (code, tsv, err) = common::run(
        &repo(),
        &[
            "inspect",
            "traces/dcqcn_np.pcap",
            "-q",
            "-e",
            "frame.time_epoch",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "ip.dsfield.ecn",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut wire_cnps: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut wire_data: BTreeMap<u64, [u64; 4]> = BTreeMap::new();
    for line in tsv.lines() {
        let v: Vec<&str> = line.split('\t').collect();
        let qp = u64::from_str_radix(v[2].trim_start_matches("0x"), 16).unwrap();
        match v[1] {
            // CNP (IBTA Annex A17: opcode 0x81), to the sender's QP.
            "129" => {
                let flow = qps.iter().position(|q| q.1 == qp).unwrap() as u64;
                wire_cnps.entry(flow).or_default().push(epoch_ns(v[0]));
            }
            // RC RDMA WRITE FIRST, MIDDLE, LAST, LAST with immediate, ONLY, ONLY with immediate.
            "6" | "7" | "8" | "9" | "10" | "11" => {
                let flow = qps.iter().position(|q| q.0 == qp).unwrap() as u64;
                let ecn: usize = v[3].parse().unwrap();
                wire_data.entry(flow).or_default()[ecn] += 1;
            }
            _ => {}
        }
    }
    assert_eq!(wire_data, per_flow_events);
    // The scenario's `[hosts.h1] ecn = "ect1"`: h1's (10.0.0.2) data leaves ECT(1), the other
    // senders' ECT(0), and the switch marks either to CE (RFC 3168): a flow carries its sender's
    // codepoint and CE, and nothing else.
    for (flow, c) in &per_flow_events {
        let from_h1 = man["flows"][*flow as usize]["remote_ip"].as_str() == Some("10.0.0.2");
        let ect = if from_h1 { 1 } else { 2 };
        assert!(c[ect] > 0 && c[3] > 0, "flow {flow}: {c:?}");
        assert_eq!(c[0] + c[3 - ect], 0, "flow {flow}: {c:?}");
    }
    for (flow, wire) in &wire_cnps {
        let derived: Vec<u64> = cnps.iter().filter(|c| c.1 == *flow).map(|c| c.0).collect();
        assert!(wire.len() >= derived.len(), "flow {flow}");
        for (w, d) in wire.iter().zip(&derived) {
            assert!(
                (*d..*d + 20).contains(w),
                "flow {flow}: CNP at {w}, derived {d}"
            );
        }
        assert!(wire[derived.len()..].iter().all(|w| *w > last_t));
    }
    assert_eq!(wire_cnps.len(), flows.len());

    let got = assert_derived("dcqcn-np", "traces/dcqcn_np.toml", &want);
    common::assert_full(got.iter().map(|(k, v)| (k, v)), &NP_UNREACHABLE);
}

/// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014), written again from the published algorithm:
/// the high 32 bits of each output. Its seed-0 stream starts 0xE220A8397B1DCDAF (the published
/// first output).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }
}

/// Every `dcqcn-cp` count on dcqcn_cp, derived from the queue lengths of its `dequeue` events
/// with DCQCN-1 written again here (eq. 5's ramp in its order, a draw of the port's seeded
/// SplitMix64 only when 0 < p < 1, marked when u / 2^32 < p); each decision's mark, `q` and
/// `p` are the golden ones.
#[test]
fn dcqcn_cp_counts_follow_from_the_queue_lengths() {
    assert_eq!(SplitMix64(0).next_u32(), 0xE220_A839);
    let p = common::model_params(&common::manifest("traces/dcqcn_cp.toml"), "dcqcn-cp");
    let int = |k: &str| p[k].as_integer().unwrap() as u64;
    let (kmin, kmax, seed) = (int("kmin_bytes"), int("kmax_bytes"), int("seed"));
    let pmax = p["pmax"].as_float().unwrap();
    let events = events("traces/dcqcn_cp.toml", "dcqcn-cp");
    let golden = read_jsonl(&repo().join("golden/dcqcn_cp/dcqcn-cp.jsonl"));

    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut add =
        |rule: &str, hit: bool| *want.entry(rule.to_string()).or_default() += u64::from(hit);
    let mut rng = SplitMix64(seed);
    let mut golden = golden.iter();
    for e in &events {
        assert_eq!(e["kind"], "dequeue");
        let Some(q) = e["qlen_bytes"].as_u64() else {
            add("dequeue without a queue length: no decision, no draw", true);
            continue;
        };
        add(
            "dequeue without a queue length: no decision, no draw",
            false,
        );
        let d = golden.next().expect("a decision per queue length");
        assert_eq!(&d["cause"]["index"], &e["index"]);
        // Eq. 5: where q sits on the ramp.
        add("DCQCN-1 CP1 q < Kmin: p = 0", q < kmin);
        add("DCQCN-1 CP1 q = Kmin exactly: p = 0 (q <= Kmin)", q == kmin);
        add(
            "DCQCN-1 CP1 Kmin < q < Kmax: p on the ramp",
            kmin < q && q < kmax,
        );
        add(
            "DCQCN-1 CP1 q = Kmax exactly: p = Pmax (q <= Kmax)",
            kmin < q && q == kmax,
        );
        add("DCQCN-1 CP1 q > Kmax: p = 1", q > kmax);
        let p = if q <= kmin {
            0.0
        } else if q <= kmax {
            (q - kmin) as f64 / (kmax - kmin) as f64 * pmax
        } else {
            1.0
        };
        add(
            "C-3 CP1 p in eq. 5's order differs from (q - Kmin) Pmax / (Kmax - Kmin)",
            kmin < q && q <= kmax && ((q - kmin) as f64 * pmax / (kmax - kmin) as f64) != p,
        );
        // CP2: no draw at p = 0 or 1.
        let (drew, mark) = if p <= 0.0 {
            (false, false)
        } else if p >= 1.0 {
            (false, true)
        } else {
            (true, f64::from(rng.next_u32()) / 4_294_967_296.0 < p)
        };
        add("DCQCN-1 CP2 p = 0: not marked, no draw", !drew && !mark);
        add("DCQCN-1 CP2 p = 1: marked, no draw", !drew && mark);
        add(
            "DCQCN-1 CP2 0 < p < 1, u / 2^32 < p: one draw, marked",
            drew && mark,
        );
        add(
            "DCQCN-1 CP2 0 < p < 1, u / 2^32 >= p: one draw, not marked",
            drew && !mark,
        );
        assert_eq!(d["mark_ce"].as_bool(), Some(mark), "{d}");
        assert_eq!(d["state"]["q"].as_u64(), Some(q));
        assert_eq!(
            d["state"]["p"].as_f64().map(f64::to_bits),
            Some(p.to_bits())
        );
    }
    assert!(golden.next().is_none());

    let got = assert_derived("dcqcn-cp", "traces/dcqcn_cp.toml", &want);
    common::assert_full(got.iter().map(|(k, v)| (k, v)), &CP_UNREACHABLE);
}

/// The whole bundled suite: dcqcn_np and dcqcn_cp are the only traces naming these models, so
/// its counts are theirs (checked rule by rule above), every reachable rule at least three
/// times.
#[test]
fn the_bundled_suite_exercises_every_reachable_np_and_cp_rule_three_times() {
    let np = common::coverage("dcqcn-np", &[]);
    assert_eq!(np, common::coverage("dcqcn-np", &["traces/dcqcn_np.toml"]));
    assert_eq!(np.len(), 11);
    common::assert_full(np.iter().map(|(k, v)| (k, v)), &NP_UNREACHABLE);
    let cp = common::coverage("dcqcn-cp", &[]);
    assert_eq!(cp, common::coverage("dcqcn-cp", &["traces/dcqcn_cp.toml"]));
    assert_eq!(cp.len(), 11);
    common::assert_full(cp.iter().map(|(k, v)| (k, v)), &CP_UNREACHABLE);
}
