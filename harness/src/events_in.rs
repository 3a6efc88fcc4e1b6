//! Events as input (harness.md 2): a trace whose manifest names an `events` file (JSON Lines,
//! docs/protocol.md) instead of a capture, so events from any source — a simulator's log, a
//! NIC's debug dump, `ccreplay import ns3`, `ccreplay replay --emit-events` — are replayed,
//! diffed and checked exactly like the events extracted from a capture.
//!
//! The file is streamed: one line buffer is reused, and each line is parsed into a
//! `serde_json::Value` and read by [`protocol::parse_event`] (what parsing needs, nothing
//! kept). A bad line (not JSON, not an event, a flow id of 2^20 or more) is skipped and
//! reported with its line number; the replay goes on with the next line. Timestamps going
//! backwards are fed at the previous time, as extraction does with captures.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use ccreplay_codecs::capture::CaptureError;
use ccreplay_reference_cc::{Event, FlowId};

use crate::extract::{ExtractError, ExtractReport, FlowInfo, FlowTable};
use crate::manifest::{Manifest, ManifestError};
use crate::protocol;
use crate::replay::Trace;

/// Flow ids of an events file must be below this (2^20): the replay keeps one slot per id.
pub const MAX_FLOW_ID: u64 = 1 << 20;

/// Bad lines kept with their messages in the report (the rest are counted).
const EXAMPLES: usize = 5;

/// Starts `ExtractReport::capture_error` when an events file had bad lines, so callers can
/// tell bad input (exit 2) from a capture's framing error.
pub const BAD_LINES: &str = "bad event lines";

/// True when the trace replays an events file rather than a capture.
pub fn is_events(trace: &Trace) -> bool {
    trace.manifest.events.is_some()
}

/// Load a trace for `replay` / `diff`: from a manifest (or a capture / events file with a
/// manifest of the same stem beside it), with `events` replacing the manifest's own source
/// when given. Without a trace, the events file's sibling manifest (`x.jsonl` → `x.toml`)
/// names the models and parameters.
pub fn load(trace: Option<&Path>, events: Option<&Path>) -> Result<Trace, ManifestError> {
    let mut t = match (trace, events) {
        (Some(p), _) => Trace::load(p)?,
        (None, Some(e)) => {
            let manifest_path = e.with_extension("toml");
            if !manifest_path.exists() {
                return Err(ManifestError::Invalid {
                    path: manifest_path,
                    message: format!(
                        "no manifest for the events file {}: give one as TRACE, or write this \
                         file (docs/manifest.md, `events = ...`)",
                        e.display()
                    ),
                });
            }
            Trace::load(&manifest_path)?
        }
        (None, None) => {
            return Err(ManifestError::Invalid {
                path: PathBuf::from("-"),
                message: "give a trace (its manifest) or --events FILE".into(),
            });
        }
    };
    if let Some(e) = events {
        // Relative to the current directory, as given on the command line.
        t.manifest.capture = None;
        t.manifest.events = Some(e.display().to_string());
        t.capture = e.to_path_buf();
    }
    Ok(t)
}

/// The flows of an events trace: the manifest's `[[flows]]` name flow `i` by its `i`-th entry;
/// flows the file uses beyond them (or all, without `[[flows]]`) are listed with the capture
/// point's host (or 0.0.0.0) and no peer. `seen` is one past the largest flow id used.
fn table_for(manifest: &Manifest, seen: usize) -> FlowTable {
    let local = manifest
        .capture_point
        .host()
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let n = seen.max(manifest.flows.len());
    let flows = (0..n)
        .map(|i| match manifest.flows.get(i) {
            Some(f) => FlowInfo {
                id: i as FlowId,
                local_ip: f.local_ip,
                local_qp: Some(f.local_qp),
                remote_ip: f.remote_ip,
                remote_qp: Some(f.remote_qp),
                paired_by: "events",
            },
            None => FlowInfo {
                id: i as FlowId,
                local_ip: local,
                local_qp: None,
                remote_ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                remote_qp: None,
                paired_by: "events",
            },
        })
        .collect();
    let mut t = FlowTable::default();
    t.flows = flows;
    t
}

/// The flow table of any trace (a DUT's `hello` lists it): extraction's first pass for a
/// capture; for an events file, the manifest's `[[flows]]`, or one pass over the file for its
/// flow ids when the manifest lists none.
pub fn flow_table(trace: &Trace) -> Result<(FlowTable, ExtractReport), ExtractError> {
    if !is_events(trace) {
        return crate::extract::build_flow_table(&trace.capture, &trace.manifest);
    }
    if !trace.manifest.flows.is_empty() {
        return Ok((table_for(&trace.manifest, 0), ExtractReport::default()));
    }
    let (table, report) = for_each_event(trace, |_| {})?;
    Ok((table, report))
}

fn open_error(path: &Path, source: std::io::Error) -> ExtractError {
    ExtractError::Capture {
        path: path.display().to_string(),
        source: CaptureError::Open {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// Stream the events of an events trace to `sink`, in file order. Returns the flows (see
/// [`flow_table`]) and a report: `packets` = lines read (blank lines not counted), `events`,
/// `malformed` = bad lines with the first few as (line number, message), `time_clamped`, and
/// `capture_error` = a one-line summary starting with [`BAD_LINES`] when any line was bad, or
/// the read error that ended the file early.
pub fn for_each_event(
    trace: &Trace,
    mut sink: impl FnMut(&Event),
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    let path = &trace.capture;
    let f = File::open(path).map_err(|e| open_error(path, e))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let mut report = ExtractReport {
        events_file: true,
        ..ExtractReport::default()
    };
    let mut line = String::with_capacity(512);
    let mut line_no = 0u64;
    let mut last_t = 0u64;
    let mut seen = 0usize;
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                report.capture_error = Some(format!(
                    "{}: read error after line {line_no}: {e}",
                    path.display()
                ));
                break;
            }
        }
        line_no += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        report.packets += 1;
        let parsed = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|v| protocol::parse_event(&v).map_err(|e| e.to_string()))
            .and_then(|ev| {
                if u64::from(ev.flow) >= MAX_FLOW_ID {
                    Err(format!(
                        "`flow` = {} is too large (flow ids must be below {MAX_FLOW_ID})",
                        ev.flow
                    ))
                } else {
                    Ok(ev)
                }
            });
        let mut ev = match parsed {
            Ok(ev) => ev,
            Err(msg) => {
                report.malformed += 1;
                report.skipped.add(crate::extract::Skip::Malformed);
                if report.malformed_examples.len() < EXAMPLES {
                    report.malformed_examples.push((line_no, msg));
                }
                continue;
            }
        };
        if ev.t_ns < last_t {
            // Model time is monotonic (C-2): fed at the previous time, counted.
            report.time_clamped += 1;
            report.time_back_max_ns = report.time_back_max_ns.max(last_t - ev.t_ns);
            ev.t_ns = last_t;
        }
        last_t = ev.t_ns;
        seen = seen.max(ev.flow as usize + 1);
        let f = ev.flow as usize;
        if report.flow_events.len() <= f {
            report.flow_events.resize(f + 1, 0);
        }
        report.flow_events[f] += 1;
        report.events += 1;
        report.event_kinds.add(&ev.kind);
        sink(&ev);
    }
    if report.malformed > 0 && report.capture_error.is_none() {
        report.capture_error = Some(bad_lines_summary(path, &report));
    }
    Ok((table_for(&trace.manifest, seen), report))
}

fn bad_lines_summary(path: &Path, r: &ExtractReport) -> String {
    let first = r
        .malformed_examples
        .iter()
        .map(|(n, m)| format!("{}:{n}: {m}", path.display()))
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "{BAD_LINES}: {} of {} lines skipped ({first}{})",
        r.malformed,
        r.packets,
        if r.malformed as usize > r.malformed_examples.len() {
            "; ..."
        } else {
            ""
        }
    )
}

/// The bad-lines summary of an events replay's report, when it had bad lines.
pub fn bad_lines(report: &ExtractReport) -> Option<&str> {
    report
        .capture_error
        .as_deref()
        .filter(|e| e.starts_with(BAD_LINES))
}

/// Report an events replay's bad lines on standard error, one per line with its number.
/// Returns true when there were any (the command then exits 2: bad input).
pub fn report_bad_lines(trace: &Trace, report: &ExtractReport) -> bool {
    if report.malformed == 0 {
        return false;
    }
    for (n, m) in &report.malformed_examples {
        eprintln!("ccreplay: {}:{n}: {m}", trace.capture.display());
    }
    let more = report.malformed - report.malformed_examples.len() as u64;
    if more > 0 {
        eprintln!("ccreplay: ... and {more} more bad lines");
    }
    eprintln!(
        "ccreplay: {} of {} event lines skipped as bad input",
        report.malformed, report.packets
    );
    true
}

/// Write every event of a trace (capture or events file) to `out` as JSON Lines, the format
/// `--events` reads back (`ccreplay replay --emit-events`). Atomic: a temporary file, then a
/// rename. Returns the number of events written.
pub fn write_events(trace: &Trace, out: &Path) -> Result<u64, String> {
    // Atomic unless `out` is a device such as /dev/null (crate::outfile).
    let (f, tmp) = crate::outfile::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::with_capacity(1 << 16, f);
    let mut buf = Vec::with_capacity(1 << 12);
    let mut n = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let done = crate::replay::for_each_event(trace, |ev| {
        if failed.is_some() {
            return;
        }
        buf.clear();
        protocol::write_event(&mut buf, ev);
        if let Err(e) = w.write_all(&buf) {
            failed = Some(e);
        }
        n += 1;
    });
    let result = match (done, failed) {
        (Err(e), _) => Err(e.to_string()),
        (_, Some(e)) => Err(format!("{}: {e}", out.display())),
        (Ok(_), None) => w.flush().map_err(|e| format!("{}: {e}", out.display())),
    };
    drop(w);
    match result {
        Ok(()) => crate::outfile::commit(tmp, out)
            .map(|()| n)
            .map_err(|e| format!("{}: {e}", out.display())),
        Err(e) => {
            if let Some(tmp) = tmp {
                let _ = std::fs::remove_file(tmp);
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
events = "e.jsonl"
dialect = "roce"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "dcqcn"
[source]
kind = "synthesized"
generator = "test"
"#;

    fn trace_with(dir: &Path, events: &str) -> Trace {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("e.toml"), MANIFEST).unwrap();
        std::fs::write(dir.join("e.jsonl"), events).unwrap();
        Trace::load(&dir.join("e.toml")).unwrap()
    }

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("ccreplay-events-in-{name}-{}", std::process::id()))
    }

    #[test]
    fn bad_lines_are_skipped_with_their_numbers() {
        let dir = tmp("bad");
        let t = trace_with(
            &dir,
            "{\"t\": 5, \"flow\": 0, \"index\": 0, \"kind\": \"rx_cnp\"}\n\
             \n\
             not json\n\
             {\"t\": 6, \"flow\": 0, \"index\": 1, \"kind\": \"rx_magic\"}\n\
             {\"t\": 4, \"flow\": 2, \"index\": 0, \"kind\": \"rx_cnp\"}\n\
             {\"t\": 9, \"flow\": 1048576, \"index\": 0, \"kind\": \"rx_cnp\"}\n",
        );
        let mut got = Vec::new();
        let (table, report) = for_each_event(&t, |e| got.push((e.t_ns, e.flow))).unwrap();
        // Line 5 went back from t = 5 to t = 4: fed at 5.
        assert_eq!(got, vec![(5, 0), (5, 2)]);
        assert_eq!(report.time_clamped, 1);
        assert_eq!(report.time_back_max_ns, 1);
        assert_eq!(report.packets, 5, "blank line 2 is not counted");
        assert_eq!(report.malformed, 3);
        let lines: Vec<u64> = report.malformed_examples.iter().map(|e| e.0).collect();
        assert_eq!(lines, vec![3, 4, 6]);
        assert!(
            report.malformed_examples[1]
                .1
                .contains("unknown event kind `rx_magic`")
        );
        assert!(bad_lines(&report).is_some());
        // Flow ids 0..=2 used: three flows, at the capture point's host.
        assert_eq!(table.flows.len(), 3);
        assert_eq!(table.flows[2].local_ip.to_string(), "10.0.0.1");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn capture_and_events_together_are_rejected() {
        let text = format!("capture = \"x.pcap\"\n{MANIFEST}");
        let e = Manifest::parse(&text, Path::new("m.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`capture` and `events` both given"), "{e}");
    }
}
