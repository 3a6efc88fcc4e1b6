//! The main job, as a test: every bundled trace in `traces/` replays through every model its
//! manifest names and matches its golden file in `golden/` — outputs and state, bit for bit —
//! and a per-trace summary is pinned as an insta snapshot, so a change in what the traces hold
//! (flows, events, decisions, final windows and rates) shows up in review.

use std::fmt::Write as _;
use std::path::Path;

use ccreplay::golden::{self, Outcome};
use ccreplay::replay::{self, Trace};

/// Last window, rate and ACK cwnd of a flow, and its decision count.
type LastOutputs = (Option<u64>, Option<u64>, Option<u32>, u64);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn bundled_traces_match_their_golden_files() {
    let results =
        golden::check_all(&root().join("traces"), &root().join("golden"), 2).expect("traces/");
    assert!(
        results.len() >= 4,
        "expected a trace per dialect, got {}",
        results.len()
    );
    for r in &results {
        match &r.outcome {
            Outcome::Compared { report, .. } => assert!(
                report.ok(),
                "{} / {}:\n{}",
                r.trace,
                r.model,
                ccreplay::diff::render_text(report, "golden", "replay")
            ),
            other => panic!("{} / {}: {other:?}", r.trace, r.model),
        }
    }
}

#[test]
fn bundled_trace_summaries() {
    for m in golden::find_traces(&root().join("traces")).unwrap() {
        let trace = Trace::load(&m).unwrap();
        let mut s = String::new();
        for spec in &trace.manifest.models {
            // Last outputs per flow: where each flow's window and rate ended.
            let mut last: Vec<LastOutputs> = Vec::new();
            let stats = replay::replay_reference(&trace, spec, 1, |d| {
                let f = d.flow as usize;
                if last.len() <= f {
                    last.resize(f + 1, (None, None, None, 0));
                }
                let e = &mut last[f];
                e.0 = d.outputs.window_bytes.or(e.0);
                e.1 = d.outputs.rate_bps.or(e.1);
                e.2 = d.outputs.ack_cwnd.or(e.2);
                e.3 += 1;
                Ok(())
            })
            .unwrap();
            let _ = writeln!(
                s,
                "model {}: {} packets, {} events, {} decisions, {} malformed",
                spec.name,
                stats.extract.packets,
                stats.events,
                stats.decisions,
                stats.extract.malformed
            );
            for (f, info) in stats.flows.flows.iter().enumerate() {
                let (w, r, c, n) = last.get(f).copied().unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  flow {f} {} qp {:?}->{:?} ({}): {n} decisions, last window {w:?}, rate {r:?}, ack_cwnd {c:?}",
                    info.remote_ip, info.local_qp, info.remote_qp, info.paired_by
                );
            }
        }
        insta::assert_snapshot!(trace.name(), s);
    }
}
