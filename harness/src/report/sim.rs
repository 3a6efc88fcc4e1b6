//! The report of a simulation: `DIR/metrics.json` (docs/metrics.md) as charts and tables.
//!
//! Charts: every flow's sending rate, window and goodput over time, and every port's egress
//! queue; PFC pause time per port when any port paused. Tables: the flows (size, FCT, bytes
//! acknowledged), the ports (utilisation, queue percentiles, ECN marks, drops, PFC) and the
//! run's totals.

use std::fmt::Write as _;
use std::path::Path;

use ccreplay_reference_cc::net::metrics::{FlowMetrics, Metrics, PortMetrics, Series};
use plotters::style::RGBColor;

use super::chart::{self, Chart, Line, Panel};
use super::{details_list, escape_html, page};

/// Lines drawn per chart; the tables list everything.
pub const MAX_LINES: usize = 32;

/// Read `metrics.json` (a file, or a folder holding one).
pub fn load(path: &Path) -> Result<Metrics, String> {
    let file = if path.is_dir() {
        path.join("metrics.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let m: Metrics = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if m.version != 1 {
        return Err(format!(
            "{}: metrics version {} (this ccreplay reads version 1)",
            file.display(),
            m.version
        ));
    }
    for f in &m.flows {
        check_series(
            &file,
            &format!("flow {}", f.id),
            "throughput_bps",
            &f.throughput_bps,
        )?;
        check_series(&file, &format!("flow {}", f.id), "rate_bps", &f.rate_bps)?;
        check_series(
            &file,
            &format!("flow {}", f.id),
            "window_bytes",
            &f.window_bytes,
        )?;
    }
    for p in &m.ports {
        check_series(
            &file,
            &format!("port {}", p.name),
            "queue_bytes",
            &p.queue_bytes,
        )?;
    }
    Ok(m)
}

fn check_series(file: &Path, owner: &str, name: &str, s: &Series) -> Result<(), String> {
    if s.t_ns.len() != s.v.len() {
        return Err(format!(
            "{}: {owner}: {name} has {} times and {} values",
            file.display(),
            s.t_ns.len(),
            s.v.len()
        ));
    }
    Ok(())
}

/// Tableau-like palette, cycled over flows and ports.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// How a series is reduced to the chart's columns.
#[derive(Clone, Copy)]
enum Reduce {
    /// A value that holds until the next sample (rate, window): steps, min / max kept.
    Step,
    /// A sampled level (queue): min / max kept.
    Level,
    /// A per-interval measure (goodput): mean per column.
    Mean,
}

fn points(s: &Series, scale: f64, x_max_us: f64, reduce: Reduce) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = s
        .t_ns
        .iter()
        .zip(&s.v)
        .map(|(t, v)| (*t as f64 / 1e3, *v as f64 * scale))
        .collect();
    if !pts.windows(2).all(|w| w[0].0 <= w[1].0) {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    match reduce {
        Reduce::Step => chart::downsample(&pts, 0.0, x_max_us, chart::COLUMNS, true),
        Reduce::Level => chart::downsample(&pts, 0.0, x_max_us, chart::COLUMNS, false),
        // 4 px per mean: a per-µs goodput swings between 0 and line rate packet by packet.
        Reduce::Mean => chart::downsample_mean(&pts, 0.0, x_max_us, chart::COLUMNS / 4),
    }
}

/// `(id, title, y axis, scale, reduction, series)` of a chart.
type SeriesChart<'a> = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    Reduce,
    Vec<(String, &'a Series)>,
);

/// A chart of one series per owner (`(label, series)`), or `None` when all are empty.
fn series_chart(
    id: &str,
    title: &str,
    y_desc: &str,
    scale: f64,
    reduce: Reduce,
    x_max_us: f64,
    series: &[(String, &Series)],
) -> Result<Option<(String, usize)>, String> {
    let drawn: Vec<&(String, &Series)> = series
        .iter()
        .filter(|(_, s)| !s.t_ns.is_empty())
        .take(MAX_LINES)
        .collect();
    if drawn.is_empty() {
        return Ok(None);
    }
    let lines: Vec<Line> = drawn
        .iter()
        .enumerate()
        .map(|(i, (label, s))| Line {
            label: label.clone(),
            points: points(s, scale, x_max_us, reduce),
            color: PALETTE[i % PALETTE.len()],
            width: 2,
        })
        .collect();
    let (lo, hi) = lines
        .iter()
        .flat_map(|l| &l.points)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let (lo, hi) = chart::y_range(lo, hi);
    let n = lines.len();
    let svg = chart::render(&Chart {
        id: id.into(),
        title: title.into(),
        x_desc: "time (µs)".into(),
        x_max: x_max_us,
        panels: vec![Panel {
            y_desc: y_desc.into(),
            y_lo: lo,
            y_hi: hi,
            lines,
        }],
        markers: Vec::new(),
    })?;
    Ok(Some((svg, n)))
}

fn opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "unfinished".into(), super::us)
}

/// Render the simulation report. `source` names the file read (shown under the heading).
/// Charts are also returned one by one as `(id, svg)`.
pub fn render(m: &Metrics, source: &str) -> Result<(String, Vec<(String, String)>), String> {
    let x_max_us = m.duration_ns as f64 / 1e3;
    let title = format!("ccreplay sim — {}", m.scenario);
    let mut body = format!("<h1>{}</h1>\n", escape_html(&title));
    let mut details = vec![
        ("metrics".to_string(), source.to_string()),
        ("scenario".into(), m.scenario.clone()),
        ("model".into(), m.model.clone()),
        ("seed".into(), m.seed.to_string()),
        (
            "duration".into(),
            format!("{} µs", super::us(m.duration_ns)),
        ),
        (
            "sample interval".into(),
            format!("{} ns", m.sample_interval_ns),
        ),
        ("events".into(), m.events.to_string()),
    ];
    if let Some(j) = m.jain_index {
        details.push(("Jain's fairness index".into(), format!("{j:.4}")));
    }
    body.push_str(&details_list(&details));

    // Totals.
    let finished = m.flows.iter().filter(|f| f.fct_ns.is_some()).count();
    let _ = writeln!(
        body,
        "<h2>Summary</h2>\n<table class=\"summary\" id=\"sim-summary\"><tbody>\n<tr><th class=\"l\">flows</th><td>{}</td></tr>\n<tr><th class=\"l\">finished</th><td>{finished}</td></tr>\n<tr><th class=\"l\">ports</th><td>{}</td></tr>\n<tr><th class=\"l\">PFC pause frames</th><td>{}</td></tr>\n<tr><th class=\"l\">PFC paused (ns)</th><td>{}</td></tr>\n<tr><th class=\"l\">drops</th><td>{}</td></tr>\n<tr><th class=\"l\">Jain's index</th><td>{}</td></tr>\n</tbody></table>",
        m.flows.len(),
        m.ports.len(),
        m.pfc.pause_frames,
        m.pfc.paused_ns,
        m.drops,
        m.jain_index.map_or_else(String::new, |j| format!("{j:.4}"))
    );

    // Flows table.
    body.push_str("<h2>Flows</h2>\n<table class=\"flows\" id=\"sim-flows\">\n<thead><tr><th>flow</th><th class=\"l\">src → dst</th><th>size (B)</th><th>start (µs)</th><th>FCT (µs)</th><th>acked (B)</th><th>mean goodput (Gbps)</th></tr></thead>\n<tbody>\n");
    for f in &m.flows {
        // Mean goodput over the flow's life: bytes * 8 / FCT (bits per ns = Gbps); for a flow
        // still running at the end, over start..end of the run.
        let life_ns = f
            .fct_ns
            .or_else(|| m.duration_ns.checked_sub(f.start_ns))
            .filter(|&t| t > 0);
        let goodput = life_ns.map_or_else(String::new, |t| {
            format!("{:.3}", f.bytes_acked as f64 * 8.0 / t as f64)
        });
        let _ = writeln!(
            body,
            "<tr class=\"flow-row\" data-flow=\"{}\"><td>{}</td><td class=\"l\">{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{goodput}</td></tr>",
            f.id,
            f.id,
            escape_html(&f.src),
            escape_html(&f.dst),
            f.size_bytes,
            super::us(f.start_ns),
            opt_us(f.fct_ns),
            f.bytes_acked
        );
    }
    body.push_str("</tbody>\n</table>\n");

    // Ports table.
    body.push_str("<h2>Ports</h2>\n<table class=\"ports\" id=\"sim-ports\">\n<thead><tr><th class=\"l\">port</th><th class=\"l\">peer</th><th>rate (Gbps)</th><th>utilisation</th><th>queue p95 (B)</th><th>queue max (B)</th><th>ECN marked</th><th>dropped</th><th>PFC sent</th><th>PFC received</th><th>paused (ns)</th></tr></thead>\n<tbody>\n");
    for p in &m.ports {
        let _ = writeln!(
            body,
            "<tr class=\"port-row\"><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape_html(&p.name),
            escape_html(&p.peer),
            p.rate_bps as f64 / 1e9,
            p.utilization,
            p.queue_p95_bytes,
            p.queue_max_bytes,
            p.ecn_marked,
            p.dropped,
            p.pfc.pause_frames_sent,
            p.pfc.pause_frames_received,
            p.pfc.paused_ns
        );
    }
    body.push_str("</tbody>\n</table>\n");

    // Charts.
    let mut svgs = Vec::new();
    let flow_label = |f: &FlowMetrics| format!("flow {} ({}→{})", f.id, f.src, f.dst);
    let charts: [SeriesChart<'_>; 4] = [
        (
            "sim-rate",
            "Sending rate",
            "rate (Gbps)",
            1e-9,
            Reduce::Step,
            m.flows
                .iter()
                .map(|f| (flow_label(f), &f.rate_bps))
                .collect(),
        ),
        (
            "sim-window",
            "Window",
            "window (KB)",
            1e-3,
            Reduce::Step,
            m.flows
                .iter()
                .map(|f| (flow_label(f), &f.window_bytes))
                .collect(),
        ),
        (
            "sim-goodput",
            "Goodput at the receivers",
            "goodput (Gbps)",
            1e-9,
            Reduce::Mean,
            m.flows
                .iter()
                .map(|f| (flow_label(f), &f.throughput_bps))
                .collect(),
        ),
        (
            "sim-queue",
            "Egress queues",
            "queue (KB)",
            1e-3,
            Reduce::Level,
            m.ports
                .iter()
                .map(|p| (p.name.clone(), &p.queue_bytes))
                .collect(),
        ),
    ];
    body.push_str("<h2>Charts</h2>\n");
    for (id, title, y, scale, reduce, series) in &charts {
        if let Some((svg, n)) = series_chart(id, title, y, *scale, *reduce, x_max_us, series)? {
            let _ = writeln!(body, "<div class=\"sim-chart\" id=\"{id}-box\">");
            body.push_str(&svg);
            let total = series.iter().filter(|(_, s)| !s.t_ns.is_empty()).count();
            if total > n {
                let _ = writeln!(body, "<p class=\"note\">{n} of {total} series drawn.</p>");
            }
            body.push_str("</div>\n");
            svgs.push((id.to_string(), svg));
        }
    }
    if let Some(svg) = pfc_chart(m)? {
        body.push_str("<div class=\"sim-chart\" id=\"sim-pfc-box\">\n");
        body.push_str(&svg);
        body.push_str("</div>\n");
        svgs.push(("sim-pfc".into(), svg));
    } else {
        body.push_str(
            "<p class=\"note\" id=\"sim-pfc-none\">No port sent a PFC PAUSE frame.</p>\n",
        );
    }
    Ok((page(&title, &body), svgs))
}

/// Bars per port that took part in PFC: PAUSE frames sent (above) and time its egress was
/// paused (below); `None` when no port did.
fn pfc_chart(m: &Metrics) -> Result<Option<String>, String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor;
    let ports: Vec<&PortMetrics> = m
        .ports
        .iter()
        .filter(|p| p.pfc.paused_ns > 0 || p.pfc.pause_frames_sent > 0)
        .take(MAX_LINES)
        .collect();
    if ports.is_empty() {
        return Ok(None);
    }
    let n = ports.len();
    let title = "PFC per port: PAUSE frames sent, time paused";
    let mut buf = String::new();
    {
        let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let root = SVGBackend::with_string(&mut buf, (chart::WIDTH_PX, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let root = root
            .titled(title, ("sans-serif", 17).into_font().style(FontStyle::Bold))
            .map_err(e)?;
        let panels = root.split_evenly((2, 1));
        let values: [(&str, Vec<f64>, RGBColor); 2] = [
            (
                "PAUSE frames sent",
                ports
                    .iter()
                    .map(|p| p.pfc.pause_frames_sent as f64)
                    .collect(),
                PALETTE[3],
            ),
            (
                "paused (µs)",
                ports.iter().map(|p| p.pfc.paused_ns as f64 / 1e3).collect(),
                PALETTE[0],
            ),
        ];
        for (area, (desc, v, color)) in panels.iter().zip(values) {
            let (_, hi) = chart::y_range(0.0, v.iter().fold(0.0f64, |a, x| a.max(*x)));
            let mut ctx = ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(24)
                .margin_top(8)
                .x_label_area_size(8)
                .y_label_area_size(78)
                .build_cartesian_2d(0f64..n as f64, 0f64..hi)
                .map_err(e)?;
            ctx.configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc(desc)
                .y_labels(5)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .light_line_style(RGBColor(238, 238, 238))
                .draw()
                .map_err(e)?;
            ctx.draw_series(v.iter().enumerate().map(|(i, y)| {
                Rectangle::new(
                    [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *y)],
                    color.filled(),
                )
            }))
            .map_err(e)?;
            // Port names above their bars.
            let style = TextStyle::from(("sans-serif", 12).into_font()).pos(text_anchor::Pos::new(
                text_anchor::HPos::Center,
                text_anchor::VPos::Bottom,
            ));
            ctx.draw_series(
                ports.iter().zip(&v).enumerate().map(|(i, (p, y))| {
                    Text::new(p.name.clone(), (i as f64 + 0.5, *y), style.clone())
                }),
            )
            .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(Some(buf.replacen(
        "<svg ",
        &format!("<svg id=\"sim-pfc\" class=\"chart\" role=\"img\" aria-label=\"{title}\" "),
        1,
    )))
}
