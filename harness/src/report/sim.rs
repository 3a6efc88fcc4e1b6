//! The report of a simulation: `DIR/metrics.json` (docs/metrics.md) as charts and tables.
//!
//! Charts: every flow's sending rate, window and goodput over time, Jain's index of the rates
//! over time, every port's egress queue over the whole run and over its steady state; PFC
//! pause time per port when any port paused. Time charts can be restricted to a window
//! (`report sim --from/--to`). Tables: the flows (size, FCT, bytes acknowledged), the ports
//! (utilisation, queue percentiles, ECN marks, drops, PFC) and the run's totals.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ccreplay_reference_cc::net::metrics::{FlowMetrics, Metrics, PortMetrics, Series};

use super::chart::{self, Chart, Line, Panel};
use super::{HtmlArgs, details_list, escape_html, page};

/// Lines drawn per chart; the tables list everything.
pub const MAX_LINES: usize = 32;

/// Read `metrics.json` (a file, or a folder holding one).
pub fn load(path: &Path) -> Result<Metrics, String> {
    Ok(load_file(path)?.0)
}

/// Read `metrics.json` (a file, or a folder holding one): the metrics and the `sim --set`
/// overrides the run recorded (`overrides`, absent when there were none).
pub fn load_file(path: &Path) -> Result<(Metrics, Vec<String>), String> {
    let file = if path.is_dir() {
        path.join("metrics.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let m: Metrics = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    // A second pass that skips everything but `overrides` (Metrics ignores that key).
    #[derive(serde::Deserialize)]
    struct Recorded {
        #[serde(default)]
        overrides: Vec<String>,
    }
    let recorded: Recorded =
        serde_json::from_str(&text).map_err(|e| format!("{}: overrides: {e}", file.display()))?;
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
    Ok((m, recorded.overrides))
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

/// The time the time charts show, ns, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First instant.
    pub from_ns: u64,
    /// Last instant.
    pub to_ns: u64,
}

impl Window {
    /// The window of `report sim --from --to` over a run of `duration_ns`: the whole run by
    /// default; a `to` past the run's end is cut to it. An empty window is an error.
    pub fn new(duration_ns: u64, from_ns: Option<u64>, to_ns: Option<u64>) -> Result<Self, String> {
        let from = from_ns.unwrap_or(0);
        let to = to_ns.map_or(duration_ns, |t| t.min(duration_ns));
        if from_ns.is_some() && from >= duration_ns {
            return Err(format!(
                "--from {} µs: the run ends at {} µs",
                super::us(from),
                super::us(duration_ns)
            ));
        }
        if to_ns.is_some() && to <= from {
            return Err(format!(
                "--to {} µs must be after --from {} µs",
                super::us(to),
                super::us(from)
            ));
        }
        Ok(Window {
            from_ns: from,
            to_ns: to,
        })
    }

    /// The default window: the time the run sampled, from one interval before its first
    /// sample (which covers that interval) to its last — a run samples only from its first
    /// flow's start until the network is quiet (docs/metrics.md), so an experiment with a
    /// warm-up or a long tail is charted where something happens; the whole run when nothing
    /// was sampled.
    pub fn sampled(m: &Metrics) -> Self {
        let series = m
            .flows
            .iter()
            .flat_map(|f| [&f.throughput_bps, &f.rate_bps, &f.window_bytes])
            .chain(m.ports.iter().map(|p| &p.queue_bytes));
        let (mut first, mut last) = (u64::MAX, 0u64);
        for s in series {
            if let (Some(&a), Some(&b)) = (s.t_ns.first(), s.t_ns.last()) {
                first = first.min(a);
                last = last.max(b);
            }
        }
        if first > last {
            return Window {
                from_ns: 0,
                to_ns: m.duration_ns,
            };
        }
        Window {
            from_ns: first.saturating_sub(m.sample_interval_ns),
            to_ns: last.min(m.duration_ns).max(first),
        }
    }

    fn contains(&self, t_ns: u64) -> bool {
        (self.from_ns..=self.to_ns).contains(&t_ns)
    }

    /// The x axis, µs.
    fn x_us(&self) -> (f64, f64) {
        (self.from_ns as f64 / 1e3, self.to_ns as f64 / 1e3)
    }
}

/// A time as `report sim --from/--to` take it: a whole number of ns, or a decimal number with
/// a unit `ns`, `us` (or `µs`), `ms` or `s` that comes to a whole number of ns
/// (`1500`, `1.5us`, `2ms`).
pub fn parse_time(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, unit): (&str, u128) = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
    ]
    .iter()
    .find_map(|(suffix, unit)| t.strip_suffix(suffix).map(|n| (n.trim_end(), *unit)))
    .unwrap_or((t, 1));
    let bad = || format!("`{text}`: a time is a number of ns, or a number with ns, us, ms or s");
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > 9 {
        return Err(bad());
    }
    let int: u128 = int.parse().map_err(|_| bad())?;
    let scale = 10u128.pow(frac.len() as u32);
    let frac: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad())?
    };
    let part = frac * unit;
    if !part.is_multiple_of(scale) {
        return Err(format!("`{text}`: not a whole number of ns"));
    }
    int.checked_mul(unit)
        .and_then(|v| v.checked_add(part / scale))
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| format!("`{text}`: too large"))
}

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

/// `(t_ns, v)` of a series, sorted by time (stable: equal times keep their order).
fn sorted(s: &Series) -> Vec<(u64, u64)> {
    let mut pts: Vec<(u64, u64)> = s.t_ns.iter().copied().zip(s.v.iter().copied()).collect();
    if !pts.windows(2).all(|w| w[0].0 <= w[1].0) {
        pts.sort_by_key(|p| p.0);
    }
    pts
}

/// The chart points of `pts` (sorted) inside `w`, µs and `scale`d; a step series also gets the
/// value it holds at the window's start.
fn points(pts: &[(u64, f64)], scale: f64, w: Window, reduce: Reduce) -> Vec<(f64, f64)> {
    let (x0, x1) = w.x_us();
    let mut sel: Vec<(f64, f64)> = Vec::new();
    if let Reduce::Step = reduce
        && let Some(&(_, v)) = pts.iter().rev().find(|p| p.0 < w.from_ns)
    {
        sel.push((x0, v * scale));
    }
    sel.extend(
        pts.iter()
            .filter(|p| w.contains(p.0))
            .map(|&(t, v)| (t as f64 / 1e3, v * scale)),
    );
    match reduce {
        Reduce::Step => chart::downsample(&sel, x0, x1, chart::COLUMNS, true),
        Reduce::Level => chart::downsample(&sel, x0, x1, chart::COLUMNS, false),
        // 4 px per mean: a per-µs goodput swings between 0 and line rate packet by packet.
        Reduce::Mean => chart::downsample_mean(&sel, x0, x1, chart::COLUMNS / 4),
    }
}

/// One chart of one line per owner.
struct SeriesChart<'a> {
    id: &'static str,
    title: String,
    y_desc: &'static str,
    /// Chart units per series unit.
    scale: f64,
    reduce: Reduce,
    /// `(label, series)`; only non-empty series are drawn, at most [`MAX_LINES`].
    series: Vec<(String, &'a Series)>,
}

impl SeriesChart<'_> {
    /// Series with samples (the legend), in order; their colours do not depend on the window.
    fn drawn(&self) -> Vec<&(String, &Series)> {
        self.series
            .iter()
            .filter(|(_, s)| !s.t_ns.is_empty())
            .take(MAX_LINES)
            .collect()
    }

    /// The SVG over `w` and the number of lines, or `None` when every series is empty.
    fn render(&self, w: Window) -> Result<Option<(String, usize)>, String> {
        let drawn = self.drawn();
        if drawn.is_empty() {
            return Ok(None);
        }
        let colors = chart::palette(drawn.len());
        let lines: Vec<Line> = drawn
            .iter()
            .zip(colors)
            .map(|((label, s), color)| {
                let pts: Vec<(u64, f64)> =
                    sorted(s).into_iter().map(|(t, v)| (t, v as f64)).collect();
                Line {
                    label: label.clone(),
                    points: points(&pts, self.scale, w, self.reduce),
                    color,
                    width: 2,
                }
            })
            .collect();
        let (lo, hi) = y_extent(&lines);
        let (lo, hi) = chart::y_range(lo, hi);
        let n = lines.len();
        let (x0, x1) = w.x_us();
        let svg = chart::render_from(
            &Chart {
                id: self.id.into(),
                title: self.title.clone(),
                x_desc: "time (µs)".into(),
                x_max: x1,
                panels: vec![Panel {
                    y_desc: self.y_desc.into(),
                    y_lo: lo,
                    y_hi: hi,
                    lines,
                }],
                markers: Vec::new(),
                ticks: Vec::new(),
            },
            x0,
        )?;
        Ok(Some((svg, n)))
    }
}

/// Smallest and largest y of the lines' points (infinite when there are none).
fn y_extent(lines: &[Line]) -> (f64, f64) {
    lines
        .iter()
        .flat_map(|l| &l.points)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        })
}

/// Jain's fairness index `(Σx)² / (n·Σx²)` of `x`: 1 when all are equal, `1/n` when one has
/// everything; `None` for no values or when all are 0.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    let j = sum * sum / (x.len() as f64 * sq);
    (sq > 0.0 && j.is_finite()).then_some(j)
}

/// `J(t)` at the first instant of `w` and at every sample time of the flows' `rate_bps`
/// inside it: Jain's index of the rates of the flows active at `t` — started
/// (`start_ns ≤ t`), not finished (`t < finish_ns`) and with a rate sample at or before `t`,
/// whose value holds until the next one. Instants where it is undefined are left out.
pub fn jain_over_time(flows: &[FlowMetrics], w: Window) -> Vec<(u64, f64)> {
    let series: Vec<Vec<(u64, u64)>> = flows.iter().map(|f| sorted(&f.rate_bps)).collect();
    let mut times: Vec<u64> = series
        .iter()
        .flatten()
        .map(|p| p.0)
        .filter(|&t| w.contains(t))
        .collect();
    times.push(w.from_ns);
    times.sort_unstable();
    times.dedup();
    // Per flow: how many of its samples are at or before the current instant.
    let mut seen = vec![0usize; flows.len()];
    let mut out = Vec::with_capacity(times.len());
    let mut x = Vec::with_capacity(flows.len());
    for t in times {
        x.clear();
        for ((f, s), k) in flows.iter().zip(&series).zip(seen.iter_mut()) {
            while *k < s.len() && s[*k].0 <= t {
                *k += 1;
            }
            let active = f.start_ns <= t && f.finish_ns.is_none_or(|e| t < e);
            if active && *k > 0 {
                x.push(s[*k - 1].1 as f64);
            }
        }
        if let Some(j) = jain(&x) {
            out.push((t, j));
        }
    }
    out
}

/// Where the egress queues' steady state is charted (the zoomed companion of the queue chart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteadyState {
    /// Start: the first queue sample after the last one above `level_bytes`.
    pub from_ns: u64,
    /// End: the end of the window.
    pub to_ns: u64,
    /// The largest queue sample of any port in the second half of the window
    /// (`t ≥ from + (to − from) / 2`, ns rounded down): the steady state's level.
    pub level_bytes: u64,
}

/// The steady state of the ports' queues inside `w`: from the first sample after the last one
/// (of any port) above the largest sample of the window's second half, to the window's end.
/// So the zoomed chart's largest value is that level and its scale is not set by the initial
/// transient. `None` when no sample lies in the second half or none exceeds its level (no
/// transient to leave out).
pub fn steady_state(ports: &[PortMetrics], w: Window) -> Option<SteadyState> {
    let mid = w.from_ns + w.to_ns.saturating_sub(w.from_ns) / 2;
    let samples = || {
        ports
            .iter()
            .flat_map(|p| p.queue_bytes.t_ns.iter().zip(&p.queue_bytes.v))
            .filter(|(t, _)| w.contains(**t))
            .map(|(t, v)| (*t, *v))
    };
    let level = samples().filter(|s| s.0 >= mid).map(|s| s.1).max()?;
    let last_above = samples().filter(|s| s.1 > level).map(|s| s.0).max()?;
    let from = samples().map(|s| s.0).filter(|&t| t > last_above).min()?;
    Some(SteadyState {
        from_ns: from,
        to_ns: w.to_ns,
        level_bytes: level,
    })
}

/// The J(t) chart, or `None` with fewer than two flows or no instant where it is defined.
fn jain_chart(m: &Metrics, w: Window) -> Result<Option<String>, String> {
    if m.flows.len() < 2 {
        return Ok(None);
    }
    let pts: Vec<(u64, f64)> = jain_over_time(&m.flows, w);
    if pts.is_empty() {
        return Ok(None);
    }
    let (x0, x1) = w.x_us();
    let (lo, hi) = chart::y_range(0.0, 1.0);
    let svg = chart::render_from(
        &Chart {
            id: "sim-jain".into(),
            title: "Jain's fairness index of the sending rates".into(),
            x_desc: "time (µs)".into(),
            x_max: x1,
            panels: vec![Panel {
                y_desc: "J(t)".into(),
                y_lo: lo,
                y_hi: hi,
                lines: vec![Line {
                    label: "J over the active flows".into(),
                    points: points(&pts, 1.0, w, Reduce::Step),
                    color: chart::palette(1)[0],
                    width: 2,
                }],
            }],
            markers: Vec::new(),
            ticks: Vec::new(),
        },
        x0,
    )?;
    Ok(Some(svg))
}

fn opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "unfinished".into(), super::us)
}

/// What `report sim` shows beyond the metrics.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// `--from`, ns.
    pub from_ns: Option<u64>,
    /// `--to`, ns.
    pub to_ns: Option<u64>,
    /// The `sim --set` overrides the run recorded.
    pub overrides: Vec<String>,
}

/// Render the simulation report of the whole run. `source` names the file read (shown under
/// the heading). Charts are also returned one by one as `(id, svg)`.
pub fn render(m: &Metrics, source: &str) -> Result<(String, Vec<(String, String)>), String> {
    render_view(m, source, &View::default())
}

/// [`render`] with the time charts restricted to `view`'s window; errors on an empty window.
pub fn render_view(
    m: &Metrics,
    source: &str,
    view: &View,
) -> Result<(String, Vec<(String, String)>), String> {
    let w = if view.from_ns.is_none() && view.to_ns.is_none() {
        Window::sampled(m)
    } else {
        Window::new(m.duration_ns, view.from_ns, view.to_ns)?
    };

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
    if !view.overrides.is_empty() {
        details.push(("overrides (sim --set)".into(), view.overrides.join(" ")));
    }
    if view.from_ns.is_some() || view.to_ns.is_some() {
        details.push((
            "time charts".into(),
            format!(
                "{} µs to {} µs (--from / --to; the tables cover the whole run)",
                super::us(w.from_ns),
                super::us(w.to_ns)
            ),
        ));
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
    let flows = |get: fn(&FlowMetrics) -> &Series| -> Vec<(String, &Series)> {
        m.flows.iter().map(|f| (flow_label(f), get(f))).collect()
    };
    // Ports whose queue stayed empty are left out of the queue charts (a tiny example's 64 idle
    // host ports would fill the legend and leave the one that queued unseen).
    // The others largest peak first (ties in port order), so that when more than MAX_LINES
    // ports queued, the lines drawn are those of the deepest queues.
    let peak = |p: &PortMetrics| p.queue_bytes.v.iter().copied().max().unwrap_or(0);
    let mut queued: Vec<&PortMetrics> = m.ports.iter().filter(|p| peak(p) > 0).collect();
    queued.sort_by_cached_key(|p| std::cmp::Reverse(peak(p)));
    let queues: Vec<(String, &Series)> = queued
        .iter()
        .map(|p| (p.name.clone(), &p.queue_bytes))
        .collect();
    let idle_ports = m.ports.len() - queues.len();
    let rate = SeriesChart {
        id: "sim-rate",
        title: "Sending rate".into(),
        y_desc: "rate (Gbps)",
        scale: 1e-9,
        reduce: Reduce::Step,
        series: flows(|f| &f.rate_bps),
    };
    let window = SeriesChart {
        id: "sim-window",
        title: "Window".into(),
        y_desc: "window (KB)",
        scale: 1e-3,
        reduce: Reduce::Step,
        series: flows(|f| &f.window_bytes),
    };
    let goodput = SeriesChart {
        id: "sim-goodput",
        title: "Goodput at the receivers".into(),
        y_desc: "goodput (Gbps)",
        scale: 1e-9,
        reduce: Reduce::Mean,
        series: flows(|f| &f.throughput_bps),
    };
    let queue = SeriesChart {
        id: "sim-queue",
        title: "Egress queues".into(),
        y_desc: "queue (KB)",
        scale: 1e-3,
        reduce: Reduce::Level,
        series: queues,
    };
    body.push_str("<h2>Charts</h2>\n");
    // Draws `c` over `w` into the page; false when it has nothing to draw.
    fn put(
        body: &mut String,
        svgs: &mut Vec<(String, String)>,
        c: &SeriesChart<'_>,
        w: Window,
    ) -> Result<bool, String> {
        let Some((svg, n)) = c.render(w)? else {
            return Ok(false);
        };
        let _ = writeln!(body, "<div class=\"sim-chart\" id=\"{}-box\">", c.id);
        body.push_str(&svg);
        let total = c.series.iter().filter(|(_, s)| !s.t_ns.is_empty()).count();
        if total > n {
            let _ = writeln!(body, "<p class=\"note\">{n} of {total} series drawn.</p>");
        }
        body.push_str("</div>\n");
        svgs.push((c.id.to_string(), svg));
        Ok(true)
    }
    put(&mut body, &mut svgs, &rate, w)?;
    if let Some(svg) = jain_chart(m, w)? {
        body.push_str("<div class=\"sim-chart\" id=\"sim-jain-box\">\n");
        body.push_str(&svg);
        body.push_str("</div>\n");
        svgs.push(("sim-jain".into(), svg));
    }
    put(&mut body, &mut svgs, &window, w)?;
    put(&mut body, &mut svgs, &goodput, w)?;
    let drew_queues = put(&mut body, &mut svgs, &queue, w)?;
    if idle_ports > 0 {
        let _ = writeln!(
            body,
            "<p class=\"note\" id=\"sim-queue-idle\">{} of {} ports never queued a byte: not drawn.</p>",
            idle_ports,
            m.ports.len()
        );
    }
    if drew_queues {
        // The same ports, colours and legend over the steady state only.
        match steady_state(&m.ports, w) {
            Some(ss) => {
                let steady = SeriesChart {
                    id: "sim-queue-steady",
                    title: format!("Egress queues, steady state (from {} µs)", super::us(ss.from_ns)),
                    ..queue
                };
                let sw = Window {
                    from_ns: ss.from_ns,
                    to_ns: ss.to_ns,
                };
                if put(&mut body, &mut svgs, &steady, sw)? {
                    let _ = writeln!(
                        body,
                        "<p class=\"note\" id=\"sim-queue-steady-rule\">Steady state: from the first sample after the last one above {} B, the largest queue of the second half of the charted time (docs/report.md).</p>",
                        ss.level_bytes
                    );
                }
            }
            None => body.push_str(
                "<p class=\"note\" id=\"sim-queue-steady-none\">No steady-state chart: no queue sample exceeds the largest one of the second half of the charted time.</p>\n",
            ),
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
                chart::palette(4)[3],
            ),
            (
                "paused (µs)",
                ports.iter().map(|p| p.pfc.paused_ns as f64 / 1e3).collect(),
                chart::palette(1)[0],
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

/// Why `report sim` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// `--from` / `--to` select no time of the run.
    #[error("{0}")]
    Window(String),
    /// `metrics.json` could not be read, or a chart or file could not be written.
    #[error("{0}")]
    Other(String),
}

/// `ccreplay report sim DIR [--from T] [--to T]`: read `DIR/metrics.json`, write the page to
/// `html.report` (atomically) and, with `--svg-dir`, every chart. Returns the files written.
pub fn write_report(
    html: &HtmlArgs,
    metrics: &Path,
    from_ns: Option<u64>,
    to_ns: Option<u64>,
) -> Result<Vec<PathBuf>, ReportError> {
    let (m, overrides) = load_file(metrics).map_err(ReportError::Other)?;
    Window::new(m.duration_ns, from_ns, to_ns).map_err(ReportError::Window)?;
    let Some(out) = &html.report else {
        return Ok(Vec::new());
    };
    let view = View {
        from_ns,
        to_ns,
        overrides,
    };
    let (page, svgs) =
        render_view(&m, &metrics.display().to_string(), &view).map_err(ReportError::Other)?;
    super::write_atomic(out, page.as_bytes())
        .map_err(|e| ReportError::Other(format!("{}: {e}", out.display())))?;
    let mut written = vec![out.clone()];
    if let Some(dir) = &html.svg_dir {
        written.extend(
            super::write_svgs(dir, &svgs)
                .map_err(|e| ReportError::Other(format!("{}: {e}", dir.display())))?,
        );
    }
    Ok(written)
}
