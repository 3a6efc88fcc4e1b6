//! `ccreplay check`: every trace of a folder against its golden files.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use ccreplay::diff;
use ccreplay::golden::{self, Outcome};
use ccreplay::report::junit::{self, Suite};

use super::{Failure, ReportFormat, indent, junit_properties, write_atomic};

/// What to do with golden files no checked trace uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Unreferenced {
    /// Fail the run (exit 1).
    Reject,
    /// List them on standard error.
    Warn,
    /// Say nothing.
    Ignore,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// Traces: folders of capture + manifest pairs, manifests, or captures (the manifest
    /// beside each).
    #[arg(default_value = "traces")]
    pub(crate) paths: Vec<PathBuf>,
    /// Only the trace of this name (a manifest's stem; repeatable).
    #[arg(long = "trace")]
    pub(crate) traces: Vec<String>,
    /// Only shard I of N (1-based): the traces, sorted by name, dealt round-robin, so N CI
    /// jobs with I = 1..N check each trace exactly once.
    #[arg(long, value_parser = parse_shard)]
    pub(crate) shard: Option<(usize, usize)>,
    /// Golden files that no trace of the folders checked uses (a trace or model renamed or
    /// removed): `reject` fails the run, `warn` lists them, `ignore`. Only when a folder of
    /// traces is checked whole (no --trace, no --shard).
    #[arg(long, value_enum, default_value = "warn")]
    pub(crate) unreferenced: Unreferenced,
    /// Also print, per model, how often the traces exercised each of its rules and branches,
    /// and which they never did (docs/conformance.md).
    #[arg(long)]
    pub(crate) coverage: bool,
    /// Folder of golden files (`<trace>/<model>.jsonl`).
    #[arg(long, default_value = "golden")]
    pub(crate) golden: PathBuf,
    /// `observed`: instead of golden files, judge each sender capture's sender by what it put
    /// on the wire, against its manifest's first model that sets a rate or window
    /// (docs/observed.md) — a folder of captures of your own NIC, no golden files needed.
    #[arg(long, value_parser = ["observed"], conflicts_with_all = ["coverage", "report"])]
    pub(crate) dut: Option<String>,
    /// With `--dut observed`: an allowance for correct hardware, KEY=VALUE (see `diff --allow`).
    #[arg(long = "allow", value_name = "KEY=VALUE", requires = "dut")]
    pub(crate) allow: Vec<String>,
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

/// A model's name, the traces it was checked on, and its summed rule counts.
type ModelCoverage = (String, Vec<String>, Vec<(&'static str, u64)>);

pub(crate) fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("`{s}`: expected I/N with 1 <= I <= N, e.g. 2/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The manifests to check, after --trace and --shard, and whether a whole folder is checked.
fn select(a: &CheckArgs) -> Result<(Vec<PathBuf>, Vec<PathBuf>, bool), Failure> {
    let hint = || {
        "run from the repository root, or name the traces: ccreplay check DIR|TRACE.toml|CAPTURE"
            .to_string()
    };
    let (all, dirs) = golden::resolve_traces(&a.paths).map_err(|e| Failure::input(e, hint()))?;
    let mut chosen = all.clone();
    for name in &a.traces {
        if !all.iter().any(|m| golden::trace_name(m) == *name) {
            let known: Vec<String> = all.iter().map(|m| golden::trace_name(m)).collect();
            return Err(Failure::input(
                format!("--trace {name}: no such trace"),
                format!("traces: {}", known.join(", ")),
            ));
        }
    }
    if !a.traces.is_empty() {
        chosen.retain(|m| a.traces.contains(&golden::trace_name(m)));
    }
    if let Some((i, n)) = a.shard {
        // Sorted by name, whatever order the paths came in: every job deals the same way.
        chosen.sort_by_key(|m| (golden::trace_name(m), m.clone()));
        chosen = chosen
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % n == i - 1)
            .map(|(_, m)| m)
            .collect();
    }
    if chosen.is_empty() {
        // A job that checks nothing must not pass: more shards than traces is a mistake.
        return Err(Failure::input(
            format!(
                "--shard {}/{}: no trace falls in this shard ({} trace{} in all)",
                a.shard.map_or(0, |s| s.0),
                a.shard.map_or(0, |s| s.1),
                all.len(),
                super::plural(all.len() as u64)
            ),
            format!("use at most {} shards", all.len()),
        ));
    }
    let whole = !dirs.is_empty() && a.traces.is_empty() && a.shard.is_none();
    Ok((chosen, all, whole))
}

pub(crate) fn run(a: CheckArgs) -> Result<u8, Failure> {
    let (manifests, all, whole) = select(&a)?;
    if a.dut.is_some() {
        return run_observed(&a, &manifests);
    }
    let label = a
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
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
        ccreplay::report::write_check_report(
            &a.html, &manifests, &label, &a.golden, a.jobs, starting,
        )
        .map(|(results, files)| {
            written = files;
            results
        })
    } else {
        golden::check_manifests(&manifests, &a.golden, a.jobs, starting)
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
    let mut missing = 0usize;
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
            Outcome::MissingGolden { path, manifest } => {
                // Nothing compared: an error (exit 2), never a plain difference.
                missing += 1;
                let e = format!(
                    "no golden file {}: nothing compared (write it from the reference model with `{}`, review it, then check again)",
                    path.display(),
                    golden::bless_command(manifest, &a.golden)
                );
                if a.format == ReportFormat::Text {
                    outln!("{:>8}  {label}: {e}", "MISSING");
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "missing_golden": path, "error": e}));
                suites.push(Suite::not_compared(&label, "golden file", &e, false));
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
    // Golden files nothing checks: a renamed trace or model left them, and they would pass
    // unnoticed forever.
    let orphans = if whole && a.unreferenced != Unreferenced::Ignore {
        golden::unreferenced(&a.golden, &all)
    } else {
        Vec::new()
    };
    let reject = a.unreferenced == Unreferenced::Reject && !orphans.is_empty();
    if !orphans.is_empty() {
        let tag = if reject { "error" } else { "warning" };
        eprintln!(
            "ccreplay: {tag}: {} golden file{} no trace uses:",
            orphans.len(),
            super::plural(orphans.len() as u64)
        );
        for o in &orphans {
            eprintln!("  {}", o.display());
        }
        eprintln!(
            "  hint: remove {} (`git rm`), or bless the trace that should use {}",
            if orphans.len() == 1 { "it" } else { "them" },
            if orphans.len() == 1 { "it" } else { "them" }
        );
    }
    if reject {
        let list = orphans
            .iter()
            .map(|o| o.display().to_string())
            .collect::<Vec<_>>()
            .join("\n");
        suites.push(Suite::not_compared(
            "unreferenced golden files",
            "golden files",
            &format!("golden files no trace uses (--unreferenced reject):\n{list}"),
            true,
        ));
    }
    // Rule coverage per model, summed over the traces compared.
    let mut coverage: Vec<ModelCoverage> = Vec::new();
    if a.coverage {
        for r in &results {
            if let Outcome::Compared { stats, .. } = &r.outcome {
                let i = match coverage.iter().position(|(m, _, _)| *m == r.model) {
                    Some(i) => i,
                    None => {
                        coverage.push((r.model.clone(), Vec::new(), Vec::new()));
                        coverage.len() - 1
                    }
                };
                coverage[i].1.push(r.trace.clone());
                ccreplay::replay::add_coverage(&mut coverage[i].2, &stats.coverage);
            }
        }
        coverage.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let ok = results.iter().filter(|r| r.ok()).count();
    let errors = results
        .iter()
        .filter(|r| match &r.outcome {
            Outcome::Failed(_) => true,
            Outcome::Compared { stats, .. } => {
                ccreplay::events_in::bad_lines(&stats.extract).is_some()
            }
            Outcome::MissingGolden { .. } => false,
        })
        .count();
    match a.format {
        ReportFormat::Text => {
            for (model, traces, counts) in &coverage {
                if counts.is_empty() {
                    outln!(
                        "coverage of {model}: not reported (the model does not count its rules yet)"
                    );
                    continue;
                }
                let never: Vec<&str> = counts
                    .iter()
                    .filter(|(_, n)| *n == 0)
                    .map(|(r, _)| *r)
                    .collect();
                outln!(
                    "coverage of {model} over {}: {} rules and branches, {} never exercised",
                    traces.join(", "),
                    counts.len(),
                    never.len()
                );
                for (rule, n) in counts {
                    outln!("  {:>9}  {rule}", ccreplay::verdict::n(*n));
                }
                for rule in never {
                    outln!("  never exercised: {rule}");
                }
            }
            outln!(
                "{ok} of {} trace/model pairs conform{}",
                results.len(),
                not_compared(missing, errors)
            )
        }
        ReportFormat::Json => {
            let mut j = serde_json::json!({"conform": ok, "total": results.len(), "missing": missing, "errors": errors, "results": json, "unreferenced": orphans});
            if a.coverage {
                let cov: serde_json::Map<String, serde_json::Value> = coverage
                    .iter()
                    .map(|(m, traces, counts)| {
                        (
                            m.clone(),
                            serde_json::json!({
                                "traces": traces,
                                "rules": counts.iter().map(|(r, n)| serde_json::json!({"rule": r, "count": n})).collect::<Vec<_>>(),
                            }),
                        )
                    })
                    .collect();
                j["coverage"] = serde_json::Value::Object(cov);
            }
            outln!("{j}")
        }
    }
    if let Some(j) = &a.junit {
        write_atomic(j, junit::render(&suites).as_bytes())?;
    }
    for p in written {
        note!("ccreplay: wrote {}", p.display());
    }
    // A pair compared against nothing makes the run compare less than it was asked to: exit 2,
    // whatever the others did.
    Ok(if failed_input || missing > 0 {
        2
    } else if ok == results.len() && !reject {
        0
    } else {
        1
    })
}

/// What the summary line adds for the pairs that compared nothing: `; 1 MISSING a golden
/// file, 2 ERROR: nothing compared` (empty when every pair was compared).
fn not_compared(missing: usize, errors: usize) -> String {
    let mut parts = Vec::new();
    if missing > 0 {
        parts.push(format!("{missing} MISSING a golden file"));
    }
    if errors > 0 {
        parts.push(format!("{errors} ERROR"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}: nothing compared", parts.join(", "))
    }
}

/// `check --dut observed`: every sender capture's sender judged against its manifest's first
/// model that sets a rate or window. Pairs that are not judged (a receiver's capture, the
/// manifest's other models) are listed with the reason; no pair judged at all is an error.
fn run_observed(a: &CheckArgs, manifests: &[PathBuf]) -> Result<u8, Failure> {
    use ccreplay::observe;
    let mut suites = Vec::new();
    let mut json = Vec::new();
    let (mut judged, mut ok, mut errors) = (0usize, 0usize, 0usize);
    for path in manifests {
        let trace = super::load_trace(path)?;
        let name = golden::trace_name(path);
        let sender = matches!(
            trace.manifest.capture_point,
            ccreplay::manifest::CapturePoint::Sender { .. }
        );
        // A device runs one algorithm: the manifest's first model that sets a rate or window
        // (diff's default reference too); the others are listed.
        let first = trace
            .manifest
            .models
            .iter()
            .position(|m| observe::judges(&m.name));
        for (i, spec) in trace.manifest.models.iter().enumerate() {
            let label = format!("{name} / {}", spec.name);
            if !sender || Some(i) != first {
                let why = if !sender {
                    format!(
                        "a {} capture: its decisions are its packets (diff --dut wire)",
                        trace.manifest.capture_point.kind()
                    )
                } else if observe::judges(&spec.name) {
                    format!(
                        "the sender is judged against the manifest's first such model, `{}` \
                         (diff --model {} --dut observed judges this one)",
                        trace.manifest.models[first.unwrap_or(0)].name,
                        spec.name
                    )
                } else {
                    format!("`{}` sets no rate or window", spec.name)
                };
                if a.format == ReportFormat::Text {
                    outln!("{:>8}  {label}: not judged: {why}", "n/a");
                }
                json.push(serde_json::json!({"trace": name, "model": spec.name, "judged": false, "reason": why}));
                continue;
            }
            let started = std::time::Instant::now();
            let outcome = observe::Allowances::resolve(&trace.manifest.observed, &a.allow)
                .map_err(|e| e.to_string())
                .and_then(|allow| {
                    observe::run(&trace, spec, allow, false, || {}).map_err(|e| e.to_string())
                });
            let mut o = match outcome {
                Ok(o) => o,
                Err(e) => {
                    errors += 1;
                    if a.format == ReportFormat::Text {
                        outln!("{:>8}  {label}: {e}", "ERROR");
                    }
                    json.push(serde_json::json!({"trace": name, "model": spec.name, "ok": false, "error": e}));
                    suites.push(Suite::not_compared(&label, "replay", &e, false));
                    continue;
                }
            };
            let stats = std::mem::take(&mut o.stats);
            let account = ccreplay::verdict::Accounting {
                report: &stats.extract,
            };
            let findings = ccreplay::verdict::assess(
                &trace,
                &spec.name,
                &stats,
                ccreplay::verdict::Strictness::default(),
            );
            // The message and its hint, as a golden-file check's ERROR says them.
            let with_hint = |m: String, h: Option<String>| match h {
                Some(h) => format!("{m} (hint: {h})"),
                None => m,
            };
            let error = findings
                .iter()
                .find(|f| f.is_error())
                .map(|f| with_hint(f.message.clone(), f.hint.clone()))
                .or_else(|| {
                    o.insufficient
                        .first()
                        .map(|w| with_hint(w.message(), w.hint.clone()))
                });
            if let Some(e) = error {
                errors += 1;
                if a.format == ReportFormat::Text {
                    outln!("{:>8}  {label}: {e}\n          {}", "ERROR", account.line());
                }
                json.push(serde_json::json!({"trace": name, "model": spec.name, "ok": false, "error": e, "accounting": account.json()}));
                let mut suite = Suite::not_compared(&label, "observed", &e, false);
                suite.properties = junit_properties(&name, &spec.name, &account);
                suites.push(suite);
                continue;
            }
            judged += 1;
            let report = &o.report;
            ok += usize::from(report.ok());
            let packets: u64 = o.facts.iter().map(|f| f.packets).sum();
            let text = format!(
                "{}{}",
                observe::render_header(&o.allowances, &o.tap, &o.facts),
                diff::render_text(report, "reference", "observed")
            );
            if a.format == ReportFormat::Text {
                outln!(
                    "{:>8}  {label}: {} data packets judged, {} flows\n          {}",
                    if report.ok() { "ok" } else { "DIFFERS" },
                    ccreplay::verdict::n(packets),
                    report.flows.len(),
                    account.line()
                );
                if !report.ok() {
                    out!("{}", indent(&text));
                }
            }
            json.push(serde_json::json!({"trace": name, "model": spec.name, "ok": report.ok(), "packets": packets, "accounting": account.json(), "report": diff::render_json(report)}));
            let mut suite = Suite::compared(
                &format!("{label} / observed"),
                report,
                &text,
                started.elapsed().as_secs_f64(),
            );
            suite.properties = junit_properties(&name, &spec.name, &account);
            suites.push(suite);
        }
    }
    let none = judged == 0 && errors == 0;
    match a.format {
        ReportFormat::Text => {
            if none {
                outln!("ERROR: no trace/model pair could be judged by its sender's packets");
            } else {
                outln!(
                    "{ok} of {} judged trace/model pairs conform{}",
                    judged + errors,
                    not_compared(0, errors)
                );
            }
        }
        ReportFormat::Json => outln!(
            "{}",
            serde_json::json!({"conform": ok, "total": judged + errors, "errors": errors, "results": json})
        ),
    }
    if let Some(j) = &a.junit {
        write_atomic(j, junit::render(&suites).as_bytes())?;
    }
    if none {
        return Err(Failure::input(
            "nothing judged: no sender capture with a model that sets a rate or window",
            Some("docs/observed.md lists the models and what a capture must hold".to_string()),
        ));
    }
    Ok(if errors > 0 {
        2
    } else if ok == judged {
        0
    } else {
        1
    })
}
