//! The command line, one file per command (harness.md 6). `main.rs` parses and dispatches;
//! each `cli/<command>.rs` holds that command's arguments and what it does with them, using the
//! library (`ccreplay::*`) for the work. This file holds what several commands share: the
//! failure type and its exit status, trace and model lookup, DUT construction, decision output,
//! progress and the extraction report on stderr.
//!
//! Exit status: 0 conformant / done, 1 differences found (or `--strict` malformed packets),
//! 2 bad input or usage, 3 the DUT failed.

/// Print a line to standard output; a closed pipe (`ccreplay check | head -1`) ends the
/// command quietly with status 0, as `inspect` does (`println!` would panic).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*).map_err($crate::cli::Failure::from_stdout)?
    }};
}

/// [`outln!`] without the newline.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($t)*).map_err($crate::cli::Failure::from_stdout)?
    }};
}

/// An informational line on standard error (`wrote FILE`, the accounting): left out with
/// `-q/--quiet`; warnings and errors are always printed.
macro_rules! note {
    ($($t:tt)*) => {{
        if !$crate::cli::quiet() {
            eprintln!($($t)*);
        }
    }};
}

pub mod bless;
pub mod check;
pub mod completions;
pub mod diff;
pub mod import;
pub mod init;
pub mod inspect;
pub mod lumina;
pub mod replay;
pub mod report;
pub mod sim;
pub mod switch;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;

use ccreplay::dut::cabi::CAbiDut;
use ccreplay::dut::process::ProcessDut;
use ccreplay::dut::{Dut, DutFlow, DutSetup, ModelDut};
use ccreplay::models;
use ccreplay::protocol;
use ccreplay::replay::{ReplayError, Trace};
use ccreplay::verdict::{self, Finding};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Text,
    Json,
}

/// A failure with its exit status and a one-line hint.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-q/--quiet`: no progress and no informational lines on standard error.
pub(crate) fn set_quiet(q: bool) {
    QUIET.store(q, std::sync::atomic::Ordering::Relaxed);
}

/// True with `-q/--quiet`.
pub(crate) fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// True when writing failed because the reader went away (`| head`).
pub(crate) fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

impl Failure {
    /// The reader of standard output went away: end quietly with status 0.
    pub(crate) fn closed_pipe() -> Self {
        Failure {
            code: 0,
            message: String::new(),
            hint: None,
        }
    }

    /// True for [`Failure::closed_pipe`].
    pub(crate) fn is_closed_pipe(&self) -> bool {
        self.code == 0 && self.message.is_empty()
    }

    /// Writing to standard output failed.
    pub(crate) fn from_stdout(e: io::Error) -> Self {
        if is_closed_pipe(&e) {
            Failure::closed_pipe()
        } else {
            Failure::input(format!("writing to standard output: {e}"), None)
        }
    }

    fn input(message: impl ToString, hint: impl Into<Option<String>>) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
            hint: hint.into(),
        }
    }
}

impl From<ReplayError> for Failure {
    fn from(e: ReplayError) -> Self {
        match &e {
            ReplayError::Dut(_) => Failure {
                code: 3,
                message: e.to_string(),
                hint: None,
            },
            ReplayError::Model(_) => Failure::input(
                e,
                "the model names above, their parameters in docs/models/".to_string(),
            ),
            ReplayError::Extract(_) => Failure::input(
                e,
                "the capture must be a pcap or pcapng file beside its manifest".to_string(),
            ),
            ReplayError::Io(io) if is_closed_pipe(io) => Failure::closed_pipe(),
            ReplayError::Io(_) => Failure::input(e, None),
        }
    }
}

pub(crate) fn load_trace(path: &Path) -> Result<Trace, Failure> {
    Trace::load(path).map_err(|e| {
        // The hint fits the failure: a missing manifest can be written by `init`; a bad one
        // is named with its key and line by the message itself.
        let hint = match &e {
            ccreplay::manifest::ManifestError::Io { source, .. }
                if source.kind() == io::ErrorKind::NotFound =>
            {
                let capture = if path.extension().is_some_and(|x| x == "toml") {
                    path.with_extension("pcap")
                } else {
                    path.to_path_buf()
                };
                Some(format!(
                    "a trace is a capture plus a manifest with the same stem: `ccreplay init {}` writes one from what the capture shows (docs/manifest.md)",
                    capture.display()
                ))
            }
            ccreplay::manifest::ManifestError::Io { .. } => None,
            ccreplay::manifest::ManifestError::Invalid { .. } => {
                Some("docs/manifest.md lists every key, which are required and their defaults".to_string())
            }
        };
        Failure::input(e, hint)
    })
}

/// A model that cannot be built names the manifest that asked for it.
pub(crate) fn in_manifest(trace: &Trace) -> impl Fn(ReplayError) -> Failure + '_ {
    move |e| match e {
        ReplayError::Model(m) => model_failure(trace, m),
        e => e.into(),
    }
}

pub(crate) fn model_failure(trace: &Trace, e: impl std::fmt::Display) -> Failure {
    Failure::input(
        format!("{}: {e}", trace.manifest_path.display()),
        "fix its [[models]] entry: the model names above, their parameters in docs/models/"
            .to_string(),
    )
}

pub(crate) fn pick_model<'a>(
    trace: &'a Trace,
    name: Option<&str>,
) -> Result<&'a ccreplay::manifest::ModelSpec, Failure> {
    let models = &trace.manifest.models;
    match name {
        None => models
            .first()
            .ok_or_else(|| Failure::input("the manifest names no model", None)),
        Some(n) => trace.model(n).ok_or_else(|| {
            Failure::input(
                format!(
                    "{}: the manifest has no model `{n}`",
                    trace.manifest_path.display()
                ),
                format!(
                    "it has: {}",
                    models
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        }),
    }
}

/// Build a DUT from `--dut`: `model:NAME` (in process), `process:COMMAND ARGS...` (JSON Lines
/// over stdin/stdout), `cabi:LIBRARY` (a shared library with the C ABI), `wire` (the receiver
/// NIC of the capture, docs/dut.md; `allow`: `--allow KEY=VALUE` pairs, which it reads).
pub(crate) fn make_dut(
    spec: &str,
    trace: &Trace,
    model: &ccreplay::manifest::ModelSpec,
    timeout_ms: u64,
    allow: &[String],
) -> Result<Box<dyn Dut>, Failure> {
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let setup = || -> Result<DutSetup, Failure> {
        let (table, _) =
            ccreplay::events_in::flow_table(trace).map_err(|e| Failure::input(e, None))?;
        let flows = table
            .flows
            .iter()
            .map(|f| DutFlow {
                id: f.id,
                local_ip: f.local_ip,
                local_qp: f.local_qp.unwrap_or(0),
                remote_ip: f.remote_ip,
                remote_qp: f.remote_qp.unwrap_or(0),
            })
            .collect();
        let params = serde_json::to_value(trace.manifest.model_params(model))
            .map_err(|e| Failure::input(e, None))?;
        Ok(DutSetup {
            model: model.name.clone(),
            params,
            flows,
            capture_point: trace.manifest.capture_point.kind().to_string(),
        })
    };
    let dut_failed = |e: ccreplay::dut::DutError| Failure {
        code: 3,
        message: e.to_string(),
        hint: None,
    };
    match kind {
        "model" => {
            // The DUT model's own parameters: the manifest's entry for that name (the
            // reference's when it is the same model), else its defaults on the trace's network.
            let params = if rest == model.name {
                model.params.clone()
            } else {
                trace
                    .manifest
                    .models
                    .iter()
                    .find(|m| m.name == rest)
                    .map(|m| m.params.clone())
                    .unwrap_or_default()
            };
            let m = models::build(
                rest,
                &trace.manifest.model_params(&ccreplay::manifest::ModelSpec {
                    name: rest.to_string(),
                    params,
                }),
            )
            .map_err(|e| Failure::input(e, None))?;
            Ok(Box::new(ModelDut::new(m)))
        }
        "wire" => Ok(Box::new(
            ccreplay::dut::wire::WireDut::load_with(trace, &setup()?, allow).map_err(|e| {
                Failure {
                    code: 2,
                    message: e.to_string(),
                    hint: None,
                }
            })?,
        )),
        "process" if !rest.trim().is_empty() => Ok(Box::new(
            ProcessDut::spawn_command_line(rest, &setup()?, Duration::from_millis(timeout_ms))
                .map_err(dut_failed)?,
        )),
        "cabi" if !rest.is_empty() => Ok(Box::new(
            CAbiDut::load(Path::new(rest), &setup()?).map_err(dut_failed)?,
        )),
        // `diff` and `check` judge it; it makes no decisions of its own to write out.
        "observed" if rest.is_empty() => Err(Failure::input(
            "`--dut observed` judges the capture's sender against the reference: it has no \
             decisions of its own to replay",
            format!(
                "ccreplay diff {} --dut observed (docs/observed.md)",
                trace.manifest_path.display()
            ),
        )),
        _ => Err(Failure::input(
            format!("cannot use `--dut {spec}`"),
            "use model:NAME, process:COMMAND ARGS..., cabi:LIBRARY or wire (docs/dut.md)"
                .to_string(),
        )),
    }
}

/// Write decisions to a file atomically (temporary file, then rename) or to stdout.
pub(crate) struct DecisionOut {
    pub(crate) target: Option<PathBuf>,
    pub(crate) tmp: Option<PathBuf>,
    pub(crate) w: Box<dyn Write + Send>,
    pub(crate) buf: Vec<u8>,
    pub(crate) scratch: Vec<u8>,
}

impl DecisionOut {
    fn new(target: Option<PathBuf>) -> Result<Self, Failure> {
        match target {
            None => Ok(DecisionOut {
                target: None,
                tmp: None,
                // Not locked: the decisions may be written from another thread (`--jobs`),
                // 64 KiB at a time.
                w: Box::new(io::stdout()),
                buf: Vec::with_capacity(1 << 16),
                scratch: Vec::new(),
            }),
            Some(t) => {
                // Atomic unless `t` is a device such as /dev/null (ccreplay::outfile).
                let (f, tmp) = ccreplay::outfile::create(&t)
                    .map_err(|e| Failure::input(format!("{}: {e}", t.display()), None))?;
                Ok(DecisionOut {
                    target: Some(t),
                    tmp,
                    w: Box::new(f),
                    buf: Vec::with_capacity(1 << 16),
                    scratch: Vec::new(),
                })
            }
        }
    }

    fn push(&mut self, d: &ccreplay_reference_cc::Decision) -> io::Result<()> {
        protocol::write_decision(&mut self.buf, d, &mut self.scratch);
        if self.buf.len() >= (1 << 16) - 512 {
            self.w.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn commit(mut self) -> io::Result<()> {
        self.w.write_all(&self.buf)?;
        self.w.flush()?;
        if let Some(t) = &self.target {
            ccreplay::outfile::commit(self.tmp.take(), t)?;
        }
        Ok(())
    }
}

impl Drop for DecisionOut {
    fn drop(&mut self) {
        // A failed run leaves no half-written file.
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A progress count that reaches the bar in steps: indicatif reads the clock on every `inc`,
/// which per decision costs more than formatting it.
pub(crate) struct Progress {
    pub(crate) bar: indicatif::ProgressBar,
    pub(crate) pending: u64,
}

impl Progress {
    fn new(label: &str) -> Self {
        Progress {
            bar: progress(label),
            pending: 0,
        }
    }

    fn inc(&mut self) {
        self.pending += 1;
        if self.pending == 4096 {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

pub(crate) fn progress(label: &str) -> indicatif::ProgressBar {
    if io::stderr().is_terminal() && !quiet() {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} {pos} decisions ({per_sec})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        pb.set_message(label.to_string());
        pb
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// What extraction skipped or adjusted, on stderr: each line names the capture, says what
/// happened and what to do about it (issue 6.3).
pub(crate) fn report_extraction(trace: &Trace, r: &ccreplay::extract::ExtractReport) {
    if ccreplay::events_in::is_events(trace) {
        return; // an events file reports its bad lines itself
    }
    let cap = trace.capture.display();
    for (ip, qp, n) in &r.unpaired_acks {
        eprintln!(
            "ccreplay: {cap}: {n} ACK/NAK/CNP packet{} from {ip} to QP 0x{qp:06x} match no data flow\n  hint: add a [[flows]] pairing for it to {} (docs/manifest.md)",
            plural(*n),
            trace.manifest_path.display()
        );
    }
    for (ip, qp, n, candidates) in &r.ambiguous_acks {
        let flows = candidates
            .iter()
            .map(|q| format!("QP 0x{q:06x}"))
            .collect::<Vec<_>>()
            .join(" or ");
        eprintln!(
            "ccreplay: {cap}: {n} ACK/NAK/CNP packet{} from {ip} to QP 0x{qp:06x} not paired: they could answer the data to {ip} {flows} (the flows' PSN ranges overlap)\n  hint: add a [[flows]] pairing for it to {} (docs/manifest.md)",
            plural(*n),
            trace.manifest_path.display()
        );
    }
    if !r.mirror_sources.is_empty() {
        let list = r
            .mirror_sources
            .iter()
            .map(|(s, c)| {
                let from = s.map_or("the port itself".to_string(), |s| s.to_string());
                format!("{from} ({} event{})", ccreplay::verdict::n(*c), plural(*c))
            })
            .collect::<Vec<_>>()
            .join(", ");
        note!("ccreplay: {cap}: mirrored by {list}");
    }
    if let Some(c) = r.switch_clock.as_ref().filter(|c| c.timed > 0) {
        let (lo, hi) = c.capture_minus_switch_ns;
        note!(
            "ccreplay: {cap}: {} event{} timed by the mirroring switch{} ({}, {} ns units); the capture's times were {} to {} ns from them",
            ccreplay::verdict::n(c.timed),
            plural(c.timed),
            if c.clocks == 1 {
                "'s clock".to_string()
            } else {
                format!("es' {} clocks", c.clocks)
            },
            if r.lumina.is_some() {
                "Lumina"
            } else {
                "ERSPAN III"
            },
            ccreplay::verdict::n(c.unit_ns),
            ccreplay::verdict::n_signed(lo),
            ccreplay::verdict::n_signed(hi),
        );
    }
    if let Some(l) = &r.lumina {
        let [none, drop, ecn, bit_error] = l.events;
        note!(
            "ccreplay: {cap}: {} Lumina cop{} (events injected by the switch: {} none, {} drop, {} ECN, {} bit error)",
            ccreplay::verdict::n(l.copies),
            if l.copies == 1 { "y" } else { "ies" },
            ccreplay::verdict::n(none),
            ccreplay::verdict::n(drop),
            ccreplay::verdict::n(ecn),
            ccreplay::verdict::n(bit_error),
        );
    }
    if r.snaplen_cut > 0 {
        eprintln!(
            "ccreplay: {cap}: {} packet{} cut after their headers (by the capture's snaplen, or by the switch that mirrored them) were replayed (payload length from the length fields)",
            r.snaplen_cut,
            plural(r.snaplen_cut)
        );
    }
    if r.time_clamped > 0 {
        eprintln!(
            "ccreplay: {cap}: {} event{} had timestamps going backwards (by up to {} ns); fed at the previous time\n  hint: {}",
            r.time_clamped,
            plural(r.time_clamped),
            ccreplay::verdict::n(r.time_back_max_ns),
            if r.time_back_max_ns <= 10_000 {
                // A host's capture stamps the frames it sends as the kernel hands them to the
                // NIC and those it receives as it polls them: a reply can read a µs early.
                "steps of a few µs are a host's own capture (tcpdump, dumpcap), which stamps the frames it sends and those it receives at different points; a merged or multi-interface capture out of order: sort it (e.g. `reordercap`)"
            } else {
                "a merged or multi-interface capture out of order: sort it (e.g. `reordercap`)"
            }
        );
    }
    // A capture that ends early is an error of the verdict (verdict::assess), said there.
}

/// The accounting of a replay (every record: used, or skipped and why) and what
/// [`verdict::assess`] found, on stderr; a finding that is an error comes back as the run's
/// failure (exit status 2: nothing compared is never a pass). `caller_prints_accounting`
/// leaves the accounting line to the caller (`diff` prints it with its verdict).
pub(crate) fn judge_input(
    trace: &Trace,
    model: &str,
    stats: &ccreplay::replay::ReplayStats,
    strict: bool,
    caller_prints_accounting: bool,
) -> Result<Vec<Finding>, Failure> {
    let findings = verdict::assess(trace, model, stats, verdict::Strictness { strict });
    if !caller_prints_accounting {
        note!(
            "ccreplay: {}: {}",
            trace.capture.display(),
            accounting(&stats.extract).line()
        );
    }
    print_findings(&findings);
    match findings.iter().find(|f| f.is_error()) {
        Some(f) => Err(Failure {
            code: 2,
            message: f.message.clone(),
            hint: f.hint.clone(),
        }),
        None => Ok(findings),
    }
}

/// Warnings and all errors but the first (which the caller returns as its failure).
pub(crate) fn print_findings(findings: &[Finding]) {
    let first_error = findings.iter().position(|f| f.is_error());
    for (i, f) in findings.iter().enumerate() {
        if Some(i) == first_error {
            continue;
        }
        let tag = if f.is_error() { "error" } else { "warning" };
        eprintln!("ccreplay: {tag}: {}", f.message);
        if let Some(h) = &f.hint {
            eprintln!("  hint: {h}");
        }
    }
}

/// The accounting of an extraction report.
pub(crate) fn accounting(r: &ccreplay::extract::ExtractReport) -> verdict::Accounting<'_> {
    verdict::Accounting { report: r }
}

/// The properties of a JUnit suite: trace, model and the accounting.
pub(crate) fn junit_properties(
    trace: &str,
    model: &str,
    account: &verdict::Accounting<'_>,
) -> Vec<(String, String)> {
    let mut p = vec![
        ("trace".to_string(), trace.to_string()),
        ("model".to_string(), model.to_string()),
    ];
    p.extend(account.properties());
    p
}

/// "s" unless `n` is 1.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The trace of `replay` / `diff`: TRACE, and `--events FILE` replacing its capture.
pub(crate) fn load_trace_args(
    trace: Option<&Path>,
    events: Option<&Path>,
) -> Result<Trace, Failure> {
    match events {
        None => load_trace(trace.unwrap_or(Path::new("-"))),
        Some(_) => ccreplay::events_in::load(trace, events).map_err(|e| {
            Failure::input(
                e,
                "an events trace is a manifest with `events = \"FILE\"` (docs/manifest.md)"
                    .to_string(),
            )
        }),
    }
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    ccreplay::outfile::write_atomic(path, bytes)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display()), None))
}

pub(crate) fn indent(s: &str) -> String {
    s.lines().map(|l| format!("          {l}\n")).collect()
}
