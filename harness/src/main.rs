//! `ccreplay`: the command line (harness.md 6).
//!
//! Exit status: 0 conformant / done, 1 differences found (or `--strict` malformed packets),
//! 2 bad input or usage, 3 the DUT failed.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Args, Parser, Subcommand, ValueEnum};

use ccreplay::diff::{self, DiffOptions, Side, StateCompare, Tolerance};
use ccreplay::dut::cabi::CAbiDut;
use ccreplay::dut::process::ProcessDut;
use ccreplay::dut::{Dut, DutFlow, DutSetup, ModelDut};
use ccreplay::golden::{self, Outcome};
use ccreplay::inspect::{self, Format, InspectOptions};
use ccreplay::models;
use ccreplay::protocol;
use ccreplay::replay::{self, ReplayError, Trace};
use ccreplay::sim;
use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect};

/// Trace-replay conformance harness for RoCEv2 congestion control.
#[derive(Parser)]
#[command(name = "ccreplay", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every bundled trace against its golden decisions (the main job).
    #[command(after_help = "Examples:
  ccreplay check                      # traces/ against golden/
  ccreplay check my-traces --golden my-golden --junit report.xml

Exit status: 0 every trace conforms; 1 a difference or a missing golden file;
2 a trace or manifest could not be read.")]
    Check(CheckArgs),
    /// Replay a trace through a reference model or a DUT; write decisions as JSON Lines.
    #[command(after_help = "Examples:
  ccreplay replay traces/hpcc_dumbbell.toml                    # the manifest's first model
  ccreplay replay traces/roce_dcqcn.pcap --model dcqcn-nic --out dcqcn.jsonl
  ccreplay replay traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py'

Exit status: 0 done; 2 bad trace, manifest or model; 3 the DUT failed.")]
    Replay(ReplayArgs),
    /// Compare a DUT (or a golden file) with the reference model on a trace.
    #[command(after_help = "Examples:
  ccreplay diff traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py'
  ccreplay diff traces/hpcc_dumbbell.toml --dut cabi:./libhpcc_dut.so --state all
  ccreplay diff traces/roce_dcqcn.toml --dut model:dcqcn-nic --tol rate_bps=rel:0.01
  ccreplay diff traces/hpcc_dumbbell.toml --golden golden/hpcc_dumbbell/hpcc.jsonl --junit out.xml

Exit status: 0 conformant; 1 differences found; 2 bad input; 3 the DUT failed.")]
    Diff(DiffArgs),
    /// Rewrite golden files from the reference models (atomically; refuses if a replay fails).
    #[command(after_help = "Examples:
  ccreplay bless                       # every trace in traces/
  ccreplay bless --trace hpcc_dumbbell # one trace

Review the change with `git diff golden/` before committing it.")]
    Bless(BlessArgs),
    /// Decode a capture packet by packet (Wireshark field names in JSON).
    #[command(after_help = "Examples:
  ccreplay inspect traces/hpcc_dumbbell.pcap --dialect hpcc
  ccreplay inspect capture.pcapng --format json | jq 'select(.\"infiniband.bth.opcode\" == 17)'
  ccreplay inspect capture.pcap --strict   # exit 1 if any packet is malformed

Exit status: 0 read to the end; 1 with --strict when a packet was malformed;
2 when the file cannot be read.")]
    Inspect(InspectArgs),
    /// Run a scenario through the network simulator: a pcap + manifest per tap, metrics.json.
    #[command(after_help = "Examples:
  ccreplay sim scenarios/hpcc_incast_16.toml --out out/hpcc_incast_16
  ccreplay sim scenarios/dcqcn_incast_pfc.toml --out /tmp/pfc --seed 7

The captures replay with `ccreplay replay/check`; docs/sim.md, docs/metrics.md.
Exit status: 0 written, 2 bad scenario or output folder.")]
    Sim(SimArgs),
    /// Regenerate the bundled traces from the bundled scenarios (scenarios/bundled; docs/sim.md).
    #[command(after_help = "Examples:
  ccreplay synth                       # every bundled scenario into traces/
  ccreplay synth hpcc_dumbbell --out /tmp/t

The files are byte-identical on every run; `git diff traces/` shows any change.")]
    Synth(SynthArgs),
    /// Write a self-contained HTML report with charts: of a diff, a check or a simulation.
    #[command(after_help = "Examples:
  ccreplay report check -o check.html
  ccreplay report diff traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py --bug wai-twice' -o diff.html
  ccreplay report sim out/hpcc_incast_16 -o sim.html

The page needs no network (no script, no external CSS or fonts); docs/report.md.
Exit status: as `diff` / `check` (0 conformant, 1 differences, 2 bad input, 3 DUT failed);
`report sim`: 0 written, 2 bad input.")]
    Report(ReportArgs),
    /// Import another tool's output as events files with manifests (docs/import.md).
    #[command(subcommand)]
    Import(ImportCommand),
}

#[derive(Subcommand)]
enum ImportCommand {
    /// The ns-3 simulator of the HPCC paper: its config.txt, topology, flows and mix.tr.
    #[command(after_help = "Examples:
  ccreplay import ns3 mix/config.txt --out imported/
  ccreplay replay imported/sender_0.toml

Exit status: 0 imported; 2 a file is missing or bad (named with its line or byte offset).")]
    Ns3(ImportNs3Args),
}

#[derive(Args)]
struct ImportNs3Args {
    /// The simulator's config file (it names the topology, flow, trace and mix.tr files).
    config: PathBuf,
    /// Output folder for the events files and manifests.
    #[arg(long)]
    out: PathBuf,
    /// Read this binary trace instead of the config's TRACE_OUTPUT_FILE.
    #[arg(long)]
    mix: Option<PathBuf>,
}

#[derive(Args)]
struct ReportArgs {
    #[command(subcommand)]
    what: ReportWhat,
}

#[derive(Subcommand)]
enum ReportWhat {
    /// Run `diff` and chart it: per flow, reference and DUT over time, first divergence marked.
    Diff {
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        #[command(flatten)]
        diff: DiffArgs,
    },
    /// Run `check` and chart every trace and model against its golden file.
    Check {
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        #[command(flatten)]
        check: CheckArgs,
    },
    /// Chart a simulation's `metrics.json` (docs/metrics.md): rates, windows, queues, PFC.
    Sim {
        /// The simulation's output folder (or its metrics.json).
        dir: PathBuf,
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        /// Also write each chart as a standalone SVG file into this folder.
        #[arg(long, value_name = "DIR")]
        svg_dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct SimArgs {
    /// The scenario file (TOML; docs/sim.md).
    scenario: PathBuf,
    /// Output folder (created if needed).
    #[arg(long)]
    out: PathBuf,
    /// Seed instead of the scenario's.
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Args)]
struct SynthArgs {
    /// Scenario names (default: every bundled scenario).
    scenarios: Vec<String>,
    /// Output folder.
    #[arg(long, default_value = "traces")]
    out: PathBuf,
}

#[derive(Args)]
struct CheckArgs {
    /// Folder of traces (capture + manifest pairs).
    #[arg(default_value = "traces")]
    dir: PathBuf,
    /// Folder of golden files (`<trace>/<model>.jsonl`).
    #[arg(long, default_value = "golden")]
    golden: PathBuf,
    /// Threads that read and decode each capture (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: ReportFormat,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    #[command(flatten)]
    html: ccreplay::report::HtmlArgs,
}

#[derive(Args)]
struct ReplayArgs {
    /// A trace: its manifest (`.toml`) or its capture (the manifest beside it is used).
    #[arg(required_unless_present = "events")]
    trace: Option<PathBuf>,
    /// Replay this events file (JSON Lines, docs/protocol.md) instead of the trace's capture;
    /// without TRACE, the manifest beside it (same stem, `.toml`) names the models.
    #[arg(long)]
    events: Option<PathBuf>,
    /// Also write the trace's events here as JSON Lines (what `--events` reads back).
    #[arg(long)]
    emit_events: Option<PathBuf>,
    /// Reference model (default: the manifest's first).
    #[arg(long)]
    model: Option<String>,
    /// Replay through a DUT instead: `model:NAME`, `process:COMMAND ARGS...`, `cabi:LIBRARY`.
    #[arg(long)]
    dut: Option<String>,
    /// Write decisions here (atomically) instead of standard output.
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Threads that read and decode the capture; the one running the models is among them
    /// (1: all on one thread; from 3, decisions are written on a thread of their own). The
    /// output is the same for every N.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Per-request timeout of a process DUT, ms.
    #[arg(long, default_value_t = 10_000)]
    dut_timeout_ms: u64,
}

#[derive(Args)]
struct DiffArgs {
    /// A trace: its manifest (`.toml`) or its capture.
    #[arg(required_unless_present = "events")]
    trace: Option<PathBuf>,
    /// Diff on this events file (JSON Lines, docs/protocol.md) instead of the trace's capture.
    #[arg(long)]
    events: Option<PathBuf>,
    /// Reference model (default: the manifest's first).
    #[arg(long)]
    model: Option<String>,
    /// The DUT: `model:NAME`, `process:COMMAND ARGS...`, `cabi:LIBRARY`.
    #[arg(long, conflicts_with = "golden", required_unless_present = "golden")]
    dut: Option<String>,
    /// Compare a golden / decisions file with the reference instead of a DUT.
    #[arg(long)]
    golden: Option<PathBuf>,
    /// Tolerance on a field: FIELD=abs:X or FIELD=rel:X (repeatable; state fields as state.NAME).
    #[arg(long = "tol", value_parser = parse_tolerance)]
    tolerances: Vec<Tolerance>,
    /// Compare state too: `all`, or a comma-separated list of names (W,Wc,U).
    #[arg(long)]
    state: Option<String>,
    /// Output format (default: text).
    #[arg(long, value_enum, default_value = "text")]
    format: ReportFormat,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Threads that read and decode the capture for the reference side (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Per-request timeout of a process DUT, ms.
    #[arg(long, default_value_t = 10_000)]
    dut_timeout_ms: u64,
    #[command(flatten)]
    html: ccreplay::report::HtmlArgs,
}

#[derive(Args)]
struct BlessArgs {
    /// Folder of traces.
    #[arg(default_value = "traces")]
    dir: PathBuf,
    /// Folder of golden files.
    #[arg(long, default_value = "golden")]
    golden: PathBuf,
    /// Only this trace (its manifest's stem).
    #[arg(long)]
    trace: Option<String>,
    /// Threads that read and decode each capture (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
}

#[derive(Args)]
struct InspectArgs {
    /// A pcap or pcapng capture.
    file: String,
    /// Which congestion-control shims the packets carry.
    #[arg(long, default_value = "roce", value_parser = parse_dialect)]
    dialect: Dialect,
    /// Output format (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Exit 1 when any packet is malformed.
    #[arg(long)]
    strict: bool,
    /// INT stacks are `grown` (2 + 8 × nHop bytes) instead of padded to --max-hops.
    #[arg(long)]
    int_grown: bool,
    /// Records in a padded INT stack; nHop above it is an error.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=15))]
    max_hops: u8,
    /// UDP destination port of RoCEv2.
    #[arg(long, default_value_t = 4791)]
    udp_port: u16,
    /// Link rate in Gbps used to report PFC pause times in ns.
    #[arg(long, default_value_t = 100)]
    pfc_link_gbps: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

fn parse_dialect(s: &str) -> Result<Dialect, String> {
    s.parse()
}

fn parse_tolerance(s: &str) -> Result<Tolerance, String> {
    s.parse()
}

/// A failure with its exit status and a one-line hint.
struct Failure {
    code: u8,
    message: String,
    hint: Option<String>,
}

impl Failure {
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
            ReplayError::Io(_) => Failure::input(e, None),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => run_check(a),
        Command::Replay(a) => run_replay(a),
        Command::Diff(a) => run_diff(a),
        Command::Bless(a) => run_bless(a),
        Command::Inspect(a) => run_inspect(a),
        Command::Sim(a) => run_sim(a),
        Command::Synth(a) => run_synth(a),
        Command::Report(a) => run_report(a),
        Command::Import(ImportCommand::Ns3(a)) => run_import_ns3(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("ccreplay: {}", f.message);
            if let Some(h) = f.hint {
                eprintln!("hint: {h}");
            }
            ExitCode::from(f.code)
        }
    }
}

fn load_trace(path: &Path) -> Result<Trace, Failure> {
    Trace::load(path).map_err(|e| {
        Failure::input(
            e,
            "a trace is a capture plus a manifest with the same stem; see docs/manifest.md"
                .to_string(),
        )
    })
}

/// A model that cannot be built names the manifest that asked for it.
fn in_manifest(trace: &Trace) -> impl Fn(ReplayError) -> Failure + '_ {
    move |e| match e {
        ReplayError::Model(m) => model_failure(trace, m),
        e => e.into(),
    }
}

fn model_failure(trace: &Trace, e: impl std::fmt::Display) -> Failure {
    Failure::input(
        format!("{}: {e}", trace.manifest_path.display()),
        "fix its [[models]] entry: the model names above, their parameters in docs/models/"
            .to_string(),
    )
}

fn pick_model<'a>(
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
/// over stdin/stdout), `cabi:LIBRARY` (a shared library with the C ABI).
fn make_dut(
    spec: &str,
    trace: &Trace,
    model: &ccreplay::manifest::ModelSpec,
    timeout_ms: u64,
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
            let m = models::build(
                rest,
                &trace.manifest.model_params(&ccreplay::manifest::ModelSpec {
                    name: rest.to_string(),
                    params: model.params.clone(),
                }),
            )
            .map_err(|e| Failure::input(e, None))?;
            Ok(Box::new(ModelDut::new(m)))
        }
        "process" if !rest.trim().is_empty() => Ok(Box::new(
            ProcessDut::spawn_command_line(rest, &setup()?, Duration::from_millis(timeout_ms))
                .map_err(dut_failed)?,
        )),
        "cabi" if !rest.is_empty() => Ok(Box::new(
            CAbiDut::load(Path::new(rest), &setup()?).map_err(dut_failed)?,
        )),
        _ => Err(Failure::input(
            format!("cannot use `--dut {spec}`"),
            "use model:NAME, process:COMMAND ARGS... or cabi:LIBRARY (docs/dut.md)".to_string(),
        )),
    }
}

/// Write decisions to a file atomically (temporary file, then rename) or to stdout.
struct DecisionOut {
    target: Option<PathBuf>,
    tmp: Option<PathBuf>,
    w: Box<dyn Write + Send>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
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
struct Progress {
    bar: indicatif::ProgressBar,
    pending: u64,
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

fn progress(label: &str) -> indicatif::ProgressBar {
    if io::stderr().is_terminal() {
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
fn report_extraction(trace: &Trace, r: &ccreplay::extract::ExtractReport) {
    if ccreplay::events_in::is_events(trace) {
        return; // an events file reports its bad lines itself
    }
    let cap = trace.capture.display();
    if r.malformed > 0 {
        eprintln!(
            "ccreplay: {cap}: {} malformed packet{} skipped (first: frame {})\n  hint: `ccreplay inspect {cap} --dialect {} --strict` shows each one with its layer and byte offset",
            r.malformed,
            plural(r.malformed),
            r.malformed_examples
                .first()
                .map_or(String::new(), |(n, m)| format!("{n}: {m}")),
            trace.manifest.dialect,
        );
    }
    for (ip, qp, n) in &r.unpaired_acks {
        eprintln!(
            "ccreplay: {cap}: {n} ACK/NAK/CNP packet{} from {ip} to QP 0x{qp:06x} match no data flow\n  hint: add a [[flows]] pairing for it to {} (docs/manifest.md)",
            plural(*n),
            trace.manifest_path.display()
        );
    }
    if r.snaplen_cut > 0 {
        eprintln!(
            "ccreplay: {cap}: {} packet{} cut by snaplen after their headers were replayed (payload length from the length fields)",
            r.snaplen_cut,
            plural(r.snaplen_cut)
        );
    }
    if r.time_clamped > 0 {
        eprintln!(
            "ccreplay: {cap}: {} event{} had timestamps going backwards; fed at the previous time\n  hint: a merged or multi-interface capture out of order: sort it (e.g. `reordercap`)",
            r.time_clamped,
            plural(r.time_clamped)
        );
    }
    if let Some(e) = &r.capture_error {
        eprintln!(
            "ccreplay: {cap}: the capture ends early: {e}\n  hint: the events before that point were replayed; was the file still being written or copied? Take it again once the capture has stopped"
        );
    }
}

/// "s" unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The trace of `replay` / `diff`: TRACE, and `--events FILE` replacing its capture.
fn load_trace_args(trace: Option<&Path>, events: Option<&Path>) -> Result<Trace, Failure> {
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

fn run_replay(a: ReplayArgs) -> Result<u8, Failure> {
    let trace = load_trace_args(a.trace.as_deref(), a.events.as_deref())?;
    if let Some(p) = &a.emit_events {
        let n =
            ccreplay::events_in::write_events(&trace, p).map_err(|e| Failure::input(e, None))?;
        eprintln!("ccreplay: {n} events -> {}", p.display());
    }
    let spec = pick_model(&trace, a.model.as_deref())?.clone();
    let mut out = DecisionOut::new(a.out.clone())?;
    let mut pb = Progress::new(&format!("replay {}", trace.name()));
    let stats = match &a.dut {
        None => replay::replay_reference(&trace, &spec, a.jobs, |d| {
            pb.inc();
            out.push(d)
        })
        .map_err(in_manifest(&trace))?,
        Some(s) => {
            let mut dut = make_dut(s, &trace, &spec, a.dut_timeout_ms)?;
            replay::replay_dut(&trace, dut.as_mut(), |d| {
                pb.inc();
                out.push(d)
            })?
        }
    };
    pb.finish();
    out.commit()
        .map_err(|e| Failure::input(format!("writing decisions: {e}"), None))?;
    let bad_lines = ccreplay::events_in::is_events(&trace)
        && ccreplay::events_in::report_bad_lines(&trace, &stats.extract);
    report_extraction(&trace, &stats.extract);
    if let Some(path) = &a.out {
        eprintln!(
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

fn state_compare(s: Option<&str>) -> StateCompare {
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

fn run_diff(a: DiffArgs) -> Result<u8, Failure> {
    let trace = load_trace_args(a.trace.as_deref(), a.events.as_deref())?;
    let mut extract_report = None;
    let mut flows = None;
    let spec = pick_model(&trace, a.model.as_deref())?.clone();
    let mut reference = Side::default();
    let mut pb = Progress::new(&format!("diff {}", trace.name()));
    let other_name = match (&a.dut, &a.golden) {
        (Some(s), _) => {
            // One extraction feeds both sides.
            let mut reference_dut = ModelDut::new(
                replay::build_model(&trace, &spec).map_err(|e| model_failure(&trace, e))?,
            );
            let mut dut = make_dut(s, &trace, &spec, a.dut_timeout_ms)?;
            let mut side = Side::default();
            let stats =
                replay::replay_pair(&trace, &mut reference_dut, dut.as_mut(), |is_ref, d| {
                    pb.inc();
                    if is_ref {
                        reference.push(d)
                    } else {
                        side.push(d)
                    }
                })?;
            extract_report = Some(stats.extract);
            flows = Some(stats.flows);
            Some((side, "dut"))
        }
        (None, Some(_)) => None,
        (None, None) => return Err(Failure::input("give --dut or --golden", None)),
    };
    let (other, other_name) = match (other_name, &a.golden) {
        (Some(x), _) => x,
        (None, Some(g)) => {
            let stats = replay::replay_reference(&trace, &spec, a.jobs, |d| {
                pb.inc();
                reference.push(d);
                Ok(())
            })
            .map_err(in_manifest(&trace))?;
            extract_report = Some(stats.extract);
            flows = Some(stats.flows);
            (
                golden::read_golden(g).map_err(|e| Failure::input(e, None))?,
                "golden",
            )
        }
        (None, None) => return Err(Failure::input("give --dut or --golden", None)),
    };
    pb.finish();
    let opts = DiffOptions {
        tolerances: a.tolerances.clone(),
        state: state_compare(a.state.as_deref()),
    };
    let mut report = diff::diff(&reference, &other, &opts);
    if !report.ok() {
        let evs = replay::divergence_events(&trace, &report, 3);
        diff::attach_events(&mut report, 3, evs);
    }
    let text = diff::render_text(&report, "reference", other_name);
    match a.format {
        ReportFormat::Text => print!("{text}"),
        ReportFormat::Json => println!("{}", diff::render_json(&report)),
    }
    if let Some(j) = &a.junit {
        let name = format!("{} / {}", trace.name(), spec.name);
        write_atomic(j, diff::render_junit(&[(name, &report, text)]).as_bytes())?;
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
        flows: flows.as_ref(),
    };
    for p in ccreplay::report::write_diff_report(&a.html, &ctx, &report, &reference, &other)
        .map_err(|e| Failure::input(e, None))?
    {
        eprintln!("ccreplay: wrote {}", p.display());
    }
    if let Some(r) = &extract_report {
        report_extraction(&trace, r);
    }
    if ccreplay::events_in::is_events(&trace)
        && extract_report.is_some_and(|r| ccreplay::events_in::report_bad_lines(&trace, &r))
    {
        return Ok(2);
    }
    Ok(if report.ok() { 0 } else { 1 })
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    ccreplay::outfile::write_atomic(path, bytes)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display()), None))
}

fn run_check(a: CheckArgs) -> Result<u8, Failure> {
    let pb = if io::stderr().is_terminal() {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    pb.enable_steady_tick(Duration::from_millis(120));
    let starting = |trace: &str, model: &str| pb.set_message(format!("checking {trace} / {model}"));
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
                    println!("{:>8}  {label}: {e}", "ERROR");
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "error": e}));
            }
            Outcome::Compared { report, stats } => {
                let verdict = if report.ok() { "ok" } else { "DIFFERS" };
                if a.format == ReportFormat::Text {
                    println!(
                        "{verdict:>8}  {label}: {} events, {} decisions, {} flows",
                        stats.events,
                        stats.decisions,
                        stats.flows.flows.len()
                    );
                    if !report.ok() {
                        print!("{}", indent(&diff::render_text(report, "golden", "replay")));
                    }
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": report.ok(), "events": stats.events, "decisions": stats.decisions, "report": diff::render_json(report)}));
                suites.push((label, report, diff::render_text(report, "golden", "replay")));
            }
            Outcome::MissingGolden(p) => {
                if a.format == ReportFormat::Text {
                    println!(
                        "{:>8}  {label}: no golden file {} (create it with `ccreplay bless --trace {}`)",
                        "MISSING",
                        p.display(),
                        r.trace
                    );
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "missing_golden": p}));
            }
            Outcome::Failed(e) => {
                failed_input = true;
                if a.format == ReportFormat::Text {
                    println!("{:>8}  {label}: {e}", "ERROR");
                }
                json.push(serde_json::json!({"trace": r.trace, "model": r.model, "ok": false, "error": e}));
            }
        }
    }
    let ok = results.iter().filter(|r| r.ok()).count();
    match a.format {
        ReportFormat::Text => println!("{ok} of {} trace/model pairs conform", results.len()),
        ReportFormat::Json => println!(
            "{}",
            serde_json::json!({"conform": ok, "total": results.len(), "results": json})
        ),
    }
    if let Some(j) = &a.junit {
        let refs: Vec<(String, &diff::DiffReport, String)> = suites
            .iter()
            .map(|(l, r, t)| (l.clone(), &***r, t.clone()))
            .collect();
        write_atomic(j, diff::render_junit(&refs).as_bytes())?;
    }
    for p in written {
        eprintln!("ccreplay: wrote {}", p.display());
    }
    Ok(if failed_input {
        2
    } else if ok == results.len() {
        0
    } else {
        1
    })
}

fn run_report(a: ReportArgs) -> Result<u8, Failure> {
    match a.what {
        ReportWhat::Diff { out, mut diff } => {
            diff.html.report = Some(out);
            run_diff(diff)
        }
        ReportWhat::Check { out, mut check } => {
            check.html.report = Some(out);
            run_check(check)
        }
        ReportWhat::Sim { dir, out, svg_dir } => {
            let html = ccreplay::report::HtmlArgs {
                report: Some(out),
                max_charts: ccreplay::report::DEFAULT_MAX_CHARTS,
                svg_dir,
            };
            let written = ccreplay::report::write_sim_report(&html, &dir).map_err(|e| {
                Failure::input(
                    e,
                    "`ccreplay sim SCENARIO --out DIR` writes DIR/metrics.json (docs/metrics.md)"
                        .to_string(),
                )
            })?;
            for p in written {
                eprintln!("ccreplay: wrote {}", p.display());
            }
            Ok(0)
        }
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("          {l}\n")).collect()
}

fn run_bless(a: BlessArgs) -> Result<u8, Failure> {
    let written = golden::bless(&a.dir, &a.golden, a.trace.as_deref(), a.jobs)
        .map_err(|e| Failure::input(e, None))?;
    for w in &written {
        println!("wrote {}", w.display());
    }
    if written.is_empty() {
        return Err(Failure::input("no trace matched: nothing written", None));
    }
    Ok(0)
}

fn run_inspect(a: InspectArgs) -> Result<u8, Failure> {
    let stdout = io::stdout();
    let format = a.format.unwrap_or(if stdout.is_terminal() {
        Format::Text
    } else {
        Format::Json
    });
    let opts = InspectOptions {
        decode: DecodeConfig {
            dialect: a.dialect,
            int: IntConfig {
                layout: if a.int_grown {
                    IntLayout::Grown
                } else {
                    IntLayout::Padded
                },
                max_hops: a.max_hops,
            },
            udp_port: a.udp_port,
        },
        format,
        pfc_link_bps: a.pfc_link_gbps.saturating_mul(1_000_000_000),
    };
    // `inspect::run` batches its output in 64 KiB blocks: no second buffer in between.
    let mut out = stdout.lock();
    match inspect::run(&a.file, &opts, &mut out) {
        Ok(summary) => {
            let _ = out.flush();
            if let Some(e) = &summary.capture_error {
                eprintln!(
                    "ccreplay: {}: capture ended early after {} records: {e}",
                    a.file, summary.packets
                );
            }
            if a.strict && summary.malformed > 0 {
                eprintln!(
                    "ccreplay: {} of {} packets malformed (--strict)",
                    summary.malformed, summary.packets
                );
                return Ok(1);
            }
            Ok(0)
        }
        Err(inspect::InspectError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(Failure::input(
            e,
            "inspect reads pcap and pcapng files (link types Ethernet, Linux SLL/SLL2, raw IP)"
                .to_string(),
        )),
    }
}

fn run_sim(a: SimArgs) -> Result<u8, Failure> {
    let hint = || "docs/sim.md describes scenario files".to_string();
    let written = sim::run_cli(&a.scenario, &a.out, a.seed, io::stderr().is_terminal())
        .map_err(|e| Failure::input(e, hint()))?;
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(0)
}

fn run_synth(a: SynthArgs) -> Result<u8, Failure> {
    let hint =
        || "bundled scenarios: roce_dcqcn, hpcc_dumbbell, fncc_dumbbell, rcc_dumbbell".to_string();
    let written = if a.scenarios.is_empty() {
        sim::generate_bundled(&a.out).map_err(|e| Failure::input(e, hint()))?
    } else {
        let mut w = Vec::new();
        for name in &a.scenarios {
            w.extend(sim::generate_one(name, &a.out).map_err(|e| Failure::input(e, hint()))?);
        }
        w
    };
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(0)
}

fn run_import_ns3(a: ImportNs3Args) -> Result<u8, Failure> {
    let opts = ccreplay::import::ns3::Options {
        config: a.config,
        out: a.out,
        mix: a.mix,
    };
    let s = ccreplay::import::ns3::import(&opts).map_err(|e| {
        Failure::input(
            e,
            "the config names its files as the simulator reads them; see docs/import.md"
                .to_string(),
        )
    })?;
    for w in &s.warnings {
        eprintln!("ccreplay: warning: {w}");
    }
    for p in &s.written {
        println!("wrote {}", p.display());
    }
    eprintln!(
        "ccreplay: {} records, {} events ({} records ignored)",
        s.records, s.events, s.ignored_records
    );
    Ok(0)
}
