//! Shared by `dut_process.rs` and `dut_cabi.rs`: a synthetic HPCC event stream, the reference
//! oracle (the in-process `hpcc::Hpcc` behind `ModelDut`), and exact comparison of decisions.
//!
//! Nothing here is computed by hand: the stream is generated, and the expected decisions are
//! whatever the reference model answers. The example DUTs are independent implementations.
#![allow(dead_code)]
// `DutError` is the `Dut` trait's error type; its size is not the tests' to change.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;
use std::process::Command;

use ccreplay::dut::{Dut, DutError, DutFlow, DutSetup, ModelDut};
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::hpcc::{self, Hpcc, ReservedLineRate};
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, StateValue};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .to_path_buf()
}

/// A per-test scratch directory under Cargo's temporary directory for integration tests.
/// One per process and kept while it runs (the libraries loaded from it must outlive the
/// tests); the folders of earlier runs whose process is gone are removed here (Linux: by
/// `/proc`; elsewhere they stay).
pub fn scratch_dir(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let me = std::process::id();
    if std::path::Path::new("/proc/self").exists()
        && let Ok(entries) = std::fs::read_dir(&root)
    {
        for e in entries.flatten() {
            let file = e.file_name();
            let pid = file
                .to_str()
                .and_then(|f| f.strip_prefix(name)?.strip_prefix('-')?.parse::<u32>().ok());
            if let Some(pid) = pid
                && pid != me
                && !std::path::Path::new(&format!("/proc/{pid}")).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let d = root.join(format!("{name}-{me}"));
    std::fs::create_dir_all(&d).expect("create a scratch directory");
    d
}

/// True when `program --version` runs. When it does not: skip (false) with a message, unless
/// `CI=true`, where a missing tool is a failure.
pub fn have_tool(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("`{program}` is required when CI=true");
        }
        eprintln!("skipped: `{program}` is not available (set CI=true to make this a failure)");
    }
    ok
}

/// Parameters for the equivalence runs: T = 12 µs and a reserved line-rate code mapped, so
/// the DUTs' parameter handling is exercised beyond the defaults.
pub fn hpcc_params() -> hpcc::Params {
    hpcc::Params {
        base_rtt_ns: 12_000,
        reserved_line_rates: vec![ReservedLineRate {
            code: 9,
            bps: 25_000_000_000,
        }],
        ..hpcc::Params::default()
    }
}

/// The setup the DUTs get: model `hpcc`, these parameters, three flows at a sender.
pub fn setup(params: serde_json::Value) -> DutSetup {
    let ip = |s: &str| s.parse().expect("an IP literal");
    DutSetup {
        model: "hpcc".into(),
        params,
        flows: (0..3)
            .map(|i| DutFlow {
                id: i,
                local_ip: ip("10.0.0.1"),
                local_qp: 0x100 + i,
                remote_ip: ip("10.0.1.1"),
                remote_qp: 0x200 + i,
            })
            .collect(),
        capture_point: "sender".into(),
    }
}

/// A small deterministic generator (64-bit LCG, Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    /// Uniform-ish in `lo..hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.next() % (hi - lo)
    }
}

struct FlowGen {
    next_psn: u32,
    acked: u32,
    index: u64,
    path_id: u16,
    hops: Vec<IntHop>,
    /// Bytes per ns each hop's port sends at full rate.
    hop_rate: Vec<f64>,
}

/// The synthetic HPCC stream: 3 flows (1, 2 and 3 INT hops), data and ACKs interleaved in
/// time order, with TS and txBytes wrapping, a PSN wrap (flow 1 starts at 0xFFFFF0), a 40G
/// hop and a reserved-code hop, a zero TS delta (HPCC-3), a path change by nHop (flow 2) and
/// by pathID (flow 0), a NAK, a CNP, an ACK without INT and a go-back-N retransmission.
pub fn hpcc_events() -> Vec<Event> {
    let mut rng = Lcg(0x5eed_cc4e_91a7);
    let hop = |b: u8, ts: u32, tx: u32| IntHop {
        b,
        ts,
        tx_bytes: tx,
        qlen: 0,
    };
    // TS starts 10 µs before its 2^24 wrap, txBytes 200 units before its 2^20 wrap.
    let ts0 = 0xFF_FFFF - 10_000;
    let tx0 = 0xF_FFFF - 200;
    let mut flows = [
        FlowGen {
            next_psn: 0,
            acked: 0,
            index: 0,
            path_id: 0x011,
            hops: vec![hop(2, ts0, tx0)],
            hop_rate: vec![12.5],
        },
        FlowGen {
            next_psn: 0xFF_FFF0,
            acked: 0xFF_FFF0,
            index: 0,
            path_id: 0x022,
            hops: vec![hop(2, ts0 + 777, tx0), hop(7, ts0 + 1234, 5)],
            hop_rate: vec![12.5, 5.0],
        },
        FlowGen {
            next_psn: 1000,
            acked: 1000,
            index: 0,
            path_id: 0x033,
            hops: vec![hop(2, 40, 7), hop(2, ts0, tx0), hop(9, 99, 1000)],
            hop_rate: vec![12.5, 12.5, 3.125],
        },
    ];
    let mut t_ns = 1_000_000u64;
    let mut out = Vec::new();
    let push = |out: &mut Vec<Event>, f: &mut FlowGen, flow: u32, t_ns: u64, kind: EventKind| {
        out.push(Event {
            t_ns,
            flow,
            index: f.index,
            kind,
        });
        f.index += 1;
    };
    for step in 0..120u32 {
        for flow in 0..3u32 {
            let f = &mut flows[flow as usize];
            // One or two data packets.
            for _ in 0..rng.range(1, 3) {
                t_ns += rng.range(100, 800) as u64;
                let psn = f.next_psn;
                f.next_psn = (psn + 1) & 0xFF_FFFF;
                push(
                    &mut out,
                    f,
                    flow,
                    t_ns,
                    EventKind::TxData {
                        psn,
                        bytes: 1000,
                        opcode: 0x0A,
                    },
                );
            }
            if flow == 2 && step == 10 {
                // Go-back-N: resend from the last acknowledged PSN (snd_nxt moves back).
                t_ns += 300;
                let psn = f.acked;
                f.next_psn = (psn + 1) & 0xFF_FFFF;
                push(
                    &mut out,
                    f,
                    flow,
                    t_ns,
                    EventKind::TxData {
                        psn,
                        bytes: 1000,
                        opcode: 0x0A,
                    },
                );
            }
            if flow == 0 && step == 20 {
                t_ns += 50;
                push(&mut out, f, flow, t_ns, EventKind::RxCnp);
            }
            if flow == 2 && step == 30 {
                // Path change: one hop fewer (nHop 3 -> 2) and another pathID (HPCC-5).
                f.hops.truncate(2);
                f.hop_rate.truncate(2);
                f.path_id = 0x044;
            }
            if flow == 0 && step == 60 {
                // Path change by pathID only (same nHop).
                f.path_id = 0x055;
            }
            // Advance every hop's counters to the ACK's time.
            for (i, h) in f.hops.iter_mut().enumerate() {
                let dts = if flow == 2 && i == 1 && step == 40 {
                    0 // HPCC-3: a hop whose TS did not move
                } else {
                    rng.range(1500, 6000)
                };
                // Utilisation 0.5..1.3 of the port's rate, in 128-byte units.
                let util = rng.range(50, 130) as f64 / 100.0;
                let units = (dts as f64 * f.hop_rate[i] * util / 128.0) as u32;
                h.ts = (h.ts + dts) & 0xFF_FFFF;
                h.tx_bytes = (h.tx_bytes + units) & 0xF_FFFF;
                h.qlen = if rng.range(0, 4) == 0 {
                    0
                } else {
                    rng.range(0, 600) as u16
                };
            }
            t_ns += rng.range(200, 1500) as u64;
            // Acknowledge up to the last packet sent (or one before it).
            let last = (f.next_psn + 0xFF_FFFF) & 0xFF_FFFF;
            let psn = if rng.range(0, 3) == 0 {
                (last + 0xFF_FFFF) & 0xFF_FFFF
            } else {
                last
            };
            f.acked = psn;
            let int = if flow == 1 && step == 70 {
                None // an ACK without INT: no feedback
            } else {
                Some(IntStack::from_hops(f.path_id, &f.hops).expect("at most 15 hops"))
            };
            let ack = AckInfo {
                psn,
                syndrome: 0x1F,
                int,
                n: None,
                cwnd: None,
                rcc_flags: None,
                ts_ns: None,
            };
            let kind = if flow == 1 && step == 50 {
                EventKind::RxNak(AckInfo {
                    syndrome: 0x60,
                    ..ack
                })
            } else {
                EventKind::RxAck(ack)
            };
            push(&mut out, f, flow, t_ns, kind);
        }
    }
    out
}

/// The trace end: a little after the last event.
pub fn t_end(events: &[Event]) -> u64 {
    events.last().map_or(0, |e| e.t_ns + 1000)
}

/// Feed every event, then finish; all decisions in order.
pub fn run(dut: &mut dyn Dut, events: &[Event]) -> Result<Vec<Decision>, DutError> {
    let mut out = Vec::new();
    for ev in events {
        dut.event(ev, &mut out)?;
    }
    dut.finish(t_end(events), &mut out)?;
    Ok(out)
}

/// The reference decisions (the oracle) for these parameters.
pub fn reference(params: &hpcc::Params, events: &[Event]) -> Vec<Decision> {
    let mut m = ModelDut::new(Box::new(Hpcc::new(params).expect("valid parameters")));
    run(&mut m, events).expect("the reference model does not fail")
}

/// Two decisions agree on every field, f64 state bit for bit.
pub fn same(a: &Decision, b: &Decision) -> bool {
    let bits = |v: StateValue| match v {
        StateValue::F64(x) => (3u8, x.to_bits()),
        StateValue::U64(x) => (1, x),
        StateValue::I64(x) => (2, x as u64),
        StateValue::Bool(x) => (4, x as u64),
    };
    a.t_ns == b.t_ns
        && a.flow == b.flow
        && a.cause == b.cause
        && a.outputs == b.outputs
        && a.state.fields().count() == b.state.fields().count()
        && a.state
            .fields()
            .zip(b.state.fields())
            .all(|((n1, v1), (n2, v2))| n1 == n2 && bits(v1) == bits(v2))
}

/// Index of the first decision where the two lists disagree (or where one is longer).
pub fn first_difference(a: &[Decision], b: &[Decision]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| !same(x, y))
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Every decision identical, with the first difference shown if not.
pub fn assert_identical(reference: &[Decision], dut: &[Decision]) {
    if let Some(i) = first_difference(reference, dut) {
        panic!(
            "decision {i} differs ({} reference, {} DUT decisions)\n reference: {:?}\n       DUT: {:?}",
            reference.len(),
            dut.len(),
            reference.get(i),
            dut.get(i)
        );
    }
}

/// The first decision whose window differs from the previous window of its flow (initially
/// `W_init`): the first ACK that changes the window.
pub fn first_window_change(reference: &[Decision], w_init: u64) -> usize {
    let mut last = std::collections::HashMap::new();
    reference
        .iter()
        .position(|d| {
            let prev = last.insert(d.flow, d.outputs.window_bytes);
            d.outputs.window_bytes != prev.unwrap_or(Some(w_init))
        })
        .expect("the stream changes the window")
}

/// The stream is worth comparing on: ACKs of every flow, windows that go down and up again,
/// both COMPUTEWIND branches, stored-only ACKs (first ACK, path changes), and a NAK.
pub fn assert_stream_exercises_hpcc(reference: &[Decision], w_init: u64) {
    let w = |d: &Decision| d.outputs.window_bytes.expect("HPCC decisions carry W");
    let state = |d: &Decision, n: &str| d.state.get(n).expect("state name");
    assert!(reference.len() >= 300, "{} decisions", reference.len());
    for flow in 0..3 {
        assert!(reference.iter().any(|d| d.flow == flow && w(d) < w_init));
    }
    // MI (incStage back to 0 after an update) and AI (incStage > 0) both happen.
    assert!(
        reference
            .iter()
            .any(|d| matches!(state(d, "incStage"), StateValue::U64(s) if s > 0))
    );
    // tau = 0 with the ACK running: stored-only ACKs and the ACK without INT.
    assert!(
        reference
            .iter()
            .filter(|d| matches!(state(d, "tau"), StateValue::U64(0)))
            .count()
            >= 5
    );
    assert!(
        reference
            .iter()
            .any(|d| matches!(d.cause, Cause::Event { kind: "rx_nak", .. }))
    );
    // Windows rise again after falling (AI rounds), somewhere.
    let mut last = std::collections::HashMap::new();
    assert!(reference.iter().any(|d| {
        let prev = last.insert(d.flow, w(d));
        prev.is_some_and(|p| w(d) > p)
    }));
}

/// A short stream for the failure cases: one data packet, one ACK with INT, one CNP.
pub fn few_events() -> Vec<Event> {
    let int = IntStack::from_hops(
        0x123,
        &[IntHop {
            b: 2,
            ts: 5000,
            tx_bytes: 40,
            qlen: 3,
        }],
    );
    vec![
        Event {
            t_ns: 1000,
            flow: 0,
            index: 0,
            kind: EventKind::TxData {
                psn: 7,
                bytes: 1000,
                opcode: 0x0A,
            },
        },
        Event {
            t_ns: 3000,
            flow: 0,
            index: 1,
            kind: EventKind::RxAck(AckInfo {
                psn: 7,
                syndrome: 0x1F,
                int,
                n: None,
                cwnd: None,
                rcc_flags: None,
                ts_ns: None,
            }),
        },
        Event {
            t_ns: 4000,
            flow: 0,
            index: 2,
            kind: EventKind::RxCnp,
        },
    ]
}
