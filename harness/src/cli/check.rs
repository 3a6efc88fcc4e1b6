//! `ccreplay check`: every trace of a folder against its golden files.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use ccreplay::diff;
use ccreplay::golden::{self, Outcome};
use ccreplay::report::junit::{self, Suite};

use super::{Failure, ReportFormat, indent, junit_properties, write_atomic};

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// Folder of traces (capture + manifest pairs).
    #[arg(default_value = "traces")]
    pub(crate) dir: PathBuf,
    /// Folder of golden files (`<trace>/<model>.jsonl`).
    #[arg(long, default_value = "golden")]
    pub(crate) golden: PathBuf,
    /// Threads that read and decode each capture (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: ReportFormat,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    pub(crate) junit: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) html: ccreplay::report::HtmlArgs,
}

pub(crate) fn run(a: CheckArgs) -> Result<u8, Failure> {
    let pb = if io::stderr().is_terminal() && !super::quiet() {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    pb.enable_steady_tick(Duration::from_millis(120));
    // Each pair's time: from its start to the next one's (or the end), for JUnit.
    let begun = std::time::Instant::now();
    let mut starts: Vec<(String, f64)> = Vec::new();
    let starting = |trace: &str, model: &str| {
        pb.set_message(format!("checking {trace} / {model}"));
        starts.push((format!("{trace} / {model}"), begun.elapsed().as_secs_f64()));
    };
    // With --report the same replays also feed the page (one pass).
    let mut written = Vec::new();
    let results = if a.html.report.is_some() {
        ccreplay::report::write_check_report(&a.html, &a.dir, &a.golden, a.jobs, starting).map(
            |(results, files)| {
                written = files;
                results
            },
        )
    } else {
        golden::check_all_with(&a.dir, &a.golden, a.jobs, starting)
    };
    pb.finish_and_clear();
    let end = begun.elapsed().as_secs_f64();
    let time_of = |label: &str| {
        starts
            .iter()
            .position(|(l, _)| l == label)
            .map_or(0.0, |i| {
                starts.get(i + 1).map_or(end, |n| n.1) - starts[i].1
            })
    };
    let results = results.map_err(|e| {
        Failure::input(
            e,
            "run from the repository root, or name the traces folder: ccreplay check DIR"
                .to_string(),
        )
    })?;
    let mut failed_input = false;
    let mut suites = Vec::new();
    let mut json = Vec::new();
    for r in &results {
        let label = format!("{} / {}", r.trace, r.model);
        match &r.outcome {
            Outcome::Compared { stats, .. }
                if ccreplay::events_in::bad_lines(&stats.extract).is_some() =>
            {
                failed_input = true;
                let e = ccreplay::events_in::bad_lines(&stats.extract).unwrap_or_default();
                if a.format == ReportFormat::Text {
                    outln!("{:>8}  {label}: {e}", "ERROR");
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "error": e}));
                let mut suite = Suite::not_compared(&label, "events", e, false);
                suite.properties = junit_properties(
                    &r.trace,
                    &r.model,
                    &ccreplay::verdict::Accounting {
                        report: &stats.extract,
                    },
                );
                suites.push(suite);
            }
            Outcome::Compared {
                report,
                stats,
                findings,
            } => {
                let verdict = if report.ok() { "ok" } else { "DIFFERS" };
                let account = ccreplay::verdict::Accounting {
                    report: &stats.extract,
                };
                if a.format == ReportFormat::Text {
                    outln!(
                        "{verdict:>8}  {label}: {} decisions, {} flows\n          {}",
                        ccreplay::verdict::n(stats.decisions),
                        stats.flows.flows.len(),
                        account.line()
                    );
                    for f in findings {
                        outln!("{:>8}  {label}: {}", "warning", f.message);
                    }
                    if !report.ok() {
                        out!("{}", indent(&diff::render_text(report, "golden", "replay")));
                    }
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": report.ok(), "events": stats.events, "decisions": stats.decisions, "accounting": account.json(), "warnings": findings.iter().map(|f| &f.message).collect::<Vec<_>>(), "report": diff::render_json(report)}));
                let text = diff::render_text(report, "golden", "replay");
                let mut suite = Suite::compared(&label, report, &text, time_of(&label));
                suite.properties = junit_properties(&r.trace, &r.model, &account);
                suites.push(suite);
            }
            Outcome::MissingGolden(p) => {
                if a.format == ReportFormat::Text {
                    outln!(
                        "{:>8}  {label}: no golden file {} (create it with `ccreplay bless --trace {}`)",
                        "MISSING",
                        p.display(),
                        r.trace
                    );
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "missing_golden": p}));
                suites.push(Suite::not_compared(
                    &label,
                    "golden file",
                    &format!(
                        "no golden file {} (create it with `ccreplay bless --trace {}`)",
                        p.display(),
                        r.trace
                    ),
                    true,
                ));
            }
            Outcome::Failed(e) => {
                failed_input = true;
                if a.format == ReportFormat::Text {
                    outln!("{:>8}  {label}: {e}", "ERROR");
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "error": e}));
                let mut suite = Suite::not_compared(&label, "replay", e, false);
                suite.time_s = time_of(&label);
                suites.push(suite);
            }
        }
    }
    let ok = results.iter().filter(|r| r.ok()).count();
    match a.format {
        ReportFormat::Text => outln!("{ok} of {} trace/model pairs conform", results.len()),
        ReportFormat::Json => outln!(
            "{}",
            serde_json::json!({"conform": ok, "total": results.len(), "results": json})
        ),
    }
    if let Some(j) = &a.junit {
        write_atomic(j, junit::render(&suites).as_bytes())?;
    }
    for p in written {
        note!("ccreplay: wrote {}", p.display());
    }
    Ok(if failed_input {
        2
    } else if ok == results.len() {
        0
    } else {
        1
    })
}
