//! `ccreplay report`: one self-contained HTML file (docs/report.md).
//!
//! For a `diff` or a `check`: per flow, the reference's and the DUT's outputs over time on one
//! chart (rate on the left axis, window on the right) with the first divergence marked, and a
//! summary table (decisions, mismatches, largest error, verdict). For a simulation
//! ([`sim`]): the flows' rates and windows, the queues and the PFC counters of `metrics.json`.
//!
//! Charts are inline SVG drawn by plotters; the page has no script and loads nothing (no
//! external CSS, JS or fonts). Series are downsampled per pixel column ([`chart::downsample`])
//! so a million-decision flow still gives a small file. Everything that comes from the user
//! (file names, DUT command lines, model and field names) is HTML-escaped. The same input gives
//! the same bytes: no clock, no hash-map order, no absolute path that was not given.

pub mod chart;
pub mod junit;
pub mod sim;
pub mod switch;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ccreplay_reference_cc::{Cause, Decision, Outputs};
use plotters::style::RGBColor;

use crate::diff::{self, DiffReport, FlowDiff, Side};
use crate::golden;
use crate::replay::{ReplayStats, Trace};

use chart::{Chart, Line, Marker, Panel};

/// Flows drawn per comparison by default (differing flows first); the table lists them all.
pub const DEFAULT_MAX_CHARTS: usize = 24;
/// Rows of a flow table before the rest is summarised in one line.
const MAX_TABLE_ROWS: usize = 1000;

/// Escape text for HTML element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Write `bytes` to `path` atomically: a temporary file beside it, then a rename (in place
/// when `path` is a device such as /dev/null: [`crate::outfile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::outfile::write_atomic(path, bytes)
}

/// A decision output that can be charted.
#[derive(Debug)]
pub struct Quantity {
    /// Output field name (harness.md 3).
    pub field: &'static str,
    /// Legend text.
    pub label: &'static str,
    /// Axis unit.
    pub unit: &'static str,
    /// Factor from the field's unit to the axis unit.
    pub scale: f64,
    /// Drawn as a running count of `true` values (flags such as `send_cnp`).
    pub cumulative: bool,
}

/// The outputs charted, in order of preference: a flow's chart shows the first two that
/// either side reports.
pub const QUANTITIES: &[Quantity] = &[
    Quantity {
        field: "rate_bps",
        label: "rate",
        unit: "Gbps",
        scale: 1e-9,
        cumulative: false,
    },
    Quantity {
        field: "window_bytes",
        label: "window",
        unit: "KB",
        scale: 1e-3,
        cumulative: false,
    },
    Quantity {
        field: "ack_cwnd",
        label: "ACK cwnd",
        unit: "KB",
        scale: 1e-3,
        cumulative: false,
    },
    Quantity {
        field: "ack_n",
        label: "ACK N",
        unit: "flows",
        scale: 1.0,
        cumulative: false,
    },
    Quantity {
        field: "send_cnp",
        label: "CNPs sent",
        unit: "count",
        scale: 1.0,
        cumulative: true,
    },
    Quantity {
        field: "mark_ce",
        label: "CE marks",
        unit: "count",
        scale: 1.0,
        cumulative: true,
    },
];

fn output_value(field: &str, o: &Outputs) -> Option<f64> {
    match field {
        "rate_bps" => o.rate_bps.map(|v| v as f64),
        "window_bytes" => o.window_bytes.map(|v| v as f64),
        "ack_cwnd" => o.ack_cwnd.map(f64::from),
        "ack_n" => o.ack_n.map(f64::from),
        "send_cnp" => o.send_cnp.map(|b| f64::from(u8::from(b))),
        "mark_ce" => o.mark_ce.map(|b| f64::from(u8::from(b))),
        _ => None,
    }
}

/// One quantity of one flow on both sides, in chart units (x: µs since `t0`), downsampled.
#[derive(Debug)]
pub struct QuantitySeries {
    /// What it is.
    pub quantity: &'static Quantity,
    /// The reference's points.
    pub reference: Vec<(f64, f64)>,
    /// The DUT's points.
    pub dut: Vec<(f64, f64)>,
}

/// A charted flow.
#[derive(Debug)]
pub struct FlowChart {
    /// Flow id.
    pub flow: u32,
    /// One or two quantities (left and right axis).
    pub series: Vec<QuantitySeries>,
    /// Times (µs since t0) of the feedback the reference reacted to: its decisions on a CNP or
    /// a NAK (ACKs, one per packet, would cover the axis).
    pub feedback: Vec<f64>,
}

/// Names and details shown with a comparison.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    /// Heading, e.g. `hpcc_dumbbell / hpcc`.
    pub title: String,
    /// What the reference side is (`reference`, `golden`).
    pub reference_name: String,
    /// What the other side is (`dut`, `replay`).
    pub dut_name: String,
    /// Key / value lines (trace, DUT, tolerances...).
    pub details: Vec<(String, String)>,
    /// Per flow, a description of its endpoints.
    pub flow_labels: Vec<(u32, String)>,
}

/// Everything the page shows about one comparison; built from the two decision streams.
#[derive(Debug)]
pub struct Comparison {
    /// Names and details.
    pub meta: Meta,
    /// The diff.
    pub report: DiffReport,
    /// Time origin of the charts: the first decision of either side, ns.
    pub t0_ns: u64,
    /// Time from `t0_ns` to the last decision, ns.
    pub span_ns: u64,
    /// The charted flows, by flow id.
    pub charts: Vec<FlowChart>,
}

fn sorted_by_x(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    v
}

fn quantity_points(q: &Quantity, ds: &[Decision], t0_ns: u64, x_max_us: f64) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    let pts: Vec<(f64, f64)> = ds
        .iter()
        .filter_map(|d| {
            let v = output_value(q.field, &d.outputs)?;
            let x = d.t_ns.saturating_sub(t0_ns) as f64 / 1e3;
            if q.cumulative {
                total += v;
                Some((x, total))
            } else {
                Some((x, v * q.scale))
            }
        })
        .collect();
    chart::downsample(&sorted_by_x(pts), 0.0, x_max_us, chart::COLUMNS, true)
}

impl Comparison {
    /// Build from the diff and both sides' decisions, charting at most `max_charts` flows
    /// (the differing ones first, then by flow id).
    pub fn build(
        meta: Meta,
        report: DiffReport,
        reference: &Side,
        dut: &Side,
        max_charts: usize,
    ) -> Comparison {
        let all = || {
            (0..reference.len())
                .flat_map(|f| reference.flow(f))
                .chain((0..dut.len()).flat_map(|f| dut.flow(f)))
        };
        let t0_ns = all().map(|d| d.t_ns).min().unwrap_or(0);
        let t1_ns = all().map(|d| d.t_ns).max().unwrap_or(0);
        let span_ns = t1_ns - t0_ns;
        let x_max_us = span_ns as f64 / 1e3;
        let mut chosen: Vec<u32> = report
            .flows
            .iter()
            .filter(|f| !f.ok())
            .chain(report.flows.iter().filter(|f| f.ok()))
            .map(|f| f.flow)
            .take(max_charts)
            .collect();
        chosen.sort_unstable();
        let charts = chosen
            .into_iter()
            .map(|flow| {
                let (r, d) = (reference.flow(flow as usize), dut.flow(flow as usize));
                let series = QUANTITIES
                    .iter()
                    .filter(|q| {
                        r.iter()
                            .chain(d)
                            .any(|x| output_value(q.field, &x.outputs).is_some())
                    })
                    .take(2)
                    .map(|q| QuantitySeries {
                        quantity: q,
                        reference: quantity_points(q, r, t0_ns, x_max_us),
                        dut: quantity_points(q, d, t0_ns, x_max_us),
                    })
                    .collect();
                let mut feedback: Vec<f64> = r
                    .iter()
                    .filter(|d| {
                        matches!(d.cause, Cause::Event { kind, .. } if kind == "rx_cnp" || kind == "rx_nak")
                    })
                    .map(|d| d.t_ns.saturating_sub(t0_ns) as f64 / 1e3)
                    .collect();
                feedback.dedup();
                FlowChart {
                    flow,
                    series,
                    feedback,
                }
            })
            .collect();
        Comparison {
            meta,
            report,
            t0_ns,
            span_ns,
            charts,
        }
    }
}

/// One line of a `check`: compared, or why not.
#[derive(Debug)]
pub enum CheckEntry {
    /// Replayed and compared with its golden file.
    Compared(Box<Comparison>),
    /// No golden file.
    Missing {
        /// Trace name.
        trace: String,
        /// Model name.
        model: String,
        /// The file that is missing.
        path: PathBuf,
        /// The command that writes it (`ccreplay bless MANIFEST`).
        bless: String,
    },
    /// The trace or model could not be replayed.
    Failed {
        /// Trace name.
        trace: String,
        /// Model name.
        model: String,
        /// Why.
        error: String,
    },
}

impl CheckEntry {
    /// True when it conforms.
    pub fn ok(&self) -> bool {
        matches!(self, CheckEntry::Compared(c) if c.report.ok())
    }
}

/// Endpoint descriptions of the flows, from an extraction's flow table.
pub fn flow_labels(table: &crate::extract::FlowTable) -> Vec<(u32, String)> {
    let qp = |q: Option<u32>| q.map_or_else(|| "?".to_string(), |q| q.to_string());
    table
        .flows
        .iter()
        .map(|f| {
            (
                f.id,
                format!(
                    "{} QP {} ↔ {} QP {}",
                    f.local_ip,
                    qp(f.local_qp),
                    f.remote_ip,
                    qp(f.remote_qp)
                ),
            )
        })
        .collect()
}

/// `check`, keeping a chartable comparison of every pair: the one replay per pair that gives
/// the verdicts ([`golden::check_all_visit`], as `ccreplay check` prints them) also gives the
/// page's entries, in the same order.
pub fn check_all(
    manifests: &[PathBuf],
    golden_dir: &Path,
    jobs: usize,
    max_charts: usize,
    starting: impl FnMut(&str, &str),
) -> Result<(Vec<golden::CheckResult>, Vec<CheckEntry>), String> {
    let mut compared = Vec::new();
    let results = golden::check_manifests_visit(manifests, golden_dir, jobs, starting, |r, s| {
        if let golden::Outcome::Compared { report, stats, .. } = &r.outcome {
            compared.push(comparison(r, report, stats, s, max_charts));
        }
    })?;
    let mut compared = compared.into_iter();
    let entries = results
        .iter()
        .filter_map(|r| {
            let (trace, model) = (r.trace.clone(), r.model.clone());
            Some(match &r.outcome {
                golden::Outcome::Compared { .. } => {
                    CheckEntry::Compared(Box::new(compared.next()?))
                }
                golden::Outcome::MissingGolden { path, manifest } => CheckEntry::Missing {
                    trace,
                    model,
                    path: path.clone(),
                    bless: golden::bless_command(manifest, golden_dir),
                },
                golden::Outcome::Failed(error) => CheckEntry::Failed {
                    trace,
                    model,
                    error: error.clone(),
                },
            })
        })
        .collect();
    Ok((results, entries))
}

/// The page's view of one compared (trace, model).
fn comparison(
    r: &golden::CheckResult,
    report: &DiffReport,
    stats: &ReplayStats,
    s: &golden::Sides<'_>,
    max_charts: usize,
) -> Comparison {
    let meta = Meta {
        title: format!("{} / {}", r.trace, r.model),
        reference_name: "golden".into(),
        dut_name: "replay".into(),
        details: vec![
            ("trace".into(), s.trace.manifest_path.display().to_string()),
            ("golden".into(), s.golden_path.display().to_string()),
            (
                "replay".into(),
                format!(
                    "{} events, {} decisions, {} flows",
                    stats.events,
                    stats.decisions,
                    stats.flows.flows.len()
                ),
            ),
            (
                "accounting".into(),
                crate::verdict::Accounting {
                    report: &stats.extract,
                }
                .line(),
            ),
        ],
        flow_labels: flow_labels(&stats.flows),
    };
    Comparison::build(meta, report.clone(), s.golden, s.actual, max_charts)
}

// ---------------------------------------------------------------------------------------
// HTML

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1060px;color:#222;padding:0 16px}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{margin:1.4em 0 .3em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}tr.differs td{background:#fff0f0}tfoot td{font-weight:bold}
.verdict{display:inline-block;padding:4px 12px;border-radius:4px;font-weight:bold;color:#fff}
.verdict.ok{background:#2ca02c}.verdict.differs{background:#d62728}
.v-ok{color:#2ca02c;font-weight:bold}.v-differs{color:#d62728;font-weight:bold}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:.92em}dl.meta dt{color:#666}dl.meta dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
pre{background:#f7f7f7;padding:6px 8px;overflow-x:auto;font-size:.85em}svg.chart{display:block;max-width:100%;height:auto}
p.note{color:#666;font-size:.9em}footer{margin-top:3em;color:#888;font-size:.85em}
";

/// The page around `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n{body}<footer>Written by ccreplay {} (<code>ccreplay report</code>). Self-contained: no script, nothing loaded from the network.</footer>\n</body>\n</html>\n",
        escape_html(title),
        env!("CARGO_PKG_VERSION")
    )
}

pub(crate) fn details_list(details: &[(String, String)]) -> String {
    let mut s = String::from("<dl class=\"meta\">\n");
    for (k, v) in details {
        let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", escape_html(k), escape_html(v));
    }
    s.push_str("</dl>\n");
    s
}

/// `12.345` µs with nanosecond resolution.
pub(crate) fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn largest_text(largest: &[(String, f64, f64)]) -> String {
    largest
        .iter()
        .map(|(f, abs, rel)| format!("{f} {abs} (rel {rel:.3e})"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The largest error of a whole comparison: the field entry with the largest relative error.
fn overall_largest(report: &DiffReport) -> Option<(String, f64, f64)> {
    report
        .flows
        .iter()
        .flat_map(|f| f.largest.iter())
        .fold(None, |best: Option<&(String, f64, f64)>, x| match best {
            Some(b) if b.2 >= x.2 => Some(b),
            _ => Some(x),
        })
        .cloned()
}

fn cause_text(d: &Decision) -> String {
    match d.cause {
        Cause::Event { kind, index } => format!("{kind} #{index}"),
        Cause::Timer { name } => format!("timer {name}"),
    }
}

fn first_decision(f: &FlowDiff) -> Option<&Decision> {
    f.first
        .as_ref()
        .and_then(|d| d.reference.as_ref().or(d.dut.as_ref()))
}

fn verdict_cell(ok: bool) -> &'static str {
    if ok {
        "<td class=\"l v-ok\">ok</td>"
    } else {
        "<td class=\"l v-differs\">DIFFERS</td>"
    }
}

fn flow_table(id: &str, c: &Comparison) -> String {
    let (rn, dn) = (
        escape_html(&c.meta.reference_name),
        escape_html(&c.meta.dut_name),
    );
    let mut s = format!(
        "<table class=\"summary\" id=\"{id}\">\n<thead><tr><th>flow</th><th class=\"l\">endpoints</th><th>{rn} decisions</th><th>{dn} decisions</th><th>mismatched</th><th>missing</th><th>extra</th><th class=\"l\">largest error</th><th>first divergence (µs)</th><th class=\"l\">verdict</th></tr></thead>\n<tbody>\n"
    );
    let label = |f: u32| {
        c.meta
            .flow_labels
            .iter()
            .find(|(id, _)| *id == f)
            .map_or("", |(_, l)| l.as_str())
    };
    for f in c.report.flows.iter().take(MAX_TABLE_ROWS) {
        let first = first_decision(f).map_or_else(String::new, |d| {
            format!(
                "{} ({})",
                us(d.t_ns.saturating_sub(c.t0_ns)),
                escape_html(&cause_text(d))
            )
        });
        let _ = writeln!(
            s,
            "<tr class=\"flow-row {}\" data-flow=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{first}</td>{}</tr>",
            if f.ok() { "ok" } else { "differs" },
            f.flow,
            f.flow,
            escape_html(label(f.flow)),
            f.reference_count,
            f.dut_count,
            f.mismatches,
            f.missing,
            f.extra,
            escape_html(&largest_text(&f.largest)),
            verdict_cell(f.ok())
        );
    }
    if c.report.flows.len() > MAX_TABLE_ROWS {
        let rest = &c.report.flows[MAX_TABLE_ROWS..];
        let _ = writeln!(
            s,
            "<tr class=\"more\"><td class=\"l\" colspan=\"10\">… {} more flows, {} of them differ</td></tr>",
            rest.len(),
            rest.iter().filter(|f| !f.ok()).count()
        );
    }
    let (missing, extra) = c.report.missing_extra();
    let dut_total: u64 = c.report.flows.iter().map(|f| f.dut_count).sum();
    let _ = writeln!(
        s,
        "</tbody>\n<tfoot><tr class=\"total\"><td class=\"l\" colspan=\"2\">{} flows</td><td>{}</td><td>{dut_total}</td><td>{}</td><td>{missing}</td><td>{extra}</td><td class=\"l\">{}</td><td></td>{}</tr></tfoot>\n</table>",
        c.report.flows.len(),
        c.report.reference_count(),
        c.report.mismatches(),
        escape_html(&overall_largest(&c.report).map_or_else(String::new, |x| largest_text(&[x]))),
        verdict_cell(c.report.ok())
    );
    s
}

fn decision_line(d: &Decision) -> String {
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    crate::protocol::write_decision(&mut buf, d, &mut scratch);
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

fn event_line(e: &ccreplay_reference_cc::Event) -> String {
    let mut buf = Vec::new();
    crate::protocol::write_event(&mut buf, e);
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

fn divergence_detail(id: &str, c: &Comparison, f: &FlowDiff) -> String {
    let Some(div) = &f.first else {
        return String::new();
    };
    let (rn, dn) = (
        escape_html(&c.meta.reference_name),
        escape_html(&c.meta.dut_name),
    );
    let mut s = format!("<div class=\"divergence-detail\" id=\"{id}\">\n");
    if let Some(d) = first_decision(f) {
        let _ = writeln!(
            s,
            "<p>First divergence at <b>{} µs</b> (t = {} ns), caused by <code>{}</code>:</p>",
            us(d.t_ns.saturating_sub(c.t0_ns)),
            d.t_ns,
            escape_html(&cause_text(d))
        );
    }
    let _ = writeln!(
        s,
        "<table class=\"fields\"><thead><tr><th class=\"l\">field</th><th>{rn}</th><th>{dn}</th><th>abs error</th><th>rel error</th></tr></thead><tbody>"
    );
    for x in &div.fields {
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape_html(&x.field),
            escape_html(&x.reference),
            escape_html(&x.dut),
            x.abs_err.map_or_else(String::new, |v| v.to_string()),
            x.rel_err.map_or_else(String::new, |v| format!("{v:.3e}"))
        );
    }
    s.push_str("</tbody></table>\n");
    if !div.events.is_empty() {
        s.push_str("<p>Events (the last is the cause):</p>\n<pre>");
        for e in &div.events {
            s.push_str(&escape_html(&event_line(e)));
            s.push('\n');
        }
        s.push_str("</pre>\n");
    }
    s.push_str("<pre>");
    if let Some(r) = &div.reference {
        let _ = writeln!(s, "{rn}: {}", escape_html(&decision_line(r)));
    }
    if let Some(d) = &div.dut {
        let _ = writeln!(s, "{dn}: {}", escape_html(&decision_line(d)));
    }
    s.push_str("</pre>\n</div>\n");
    s
}

/// Colours: (reference, DUT) per panel. The reference is a wide light band, the DUT a thin
/// dark line on top: where they agree the line sits inside the band.
const REF_COLORS: [RGBColor; 2] = [RGBColor(158, 202, 225), RGBColor(253, 174, 107)];
const DUT_COLORS: [RGBColor; 2] = [RGBColor(8, 81, 156), RGBColor(166, 54, 3)];

/// The chart of one flow; `prefix` makes ids unique in the page.
pub fn flow_chart(c: &Comparison, fc: &FlowChart, prefix: &str) -> Result<String, String> {
    let f = c.report.flows.iter().find(|f| f.flow == fc.flow);
    let mut panels = Vec::new();
    for (i, q) in fc.series.iter().enumerate() {
        let (lo, hi) = q
            .reference
            .iter()
            .chain(&q.dut)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            });
        let (y_lo, y_hi) = chart::y_range(lo, hi);
        let lines = [
            (&q.reference, &c.meta.reference_name, REF_COLORS[i % 2], 5),
            (&q.dut, &c.meta.dut_name, DUT_COLORS[i % 2], 2),
        ]
        .into_iter()
        .map(|(pts, name, color, width)| Line {
            label: format!("{name} {}", q.quantity.label),
            points: pts.clone(),
            color,
            width,
        })
        .collect();
        panels.push(Panel {
            y_desc: format!("{} ({})", q.quantity.label, q.quantity.unit),
            y_lo,
            y_hi,
            lines,
        });
    }
    let markers = f
        .and_then(first_decision)
        .map(|d| {
            let t = d.t_ns.saturating_sub(c.t0_ns);
            let fields: Vec<&str> = f
                .and_then(|f| f.first.as_ref())
                .map(|div| div.fields.iter().map(|x| x.field.as_str()).collect())
                .unwrap_or_default();
            Marker {
                id: format!("{prefix}-div-{}", fc.flow),
                x: t as f64 / 1e3,
                label: format!("first divergence {} µs: {}", us(t), fields.join(", ")),
            }
        })
        .into_iter()
        .collect();
    let ch = Chart {
        id: format!("{prefix}-chart-{}", fc.flow),
        title: format!("flow {}", fc.flow),
        x_desc: format!("time since the first decision (µs; t0 = {} ns)", c.t0_ns),
        x_max: c.span_ns as f64 / 1e3,
        panels,
        markers,
        ticks: fc.feedback.clone(),
    };
    chart::render(&ch)
}

/// Render the charts and tables of comparisons (one for `diff`, one per trace and model for
/// `check`). `kind` is `diff` or `check`; `details` go under the heading. Charts are also
/// returned one by one as `(id, svg)` (for `--svg-dir`).
pub fn render_comparisons(
    kind: &str,
    details: &[(String, String)],
    entries: &[CheckEntry],
) -> Result<(String, Vec<(String, String)>), String> {
    let ok = entries.iter().all(CheckEntry::ok);
    let conform = entries.iter().filter(|e| e.ok()).count();
    let mut body = String::new();
    let title = match entries {
        [CheckEntry::Compared(c)] if kind == "diff" => format!("ccreplay diff — {}", c.meta.title),
        _ => format!("ccreplay {kind}"),
    };
    let _ = writeln!(body, "<h1>{}</h1>", escape_html(&title));
    body.push_str(&details_list(details));
    // A pair with no golden file, or that could not be replayed, compared nothing: the page
    // says ERROR (the command's exit status 2), never that differences were found.
    let uncompared = entries
        .iter()
        .filter(|e| !matches!(e, CheckEntry::Compared(_)))
        .count();
    let _ = writeln!(
        body,
        "<p><span class=\"verdict {}\" id=\"verdict\">{}</span> {conform} of {} comparisons conform{}.</p>",
        if ok { "ok" } else { "differs" },
        if ok {
            "CONFORMANT"
        } else if uncompared > 0 {
            "ERROR"
        } else {
            "DIFFERENCES FOUND"
        },
        entries.len(),
        if uncompared > 0 {
            format!("; {uncompared} compared nothing (MISSING or ERROR below)")
        } else {
            String::new()
        }
    );
    if kind == "check" {
        body.push_str("<h2>Traces</h2>\n<table class=\"pairs\" id=\"pairs\">\n<thead><tr><th class=\"l\">trace / model</th><th>flows</th><th>decisions</th><th>mismatched</th><th>missing</th><th>extra</th><th class=\"l\">largest error</th><th class=\"l\">verdict</th></tr></thead>\n<tbody>\n");
        for (i, e) in entries.iter().enumerate() {
            match e {
                CheckEntry::Compared(c) => {
                    let (m, x) = c.report.missing_extra();
                    let _ = writeln!(
                        body,
                        "<tr class=\"pair-row {}\"><td class=\"l\"><a href=\"#c{i}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{m}</td><td>{x}</td><td class=\"l\">{}</td>{}</tr>",
                        if c.report.ok() { "ok" } else { "differs" },
                        escape_html(&c.meta.title),
                        c.report.flows.len(),
                        c.report.reference_count(),
                        c.report.mismatches(),
                        escape_html(
                            &overall_largest(&c.report)
                                .map_or_else(String::new, |x| largest_text(&[x]))
                        ),
                        verdict_cell(c.report.ok())
                    );
                }
                CheckEntry::Missing {
                    trace,
                    model,
                    path,
                    bless,
                } => {
                    let _ = writeln!(
                        body,
                        "<tr class=\"pair-row differs\"><td class=\"l\">{} / {}</td><td class=\"l\" colspan=\"6\">no golden file {}: nothing compared (write it from the reference model with <code>{}</code>)</td><td class=\"l v-differs\">MISSING</td></tr>",
                        escape_html(trace),
                        escape_html(model),
                        escape_html(&path.display().to_string()),
                        escape_html(bless)
                    );
                }
                CheckEntry::Failed {
                    trace,
                    model,
                    error,
                } => {
                    let _ = writeln!(
                        body,
                        "<tr class=\"pair-row differs\"><td class=\"l\">{} / {}</td><td class=\"l\" colspan=\"6\">{}</td><td class=\"l v-differs\">ERROR</td></tr>",
                        escape_html(trace),
                        escape_html(model),
                        escape_html(error)
                    );
                }
            }
        }
        body.push_str("</tbody>\n</table>\n");
    }
    let mut svgs = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let CheckEntry::Compared(c) = e else { continue };
        let prefix = format!("c{i}");
        let _ = writeln!(
            body,
            "<section class=\"comparison\" id=\"{prefix}\">\n<h2>{}</h2>",
            escape_html(&c.meta.title)
        );
        if kind == "check" {
            body.push_str(&details_list(&c.meta.details));
        }
        let _ = writeln!(
            body,
            "<p class=\"note\">Reference: <b>{}</b>; compared: <b>{}</b>. Times are µs since the first decision (t0 = {} ns).</p>",
            escape_html(&c.meta.reference_name),
            escape_html(&c.meta.dut_name),
            c.t0_ns
        );
        body.push_str(&flow_table(&format!("{prefix}-summary"), c));
        let uncharted = c.report.flows.len().saturating_sub(c.charts.len());
        if uncharted > 0 {
            let _ = writeln!(
                body,
                "<p class=\"note\">{uncharted} flows are not charted (the table lists them all; <code>--max-charts</code> draws more).</p>"
            );
        }
        for fc in &c.charts {
            let f = c.report.flows.iter().find(|f| f.flow == fc.flow);
            let fok = f.is_none_or(FlowDiff::ok);
            let _ = writeln!(
                body,
                "<div class=\"flow\" id=\"{prefix}-flow-{}\">\n<h3>Flow {} <span class=\"{}\">{}</span></h3>",
                fc.flow,
                fc.flow,
                if fok { "v-ok" } else { "v-differs" },
                if fok { "ok" } else { "DIFFERS" }
            );
            let svg = flow_chart(c, fc, &prefix)?;
            body.push_str(&svg);
            svgs.push((format!("{prefix}-chart-{}", fc.flow), svg));
            if let Some(f) = f {
                body.push_str(&divergence_detail(
                    &format!("{prefix}-detail-{}", fc.flow),
                    c,
                    f,
                ));
            }
            body.push_str("</div>\n");
        }
        body.push_str("</section>\n");
    }
    Ok((page(&title, &body), svgs))
}

/// Write each chart as a standalone SVG file `DIR/<id>.svg`.
pub fn write_svgs(dir: &Path, svgs: &[(String, String)]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for (id, svg) in svgs {
        let p = dir.join(format!("{id}.svg"));
        write_atomic(&p, svg.as_bytes())?;
        out.push(p);
    }
    Ok(out)
}

/// The HTML options shared by `diff --report`, `check --report` and `ccreplay report`.
#[derive(clap::Args, Clone, Debug)]
pub struct HtmlArgs {
    /// Also write a self-contained HTML report with charts here (docs/report.md).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Flows charted per comparison in the HTML report (differing flows first; the tables list
    /// every flow).
    #[arg(long, default_value_t = DEFAULT_MAX_CHARTS, value_name = "N")]
    pub max_charts: usize,
    /// Also write each chart as a standalone SVG file into this folder.
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
}

/// Write the page (atomically) and, with `--svg-dir`, every chart; returns the files written.
fn write_outputs(
    html: &HtmlArgs,
    out: &Path,
    page: &str,
    svgs: &[(String, String)],
) -> Result<Vec<PathBuf>, String> {
    write_atomic(out, page.as_bytes()).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut written = vec![out.to_path_buf()];
    if let Some(dir) = &html.svg_dir {
        written.extend(write_svgs(dir, svgs).map_err(|e| format!("{}: {e}", dir.display()))?);
    }
    Ok(written)
}

/// What a `diff` compared, for its report.
pub struct DiffContext<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The reference model.
    pub model: &'a str,
    /// `dut` or `golden`.
    pub other_name: &'a str,
    /// The `--dut` spec or the golden file.
    pub other: String,
    /// How it was compared.
    pub options: &'a diff::DiffOptions,
    /// The flows the extraction found (labels of the table), when known.
    pub flows: Option<&'a crate::extract::FlowTable>,
    /// What the extraction did with every record, when known.
    pub extract: Option<&'a crate::extract::ExtractReport>,
}

/// Write the HTML report of a diff to `html.report` (nothing when it is `None`).
pub fn write_diff_report(
    html: &HtmlArgs,
    ctx: &DiffContext<'_>,
    report: &DiffReport,
    reference: &Side,
    other: &Side,
) -> Result<Vec<PathBuf>, String> {
    let Some(out) = &html.report else {
        return Ok(Vec::new());
    };
    let mut details = vec![
        (
            "trace".to_string(),
            ctx.trace.manifest_path.display().to_string(),
        ),
        ("model".into(), ctx.model.to_string()),
        (ctx.other_name.to_string(), ctx.other.clone()),
    ];
    if !ctx.options.tolerances.is_empty() {
        let tols: Vec<String> = ctx
            .options
            .tolerances
            .iter()
            .map(|t| match (t.abs, t.rel) {
                (Some(a), _) => format!("{}=abs:{a}", t.field),
                (_, Some(r)) => format!("{}=rel:{r}", t.field),
                _ => t.field.clone(),
            })
            .collect();
        details.push(("tolerances".into(), tols.join(" ")));
    }
    details.push((
        "state compared".into(),
        match &ctx.options.state {
            diff::StateCompare::None => "no (outputs only)".into(),
            diff::StateCompare::All => "all".into(),
            diff::StateCompare::Fields(f) => f.join(","),
        },
    ));
    if let Some(report) = ctx.extract {
        details.push((
            "accounting".into(),
            crate::verdict::Accounting { report }.line(),
        ));
    }
    let meta = Meta {
        title: format!("{} / {}", ctx.trace.name(), ctx.model),
        reference_name: "reference".into(),
        dut_name: ctx.other_name.to_string(),
        details: Vec::new(),
        flow_labels: ctx.flows.map(flow_labels).unwrap_or_default(),
    };
    let c = Comparison::build(meta, report.clone(), reference, other, html.max_charts);
    let (page, svgs) = render_comparisons("diff", &details, &[CheckEntry::Compared(Box::new(c))])?;
    write_outputs(html, out, &page, &svgs)
}

/// `ccreplay report check` (and `check --report`): replay every trace, compare with its golden
/// file and write the report to `html.report`. Returns the verdicts (one replay serves both) and the
/// files written.
pub fn write_check_report(
    html: &HtmlArgs,
    manifests: &[PathBuf],
    traces_label: &str,
    golden_dir: &Path,
    jobs: usize,
    starting: impl FnMut(&str, &str),
) -> Result<(Vec<golden::CheckResult>, Vec<PathBuf>), String> {
    let (results, entries) = check_all(manifests, golden_dir, jobs, html.max_charts, starting)?;
    let Some(out) = &html.report else {
        return Ok((results, Vec::new()));
    };
    let details = vec![
        ("traces".to_string(), traces_label.to_string()),
        ("golden".into(), golden_dir.display().to_string()),
    ];
    let (page, svgs) = render_comparisons("check", &details, &entries)?;
    let written = write_outputs(html, out, &page, &svgs)?;
    Ok((results, written))
}

/// `ccreplay report sim DIR`: the report of `DIR/metrics.json`.
pub fn write_sim_report(html: &HtmlArgs, metrics: &Path) -> Result<Vec<PathBuf>, String> {
    let m = sim::load(metrics)?;
    let Some(out) = &html.report else {
        return Ok(Vec::new());
    };
    let (page, svgs) = sim::render(&m, &metrics.display().to_string())?;
    write_outputs(html, out, &page, &svgs)
}

#[cfg(test)]
mod tests;
