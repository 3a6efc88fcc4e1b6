//! Replay: events through a reference model or a DUT, decisions out (harness.md 3).
//!
//! Output order, the same for every `--jobs`: for models whose flows are independent
//! ([`Model::per_flow`]) each flow runs on its own model instance and decisions are written
//! sorted by (time, flow, order within the flow); models with cross-flow state (receivers)
//! run on one instance and their decisions are written in the order they are made. Timers fire
//! as algorithms.md C-5 says: every timer due at or before an event's time, in deadline order,
//! before that event; at the end, every timer due up to the trace's last event.
//!
//! Events are processed in chunks that never split one timestamp, so memory stays bounded by
//! the chunk and the number of flows, whatever the capture's size.

use std::path::{Path, PathBuf};

use ccreplay_reference_cc::{Decision, Event, Model};

use crate::dut::{Dut, DutError, ModelDut};
use crate::extract::{self, ExtractError, ExtractReport, FlowTable};
use crate::manifest::{Manifest, ManifestError, ModelSpec};
use crate::models::{self, ModelError};

/// Events per chunk of a replay (at least): small enough that a chunk's decisions stay in
/// the caches between the models that make them and the sink that writes them.
const CHUNK_EVENTS: usize = 8192;

/// The `--jobs` from which decisions are formatted and written on a thread of their own.
/// Below it the calling thread formats them between batches: with two threads on two cores,
/// a third one only adds wake-ups (`--jobs 2`: 0.232 s with a writer thread, 0.210 s
/// without; docs/performance.md). With more, it takes the formatting off the calling
/// thread, whose share (flow lookup, models, formatting) is the one part that is serial.
pub const WRITER_THREAD_JOBS: usize = 3;

/// A trace: a manifest and its capture.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The manifest file.
    pub manifest_path: PathBuf,
    /// Its content.
    pub manifest: Manifest,
    /// The capture it describes.
    pub capture: PathBuf,
}

impl Trace {
    /// Load a trace from its manifest path, or from its capture path (the manifest is the file
    /// with the same stem and `.toml`).
    pub fn load(path: &Path) -> Result<Trace, ManifestError> {
        let manifest_path = if path.extension().is_some_and(|e| e == "toml") {
            path.to_path_buf()
        } else {
            path.with_extension("toml")
        };
        let manifest = Manifest::load(&manifest_path)?;
        let mut capture = manifest.capture_path(&manifest_path);
        if manifest_path != path {
            // The file named is the file used (issue 14.4): a capture given on the command
            // line is the one replayed, and a manifest that names another is an error.
            let named = manifest
                .events
                .as_ref()
                .map(|e| ("events", e))
                .or(manifest.capture.as_ref().map(|c| ("capture", c)));
            if let Some((key, value)) = named
                && !same_file(&capture, path)
            {
                return Err(ManifestError::Invalid {
                    path: manifest_path.clone(),
                    message: format!(
                        "`{key} = \"{value}\"` names {}, not {} given on the command line: \
                         replay the manifest itself, or make its `{key}` name this file",
                        capture.display(),
                        path.display()
                    ),
                });
            }
            capture = path.to_path_buf();
        }
        Ok(Trace {
            manifest_path,
            manifest,
            capture,
        })
    }

    /// The trace's name: the manifest's file stem.
    pub fn name(&self) -> String {
        self.manifest_path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
    }

    /// The manifest's model of this name.
    pub fn model(&self, name: &str) -> Option<&ModelSpec> {
        self.manifest.models.iter().find(|m| m.name == name)
    }
}

/// True when `a` and `b` are the same file: the same canonical path when both exist, else the
/// same path as written.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Bad model name or parameters (exit 2).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Unreadable capture (exit 2).
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The DUT failed (exit 3).
    #[error(transparent)]
    Dut(Box<DutError>),
    /// Writing decisions failed.
    #[error("writing decisions: {0}")]
    Io(#[from] std::io::Error),
}

impl From<DutError> for ReplayError {
    fn from(e: DutError) -> Self {
        ReplayError::Dut(Box::new(e))
    }
}

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct ReplayStats {
    /// Events fed.
    pub events: u64,
    /// Decisions made.
    pub decisions: u64,
    /// The flows, as the extraction numbered them.
    pub flows: FlowTable,
    /// What the extraction skipped and why.
    pub extract: ExtractReport,
    /// The reference model's rule and branch counts (`Model::coverage`), summed over its
    /// instances; empty for a DUT or a model that reports none.
    pub coverage: Vec<(&'static str, u64)>,
}

/// Add `c` to the sums in `into` (the same names in the same order, or `into` empty).
pub fn add_coverage(into: &mut Vec<(&'static str, u64)>, c: &[(&'static str, u64)]) {
    if into.is_empty() {
        into.extend_from_slice(c);
        return;
    }
    for ((_, n), (_, m)) in into.iter_mut().zip(c) {
        *n += m;
    }
}

/// Build the model of `spec` with the manifest's network parameters filled in.
pub fn build_model(trace: &Trace, spec: &ModelSpec) -> Result<Box<dyn Model + Send>, ModelError> {
    models::build(&spec.name, &trace.manifest.model_params(spec))
}

/// Stream the events of a trace (both extraction passes) to `sink`.
pub fn for_each_event(
    trace: &Trace,
    sink: impl FnMut(&Event),
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    for_each_event_jobs(trace, 1, sink)
}

/// [`for_each_event`] on `jobs` threads (`jobs` decode the capture while the calling thread
/// looks flows up and feeds `sink`): the same events, in the same order.
pub fn for_each_event_jobs(
    trace: &Trace,
    jobs: usize,
    mut sink: impl FnMut(&Event),
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    for_each_event_mut(trace, jobs, |e| sink(e))
}

/// [`for_each_event_jobs`] handing each event as a scratch copy `sink` may change (to pass it
/// on without copying it).
fn for_each_event_mut(
    trace: &Trace,
    jobs: usize,
    mut sink: impl FnMut(&mut Event),
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    if trace.manifest.events.is_some() {
        // An events file, not a capture.
        return crate::events_in::for_each_event(trace, |e| sink(&mut { *e }));
    }
    // With `jobs` > 1, `jobs` threads decode — the calling thread among them, which also
    // looks flows up and runs `sink` (models) whenever the next batch in order is decoded.
    let decoders = if jobs > 1 { jobs } else { 0 };
    // One pass when no pairing needs the whole capture first (receiver, switch port, or an
    // explicit [[flows]] pairing); two passes otherwise.
    let (mut table, report) = match FlowTable::single_pass(&trace.manifest) {
        Some(t) => (t, ExtractReport::default()),
        None => extract::build_flow_table_jobs(&trace.capture, &trace.manifest, decoders)?,
    };
    let report = extract::stream_events_jobs(
        &trace.capture,
        &trace.manifest,
        &mut table,
        report,
        decoders,
        sink,
    )?;
    Ok((table, report))
}

/// One flow's model instance and the decisions it made in the current chunk.
struct FlowRun {
    dut: ModelDut<dyn Model + Send>,
    out: Vec<Decision>,
}

/// A chunk's decisions, per flow, and their output order: (time, flow, order within the
/// flow), sorted (small keys: the decisions themselves are not moved).
#[derive(Default)]
struct Chunk {
    outs: Vec<Vec<Decision>>,
    order: Vec<(u64, u32, u32)>,
}

impl Chunk {
    /// Pass the decisions to `sink` in order.
    fn write(
        &self,
        sink: &mut (impl FnMut(&Decision) -> std::io::Result<()> + ?Sized),
    ) -> std::io::Result<()> {
        for &(_, flow, i) in &self.order {
            if let Some(d) = self.outs.get(flow as usize).and_then(|o| o.get(i as usize)) {
                sink(d)?;
            }
        }
        Ok(())
    }
}

/// Where a chunk's decisions go: to the sink on this thread, or to a writer thread that runs
/// the sink (formatting and writing) while this one replays the next chunk.
enum ChunkSink<'a> {
    Here(&'a mut dyn FnMut(&Decision) -> std::io::Result<()>),
    Writer {
        to: std::sync::mpsc::SyncSender<Chunk>,
        back: std::sync::mpsc::Receiver<Chunk>,
    },
}

/// The per-flow runs of a replay.
struct Runs<'t> {
    trace: &'t Trace,
    spec: &'t ModelSpec,
    runs: Vec<Option<FlowRun>>,
    chunk: Chunk,
}

impl Runs<'_> {
    /// The run of flow `f`, its model built on first use.
    fn get(&mut self, f: usize) -> Result<&mut FlowRun, ReplayError> {
        if self.runs.len() <= f {
            self.runs.resize_with(f + 1, || None);
        }
        let slot = &mut self.runs[f];
        if slot.is_none() {
            *slot = Some(FlowRun {
                dut: ModelDut::new(build_model(self.trace, self.spec)?),
                out: Vec::new(),
            });
        }
        match slot {
            Some(r) => Ok(r),
            None => unreachable!("filled above"),
        }
    }

    /// End a chunk: fire every timer due before `until_ns` (exclusive) — or, at the end of the
    /// trace, up to `until_ns` inclusive — and write the chunk's decisions in (time, flow,
    /// order) order.
    fn flush(
        &mut self,
        until_ns: u64,
        end: bool,
        sink: &mut ChunkSink<'_>,
        stats: &mut ReplayStats,
    ) -> Result<(), ReplayError> {
        let c = &mut self.chunk;
        c.order.clear();
        c.outs.resize_with(self.runs.len(), Vec::new);
        for (flow, (r, out)) in self.runs.iter_mut().zip(&mut c.outs).enumerate() {
            let Some(r) = r else { continue };
            if end {
                let _ = r.dut.finish(until_ns, &mut r.out);
            } else if until_ns > 0 {
                let _ = r.dut.finish(until_ns - 1, &mut r.out);
            }
            c.order.extend(r.out.iter_mut().enumerate().map(|(i, d)| {
                // The instance saw its flow as flow 0 (see `on_event`).
                d.flow = flow as u32;
                (d.t_ns, flow as u32, i as u32)
            }));
            // The chunk takes the decisions; the run gets the chunk's emptied vector.
            std::mem::swap(out, &mut r.out);
        }
        // Keys are distinct: an unstable sort gives the one order.
        c.order.sort_unstable();
        stats.decisions += c.order.len() as u64;
        match sink {
            ChunkSink::Here(f) => {
                c.write(*f)?;
                // Each run gets its own vector back, emptied: one vector per flow.
                for (r, out) in self.runs.iter_mut().zip(&mut c.outs) {
                    if let Some(r) = r {
                        out.clear();
                        std::mem::swap(out, &mut r.out);
                    }
                }
            }
            ChunkSink::Writer { to, back } => {
                // The writer hands back the chunk before last; a closed channel means it
                // stopped on an error, which the caller takes from it.
                let spare = back.recv().map_err(|_| writer_gone())?;
                let full = std::mem::replace(c, spare);
                to.send(full).map_err(|_| writer_gone())?;
            }
        }
        Ok(())
    }
}

fn writer_gone() -> ReplayError {
    ReplayError::Io(std::io::Error::other("the decision writer stopped"))
}

/// Replay a trace through the reference model `spec`, passing every decision to `sink` in the
/// documented order. `jobs` > 1 decodes the capture on `jobs` threads, the calling thread
/// among them; with `jobs` ≥ [`WRITER_THREAD_JOBS`] `sink` also runs on a thread of its own.
/// The output is the same.
///
/// Each flow has its own model instance, fed its events as they come (in trace order per
/// flow); at each chunk boundary every instance fires the timers due before the next chunk,
/// and the chunk's decisions are written sorted by (time, flow, order within the flow). The
/// models are a small part of the work (HPCC: ~20 M events/s): reading and decoding the
/// capture are what `--jobs` spreads over threads (and, from [`WRITER_THREAD_JOBS`], writing
/// the decisions).
pub fn replay_reference(
    trace: &Trace,
    spec: &ModelSpec,
    jobs: usize,
    mut sink: impl FnMut(&Decision) -> std::io::Result<()> + Send,
) -> Result<ReplayStats, ReplayError> {
    let probe = build_model(trace, spec)?;
    if !probe.per_flow() {
        let mut dut = ModelDut::new(probe);
        let mut stats = replay_duts(trace, &mut [&mut dut], jobs, |_, d| sink(d))?;
        stats.coverage = dut.model().coverage();
        return Ok(stats);
    }
    if jobs < WRITER_THREAD_JOBS {
        return replay_runs(trace, spec, jobs, ChunkSink::Here(&mut sink));
    }
    // Two chunks in turn: the writer writes one while the runs fill the other.
    let (to, from) = std::sync::mpsc::sync_channel::<Chunk>(1);
    let (give_back, back) = std::sync::mpsc::sync_channel::<Chunk>(2);
    let _ = give_back.send(Chunk::default());
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<()> {
            for mut c in from {
                c.write(&mut sink)?;
                for o in &mut c.outs {
                    o.clear();
                }
                if give_back.send(c).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let replayed = replay_runs(trace, spec, jobs, ChunkSink::Writer { to, back });
        let written = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        // The writer's own error first: the replay only saw it stop.
        written?;
        replayed
    })
}

/// The per-flow replay of [`replay_reference`], its chunks going to `sink`.
fn replay_runs(
    trace: &Trace,
    spec: &ModelSpec,
    jobs: usize,
    mut sink: ChunkSink<'_>,
) -> Result<ReplayStats, ReplayError> {
    let mut runs = Runs {
        trace,
        spec,
        runs: Vec::new(),
        chunk: Chunk::default(),
    };
    let mut stats = ReplayStats::default();
    let mut failure: Option<ReplayError> = None;
    let mut in_chunk = 0usize;
    let mut last_t = 0u64;
    let mut on_event = |ev: &mut Event| -> Result<(), ReplayError> {
        stats.events += 1;
        // Chunks never split one timestamp, and hold at least 8 events per flow (ending one
        // visits every flow).
        if in_chunk >= CHUNK_EVENTS.max(8 * runs.runs.len()) && ev.t_ns > last_t {
            runs.flush(ev.t_ns, false, &mut sink, &mut stats)?;
            in_chunk = 0;
        }
        last_t = ev.t_ns;
        in_chunk += 1;
        let r = runs.get(ev.flow as usize)?;
        // Each instance holds one flow, and sees it as flow 0: models keep their flows in
        // tables indexed by flow id, which would otherwise grow to the flow's number in every
        // instance (memory quadratic in the number of flows). Decisions get their flow back
        // in `flush`.
        ev.flow = 0;
        let _ = r.dut.event(ev, &mut r.out);
        Ok(())
    };
    let (table, report) = for_each_event_mut(trace, jobs, |ev| {
        if failure.is_none()
            && let Err(e) = on_event(ev)
        {
            failure = Some(e);
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    runs.flush(last_t, true, &mut sink, &mut stats)?;
    for r in runs.runs.iter().flatten() {
        add_coverage(&mut stats.coverage, &r.dut.model().coverage());
    }
    stats.flows = table;
    stats.extract = report;
    Ok(stats)
}

/// Replay a trace through a DUT, one event at a time in trace order.
pub fn replay_dut(
    trace: &Trace,
    dut: &mut dyn Dut,
    mut sink: impl FnMut(&Decision) -> std::io::Result<()>,
) -> Result<ReplayStats, ReplayError> {
    replay_duts(trace, &mut [dut], 1, |_, d| sink(d))
}

/// Replay a trace through two DUTs at once — the reference and the device under test — from
/// one extraction: each event goes to both, in trace order. Used by `diff`, which aligns the
/// two streams by (flow, cause, ordinal), so their order does not matter. `sink` is told
/// whether a decision is the reference's.
pub fn replay_pair(
    trace: &Trace,
    reference: &mut dyn Dut,
    dut: &mut dyn Dut,
    mut sink: impl FnMut(bool, &Decision),
) -> Result<ReplayStats, ReplayError> {
    replay_duts(trace, &mut [reference, dut], 1, |i, d| {
        sink(i == 0, d);
        Ok(())
    })
}

/// Feed every event of a trace to each DUT in turn (one extraction), then finish them at the
/// last event's time; `sink(i, decision)` gets DUT `i`'s decisions as they come. The capture
/// is decoded on `jobs` threads.
fn replay_duts(
    trace: &Trace,
    duts: &mut [&mut dyn Dut],
    jobs: usize,
    mut sink: impl FnMut(usize, &Decision) -> std::io::Result<()>,
) -> Result<ReplayStats, ReplayError> {
    let mut stats = ReplayStats::default();
    let mut out = Vec::new();
    // Each DUT's answer to the event, delivered once all have answered.
    let mut outs: Vec<Vec<Decision>> = duts.iter().map(|_| Vec::new()).collect();
    let mut failure: Option<ReplayError> = None;
    let mut last_t = 0;
    let mut deliver =
        |i: usize, out: &[Decision], stats: &mut ReplayStats| -> std::io::Result<()> {
            for d in out {
                sink(i, d)?;
            }
            stats.decisions += out.len() as u64;
            Ok(())
        };
    let (table, report) = for_each_event_jobs(trace, jobs, |ev| {
        if failure.is_some() {
            return;
        }
        stats.events += 1;
        last_t = ev.t_ns;
        for (dut, out) in duts.iter_mut().zip(&mut outs) {
            out.clear();
            if let Err(e) = dut.event(ev, out) {
                failure = Some(e.into());
                return;
            }
        }
        // A DUT whose answer to `ev` cannot be seen (`--dut wire`, docs/dut.md): the
        // reference's decisions caused by `ev` are not compared.
        if duts.iter().skip(1).any(|d| d.unobservable(ev)) {
            let cause = ev.cause();
            outs[0].retain(|d| d.cause != cause);
        }
        for (i, out) in outs.iter().enumerate() {
            if let Err(e) = deliver(i, out, &mut stats) {
                failure = Some(e.into());
                return;
            }
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    for (i, dut) in duts.iter_mut().enumerate() {
        out.clear();
        dut.finish(last_t, &mut out)?;
        deliver(i, &out, &mut stats)?;
    }
    stats.flows = table;
    stats.extract = report;
    Ok(stats)
}

/// The causing events of each flow's first divergence and up to `before` events before them,
/// streamed from the trace (memory: only those events).
pub fn divergence_events(
    trace: &Trace,
    report: &crate::diff::DiffReport,
    before: u64,
) -> Vec<Event> {
    let wanted: std::collections::HashMap<u32, u64> = report
        .flows
        .iter()
        .filter_map(|f| f.first.as_ref().and_then(crate::diff::divergence_event))
        .collect();
    let mut v = Vec::new();
    if wanted.is_empty() {
        return v;
    }
    let _ = for_each_event(trace, |e| {
        if let Some(&idx) = wanted.get(&e.flow)
            && e.index + before >= idx
            && e.index <= idx
        {
            v.push(*e);
        }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    // Decoding on several threads gives the same events in the same order, and the same
    // report, in both extraction modes (one pass with [[flows]], two passes without).
    #[test]
    fn events_do_not_depend_on_decode_threads() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (name, two_pass) in [
            ("hpcc_dumbbell", false),
            ("hpcc_dumbbell", true),
            ("rcc_receiver", false),
            ("roce_dcqcn", true),
        ] {
            let mut trace = Trace::load(Path::new(&format!("{root}/traces/{name}.toml"))).unwrap();
            if two_pass {
                // Without [[flows]] a sender's directions are paired by a first pass.
                trace.manifest.flows.clear();
                assert!(FlowTable::single_pass(&trace.manifest).is_none());
            }
            let mut one = Vec::new();
            let (t1, r1) = for_each_event_jobs(&trace, 1, |e| one.push(*e)).unwrap();
            assert!(one.len() > 1000, "{name}");
            for jobs in [2, 3] {
                let mut many = Vec::new();
                let (t, r) = for_each_event_jobs(&trace, jobs, |e| many.push(*e)).unwrap();
                assert_eq!(many, one, "{name}: events with {jobs} threads");
                assert_eq!(r, r1, "{name}: report");
                assert_eq!(t.flows, t1.flows, "{name}: flows");
            }
        }
    }
}
