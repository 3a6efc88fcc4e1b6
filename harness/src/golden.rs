//! Golden files (harness.md 3, 6): `golden/<trace>/<model>.jsonl`, the decisions a reference
//! model made on a bundled trace. `check` replays every trace and compares, outputs and state,
//! exactly; `bless` rewrites the files atomically (temporary file, then rename) and refuses
//! when any replay failed, so a half-finished bless never replaces a good golden file.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use ccreplay_reference_cc::Decision;

use crate::diff::{self, DiffOptions, DiffReport, Side, StateCompare, StreamDiff, Which};
use crate::protocol;
use crate::replay::{self, ReplayError, ReplayStats, Trace};

/// `golden/<trace>/<model>.jsonl`.
pub fn golden_path(golden_dir: &Path, trace: &Trace, model: &str) -> PathBuf {
    golden_dir.join(trace.name()).join(format!("{model}.jsonl"))
}

/// Every trace (manifest) in a folder, sorted by name.
pub fn find_traces(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

/// The manifests `check` runs on: each path is a folder (every manifest in it), a manifest,
/// or a capture (the manifest beside it). Returns them in order, without repeats, and the
/// folders among the paths.
pub fn resolve_traces(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let mut manifests: Vec<PathBuf> = Vec::new();
    let mut dirs = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found = find_traces(p).map_err(|e| format!("{}: {e}", p.display()))?;
            if found.is_empty() {
                return Err(format!("{}: no trace manifests (*.toml)", p.display()));
            }
            manifests.extend(found);
            dirs.push(p.clone());
        } else {
            let m = if p.extension().is_some_and(|e| e == "toml") {
                p.clone()
            } else {
                p.with_extension("toml")
            };
            if !m.is_file() {
                return Err(format!(
                    "{}: {}",
                    p.display(),
                    if p.exists() {
                        format!("no manifest {} beside it", m.display())
                    } else {
                        "no such trace folder, manifest or capture".to_string()
                    }
                ));
            }
            manifests.push(m);
        }
    }
    let mut seen = std::collections::HashSet::new();
    manifests.retain(|m| seen.insert(m.clone()));
    Ok((manifests, dirs))
}

/// The trace name of a manifest path (its stem), as golden files are named.
pub fn trace_name(manifest: &Path) -> String {
    manifest
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// Golden files (`<trace>/<model>.jsonl` under `golden_dir`) that none of `manifests` uses: a
/// trace or model that was renamed or removed left them behind. A manifest that cannot be
/// read references nothing.
pub fn unreferenced(golden_dir: &Path, manifests: &[PathBuf]) -> Vec<PathBuf> {
    let mut used = std::collections::HashSet::new();
    for m in manifests {
        let name = trace_name(m);
        match crate::manifest::Manifest::load(m) {
            Ok(man) => {
                for spec in &man.models {
                    used.insert(golden_dir.join(&name).join(format!("{}.jsonl", spec.name)));
                }
            }
            // Its golden files are not orphans: the manifest is what is broken (an ERROR).
            Err(_) => {
                if let Ok(rd) = fs::read_dir(golden_dir.join(&name)) {
                    used.extend(rd.flatten().map(|e| e.path()));
                }
            }
        }
    }
    let mut out = Vec::new();
    let Ok(traces) = fs::read_dir(golden_dir) else {
        return out;
    };
    for t in traces.flatten() {
        let Ok(files) = fs::read_dir(t.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "jsonl") && !used.contains(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A golden (decisions) file read one decision at a time through one reused line buffer
/// (memory: a line). Errors name the line, as [`read_golden`]'s.
pub struct GoldenReader {
    path: PathBuf,
    input: BufReader<fs::File>,
    buf: Vec<u8>,
    /// Lines read, blank ones included.
    line: usize,
    done: bool,
}

impl GoldenReader {
    /// Open a golden file.
    pub fn open(path: &Path) -> Result<Self, String> {
        let f = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(GoldenReader {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 16, f),
            buf: Vec::with_capacity(512),
            line: 0,
            done: false,
        })
    }

    /// The next decision; `None` at the end, and after an error.
    pub fn next_decision(&mut self) -> Option<Result<Decision, String>> {
        let r = self.read();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }

    fn read(&mut self) -> Option<Result<Decision, String>> {
        while !self.done {
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(format!("{}: {e}", self.path.display()))),
            }
            self.line += 1;
            // As `BufRead::lines` gives them: without "\n" or "\r\n", UTF-8.
            let mut b = &self.buf[..];
            if let Some(x) = b.strip_suffix(b"\n") {
                b = x.strip_suffix(b"\r").unwrap_or(x);
            }
            let Ok(line) = std::str::from_utf8(b) else {
                return Some(Err(format!(
                    "{}: stream did not contain valid UTF-8",
                    self.path.display()
                )));
            };
            if line.trim().is_empty() {
                continue;
            }
            let at = || format!("{}:{}", self.path.display(), self.line);
            let v: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => return Some(Err(format!("{}: not JSON: {e}", at()))),
            };
            return Some(protocol::parse_decision(&v).map_err(|e| format!("{}: {e}", at())));
        }
        None
    }
}

/// Read a golden file into per-flow decisions. Errors name the line.
pub fn read_golden(path: &Path) -> Result<Side, String> {
    let mut r = GoldenReader::open(path)?;
    let mut side = Side::default();
    while let Some(d) = r.next_decision() {
        side.push(&d?);
    }
    Ok(side)
}

/// Where a streaming comparison that ran out of room ([`StreamDiff::alignment_note`]) is
/// explained.
pub const ALIGNMENT_HINT: &str = "the golden file's decisions are in another order than the \
    replay's (bless writes them in the replay's); docs/performance.md, Memory";

/// Replay decisions held past which the golden file is read whatever its times (a file whose
/// clock differs from the replay's is then compared in step, decision by decision).
const CATCH_UP: usize = 1024;

/// A golden file fed into a [`StreamDiff`] as one side while a replay feeds the other: its
/// decisions are pushed in time order with the replay's (both are written in (time, flow)
/// order), so each flow's decisions meet their counterparts with little held.
pub struct GoldenFeed {
    reader: Option<GoldenReader>,
    next: Option<Decision>,
    error: Option<String>,
    side: Which,
}

impl GoldenFeed {
    /// Feed the golden file at `path` as side `side`. A file that cannot be opened is
    /// [`GoldenFeed::error`], as a bad line is.
    pub fn open(path: &Path, side: Which) -> Self {
        let (reader, error) = match GoldenReader::open(path) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        GoldenFeed {
            reader,
            next: None,
            error,
            side,
        }
    }

    /// The first error of the file (it stops feeding there).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn fill(&mut self) {
        if self.next.is_none()
            && let Some(r) = &mut self.reader
        {
            match r.next_decision() {
                Some(Ok(d)) => self.next = Some(d),
                Some(Err(e)) => {
                    self.error = Some(e);
                    self.reader = None;
                }
                None => self.reader = None,
            }
        }
    }

    /// Push the golden decisions due by the replay's decision `r`: those before it in (time,
    /// flow) order, and more while the replay's side holds over [`CATCH_UP`] and the golden's
    /// none. At the file's end (or its first error) the golden side is closed.
    pub fn feed_to(&mut self, sd: &mut StreamDiff<'_>, r: &Decision) {
        let replay = if self.side == Which::Dut {
            Which::Reference
        } else {
            Which::Dut
        };
        loop {
            self.fill();
            let Some(g) = self.next else {
                if self.reader.is_none() && !sd.is_closed(self.side) {
                    sd.close(self.side);
                }
                return;
            };
            let due = (g.t_ns, g.flow) <= (r.t_ns, r.flow)
                || (sd.held(replay) > CATCH_UP && sd.held(self.side) == 0);
            if !due {
                return;
            }
            sd.push(self.side, &g);
            self.next = None;
        }
    }

    /// Push the rest of the file.
    pub fn drain(&mut self, sd: &mut StreamDiff<'_>) {
        loop {
            self.fill();
            let Some(g) = self.next.take() else {
                return;
            };
            sd.push(self.side, &g);
        }
    }

    /// Read the rest of the file for its first error only (nothing is compared).
    pub fn check_rest(&mut self) -> Option<&str> {
        while self.error.is_none() && self.reader.is_some() {
            self.next = None;
            self.fill();
        }
        self.error()
    }
}

/// The result of checking one (trace, model).
#[derive(Debug)]
pub struct CheckResult {
    /// Trace name.
    pub trace: String,
    /// Model name.
    pub model: String,
    /// What happened.
    pub outcome: Outcome,
}

/// Outcome of one check.
#[derive(Debug)]
pub enum Outcome {
    /// Replayed and compared.
    Compared {
        /// The comparison (golden = reference side).
        report: Box<DiffReport>,
        /// The replay's counts.
        stats: Box<ReplayStats>,
        /// What the replay found about its input (warnings only: an error makes the pair
        /// `Failed`, never compared).
        findings: Vec<crate::verdict::Finding>,
    },
    /// No golden file yet: nothing compared (exit status 2, never a plain difference), and the
    /// replay shows `bless` would write one.
    MissingGolden {
        /// The golden file that is missing.
        path: PathBuf,
        /// The trace's manifest, as it was given (what `bless` is to be given).
        manifest: PathBuf,
    },
    /// The trace or the model could not be replayed.
    Failed(String),
}

impl CheckResult {
    /// True when it conforms.
    pub fn ok(&self) -> bool {
        matches!(&self.outcome, Outcome::Compared { report, .. } if report.ok())
    }
}

/// How golden files are compared: outputs and every state value, exactly.
pub fn golden_options() -> DiffOptions {
    DiffOptions {
        tolerances: Vec::new(),
        state: StateCompare::All,
    }
}

/// What a comparison was made from, for a caller that charts both sides (`ccreplay report`).
pub struct Sides<'a> {
    /// The trace replayed.
    pub trace: &'a Trace,
    /// Its golden file.
    pub golden_path: &'a Path,
    /// The golden file's decisions (the reference side).
    pub golden: &'a Side,
    /// The replay's decisions.
    pub actual: &'a Side,
}

/// Replay one trace's model and compare it with its golden file, streaming both (memory: the
/// flows, not the decisions).
pub fn check_one(trace: &Trace, model: &str, golden_dir: &Path, jobs: usize) -> CheckResult {
    check_one_visit(trace, model, golden_dir, jobs, None)
}

/// What sees each compared pair's result and both sides.
type Visit<'v> = dyn FnMut(&CheckResult, &Sides<'_>) + 'v;

/// [`check_one`]; with `visit`, both sides are held whole and handed to it with the result
/// when they were compared.
fn check_one_visit<'v>(
    trace: &Trace,
    model: &str,
    golden_dir: &Path,
    jobs: usize,
    visit: Option<&mut Visit<'v>>,
) -> CheckResult {
    let result = |outcome| CheckResult {
        trace: trace.name(),
        model: model.to_string(),
        outcome,
    };
    let path = golden_path(golden_dir, trace, model);
    if !path.exists() {
        return result(missing(trace, model, path, jobs));
    }
    // Streamed; `None` when a stream broke the event order: compared whole, below.
    if visit.is_none()
        && let Some(outcome) = check_streaming(trace, model, &path, jobs)
    {
        return result(outcome);
    }
    let golden = match read_golden(&path) {
        Ok(g) => g,
        Err(e) => return result(Outcome::Failed(e)),
    };
    let Some(spec) = trace.model(model) else {
        return result(no_model(trace, model));
    };
    let mut actual = Side::default();
    let stats = match replay::replay_reference(trace, spec, jobs, |d| {
        actual.push(d);
        Ok(())
    }) {
        Ok(s) => s,
        Err(e) => return result(Outcome::Failed(e.to_string())),
    };
    let findings = match findings_or_failure(trace, model, &stats) {
        Ok(f) => f,
        Err(outcome) => return result(outcome),
    };
    let mut report = diff::diff(&golden, &actual, &golden_options());
    if !report.ok() {
        let events = replay::divergence_events(trace, &report, 3);
        diff::attach_events(&mut report, 3, events);
    }
    let r = result(Outcome::Compared {
        report: Box::new(report),
        stats: Box::new(stats),
        findings,
    });
    if let Some(visit) = visit {
        let sides = Sides {
            trace,
            golden_path: &path,
            golden: &golden,
            actual: &actual,
        };
        visit(&r, &sides);
    }
    r
}

/// The outcome of a pair with no golden file: [`Outcome::MissingGolden`] when `bless` would
/// write one — the reference replays the trace and compares something — else the replay's own
/// error, which `bless` would refuse on too (a hint to bless that fails helps no one).
fn missing(trace: &Trace, model: &str, path: PathBuf, jobs: usize) -> Outcome {
    let Some(spec) = trace.model(model) else {
        return no_model(trace, model);
    };
    let stats = match replay::replay_reference(trace, spec, jobs, |_| Ok(())) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    match findings_or_failure(trace, model, &stats) {
        Ok(_) => Outcome::MissingGolden {
            path,
            manifest: trace.manifest_path.clone(),
        },
        Err(Outcome::Failed(e)) => Outcome::Failed(format!(
            "no golden file {}, and none can be made (bless refuses): {e}",
            path.display()
        )),
        Err(other) => other,
    }
}

/// The command that writes the golden files of the manifest at `manifest` into `golden_dir`,
/// run from where `manifest` and `golden_dir` were given: `ccreplay bless PATH`, with
/// `--golden DIR` unless that is the default `golden`.
pub fn bless_command(manifest: &Path, golden_dir: &Path) -> String {
    let mut c = format!(
        "ccreplay bless {}",
        shell_word(&manifest.display().to_string())
    );
    if golden_dir != Path::new("golden") {
        c.push_str(" --golden ");
        c.push_str(&shell_word(&golden_dir.display().to_string()));
    }
    c
}

/// `s` as one word of a POSIX shell command line: as it is when it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./+:@%,=".contains(c);
    if s.starts_with('-') {
        // Not an option.
        shell_word(&format!("./{s}"))
    } else if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn no_model(trace: &Trace, model: &str) -> Outcome {
    Outcome::Failed(format!(
        "{}: no model `{model}`",
        trace.manifest_path.display()
    ))
}

/// What the replay found about its input, or the failure when it is an error: nothing
/// compared is never a pass (issue 14.2).
fn findings_or_failure(
    trace: &Trace,
    model: &str,
    stats: &ReplayStats,
) -> Result<Vec<crate::verdict::Finding>, Outcome> {
    let findings =
        crate::verdict::assess(trace, model, stats, crate::verdict::Strictness::default());
    if let Some(f) = findings.iter().find(|f| f.is_error()) {
        let hint = f
            .hint
            .as_deref()
            .map_or(String::new(), |h| format!(" (hint: {h})"));
        return Err(Outcome::Failed(format!("{}{hint}", f.message)));
    }
    Ok(findings)
}

/// [`check_one`] with the golden file read as the replay goes ([`GoldenFeed`]), giving what
/// reading it whole first gives — a bad golden line is the outcome whatever the replay does —
/// or `None` when a stream broke the event order (the caller then compares them whole).
fn check_streaming(trace: &Trace, model: &str, path: &Path, jobs: usize) -> Option<Outcome> {
    let mut feed = GoldenFeed::open(path, Which::Reference);
    if let Some(e) = feed.error() {
        return Some(Outcome::Failed(e.to_string()));
    }
    let Some(spec) = trace.model(model) else {
        return Some(match feed.check_rest() {
            Some(e) => Outcome::Failed(e.to_string()),
            None => no_model(trace, model),
        });
    };
    let opts = golden_options();
    let mut sd = StreamDiff::new(&opts);
    let replayed = replay::replay_reference(trace, spec, jobs, |d| {
        sd.push(Which::Dut, d);
        feed.feed_to(&mut sd, d);
        match feed.error() {
            // The golden file's error is the outcome: the replay need not go on.
            Some(_) => Err(std::io::Error::other("bad golden file")),
            None => Ok(()),
        }
    });
    let stats = match replayed {
        Ok(s) => s,
        Err(e) => {
            return Some(Outcome::Failed(match feed.check_rest() {
                Some(g) => g.to_string(),
                None => e.to_string(),
            }));
        }
    };
    feed.drain(&mut sd);
    if let Some(e) = feed.error() {
        return Some(Outcome::Failed(e.to_string()));
    }
    let mut findings = match findings_or_failure(trace, model, &stats) {
        Ok(f) => f,
        Err(outcome) => return Some(outcome),
    };
    if !sd.in_order() {
        return None;
    }
    if let Some(message) = sd.alignment_note() {
        findings.push(crate::verdict::Finding {
            severity: crate::verdict::Severity::Warning,
            message,
            hint: Some(ALIGNMENT_HINT.to_string()),
        });
    }
    let mut report = sd.finish();
    if !report.ok() {
        let events = replay::divergence_events(trace, &report, 3);
        diff::attach_events(&mut report, 3, events);
    }
    Some(Outcome::Compared {
        report: Box::new(report),
        stats: Box::new(stats),
        findings,
    })
}

/// Check every trace of `traces_dir` (every model of its manifest) against `golden_dir`.
pub fn check_all(
    traces_dir: &Path,
    golden_dir: &Path,
    jobs: usize,
) -> Result<Vec<CheckResult>, String> {
    check_all_with(traces_dir, golden_dir, jobs, |_, _| {})
}

/// [`check_all`], calling `starting(trace, model)` before each replay (for progress display).
pub fn check_all_with(
    traces_dir: &Path,
    golden_dir: &Path,
    jobs: usize,
    starting: impl FnMut(&str, &str),
) -> Result<Vec<CheckResult>, String> {
    let manifests =
        find_traces(traces_dir).map_err(|e| format!("{}: {e}", traces_dir.display()))?;
    if manifests.is_empty() {
        return Err(format!(
            "{}: no trace manifests (*.toml)",
            traces_dir.display()
        ));
    }
    check_manifests(&manifests, golden_dir, jobs, starting)
}

/// [`check_all_with`], also handing each compared pair's result and both sides to `visit`,
/// in the order of the results; the sides are dropped after it, so memory holds one pair's
/// decisions at a time.
pub fn check_all_visit(
    traces_dir: &Path,
    golden_dir: &Path,
    jobs: usize,
    starting: impl FnMut(&str, &str),
    visit: impl FnMut(&CheckResult, &Sides<'_>),
) -> Result<Vec<CheckResult>, String> {
    let manifests =
        find_traces(traces_dir).map_err(|e| format!("{}: {e}", traces_dir.display()))?;
    if manifests.is_empty() {
        return Err(format!(
            "{}: no trace manifests (*.toml)",
            traces_dir.display()
        ));
    }
    check_manifests_visit(&manifests, golden_dir, jobs, starting, visit)
}

/// [`check_all_visit`] on these manifests, in this order.
pub fn check_manifests_visit(
    manifests: &[PathBuf],
    golden_dir: &Path,
    jobs: usize,
    starting: impl FnMut(&str, &str),
    mut visit: impl FnMut(&CheckResult, &Sides<'_>),
) -> Result<Vec<CheckResult>, String> {
    check_manifests_with(manifests, golden_dir, jobs, starting, Some(&mut visit))
}

/// `check` on these manifests, in this order, each pair streamed ([`check_one`]): memory holds
/// a flow's state, not the decisions.
pub fn check_manifests(
    manifests: &[PathBuf],
    golden_dir: &Path,
    jobs: usize,
    starting: impl FnMut(&str, &str),
) -> Result<Vec<CheckResult>, String> {
    check_manifests_with(manifests, golden_dir, jobs, starting, None)
}

fn check_manifests_with<'v>(
    manifests: &[PathBuf],
    golden_dir: &Path,
    jobs: usize,
    mut starting: impl FnMut(&str, &str),
    mut visit: Option<&mut Visit<'v>>,
) -> Result<Vec<CheckResult>, String> {
    let mut out = Vec::new();
    for m in manifests {
        match Trace::load(m) {
            Ok(trace) => {
                for spec in &trace.manifest.models {
                    starting(&trace.name(), &spec.name);
                    out.push(check_one_visit(
                        &trace,
                        &spec.name,
                        golden_dir,
                        jobs,
                        visit.as_deref_mut(),
                    ));
                }
            }
            Err(e) => out.push(CheckResult {
                trace: m
                    .file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
                model: "-".into(),
                outcome: Outcome::Failed(e.to_string()),
            }),
        }
    }
    Ok(out)
}

/// Why `bless` refused.
#[derive(Debug, thiserror::Error)]
pub enum BlessError {
    /// A replay failed: nothing was written.
    #[error("{trace} / {model}: {source}; no golden file was changed")]
    Replay {
        /// Trace.
        trace: String,
        /// Model.
        model: String,
        /// Why.
        source: Box<ReplayError>,
    },
    /// A manifest could not be read: nothing was written.
    #[error("{0}; no golden file was changed")]
    Manifest(String),
    /// Writing failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
}

/// Replay every trace of `traces_dir` (or only `only`) and rewrite its golden files
/// ([`bless_manifests`]).
pub fn bless(
    traces_dir: &Path,
    golden_dir: &Path,
    only: Option<&str>,
    jobs: usize,
) -> Result<Vec<(PathBuf, Blessed)>, BlessError> {
    let manifests = find_traces(traces_dir)
        .map_err(|e| BlessError::Manifest(format!("{}: {e}", traces_dir.display())))?;
    bless_manifests(&manifests, golden_dir, only, jobs)
}

/// Replay the traces of these manifests (or only the one named `only`) and rewrite their
/// golden files. All replays run first into temporary files beside their targets; only when
/// every one succeeded are they renamed into place. A refusal leaves nothing behind: no
/// temporary file, and no folder it created for them.
pub fn bless_manifests(
    manifests: &[PathBuf],
    golden_dir: &Path,
    only: Option<&str>,
    jobs: usize,
) -> Result<Vec<(PathBuf, Blessed)>, BlessError> {
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    // The folders made for the staged files, outermost first.
    let mut created: Vec<PathBuf> = Vec::new();
    let cleanup = |staged: &[(PathBuf, PathBuf)], created: &[PathBuf]| {
        for (tmp, _) in staged {
            let _ = fs::remove_file(tmp);
        }
        // Innermost first; a folder something else put a file in meanwhile stays.
        for d in created.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    };
    for m in manifests {
        // By the manifest's stem, before reading it: a broken manifest of another trace does
        // not keep this one from being blessed.
        if only.is_some_and(|o| o != trace_name(m)) {
            continue;
        }
        let trace = Trace::load(m).map_err(|e| {
            cleanup(&staged, &created);
            BlessError::Manifest(e.to_string())
        })?;
        for spec in &trace.manifest.models {
            let target = golden_path(golden_dir, &trace, &spec.name);
            let dir = target.parent().unwrap_or(golden_dir).to_path_buf();
            let io = |source, path: &Path| BlessError::Io {
                path: path.to_path_buf(),
                source,
            };
            let missing: Vec<PathBuf> = dir
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                .map(Path::to_path_buf)
                .collect();
            if let Err(e) = fs::create_dir_all(&dir) {
                created.extend(missing.into_iter().rev());
                cleanup(&staged, &created);
                return Err(io(e, &dir));
            }
            created.extend(missing.into_iter().rev());
            let tmp = dir.join(format!(".{}.jsonl.tmp-{}", spec.name, std::process::id()));
            let file = match fs::File::create(&tmp) {
                Ok(f) => f,
                Err(e) => {
                    cleanup(&staged, &created);
                    return Err(io(e, &tmp));
                }
            };
            staged.push((tmp.clone(), target));
            let mut w = std::io::BufWriter::new(file);
            let (mut buf, mut scratch) = (Vec::with_capacity(256), Vec::new());
            let res = replay::replay_reference(&trace, spec, jobs, |d| {
                buf.clear();
                protocol::write_decision(&mut buf, d, &mut scratch);
                w.write_all(&buf)
            });
            let flushed = w
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all());
            let stats = match res {
                Ok(stats) => stats,
                Err(source) => {
                    cleanup(&staged, &created);
                    return Err(BlessError::Replay {
                        trace: trace.name(),
                        model: spec.name.clone(),
                        source: Box::new(source),
                    });
                }
            };
            // A golden file of nothing would make every later check pass on nothing.
            let findings = crate::verdict::assess(
                &trace,
                &spec.name,
                &stats,
                crate::verdict::Strictness::default(),
            );
            if let Some(f) = findings.into_iter().find(|f| f.is_error()) {
                cleanup(&staged, &created);
                return Err(BlessError::Manifest(format!(
                    "{} / {}: {}{}",
                    trace.name(),
                    spec.name,
                    f.message,
                    f.hint.map_or_else(String::new, |h| format!(" (hint: {h})"))
                )));
            }
            if let Err(e) = flushed {
                cleanup(&staged, &created);
                return Err(io(e, &tmp));
            }
        }
    }
    let mut written = Vec::new();
    for (tmp, target) in &staged {
        // An unchanged file is not rewritten (its time stamp and inode stay).
        let old = fs::read(target).ok();
        let change = match &old {
            None => Blessed::New,
            Some(old) if fs::read(tmp).is_ok_and(|new| &new == old) => Blessed::Unchanged,
            Some(_) => Blessed::Changed,
        };
        if change == Blessed::Unchanged {
            let _ = fs::remove_file(tmp);
        } else {
            fs::rename(tmp, target).map_err(|source| BlessError::Io {
                path: target.clone(),
                source,
            })?;
        }
        written.push((target.clone(), change));
    }
    Ok(written)
}

/// What `bless` did to one golden file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blessed {
    /// There was none.
    New,
    /// Its decisions changed.
    Changed,
    /// The same bytes: left as it was.
    Unchanged,
}

impl Blessed {
    /// `new`, `changed`, `unchanged`.
    pub fn word(self) -> &'static str {
        match self {
            Blessed::New => "new",
            Blessed::Changed => "changed",
            Blessed::Unchanged => "unchanged",
        }
    }
}
