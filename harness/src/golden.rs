//! Golden files (harness.md 3, 6): `golden/<trace>/<model>.jsonl`, the decisions a reference
//! model made on a bundled trace. `check` replays every trace and compares, outputs and state,
//! exactly; `bless` rewrites the files atomically (temporary file, then rename) and refuses
//! when any replay failed, so a half-finished bless never replaces a good golden file.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::diff::{self, DiffOptions, DiffReport, Side, StateCompare};
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

/// Read a golden file into per-flow decisions. Errors name the line.
pub fn read_golden(path: &Path) -> Result<Side, String> {
    let f = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut side = Side::default();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("{}:{}: not JSON: {e}", path.display(), i + 1))?;
        let d = protocol::parse_decision(&v)
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        side.push(&d);
    }
    Ok(side)
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
    /// No golden file yet.
    MissingGolden(PathBuf),
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

/// Replay one trace's model and compare it with its golden file.
pub fn check_one(trace: &Trace, model: &str, golden_dir: &Path, jobs: usize) -> CheckResult {
    check_one_visit(trace, model, golden_dir, jobs, &mut |_, _| {})
}

/// [`check_one`], handing the result and both sides to `visit` when they were compared.
fn check_one_visit(
    trace: &Trace,
    model: &str,
    golden_dir: &Path,
    jobs: usize,
    visit: &mut dyn FnMut(&CheckResult, &Sides<'_>),
) -> CheckResult {
    let result = |outcome| CheckResult {
        trace: trace.name(),
        model: model.to_string(),
        outcome,
    };
    let path = golden_path(golden_dir, trace, model);
    if !path.exists() {
        return result(Outcome::MissingGolden(path));
    }
    let golden = match read_golden(&path) {
        Ok(g) => g,
        Err(e) => return result(Outcome::Failed(e)),
    };
    let Some(spec) = trace.model(model) else {
        return result(Outcome::Failed(format!(
            "{}: no model `{model}`",
            trace.manifest_path.display()
        )));
    };
    let mut actual = Side::default();
    let stats = match replay::replay_reference(trace, spec, jobs, |d| {
        actual.push(d);
        Ok(())
    }) {
        Ok(s) => s,
        Err(e) => return result(Outcome::Failed(e.to_string())),
    };
    // Nothing compared is never a pass (issue 14.2).
    let findings =
        crate::verdict::assess(trace, model, &stats, crate::verdict::Strictness::default());
    if let Some(f) = findings.iter().find(|f| f.is_error()) {
        let hint = f
            .hint
            .as_deref()
            .map_or(String::new(), |h| format!(" (hint: {h})"));
        return result(Outcome::Failed(format!("{}{hint}", f.message)));
    }
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
    let sides = Sides {
        trace,
        golden_path: &path,
        golden: &golden,
        actual: &actual,
    };
    visit(&r, &sides);
    r
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
    check_all_visit(traces_dir, golden_dir, jobs, starting, |_, _| {})
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
    mut starting: impl FnMut(&str, &str),
    mut visit: impl FnMut(&CheckResult, &Sides<'_>),
) -> Result<Vec<CheckResult>, String> {
    let mut out = Vec::new();
    for m in manifests {
        match Trace::load(m) {
            Ok(trace) => {
                for spec in &trace.manifest.models {
                    starting(&trace.name(), &spec.name);
                    out.push(check_one_visit(
                        &trace, &spec.name, golden_dir, jobs, &mut visit,
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

/// Replay every trace of `traces_dir` (or only `only`) and rewrite its golden files. All
/// replays run first into temporary files beside their targets; only when every one succeeded
/// are they renamed into place.
pub fn bless(
    traces_dir: &Path,
    golden_dir: &Path,
    only: Option<&str>,
    jobs: usize,
) -> Result<Vec<(PathBuf, Blessed)>, BlessError> {
    let manifests = find_traces(traces_dir)
        .map_err(|e| BlessError::Manifest(format!("{}: {e}", traces_dir.display())))?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let cleanup = |staged: &[(PathBuf, PathBuf)]| {
        for (tmp, _) in staged {
            let _ = fs::remove_file(tmp);
        }
    };
    for m in manifests {
        let trace = Trace::load(&m).map_err(|e| {
            cleanup(&staged);
            BlessError::Manifest(e.to_string())
        })?;
        if only.is_some_and(|o| o != trace.name()) {
            continue;
        }
        for spec in &trace.manifest.models {
            let target = golden_path(golden_dir, &trace, &spec.name);
            let dir = target.parent().unwrap_or(golden_dir).to_path_buf();
            let io = |source, path: &Path| BlessError::Io {
                path: path.to_path_buf(),
                source,
            };
            if let Err(e) = fs::create_dir_all(&dir) {
                cleanup(&staged);
                return Err(io(e, &dir));
            }
            let tmp = dir.join(format!(".{}.jsonl.tmp-{}", spec.name, std::process::id()));
            let file = match fs::File::create(&tmp) {
                Ok(f) => f,
                Err(e) => {
                    cleanup(&staged);
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
                    cleanup(&staged);
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
                cleanup(&staged);
                return Err(BlessError::Manifest(format!(
                    "{} / {}: {}",
                    trace.name(),
                    spec.name,
                    f.message
                )));
            }
            if let Err(e) = flushed {
                cleanup(&staged);
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
