//! `ccreplay replay`: a trace through a reference model or a DUT, decisions out.

use std::path::PathBuf;

use clap::Args;

use ccreplay::replay;

use super::{
    DecisionOut, Failure, Progress, in_manifest, judge_input, load_trace_args, make_dut,
    pick_model, plural, report_extraction,
};

#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// A trace: its manifest (`.toml`) or its capture (the manifest beside it is used).
    #[arg(required_unless_present = "events")]
    pub(crate) trace: Option<PathBuf>,
    /// Replay this events file (JSON Lines, docs/protocol.md) instead of the trace's capture;
    /// without TRACE, the manifest beside it (same stem, `.toml`) names the models.
    #[arg(long)]
    pub(crate) events: Option<PathBuf>,
    /// Also write the trace's events here as JSON Lines (what `--events` reads back).
    #[arg(long)]
    pub(crate) emit_events: Option<PathBuf>,
    /// Reference model (default: the manifest's first).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Replay through a DUT instead: `model:NAME`, `process:COMMAND ARGS...`, `cabi:LIBRARY`,
    /// `wire`.
    #[arg(long)]
    pub(crate) dut: Option<String>,
    /// Write decisions here (atomically) instead of standard output.
    #[arg(long, short)]
    pub(crate) out: Option<PathBuf>,
    /// Threads that read and decode the capture; the one running the models is among them
    /// (1: all on one thread; from 3, decisions are written on a thread of their own). The
    /// output is the same for every N.
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// Per-request timeout of a process DUT, ms.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) dut_timeout_ms: u64,
    /// Malformed or bad-ICRC packets of the replayed traffic are an error (exit 2), not a
    /// warning.
    #[arg(long)]
    pub(crate) strict: bool,
}

pub(crate) fn run(a: ReplayArgs) -> Result<u8, Failure> {
    let trace = load_trace_args(a.trace.as_deref(), a.events.as_deref())?;
    if let Some(p) = &a.emit_events {
        let n =
            ccreplay::events_in::write_events(&trace, p).map_err(|e| Failure::input(e, None))?;
        note!("ccreplay: {n} events -> {}", p.display());
    }
    let spec = pick_model(&trace, a.model.as_deref())?.clone();
    let mut out = DecisionOut::new(a.out.clone())?;
    let mut pb = Progress::new(&format!("replay {}", trace.name()));
    // What a DUT that reads the capture says of every packet (`--dut wire`), as `diff` does.
    let mut dut_line = None;
    let stats = match &a.dut {
        None => replay::replay_reference(&trace, &spec, a.jobs, |d| {
            pb.inc();
            out.push(d)
        })
        .map_err(in_manifest(&trace))?,
        Some(s) => {
            let mut dut = make_dut(s, &trace, &spec, a.dut_timeout_ms, &[])?;
            let stats = replay::replay_dut(&trace, dut.as_mut(), |d| {
                pb.inc();
                out.push(d)
            })?;
            dut_line = dut.accounting().map(|(line, _)| line);
            stats
        }
    };
    pb.finish();
    let bad_lines = ccreplay::events_in::is_events(&trace)
        && ccreplay::events_in::report_bad_lines(&trace, &stats.extract);
    report_extraction(&trace, &stats.extract);
    if let Some(line) = dut_line {
        note!("{line}");
    }
    // Nothing replayed is an error, and leaves no decisions file behind.
    judge_input(&trace, &spec.name, &stats, a.strict, false)?;
    out.commit().map_err(|e| {
        if super::is_closed_pipe(&e) {
            Failure::closed_pipe()
        } else {
            Failure::input(format!("writing decisions: {e}"), None)
        }
    })?;
    if let Some(path) = &a.out {
        note!(
            "ccreplay: {} events, {} decisions, {} flow{} -> {}",
            stats.events,
            stats.decisions,
            stats.flows.flows.len(),
            plural(stats.flows.flows.len() as u64),
            path.display()
        );
    }
    Ok(if bad_lines { 2 } else { 0 })
}
