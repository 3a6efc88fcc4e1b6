//! Rule coverage of the RCC models (issue 17.1 and 17.2 for RCC): `check --coverage` counts
//! the rules and branches of `rcc-receiver` and `rcc-sender`
//! (`reference_cc::rcc::receiver::COVERAGE`, `rcc::sender::COVERAGE`: RCC-1..5, the rows and
//! choices of docs/models/rcc.md). Every count the bundled traces give is derived here from
//! the trace's events (message counting from the opcodes, rounds of T from the arrival times,
//! delays from the send timestamps, per RCC-2..4 and choices 2, 3 and 8) and, for the PID
//! rows, from the golden decisions' `U` and `W` (each decision's state is the flow's state
//! after it, the flow's previous decision the state before it); the derivation is checked
//! against the golden state as it goes, and its counts must equal what the model reports.
//! Every rule a closed loop can reach is exercised at least three times; the four it cannot
//! are listed with the reason (docs/conformance.md, RCC).

mod common;

use common::repo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Receiver rules no closed loop puts on an `rcc` wire, and why.
const RECEIVER_UNREACHABLE: [(&str, &str); 2] = [
    (
        "A1 send timestamp after the arrival (clock skew): delay 0",
        "the simulator has one clock: a frame arrives after it was stamped",
    ),
    (
        "choice 3 other opcode: no message, N unchanged",
        "the simulator's traffic is RDMA WRITE only: every data packet is FIRST, MIDDLE, LAST or ONLY",
    ),
];

/// Sender rules no closed loop puts on an `rcc` wire, and why.
const SENDER_UNREACHABLE: [(&str, &str); 1] = [(
    "ACK or NAK without the RCC extension: no decision",
    "the rcc dialect puts the extension in every ACK and NAK (wire.md 5.5)",
)];

fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `check ARGS --coverage --format json` of `model`: (rule, count) in the model's order.
fn coverage(model: &str, args: &[&str]) -> Vec<(String, u64)> {
    common::coverage(model, args)
}

/// The events the harness extracts from `trace` (`replay --emit-events`).
fn events(trace: &str, model: &str) -> Vec<serde_json::Value> {
    let dir = common::Scratch::new(&format!("coverage-rcc-{model}"));
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

/// Where a packet sits in its message, from the BTH opcode's low 5 bits (IBTA vol. 1 Table 39:
/// SEND, RDMA WRITE and READ response First / Middle / Last / Only; transports 4, 6, 7 carry
/// none). 0 first, 1 middle, 2 last, 3 only, None: not message data.
fn position(opcode: u64) -> Option<u8> {
    if matches!(opcode >> 5, 4 | 6 | 7) {
        return None;
    }
    match opcode & 0x1F {
        0x00 | 0x06 | 0x0D => Some(0),
        0x01 | 0x07 | 0x0E => Some(1),
        0x02 | 0x03 | 0x08 | 0x09 | 0x0F | 0x16 => Some(2),
        0x04 | 0x05 | 0x0A | 0x0B | 0x10 | 0x17 => Some(3),
        _ => None,
    }
}

/// Per flow, what the derivation keeps.
#[derive(Default)]
struct RxFlow {
    in_message: bool,
    consecutive: u64,
    pid: bool,
    last_w: Option<u64>,
}

/// Every `rcc-receiver` count on rcc_bursts_receiver (an `rcc` tap: every data packet carries
/// its send timestamp) and on roce_rcc_receiver (a `roce` tap: none does, choice 5), derived
/// rule by rule from its events and golden decisions (docs/models/rcc.md A1-A10, P1-P5,
/// choices 2-8).
#[rstest::rstest]
#[case::rcc_bursts_receiver("rcc_bursts_receiver", 0)]
#[case::roce_rcc_receiver("roce_rcc_receiver", 469)]
fn rcc_receiver_counts_follow_from_its_events_and_decisions(
    #[case] trace: &str,
    #[case] no_timestamp: u64,
) {
    let p = common::model_params(
        &common::manifest(&format!("traces/{trace}.toml")),
        "rcc-receiver",
    );
    let int = |k: &str| p[k].as_integer().unwrap() as u64;
    let float = |k: &str| p[k].as_float().unwrap();
    let (c, t_rtt, mtu, n) = (
        int("line_rate_bps"),
        int("base_rtt_ns"),
        int("mtu_bytes"),
        int("n"),
    );
    let base = p
        .get("base_delay_ns")
        .map_or(t_rtt, |v| v.as_integer().unwrap() as u64) as f64;
    let above = base * (1.0 + float("delta")); // eq. 1
    let last_hop_bytes = c as f64 * t_rtt as f64 / 8e9 * float("eta"); // A5
    let c_t = u128::from(c) * u128::from(t_rtt);

    let events = events(&format!("traces/{trace}.toml"), "rcc-receiver");
    let decisions = read_jsonl(&repo().join(format!("golden/{trace}/rcc-receiver.jsonl")));
    assert_eq!(events.len(), decisions.len(), "one decision per rx_data");

    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut add =
        |rule: &str, hit: bool| *want.entry(rule.to_string()).or_default() += u64::from(hit);
    let mut flows: BTreeMap<u64, RxFlow> = BTreeMap::new();
    let (mut n_open, mut round_start, mut round_bytes, mut b_r) = (0u64, None::<u64>, 0u64, 0u64);
    for (e, d) in events.iter().zip(&decisions) {
        assert_eq!(e["kind"], "rx_data");
        assert_eq!(
            (&e["flow"], &e["index"]),
            (&d["flow"], &d["cause"]["index"])
        );
        let s = &d["state"];
        let t = e["t"].as_u64().unwrap();
        let send_ts = e["send_ts"].as_u64();
        let f = flows.entry(e["flow"].as_u64().unwrap()).or_default();

        // Choice 2: rounds of T from the first packet; B_R = the round just ended, 0 after an
        // empty one.
        match round_start {
            None => round_start = Some(t),
            Some(start) if t - start >= t_rtt => {
                let k = (t - start) / t_rtt;
                add(
                    "choice 2 B_R round rolled: B_R = bytes of the round just ended",
                    k == 1,
                );
                add(
                    "choice 2 B_R round rolled past an empty round: B_R = 0",
                    k > 1,
                );
                b_r = if k == 1 { round_bytes } else { 0 };
                round_bytes = 0;
                round_start = Some(start + k * t_rtt);
            }
            Some(_) => {}
        }
        round_bytes += e["bytes"].as_u64().unwrap();
        assert_eq!(s["B_R"].as_u64(), Some(b_r), "B_R at {e}");

        // A1.
        add(
            "RCC-2 A1 delay sample: arrival - send timestamp",
            send_ts.is_some(),
        );
        add(
            "A1 send timestamp after the arrival (clock skew): delay 0",
            send_ts.is_some_and(|ts| ts > t),
        );
        add(
            "choice 5 no send timestamp: no delay sample",
            send_ts.is_none(),
        );

        // A2, choice 3.
        let pos = position(e["opcode"].as_u64().unwrap());
        add(
            "RCC-3 A2 FIRST opens a message: N + 1",
            pos == Some(0) && !f.in_message,
        );
        add(
            "RCC-3 A2 ONLY: one-packet message, N + 1 then - 1",
            pos == Some(3) && !f.in_message,
        );
        add(
            "RCC-3 A2 LAST closes the message: N - 1",
            pos == Some(2) && f.in_message,
        );
        add(
            "choice 3 MIDDLE or LAST of a flow not in a message opens one",
            matches!(pos, Some(1 | 2)) && !f.in_message,
        );
        add(
            "choice 3 FIRST of a flow already in a message: not counted twice",
            pos == Some(0) && f.in_message,
        );
        add(
            "choice 3 other opcode: no message, N unchanged",
            pos.is_none(),
        );
        if pos.is_some() && !f.in_message {
            f.in_message = true;
            n_open += 1;
        }
        let n_used = n_open.max(1);
        assert_eq!(s["N"].as_u64(), Some(n_used), "N at {e}");
        // A3: floor(C T / 8e9 / N).
        let fair = (c_t / (8_000_000_000 * u128::from(n_used))) as u64;
        assert_eq!(s["fair_share"].as_u64(), Some(fair));
        add(
            "RCC-3 A3 fair share floored (C T / 8e9 / N not whole)",
            c_t % (8_000_000_000 * u128::from(n_used)) != 0,
        );

        // A4: n consecutive delays above base (1 + delta).
        if let Some(ts) = send_ts {
            let delay = t.saturating_sub(ts) as f64;
            let was = f.consecutive;
            f.consecutive = if delay > above { was + 1 } else { 0 };
            add(
                "RCC-4 A4 delay > base (1 + delta): consecutive + 1",
                delay > above,
            );
            add(
                "RCC-4 A4 delay <= base (1 + delta) ends a run: consecutive = 0",
                delay <= above && was > 0,
            );
        }
        assert_eq!(s["consecutive"].as_u64(), Some(f.consecutive));

        // A5-A10.
        let last_hop = b_r as f64 > last_hop_bytes;
        let in_network = f.consecutive >= n && !last_hop;
        let was_pid = f.pid;
        add("RCC-4 A5 last-hop test holds: B_R > C T eta", last_hop);
        add(
            "RCC-4 A5 B_R = C T eta exactly: not last hop (strict >)",
            b_r as f64 == last_hop_bytes,
        );
        add(
            "RCC-4 A6 n consecutive delays, last hop congested: no PID",
            !was_pid && last_hop && f.consecutive >= n,
        );
        add(
            "RCC-4 A9 in-network congestion: flow enters PID mode",
            !was_pid && in_network,
        );
        add("RCC-5 A7 flow in PID mode stays there: cwnd = PID", was_pid);
        add(
            "RCC-5 A7 PID mode wins over the last-hop test (line 6)",
            was_pid && last_hop,
        );
        add(
            "A8 last-hop congestion: cwnd = fair share",
            !was_pid && last_hop,
        );
        add(
            "A10 no congestion: cwnd = fair share",
            !was_pid && !last_hop && !in_network,
        );
        add(
            "choice 8 in-network detected again in PID mode (flag bit 1)",
            was_pid && in_network,
        );
        f.pid = was_pid || in_network;
        assert_eq!(s["pid"].as_bool(), Some(f.pid), "pid at {e}");
        assert_eq!(
            d["ack_flags"].as_u64(),
            Some(u64::from(f.pid) | u64::from(in_network) << 1)
        );

        // P4, P5 from the decision's U and the flow's previous window.
        let w = s["W"].as_u64().unwrap();
        if f.pid && send_ts.is_some() {
            let u = s["U"].as_f64().unwrap();
            let w_prev = f.last_w.unwrap_or(fair);
            let product = w_prev as f64 * (1.0 - libm::tanh(u));
            let floor = product.floor() as u64;
            assert_eq!(w, floor.max(mtu).min(fair), "P4-P5 at {e}");
            add("RCC-5 P4 U > 0: window decreased", u > 0.0);
            add("RCC-5 P4 U < 0: window increased", u < 0.0);
            add(
                "RCC-5 P4 C-3 PID window floored (not whole)",
                product.fract() != 0.0,
            );
            add(
                "RCC-5 P4 PID step from a window below the fair share",
                w_prev < fair,
            );
            add(
                "RCC-5 P5 PID window clamped up to 1 MTU",
                fair >= mtu && floor < mtu,
            );
            add(
                "RCC-5 P5 PID window clamped down to the fair share",
                fair >= mtu && floor.max(mtu) > fair,
            );
        } else if !f.pid {
            assert_eq!(w, fair, "A8 / A10 at {e}");
        }
        add(
            "choice 7 fair share below 1 MTU wins the clamp",
            f.pid && fair < mtu,
        );
        f.last_w = Some(w);
        assert_eq!(d["ack_cwnd"].as_u64(), Some(w));

        // A2: -1 after the last packet.
        if matches!(pos, Some(2 | 3)) && f.in_message {
            f.in_message = false;
            n_open -= 1;
        }
    }

    let got = coverage("rcc-receiver", &[&format!("traces/{trace}.toml")]);
    let derived: Vec<(String, u64)> = got
        .iter()
        .map(|(rule, _)| (rule.clone(), want.get(rule).copied().unwrap_or(0)))
        .collect();
    assert_eq!(got, derived);
    // Every rule named here is one the model counts; on the rcc tap every one of them is
    // named (without timestamps the delay and PID rules are never reached).
    assert!(want.keys().all(|k| got.iter().any(|(rule, _)| rule == k)));
    if no_timestamp == 0 {
        assert_eq!(want.len(), got.len(), "rules derived here: {want:?}");
    }
    // roce_rcc_receiver: 469 data packets in (tshark, harness/tests/sim.rs
    // `tap_models_name_what_the_manifest_replays`), none with a timestamp.
    assert_eq!(
        want["choice 5 no send timestamp: no delay sample"],
        no_timestamp
    );
    if trace == "rcc_bursts_receiver" {
        let unreachable = [
            RECEIVER_UNREACHABLE.as_slice(),
            &[(
                "choice 5 no send timestamp: no delay sample",
                "the rcc dialect puts the timestamp shim in every data packet (wire.md 5.5)",
            )],
        ]
        .concat();
        common::assert_full(derived.iter().map(|(k, v)| (k, v)), &unreachable);
    }
}

/// Every `rcc-sender` count on rcc_bursts_sender, derived from its ACK and NAK events: the window
/// before each is the flow's previous `cwnd` or the start window C T / 8e9 (RCC-1, [P]
/// §III-B), the rate floor(cwnd 8e9 / T) capped at C (choice 9).
#[test]
fn rcc_sender_counts_follow_from_its_events() {
    let p = common::model_params(
        &common::manifest("traces/rcc_bursts_sender.toml"),
        "rcc-sender",
    );
    let int = |k: &str| u128::from(p[k].as_integer().unwrap() as u64);
    let (c, t_rtt, mtu) = (int("line_rate_bps"), int("base_rtt_ns"), int("mtu_bytes"));
    let start = c * t_rtt / 8_000_000_000;
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut add =
        |rule: &str, hit: bool| *want.entry(rule.to_string()).or_default() += u64::from(hit);
    let mut window: BTreeMap<u64, u128> = BTreeMap::new();
    for e in events("traces/rcc_bursts_sender.toml", "rcc-sender") {
        let nak = match e["kind"].as_str().unwrap() {
            "rx_ack" => false,
            "rx_nak" => true,
            _ => continue,
        };
        let cwnd = e["cwnd"].as_u64().map(u128::from);
        add(
            "ACK or NAK without the RCC extension: no decision",
            cwnd.is_none(),
        );
        let Some(cwnd) = cwnd else { continue };
        let before = window
            .insert(e["flow"].as_u64().unwrap(), cwnd)
            .unwrap_or(start);
        add("RCC-1 ACK carrying cwnd: window = cwnd", !nak);
        add("RCC-1 NAK carrying cwnd: window = cwnd", nak);
        add(
            "RCC-1 window shrinks (cwnd < the flow's window)",
            cwnd < before,
        );
        add(
            "RCC-1 window grows (cwnd > the flow's window)",
            cwnd > before,
        );
        add(
            "RCC-1 pacing rate floored (cwnd 8e9 / T not whole)",
            cwnd * 8_000_000_000 % t_rtt != 0,
        );
        add(
            "choice 9 pacing rate capped at the line rate",
            cwnd * 8_000_000_000 > c * t_rtt,
        );
        add(
            "choice 7 window below 1 MTU applied as received",
            cwnd < mtu,
        );
    }
    let got = coverage("rcc-sender", &["traces/rcc_bursts_sender.toml"]);
    let derived: Vec<(String, u64)> = got
        .iter()
        .map(|(rule, _)| (rule.clone(), want.get(rule).copied().unwrap_or(0)))
        .collect();
    assert_eq!(got, derived);
    assert_eq!(want.len(), got.len(), "rules derived here: {want:?}");
    common::assert_full(derived.iter().map(|(k, v)| (k, v)), &SENDER_UNREACHABLE);
}

/// The whole bundled suite: its counts are the sums over the RCC traces (rcc_bursts and
/// roce_rcc_receiver, checked rule by rule above, and the lossless rcc_dumbbell pair), and
/// every reachable rule runs at least three times.
#[test]
fn the_bundled_suite_exercises_every_reachable_rcc_rule_three_times() {
    let sum = |model: &str, traces: &[&str]| -> Vec<(String, u64)> {
        let mut total = coverage(model, &[traces[0]]);
        for t in &traces[1..] {
            for ((rule, x), (rule_b, y)) in total.iter_mut().zip(coverage(model, &[t])) {
                assert_eq!(*rule, rule_b);
                *x += y;
            }
        }
        total
    };
    let rx = coverage("rcc-receiver", &[]);
    let rx_traces = [
        "traces/rcc_bursts_receiver.toml",
        "traces/rcc_receiver.toml",
        "traces/roce_rcc_receiver.toml",
    ];
    assert_eq!(rx, sum("rcc-receiver", &rx_traces));
    assert_eq!(rx.len(), 30);
    common::assert_full(rx.iter().map(|(k, v)| (k, v)), &RECEIVER_UNREACHABLE);
    let tx = coverage("rcc-sender", &[]);
    assert_eq!(
        tx,
        sum(
            "rcc-sender",
            &["traces/rcc_bursts_sender.toml", "traces/rcc_sender.toml"]
        )
    );
    assert_eq!(tx.len(), 8);
    common::assert_full(tx.iter().map(|(k, v)| (k, v)), &SENDER_UNREACHABLE);
}
