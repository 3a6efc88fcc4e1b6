//! The rule counts `check --coverage` reports for the HPCC and FNCC senders (`hpcc`, `fncc`)
//! and the FNCC receiver (`fncc-receiver`), derived here from a trace's events (as
//! `ccreplay replay --emit-events` extracts them) and its golden decisions, not from the
//! models' counters: Algorithm 1's measurement (docs/models/hpcc.md F3-F6, HPCC-2..5) is
//! recomputed per ACK from the INT records, the state before an ACK is the flow's previous
//! golden decision, the state after it this ACK's decision, and the receiver's window is
//! rebuilt by scanning every flow. Each recomputed value that a decision also holds (`u` /
//! `Umax`, `tau`, `U`, `lhcs`, `N`) is checked against it, so the derivation cannot drift from
//! what the model decided. Used by coverage.rs (HPCC) and coverage_fncc.rs.
// Each test file uses some of these.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::repo;

/// Rule -> count.
pub type Counts = BTreeMap<String, u64>;

/// `check ARGS --coverage --format json` of `model`: rule -> count.
pub fn reported(model: &str, args: &[&str]) -> Counts {
    crate::common::coverage(model, args).into_iter().collect()
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of `traces/STEM.toml` as the harness extracts them for `model`.
pub fn events(stem: &str, model: &str) -> Vec<Value> {
    let dir = crate::common::Scratch::new(&format!("int-coverage-{stem}-{model}"));
    let file = dir.join("events.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(["replay", &format!("traces/{stem}.toml"), "--model", model])
        .args(["-q", "-o"])
        .arg(dir.join("decisions.jsonl"))
        .arg("--emit-events")
        .arg(&file)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "replay {stem}");
    read_jsonl(&file)
}

/// `golden/STEM/MODEL.jsonl`.
pub fn golden(stem: &str, model: &str) -> Vec<Value> {
    read_jsonl(&repo().join(format!("golden/{stem}/{model}.jsonl")))
}

/// The parameters `traces/STEM.toml` gives `model`.
pub fn params(stem: &str, model: &str) -> toml::Table {
    let m: toml::Table = toml::from_str(
        &std::fs::read_to_string(repo().join(format!("traces/{stem}.toml"))).unwrap(),
    )
    .unwrap();
    m["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some(model))
        .unwrap_or_else(|| panic!("{stem} names no {model}"))["params"]
        .as_table()
        .unwrap()
        .clone()
}

/// INT line-rate codes 0..7 in bit/s (docs/wire.md 4); reserved codes have none.
fn code_bps(code: u64) -> Option<u64> {
    const GBPS: [u64; 8] = [25, 50, 100, 200, 400, 800, 10, 40];
    GBPS.get(code as usize).map(|g| g * 1_000_000_000)
}

/// One INT record of an event: (B code, ts, txBytes units, qLen units).
type Rec = (u64, u64, u64, u64);

fn recs(int: &Value) -> Vec<Rec> {
    int["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let f = |k: &str| h[k].as_u64().unwrap();
            (f("b"), f("ts"), f("tx_bytes"), f("qlen"))
        })
        .collect()
}

/// The state a decision holds (the flow's after its ACK).
#[derive(Clone, Copy, Debug)]
struct After {
    w: u64,
    u: f64,
    inc_stage: u64,
    last_update_seq: u64,
}

fn after(d: &Value) -> After {
    let s = &d["state"];
    After {
        w: s["W"].as_u64().unwrap(),
        u: s["U"].as_f64().unwrap(),
        inc_stage: s["incStage"].as_u64().unwrap(),
        last_update_seq: s["lastUpdateSeq"].as_u64().unwrap(),
    }
}

/// What the test tracks of one flow.
struct Flow {
    snd_nxt: u64,
    /// (nHop, pathID) and the records of the stored INT (HPCC-5), if any.
    stored: Option<((u64, u64), Vec<Rec>)>,
    /// The state after the flow's previous decision (before: the initial state, HPCC-1).
    prev: After,
    /// The flow's decisions, in order, and the next one to pair.
    decisions: Vec<Value>,
    next: usize,
}

/// The counts `hpcc` (`fncc` = false, hpcc.rs `COVERAGE` names) or `fncc` (fncc.rs
/// `COVERAGE`) reports for `traces/STEM.toml`, from its events and golden decisions.
pub fn sender_counts(stem: &str, fncc: bool) -> Counts {
    let model = if fncc { "fncc" } else { "hpcc" };
    let p = params(stem, model);
    let int = |k: &str| p[k].as_integer().unwrap() as u64;
    let line = int("line_rate_bps");
    let t = int("base_rtt_ns");
    let eta = p["eta"].as_float().unwrap();
    let max_stage = int("max_stage");
    let w_min = p
        .get("w_min_bytes")
        .map_or(int("mtu_bytes"), |v| v.as_integer().unwrap() as u64);
    // HPCC-1: W_init = floor(B_NIC × T / 8e9).
    let w_init = (u128::from(line) * u128::from(t) / 8_000_000_000) as u64;
    let (alpha, beta) = if fncc {
        (
            p["alpha"].as_float().unwrap(),
            p["beta"].as_float().unwrap(),
        )
    } else {
        (0.0, 0.0)
    };
    let t_f = t as f64;

    let mut flows: BTreeMap<u64, Flow> = BTreeMap::new();
    for d in golden(stem, model) {
        let f = d["flow"].as_u64().unwrap();
        flows
            .entry(f)
            .or_insert_with(|| Flow {
                snd_nxt: 0,
                stored: None,
                prev: After {
                    w: w_init,
                    u: 1.0,
                    inc_stage: 0,
                    last_update_seq: 0,
                },
                decisions: Vec::new(),
                next: 0,
            })
            .decisions
            .push(d);
    }
    let mut c = Counts::new();
    let mut add = |rule: &str, hit: bool| *c.entry(rule.to_string()).or_default() += u64::from(hit);
    let hop_rule = if fncc {
        "S2 most loaded hop is not the last hop (record 0)"
    } else {
        "line 6-7 most loaded hop is not the first"
    };
    let mut acks = 0;
    for e in events(stem, model) {
        let Some(fl) = flows.get_mut(&e["flow"].as_u64().unwrap()) else {
            assert_ne!(e["kind"], "rx_ack", "an ACK without a decision");
            continue;
        };
        let kind = e["kind"].as_str().unwrap();
        let psn = e["psn"].as_u64().unwrap_or(0);
        if kind == "tx_data" {
            fl.snd_nxt = (psn + 1) & 0xFF_FFFF; // HPCC-7
            continue;
        }
        let nak = kind == "rx_nak";
        if !nak && kind != "rx_ack" {
            continue;
        }
        acks += 1;
        let d = fl.decisions[fl.next].clone();
        fl.next += 1;
        assert_eq!(d["cause"]["index"], e["index"], "{stem}: decision order");
        let now = after(&d);
        let before = std::mem::replace(&mut fl.prev, now);
        add("HPCC-7 NAK: ack.seq = PSN", nak);
        let Some(int) = e.get("int").filter(|v| !v.is_null()) else {
            add("ACK without INT: no feedback", true);
            continue;
        };
        let header = (
            int["nhop"].as_u64().unwrap(),
            int["path_id"].as_u64().unwrap(),
        );
        let hops = recs(int);
        let stored = match &mut fl.stored {
            Some((h, l)) if *h == header => l,
            s => {
                // HPCC-5: first INT (the first RTT starts: lastUpdateSeq = snd_nxt) or a new
                // path: stored only.
                add("HPCC-5 first INT of a flow", s.is_none());
                add("HPCC-5 path change (nHop or pathID)", s.is_some());
                if s.is_none() {
                    assert_eq!(now.last_update_seq, fl.snd_nxt, "{stem}: first INT");
                }
                *s = Some((header, hops));
                continue;
            }
        };
        if fncc {
            add("FNCC-1 ACK-carried INT used (Algorithm 1 ran)", true);
        }
        add("INT from more than one hop", hops.len() > 1);
        // F3-F6 per record, against the stored one; HPCC-3 keeps a record whose ts did not
        // advance. u_j = min(qLen) × 80 / (B·T) + (ΔtxBytes × 128 / ΔTS) / B, B in bytes/ns.
        let (mut u_max, mut hop, mut tau) = (0.0f64, 0usize, 0u64);
        let (mut ts_wrap, mut tx_wrap, mut zero) = (false, false, false);
        let mut u_of = vec![None; hops.len()];
        for (i, now_r) in hops.iter().enumerate() {
            let prev_r = stored[i];
            ts_wrap |= now_r.1 < prev_r.1;
            tx_wrap |= now_r.2 < prev_r.2;
            let dts = (now_r.1 + (1 << 24) - prev_r.1) % (1 << 24);
            if dts == 0 {
                zero = true;
                continue;
            }
            if let Some(bps) = code_bps(now_r.0 & 0xF) {
                let b = bps as f64 / 8e9;
                let dtx = (now_r.2 + (1 << 20) - prev_r.2) % (1 << 20) * 128;
                let q = now_r.3.min(prev_r.3) * 80;
                let u = q as f64 / (b * t_f) + dtx as f64 / dts as f64 / b;
                u_of[i] = Some(u);
                if u > u_max {
                    (u_max, hop, tau) = (u, i, dts);
                }
            }
            stored[i] = *now_r;
        }
        add("HPCC-2 INT ts delta across the 24-bit wrap", ts_wrap);
        add("HPCC-2 INT txBytes delta across the 20-bit wrap", tx_wrap);
        add("HPCC-3 a hop with a zero TS delta", zero);
        add(hop_rule, hop > 0);
        add("line 8 tau clamped to T", tau > t);
        let s = &d["state"];
        let (u_key, tau_now) = (if fncc { "Umax" } else { "u" }, tau.min(t));
        assert_eq!(s[u_key].as_f64(), Some(u_max), "{stem}: u_max of {e}");
        assert_eq!(s["tau"].as_u64(), Some(tau_now), "{stem}: tau of {e}");
        // HPCC-4, line 9.
        let f = tau_now as f64 / t_f;
        assert_eq!(now.u, (1.0 - f) * before.u + f * u_max, "{stem}: U of {e}");
        // Line 22 with C-2's serial order; HPCC's C-2 rule: the integer order differs.
        let seq = if nak { psn } else { (psn + 1) & 0xFF_FFFF };
        let ahead = (seq + (1 << 24) - before.last_update_seq) % (1 << 24);
        let update = (1..1 << 23).contains(&ahead);
        if !fncc {
            add(
                "C-2 serial and integer order of ack.seq and lastUpdateSeq differ (PSN wrap)",
                update != (seq > before.last_update_seq),
            );
        }
        add("line 22 Wc updated (once per RTT)", update);
        if fncc {
            add(
                "S2 U_max = 0: no record contributed or all idle (choice 2)",
                u_max == 0.0,
            );
            // Choice 3: record 0 and another record both at U_max.
            let tie = hop == 0
                && u_max > 0.0
                && u_of[0] == Some(u_max)
                && u_of[1..].contains(&Some(u_max));
            add(
                "S2 tie between record 0 and another hop goes to record 0 (choice 3)",
                tie,
            );
            let n = e.get("n").and_then(Value::as_u64);
            // Line 11: N decides only at the last hop with U_max > alpha.
            let n_decides = hop == 0 && u_max > alpha;
            add(
                "S3 N absent at a loaded last hop: treated as 0, no speedup (choice 4)",
                n_decides && n.is_none(),
            );
            add(
                "S3 N = 0 at a loaded last hop: no speedup",
                n_decides && n == Some(0),
            );
            add(
                "S3 last hop, U_max = alpha exactly: no speedup (choice 6)",
                hop == 0 && u_max == alpha,
            );
            // S3: hop 0, U_max > alpha, N > 0: Wc = B_0 × T × beta / N (before the clamp).
            let n = n.unwrap_or(0);
            let speedup = hop == 0 && u_max > alpha && n > 0;
            assert_eq!(s["lhcs"].as_bool(), Some(speedup), "{stem}: lhcs of {e}");
            assert_eq!(s["N"].as_u64(), Some(n), "{stem}: N of {e}");
            add("S3 last-hop speedup fires: Wc = B0 T beta / N", speedup);
            if speedup {
                let b0 = code_bps(hops[0].0 & 0xF).unwrap() as f64 / 8e9;
                let wc = b0 * t_f * beta / n as f64;
                add(
                    "S3 speedup window clamped to [w_min, W_init] (choice 5)",
                    !(wc > w_min as f64 && wc < w_init as f64),
                );
                add(
                    "S4 speedup on an ACK within the RTT (Wc kept, not re-synchronised)",
                    !update,
                );
            }
        }
        // Lines 12-17: MD / MI on U after line 9 and incStage before; else AI.
        let mi_or_md = now.u >= eta || before.inc_stage >= max_stage;
        add("line 12-13 MD: U >= eta", now.u >= eta);
        add(
            "line 12-13 MI: incStage >= maxStage, U < eta",
            mi_or_md && now.u < eta,
        );
        add("line 17 AI: incStage < maxStage", !mi_or_md);
        add(
            "HPCC-6 window clamped to [w_min, W_init]",
            now.w == w_init || now.w == w_min,
        );
    }
    let decided: usize = flows.values().map(|f| f.decisions.len()).sum();
    assert_eq!(acks, decided, "{stem}: one decision per ACK");
    c
}

/// The counts `fncc-receiver` reports for `traces/STEM.toml` (fncc.rs `RECEIVER_COVERAGE`),
/// from its `rx_data` events: FNCC-2's window (t − T_active, t] rebuilt by scanning every
/// flow's last arrival on each packet. N is checked against the golden decisions.
pub fn receiver_counts(stem: &str) -> Counts {
    let p = params(stem, "fncc-receiver");
    let t_active = p
        .get("t_active_ns")
        .unwrap_or(&p["base_rtt_ns"])
        .as_integer()
        .unwrap() as u64;
    let decisions = golden(stem, "fncc-receiver");
    let mut c = Counts::new();
    let mut add = |rule: &str, hit: bool| *c.entry(rule.to_string()).or_default() += u64::from(hit);
    // Per flow: its last arrival while it is in N.
    let mut active: BTreeMap<u64, u64> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut k = 0;
    for e in events(stem, "fncc-receiver") {
        if e["kind"] != "rx_data" {
            continue;
        }
        let (flow, t) = (e["flow"].as_u64().unwrap(), e["t"].as_u64().unwrap());
        let old: Vec<(u64, u64)> = active
            .iter()
            .filter(|(_, last)| t - **last >= t_active)
            .map(|(f, last)| (*f, t - last))
            .collect();
        add(
            "FNCC-2 flows T_active or more ns old leave N",
            !old.is_empty(),
        );
        add(
            "FNCC-2 a flow exactly T_active old leaves N (window (t - T_active, t])",
            old.iter().any(|(_, age)| *age == t_active),
        );
        add(
            "FNCC-2 more than one flow leaves N on one packet",
            old.len() > 1,
        );
        for (f, _) in &old {
            active.remove(f);
        }
        add(
            "FNCC-2 packet of an active flow: its age restarts",
            active.contains_key(&flow),
        );
        add(
            "FNCC-2 flow back after T_active without data: it joins N again",
            !active.contains_key(&flow) && seen.contains(&flow),
        );
        add(
            "FNCC-2 first data packet of a flow: it joins N",
            seen.insert(flow),
        );
        active.insert(flow, t);
        let n = active.len() as u64;
        add(
            "wire.md 4 N above 65535: ack_n saturates at 65535",
            n > 65_535,
        );
        let d = &decisions[k];
        k += 1;
        assert_eq!(d["state"]["N"].as_u64(), Some(n), "{stem}: N at {e}");
        assert_eq!(
            d["ack_n"].as_u64(),
            Some(n.min(65_535)),
            "{stem}: ack_n at {e}"
        );
    }
    assert_eq!(k, decisions.len(), "{stem}: one decision per rx_data");
    c
}

/// `a` + `b`, rule by rule.
pub fn sum(a: &Counts, b: &Counts) -> Counts {
    let mut s = a.clone();
    for (k, v) in b {
        *s.entry(k.clone()).or_default() += v;
    }
    s
}

/// `derived` with every rule `reported` names (those never hit while deriving are 0).
pub fn with_zeros(mut derived: Counts, reported: &Counts) -> Counts {
    for k in reported.keys() {
        derived.entry(k.clone()).or_insert(0);
    }
    derived
}
