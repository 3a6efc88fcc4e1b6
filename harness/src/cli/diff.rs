//! `ccreplay diff`: reference vs a DUT or a golden file on one trace.

use std::path::PathBuf;

use clap::Args;

use ccreplay::diff::{
    self, DiffOptions, DiffReport, Side, StateCompare, StreamDiff, Tolerance, Which,
};
use ccreplay::dut::ModelDut;
use ccreplay::golden::{self, GoldenFeed};
use ccreplay::replay::{self, ReplayStats};
use ccreplay::report::junit::{self, Suite};
use ccreplay_reference_cc::Decision;

use super::{
    Failure, Progress, ReportFormat, accounting, in_manifest, judge_input, junit_properties,
    load_trace_args, make_dut, model_failure, pick_model, report_extraction, write_atomic,
};

#[derive(Args)]
pub(crate) struct DiffArgs {
    /// A trace: its manifest (`.toml`) or its capture.
    #[arg(required_unless_present = "events")]
    pub(crate) trace: Option<PathBuf>,
    /// Diff on this events file (JSON Lines, docs/protocol.md) instead of the trace's capture.
    #[arg(long)]
    pub(crate) events: Option<PathBuf>,
    /// Reference model (default: the manifest's first).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The DUT: `model:NAME`, `process:COMMAND ARGS...`, `cabi:LIBRARY`, `wire` (a
    /// receiver NIC's decisions as its ACKs carry them, docs/dut.md), or `observed` (the
    /// capture's sender judged by its transmit times and bytes in flight, docs/observed.md).
    #[arg(long, conflicts_with = "golden", required_unless_present = "golden")]
    pub(crate) dut: Option<String>,
    /// Compare a golden / decisions file with the reference instead of a DUT.
    #[arg(long)]
    pub(crate) golden: Option<PathBuf>,
    /// Tolerance on a field: FIELD=abs:X or FIELD=rel:X (repeatable; state fields as state.NAME).
    #[arg(long = "tol", value_parser = parse_tolerance)]
    pub(crate) tolerances: Vec<Tolerance>,
    /// Compare state too: `all`, or a comma-separated list of names (W,Wc,U).
    #[arg(long)]
    pub(crate) state: Option<String>,
    /// Output format (default: text).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: ReportFormat,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    pub(crate) junit: Option<PathBuf>,
    /// Threads that read and decode the capture for the reference side (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// Per-request timeout of a process DUT, ms.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) dut_timeout_ms: u64,
    /// Malformed or bad-ICRC packets of the replayed traffic are an error (exit 2), not a
    /// warning.
    #[arg(long)]
    pub(crate) strict: bool,
    /// With `--dut observed` or `wire`: an allowance for correct hardware, KEY=VALUE with a
    /// unit (reaction=5us, burst=8KB, rate_tolerance=2%, timing=200ns, resolution=1us,
    /// window_slack=1KB; wire: ack_coalescing=16, reaction for CNPs; repeatable; over the
    /// manifest's [observed] table).
    #[arg(long = "allow", value_name = "KEY=VALUE")]
    pub(crate) allow: Vec<String>,
    #[command(flatten)]
    pub(crate) html: ccreplay::report::HtmlArgs,
}

/// An observed DUT that cannot be judged: exit 2 with the reason, a replay error as any.
pub(crate) fn observe_failure(e: ccreplay::observe::ObserveError) -> Failure {
    match e {
        ccreplay::observe::ObserveError::Unsuitable { message, hint } => Failure {
            code: 2,
            message,
            hint,
        },
        ccreplay::observe::ObserveError::Replay(e) => Failure::from(e),
    }
}

pub(crate) fn parse_tolerance(s: &str) -> Result<Tolerance, String> {
    s.parse()
}

pub(crate) fn state_compare(s: Option<&str>) -> StateCompare {
    match s {
        None => StateCompare::None,
        Some("all") => StateCompare::All,
        Some(list) => StateCompare::Fields(
            list.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect(),
        ),
    }
}

/// `--tol` and `--state` name only what the model's decisions carry: a misspelt name would
/// otherwise compare nothing and pass.
pub(crate) fn check_names(
    model: &str,
    tolerances: &[Tolerance],
    state: &StateCompare,
) -> Result<(), Failure> {
    let Some(fields) = ccreplay::models::fields(model) else {
        return Ok(());
    };
    for t in tolerances {
        if !fields.tolerable().contains(&t.field) {
            return Err(Failure::input(
                format!(
                    "--tol {}: `{model}` decisions carry no field `{}`",
                    t.field, t.field
                ),
                Some(format!(
                    "fields of `{model}`: {}",
                    fields.tolerable().join(", ")
                )),
            ));
        }
    }
    if let StateCompare::Fields(names) = state {
        for n in names {
            if !fields.state.contains(&n.as_str()) {
                return Err(Failure::input(
                    format!("--state {n}: `{model}` has no state named `{n}`"),
                    Some(format!(
                        "state of `{model}`: {} (or --state all)",
                        fields.state.join(",")
                    )),
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn run(a: DiffArgs) -> Result<u8, Failure> {
    let started = std::time::Instant::now();
    let trace = load_trace_args(a.trace.as_deref(), a.events.as_deref())?;
    let spec = pick_model(&trace, a.model.as_deref())?.clone();
    let state = state_compare(a.state.as_deref());
    check_names(&spec.name, &a.tolerances, &state)?;
    let opts = DiffOptions {
        tolerances: a.tolerances.clone(),
        state,
    };
    // The HTML report charts both sides whole; without it the two streams are compared as
    // they come (diff::StreamDiff: memory holds the flows, not the decisions).
    let whole = a.html.report.is_some();
    let mut reference = Side::default();
    let mut other = Side::default();
    let mut streamed: Option<DiffReport> = None;
    let mut pb = Progress::new(&format!("diff {}", trace.name()));
    let mut judged: Option<ccreplay::observe::Observed> = None;
    // What the DUT did with its inputs (`--dut wire`: the packets it read), after the verdict.
    let mut dut_account: Option<(String, serde_json::Value)> = None;
    let (mut stats, other_name) = match (&a.dut, &a.golden) {
        (Some(s), _) if s == "observed" => {
            let allow = ccreplay::observe::Allowances::resolve(&trace.manifest.observed, &a.allow)
                .map_err(|e| Failure::input(e.to_string(), None))?;
            let mut o =
                ccreplay::observe::run(&trace, &spec, allow, a.html.report.is_some(), || pb.inc())
                    .map_err(observe_failure)?;
            reference = std::mem::take(&mut o.reference);
            other = std::mem::take(&mut o.observed);
            let stats = std::mem::take(&mut o.stats);
            judged = Some(o);
            (stats, "observed")
        }
        (Some(s), _) => {
            // One extraction feeds both sides (fresh instances on each call).
            let mut pair = |sink: &mut dyn FnMut(bool, &Decision)| -> Result<ReplayStats, Failure> {
                let mut reference_dut = ModelDut::new(
                    replay::build_model(&trace, &spec).map_err(|e| model_failure(&trace, e))?,
                );
                let mut dut = make_dut(s, &trace, &spec, a.dut_timeout_ms, &a.allow)?;
                let stats = replay::replay_pair(&trace, &mut reference_dut, dut.as_mut(), sink)?;
                dut_account = dut.accounting();
                Ok(stats)
            };
            let mut stats = None;
            if !whole {
                let mut sd = StreamDiff::new(&opts);
                let st = pair(&mut |is_ref, d| {
                    pb.inc();
                    sd.push(if is_ref { Which::Reference } else { Which::Dut }, d);
                })?;
                // A stream that broke the event order is compared whole (replayed again).
                if sd.in_order() {
                    if let Some(w) = sd.alignment_note() {
                        eprintln!("ccreplay: warning: {}: {w}", trace.name());
                    }
                    streamed = Some(sd.finish());
                    stats = Some(st);
                }
            }
            let stats = match stats {
                Some(st) => st,
                None => pair(&mut |is_ref, d| {
                    pb.inc();
                    if is_ref {
                        reference.push(d)
                    } else {
                        other.push(d)
                    }
                })?,
            };
            (stats, "dut")
        }
        (None, Some(g)) => {
            let mut feed = (!whole).then(|| GoldenFeed::open(g, Which::Dut));
            let mut sd = StreamDiff::new(&opts);
            let stats = replay::replay_reference(&trace, &spec, a.jobs, |d| {
                pb.inc();
                match &mut feed {
                    Some(feed) => {
                        sd.push(Which::Reference, d);
                        feed.feed_to(&mut sd, d);
                    }
                    None => reference.push(d),
                }
                Ok(())
            })
            .map_err(in_manifest(&trace))?;
            // The replay's error first, then the golden file's, as when it was read after.
            if let Some(feed) = &mut feed {
                feed.drain(&mut sd);
                if let Some(e) = feed.error() {
                    return Err(Failure::input(e.to_string(), None));
                }
            }
            if feed.is_some() && sd.in_order() {
                if let Some(w) = sd.alignment_note() {
                    eprintln!("ccreplay: warning: {}: {w}", trace.name());
                }
                streamed = Some(sd.finish());
            } else {
                if feed.is_some() {
                    // A stream that broke the event order: compared whole.
                    replay::replay_reference(&trace, &spec, a.jobs, |d| {
                        reference.push(d);
                        Ok(())
                    })
                    .map_err(in_manifest(&trace))?;
                }
                other = golden::read_golden(g).map_err(|e| Failure::input(e, None))?;
            }
            (stats, "golden")
        }
        (None, None) => return Err(Failure::input("give --dut or --golden", None)),
    };
    pb.finish();
    // The reference's decisions: what "nothing compared" is judged on.
    if judged.is_none() {
        stats.decisions = match &streamed {
            Some(r) => r.reference_count(),
            None => reference.len() as u64,
        };
    }
    report_extraction(&trace, &stats.extract);
    let bad_lines = ccreplay::events_in::is_events(&trace)
        && ccreplay::events_in::report_bad_lines(&trace, &stats.extract);
    let account = accounting(&stats.extract);
    let mut verdict = judge_input(&trace, &spec.name, &stats, a.strict, true).map(|_| ());
    if let (Ok(()), Some(o)) = (&verdict, &judged)
        && let Some(why) = o.insufficient.first()
    {
        for w in &o.insufficient[1..] {
            eprintln!("ccreplay: error: {}", w.reason);
        }
        verdict = Err(Failure {
            code: 2,
            message: why.message(),
            hint: Some(why.hint()),
        });
    }
    if let Err(f) = verdict {
        if let Some(j) = &a.junit {
            let name = format!("{} / {}", trace.name(), spec.name);
            let mut suite = Suite::not_compared(&name, "replay", &f.message, false);
            suite.properties = junit_properties(&trace.name(), &spec.name, &account);
            write_atomic(j, junit::render(&[suite]).as_bytes())?;
        }
        // Never a verdict on nothing: the error in place of CONFORMANT.
        match a.format {
            ReportFormat::Text => outln!("ERROR: {}\n{}", f.message, account.line()),
            ReportFormat::Json => outln!(
                "{}",
                serde_json::json!({"ok": false, "error": f.message, "hint": f.hint, "accounting": account.json()})
            ),
        }
        return Err(f);
    }
    let report = match &mut judged {
        Some(o) => std::mem::take(&mut o.report),
        None => {
            let mut report = match streamed {
                Some(r) => r,
                None => diff::diff(&reference, &other, &opts),
            };
            if !report.ok() {
                let evs = replay::divergence_events(&trace, &report, 3);
                diff::attach_events(&mut report, 3, evs);
            }
            report
        }
    };
    let text = format!(
        "{}{}{}: {}\n{}",
        judged
            .as_ref()
            .map(|o| ccreplay::observe::render_header(&o.allowances, &o.tap, &o.facts))
            .unwrap_or_default(),
        diff::render_text(&report, "reference", other_name),
        trace.capture.display(),
        account.line(),
        dut_account
            .as_ref()
            .map(|(line, _)| format!("{line}\n"))
            .unwrap_or_default()
    );
    match a.format {
        ReportFormat::Text => out!("{text}"),
        ReportFormat::Json => {
            let mut j = diff::render_json(&report);
            if let Some(o) = j.as_object_mut() {
                o.insert("accounting".to_string(), account.json());
                if let Some((_, j)) = &dut_account {
                    o.insert("dut_accounting".to_string(), j.clone());
                }
                if let Some(ob) = &judged {
                    o.insert("observed".to_string(), ccreplay::observe::render_json(ob));
                }
            }
            outln!("{j}")
        }
    }
    if let Some(j) = &a.junit {
        let name = format!("{} / {}", trace.name(), spec.name);
        let mut suite = Suite::compared(&name, &report, &text, started.elapsed().as_secs_f64());
        suite.properties = junit_properties(&trace.name(), &spec.name, &account);
        write_atomic(j, junit::render(&[suite]).as_bytes())?;
    }
    let ctx = ccreplay::report::DiffContext {
        trace: &trace,
        model: &spec.name,
        other_name,
        other: a.dut.clone().unwrap_or_else(|| {
            a.golden
                .as_ref()
                .map_or_else(String::new, |g| g.display().to_string())
        }),
        options: &opts,
        flows: Some(&stats.flows),
        extract: Some(&stats.extract),
    };
    for p in ccreplay::report::write_diff_report(&a.html, &ctx, &report, &reference, &other)
        .map_err(|e| Failure::input(e, None))?
    {
        note!("ccreplay: wrote {}", p.display());
    }
    if !report.ok()
        && std::fs::read_to_string(&trace.manifest_path)
            .is_ok_and(|m| guessed_params(&m, &spec.name))
    {
        note!(
            "hint: {}: the `{}` parameters are still init's guesses (the model's defaults, under \
             `# GUESS`): a device configured otherwise differs from its first decisions on; \
             set its values (docs/manifest.md)",
            trace.manifest_path.display(),
            spec.name
        );
    }
    if !report.ok()
        && let Ok(m) = std::fs::read_to_string(&trace.manifest_path)
        && let keys = guessed_network(&m)
        && !keys.is_empty()
    {
        note!(
            "hint: {}: {} {} still init's {} (under `# GUESS`: the capture could not tell): \
             the reference runs on {}, so set {} to your network's (docs/manifest.md)",
            trace.manifest_path.display(),
            keys.join(", "),
            if keys.len() == 1 { "is" } else { "are" },
            if keys.len() == 1 { "guess" } else { "guesses" },
            if keys.len() == 1 { "it" } else { "them" },
            if keys.len() == 1 { "it" } else { "them" },
        );
    }
    if bad_lines {
        return Ok(2);
    }
    Ok(if report.ok() { 0 } else { 1 })
}

/// The `[network]` keys whose value `init` wrote under a `# GUESS` comment (the line before),
/// in the manifest's order.
fn guessed_network(manifest: &str) -> Vec<&'static str> {
    const KEYS: [&str; 3] = ["link_rate_bps", "base_rtt_ns", "mtu_bytes"];
    let mut out = Vec::new();
    let mut guess = false;
    for line in manifest.lines().map(str::trim) {
        let key = line.split('=').next().map(str::trim);
        if let Some(k) = KEYS.iter().find(|k| key == Some(**k))
            && guess
        {
            out.push(*k);
        }
        guess = line.starts_with("# GUESS:");
    }
    out
}

/// Whether `manifest`'s `[[models]]` entry for `model` still carries the parameters `init`
/// wrote at the model's defaults (its [`ccreplay::init::GUESSED_PARAMS`] comment).
fn guessed_params(manifest: &str, model: &str) -> bool {
    let Some(at) = manifest.find(&format!("name = \"{model}\"")) else {
        return false;
    };
    let rest = &manifest[at..];
    let entry = rest.find("\n[[").map_or(rest, |end| &rest[..end]);
    entry.contains(ccreplay::init::GUESSED_PARAMS)
}
