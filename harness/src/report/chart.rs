//! Charts as inline SVG, drawn with plotters, and the downsampling that keeps them small.
//!
//! A series of a million points is reduced to a few points per pixel column before it is drawn
//! ([`downsample`]): the first, smallest, largest and last value of each column, so every spike
//! stays visible while the SVG stays a few tens of kilobytes.

use std::fmt::Write as _;

use plotters::prelude::*;

/// Chart width, px.
pub const WIDTH_PX: u32 = 1000;
/// Columns a series is reduced to (about one per pixel of the plotting area).
pub const COLUMNS: usize = 1000;

/// Reduce `points` (sorted by x) to the first, smallest, largest and last point of each of
/// `cols` columns over `x0..=x1`, in their original order; with `step` the value before a
/// column is repeated at its first x, so a step function (a rate that holds until the next
/// decision) is drawn as steps. Points with a non-finite coordinate are skipped. At most
/// 5 points per column come out, whatever the input's length.
pub fn downsample(
    points: &[(f64, f64)],
    x0: f64,
    x1: f64,
    cols: usize,
    step: bool,
) -> Vec<(f64, f64)> {
    let cols = cols.max(1);
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    let column = |x: f64| -> usize {
        let c = ((x - x0) / span * cols as f64).floor();
        if c <= 0.0 {
            0
        } else {
            (c as usize).min(cols - 1)
        }
    };
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len().min(5 * cols));
    let mut prev: Option<f64> = None;
    let mut i = 0;
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    while i < pts.len() {
        let c = column(pts[i].0);
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < pts.len() && column(pts[j].0) == c {
            if pts[j].1 < pts[lo].1 {
                lo = j;
            }
            if pts[j].1 > pts[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let push = |out: &mut Vec<(f64, f64)>, p: (f64, f64)| {
            if out.last() != Some(&p) {
                out.push(p);
            }
        };
        if step && let Some(v) = prev {
            push(&mut out, (pts[i].0, v));
        }
        let mut keep = [i, lo, hi, j - 1];
        keep.sort_unstable();
        for k in keep {
            push(&mut out, pts[k]);
        }
        prev = Some(pts[j - 1].1);
        i = j;
    }
    out
}

/// Reduce `points` (sorted by x) to the mean point of each of `cols` columns over `x0..=x1`
/// when there are more points than columns (else keep them): for a quantity measured per
/// sample interval, such as goodput, the mean over a column is the same quantity over a
/// longer interval, where min / max would only fill the area between 0 and line rate.
pub fn downsample_mean(points: &[(f64, f64)], x0: f64, x1: f64, cols: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let cols = cols.max(1);
    if pts.len() <= cols {
        return pts;
    }
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    let column = |x: f64| -> usize {
        let c = ((x - x0) / span * cols as f64).floor();
        if c <= 0.0 {
            0
        } else {
            (c as usize).min(cols - 1)
        }
    };
    let mut out = Vec::with_capacity(cols);
    let mut i = 0;
    while i < pts.len() {
        let c = column(pts[i].0);
        let (mut sx, mut sv, mut n) = (0.0, 0.0, 0.0);
        while i < pts.len() && column(pts[i].0) == c {
            sx += pts[i].0;
            sv += pts[i].1;
            n += 1.0;
            i += 1;
        }
        out.push((sx / n, sv / n));
    }
    out
}

/// One line of a chart.
pub struct Line {
    /// Legend text.
    pub label: String,
    /// Points in chart units (already downsampled).
    pub points: Vec<(f64, f64)>,
    /// Colour.
    pub color: RGBColor,
    /// Stroke width, px.
    pub width: u32,
}

/// A vertical marker (the first divergence): drawn as our own SVG group so a page can find it.
pub struct Marker {
    /// `id` of the group.
    pub id: String,
    /// Position on the x axis, chart units.
    pub x: f64,
    /// Text beside it.
    pub label: String,
}

/// One panel: a y axis and its lines; the panels of a chart share the x axis.
pub struct Panel {
    /// y axis description.
    pub y_desc: String,
    /// y range.
    pub y_lo: f64,
    /// y range.
    pub y_hi: f64,
    /// The lines, drawn in order.
    pub lines: Vec<Line>,
}

/// A chart: x from 0 to `x_max`, one or more panels stacked, a legend at the top.
pub struct Chart {
    /// `id` of the `<svg>` element.
    pub id: String,
    /// Caption.
    pub title: String,
    /// x axis description.
    pub x_desc: String,
    /// Largest x.
    pub x_max: f64,
    /// Panels, top to bottom.
    pub panels: Vec<Panel>,
    /// Vertical markers, across every panel.
    pub markers: Vec<Marker>,
    /// Feedback events (x positions: the CNPs and NAKs a reference decision answered): short
    /// ticks at the foot of every panel.
    pub ticks: Vec<f64>,
}

/// Height of the header (caption and legend), px.
const HEADER_PX: u32 = 34;
/// Height of a panel, px.
const PANEL_PX: u32 = 200;
/// Extra height of the last panel (the x axis description), px.
const X_DESC_PX: u32 = 22;

/// Height of one more legend row, px.
const LEGEND_ROW_PX: u32 = 20;
/// Where the legend may start at the least (right of a short caption), px.
const LEGEND_LEFT_PX: i32 = 150;

impl Chart {
    /// The SVG's height, px.
    pub fn height_px(&self) -> u32 {
        let rows = self.legend_layout().last().map_or(0, |p| p.1);
        HEADER_PX + LEGEND_ROW_PX * rows + PANEL_PX * self.panels.len().max(1) as u32 + X_DESC_PX
    }

    /// Legend entries' (x px, row): one right-aligned row when they fit, else left-aligned
    /// rows that wrap at the chart's width.
    fn legend_layout(&self) -> Vec<(i32, u32)> {
        let widths: Vec<i32> = self
            .panels
            .iter()
            .flat_map(|p| &p.lines)
            .map(|l| 30 + text_px(&l.label) + 14)
            .collect();
        let right = WIDTH_PX as i32 - 12;
        // Right of the caption (about 9 px a character in bold 17 px), at most mid-width.
        let caption = 14 + self.title.chars().count() as i32 * 9 + 20;
        let left = caption.clamp(LEGEND_LEFT_PX, WIDTH_PX as i32 / 2);
        let total: i32 = widths.iter().sum();
        let mut out = Vec::with_capacity(widths.len());
        if left + total <= right {
            let mut x = right - total;
            for w in widths {
                out.push((x, 0));
                x += w;
            }
        } else {
            let (mut x, mut row) = (left, 0);
            for w in widths {
                if x + w > right && x > left {
                    x = left;
                    row += 1;
                }
                out.push((x, row));
                x += w;
            }
        }
        out
    }
}

/// Decimals that show ticks over a range of this width without noise.
fn decimals(range: f64) -> usize {
    if !(range.is_finite() && range > 0.0) {
        return 0;
    }
    let d = 2.0 - range.log10().floor();
    d.clamp(0.0, 9.0) as usize
}

/// A y range that shows `lo..hi` with a margin, and never an empty range.
pub fn y_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo.is_finite() { lo.min(0.0) } else { 0.0 };
    let hi = if hi.is_finite() { hi } else { 1.0 };
    if hi <= lo {
        (lo, lo + 1.0)
    } else {
        (lo, hi + (hi - lo) * 0.08)
    }
}

/// The Tableau 10 colours and their OKLab coordinates in thousandths (L, a, b): the first ten
/// series keep the look they always had.
const TABLEAU: [(RGBColor, [i64; 3]); 10] = [
    (RGBColor(31, 119, 180), [549, -53, -112]),
    (RGBColor(255, 127, 14), [731, 114, 146]),
    (RGBColor(44, 160, 44), [619, -147, 111]),
    (RGBColor(214, 39, 40), [567, 186, 95]),
    (RGBColor(148, 103, 189), [596, 81, -108]),
    (RGBColor(140, 86, 75), [511, 63, 40]),
    (RGBColor(227, 119, 194), [715, 151, -55]),
    (RGBColor(127, 127, 127), [596, 0, 0]),
    (RGBColor(188, 189, 34), [773, -55, 151]),
    (RGBColor(23, 190, 207), [733, -110, -55]),
];

/// OKLab (thousandths) to sRGB, `None` outside the sRGB gamut. Only products and sums up to
/// the final gamma, so the gamut test is the same on every machine.
fn oklab_to_srgb([l, a, b]: [i64; 3]) -> Option<RGBColor> {
    let (l, a, b) = (l as f64 / 1e3, a as f64 / 1e3, b as f64 / 1e3);
    let l_ = l + 0.396_337_777_4 * a + 0.215_803_757_3 * b;
    let m_ = l - 0.105_561_345_8 * a - 0.063_854_172_8 * b;
    let s_ = l - 0.089_484_177_5 * a - 1.291_485_548 * b;
    let (l3, m3, s3) = (l_ * l_ * l_, m_ * m_ * m_, s_ * s_ * s_);
    let lin = [
        4.076_741_662_1 * l3 - 3.307_711_591_3 * m3 + 0.230_969_929_2 * s3,
        -1.268_438_004_6 * l3 + 2.609_757_401_1 * m3 - 0.341_319_396_5 * s3,
        -0.004_196_086_3 * l3 - 0.703_418_614_7 * m3 + 1.707_614_701 * s3,
    ];
    if !lin.iter().all(|c| (0.0..=1.0).contains(c)) {
        return None;
    }
    let enc = |c: f64| {
        let v = if c <= 0.003_130_8 {
            12.92 * c
        } else {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        };
        (v * 255.0).round().clamp(0.0, 255.0) as u8
    };
    Some(RGBColor(enc(lin[0]), enc(lin[1]), enc(lin[2])))
}

/// `n` colours, pairwise distinct for any `n` (up to the 2^24 sRGB colours), the same on every
/// call, and each colour independent of `n` (series `i` keeps its colour when more are added).
///
/// The first ten are Tableau 10. Each further one is the candidate farthest (in OKLab, a
/// perceptual space) from every colour already chosen: candidates are a grid in OKLab
/// (L 0.40–0.75 by 0.05, so lines stay visible on white; a and b −0.3–0.3 by 0.025) inside the
/// sRGB gamut, ties to the first in grid order. Distances are integers (coordinates in
/// thousandths), so the choice does not depend on floating-point rounding. Past the grid
/// (thousands of series, never drawn: at most [`super::sim::MAX_LINES`] per chart) the
/// unused sRGB colours follow in numeric order, so colours stay distinct.
pub fn palette(n: usize) -> Vec<RGBColor> {
    let mut out: Vec<RGBColor> = TABLEAU.iter().take(n).map(|t| t.0).collect();
    if n <= TABLEAU.len() {
        return out;
    }
    let key = |c: &RGBColor| (u32::from(c.0) << 16) | (u32::from(c.1) << 8) | u32::from(c.2);
    // Grid points that round to a colour already there are left out: colours stay distinct.
    let mut seen: std::collections::BTreeSet<u32> = out.iter().map(key).collect();
    let mut cands: Vec<([i64; 3], RGBColor)> = Vec::new();
    for l in (400..=750).step_by(50) {
        for a in (-300..=300).step_by(25) {
            for b in (-300..=300).step_by(25) {
                if let Some(c) = oklab_to_srgb([l, a, b])
                    && seen.insert(key(&c))
                {
                    cands.push(([l, a, b], c));
                }
            }
        }
    }
    let d2 =
        |p: &[i64; 3], q: &[i64; 3]| -> i64 { p.iter().zip(q).map(|(x, y)| (x - y).pow(2)).sum() };
    // Squared distance of each candidate to the nearest chosen colour; -1 once chosen.
    let mut near: Vec<i64> = cands
        .iter()
        .map(|(p, _)| {
            TABLEAU
                .iter()
                .map(|t| d2(p, &t.1))
                .min()
                .unwrap_or(i64::MAX)
        })
        .collect();
    while out.len() < n {
        let Some((best, _)) = near.iter().enumerate().filter(|(_, d)| **d >= 0).fold(
            None,
            |acc: Option<(usize, i64)>, (i, &d)| match acc {
                Some((_, bd)) if bd >= d => acc,
                _ => Some((i, d)),
            },
        ) else {
            break;
        };
        near[best] = -1;
        let p = cands[best].0;
        for (i, (q, _)) in cands.iter().enumerate() {
            if near[i] >= 0 {
                near[i] = near[i].min(d2(&p, q));
            }
        }
        out.push(cands[best].1);
    }
    if out.len() < n {
        let used: std::collections::BTreeSet<u32> = out.iter().map(key).collect();
        let rest = (0u32..1 << 24)
            .filter(|v| !used.contains(v))
            .map(|v| RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8));
        out.extend(rest.take(n - out.len()));
    }
    // Only past 2^24 series: repeat (nothing draws that many).
    let k = out.len().max(1);
    while out.len() < n {
        out.push(out[out.len() % k]);
    }
    out
}

fn escape(s: &str) -> String {
    super::escape_html(s)
}

/// Rough width of `text` at 13 px sans-serif (for laying out the legend), px.
fn text_px(text: &str) -> i32 {
    (text.chars().count() as i32 * 13 / 2).max(7)
}

/// Draw the chart; the result is one `<svg>` element with `id` and class `chart`.
pub fn render(chart: &Chart) -> Result<String, String> {
    render_from(chart, 0.0)
}

/// [`render`] with the x axis from `x_min` (instead of 0) to `chart.x_max`: a time window.
pub fn render_from(chart: &Chart, x_min: f64) -> Result<String, String> {
    let mut buf = String::with_capacity(64 << 10);
    let mut extra = String::new();
    let x_min = if x_min.is_finite() { x_min } else { 0.0 };
    let x_max = if chart.x_max > x_min && chart.x_max.is_finite() {
        chart.x_max
    } else {
        x_min + 1.0
    };
    let height = chart.height_px();
    let x_dec = decimals(x_max - x_min);
    let fx = move |v: &f64| format!("{v:.x_dec$}");
    // Marker x in px and each panel's (top, bottom) in px.
    let mut marker_px: Vec<i32> = vec![0; chart.markers.len()];
    let mut tick_px: Vec<i32> = vec![0; chart.ticks.len()];
    let mut spans: Vec<(i32, i32)> = Vec::new();
    {
        let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let root = SVGBackend::with_string(&mut buf, (WIDTH_PX, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let layout = chart.legend_layout();
        let rows = layout.last().map_or(0, |p| p.1);
        let (header, body) = root.split_vertically(HEADER_PX + LEGEND_ROW_PX * rows);
        header
            .draw(&Text::new(
                chart.title.clone(),
                (14, 10),
                ("sans-serif", 17).into_font().style(FontStyle::Bold),
            ))
            .map_err(e)?;
        // Legend: on the caption's line, wrapping below it when long.
        let items = chart.panels.iter().flat_map(|p| &p.lines);
        for (l, &(x, row)) in items.zip(&layout) {
            let y = 18 + (LEGEND_ROW_PX * row) as i32;
            header
                .draw(&PathElement::new(
                    vec![(x, y), (x + 24, y)],
                    l.color.stroke_width(3),
                ))
                .map_err(e)?;
            header
                .draw(&Text::new(
                    l.label.clone(),
                    (x + 30, y - 7),
                    ("sans-serif", 13).into_font(),
                ))
                .map_err(e)?;
        }
        let n = chart.panels.len().max(1);
        let mut areas = Vec::new();
        let mut rest = body;
        for i in 0..n {
            if i + 1 == n {
                areas.push(rest.clone());
            } else {
                let (a, b) = rest.split_vertically(PANEL_PX);
                areas.push(a);
                rest = b;
            }
        }
        for (i, (area, panel)) in areas.iter().zip(&chart.panels).enumerate() {
            let last = i + 1 == chart.panels.len();
            let y_dec = decimals(panel.y_hi - panel.y_lo);
            let fy = move |v: &f64| format!("{v:.y_dec$}");
            let mut ctx = ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(24)
                .margin_top(6)
                .margin_bottom(4)
                .x_label_area_size(if last { 44 } else { 24 })
                .y_label_area_size(78)
                .build_cartesian_2d(x_min..x_max, panel.y_lo..panel.y_hi)
                .map_err(e)?;
            let mut mesh = ctx.configure_mesh();
            mesh.x_label_formatter(&fx)
                .y_label_formatter(&fy)
                .y_desc(panel.y_desc.as_str())
                .y_labels(6)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .light_line_style(RGBColor(240, 240, 240))
                .bold_line_style(RGBColor(218, 218, 218));
            if last {
                mesh.x_desc(chart.x_desc.as_str());
            }
            mesh.draw().map_err(e)?;
            for line in &panel.lines {
                let style = line.color.stroke_width(line.width);
                ctx.draw_series(LineSeries::new(line.points.iter().copied(), style))
                    .map_err(e)?;
            }
            let (_, top) = ctx.backend_coord(&(x_min, panel.y_hi));
            let (_, bottom) = ctx.backend_coord(&(x_min, panel.y_lo));
            spans.push((top, bottom));
            for (m, px) in chart.markers.iter().zip(marker_px.iter_mut()) {
                *px = ctx.backend_coord(&(m.x.clamp(x_min, x_max), panel.y_hi)).0;
            }
            for (x, px) in chart.ticks.iter().zip(tick_px.iter_mut()) {
                *px = ctx.backend_coord(&(x.clamp(x_min, x_max), panel.y_hi)).0;
            }
        }
        root.present().map_err(e)?;
    }
    if !tick_px.is_empty() {
        let _ = write!(
            extra,
            "<g class=\"feedback\"><title>feedback events (CNP, NAK): {}</title>",
            tick_px.len()
        );
        for (_, bottom) in &spans {
            for px in &tick_px {
                let _ = write!(
                    extra,
                    "<line x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{bottom}\" stroke=\"#555555\" stroke-width=\"1\"/>",
                    bottom - 10
                );
            }
        }
        extra.push_str("</g>\n");
    }
    for (m, px) in chart.markers.iter().zip(&marker_px) {
        let _ = write!(extra, "<g class=\"divergence\" id=\"{}\">", escape(&m.id));
        for (top, bottom) in &spans {
            let _ = write!(
                extra,
                "<line x1=\"{px}\" y1=\"{top}\" x2=\"{px}\" y2=\"{bottom}\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>"
            );
        }
        // Label on the side with room, just inside the first panel.
        let (anchor, dx) = if *px > (WIDTH_PX as i32) * 2 / 3 {
            ("end", -6)
        } else {
            ("start", 6)
        };
        let top = spans.first().map_or(HEADER_PX as i32, |s| s.0);
        let _ = writeln!(
            extra,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" font-family=\"sans-serif\" font-size=\"12\" font-weight=\"bold\" fill=\"#d62728\">{}</text></g>",
            px + dx,
            top + 14,
            escape(&m.label)
        );
    }
    // Our markers go last (on top); the element gets its id and class.
    if let Some(end) = buf.rfind("</svg>") {
        buf.insert_str(end, &extra);
    }
    let head = format!(
        "<svg id=\"{}\" class=\"chart\" role=\"img\" aria-label=\"{}\" ",
        escape(&chart.id),
        escape(&chart.title)
    );
    Ok(buf.replacen("<svg ", &head, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsample_keeps_spikes_and_bounds_size() {
        // 1 000 000 points at x = 0..999 999, all 1.0 except a spike of 50.0 at x = 123 457
        // and a dip to -7.0 at x = 800 001: 100 columns of 10 000 points each.
        let mut pts: Vec<(f64, f64)> = (0..1_000_000).map(|i| (i as f64, 1.0)).collect();
        pts[123_457].1 = 50.0;
        pts[800_001].1 = -7.0;
        let d = downsample(&pts, 0.0, 999_999.0, 100, false);
        assert!(d.len() <= 5 * 100, "{} points", d.len());
        assert!(d.contains(&(123_457.0, 50.0)));
        assert!(d.contains(&(800_001.0, -7.0)));
        assert_eq!(d.first(), Some(&(0.0, 1.0)));
        assert_eq!(d.last(), Some(&(999_999.0, 1.0)));
        // x stays sorted.
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn downsample_mean_averages_columns() {
        // Goodput alternating 0 and 8 at x = 0..9, 5 columns over 0..=9: column
        // floor(x / 9 * 5) puts x = {0,1}, {2,3}, {4,5}, {6,7}, {8,9} together; each pair is
        // one 0 and one 8, so every column's mean is 4 at the pair's mean x.
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), if i % 2 == 0 { 0.0 } else { 8.0 }))
            .collect();
        assert_eq!(
            downsample_mean(&pts, 0.0, 9.0, 5),
            vec![(0.5, 4.0), (2.5, 4.0), (4.5, 4.0), (6.5, 4.0), (8.5, 4.0)]
        );
        // Fewer points than columns: kept as they are.
        assert_eq!(downsample_mean(&pts[..3], 0.0, 9.0, 5), pts[..3].to_vec());
    }

    #[test]
    fn downsample_step_draws_corners() {
        // Three decisions far apart (one per column): 10 at x=0, 20 at x=5, 5 at x=9, 10
        // columns over 0..=9. A step function holds 10 until x=5, so (5, 10) comes before
        // (5, 20), and (9, 20) before (9, 5).
        let d = downsample(&[(0.0, 10.0), (5.0, 20.0), (9.0, 5.0)], 0.0, 9.0, 10, true);
        assert_eq!(
            d,
            vec![
                (0.0, 10.0),
                (5.0, 10.0),
                (5.0, 20.0),
                (9.0, 20.0),
                (9.0, 5.0)
            ]
        );
        // Non-finite points are dropped, not drawn.
        assert_eq!(
            downsample(&[(0.0, f64::NAN), (1.0, 2.0)], 0.0, 1.0, 4, false),
            vec![(1.0, 2.0)]
        );
    }

    #[test]
    fn chart_is_one_svg_with_lines_and_marker() {
        let c = Chart {
            id: "x<1>".into(),
            title: "a & b".into(),
            x_desc: "t (µs)".into(),
            x_max: 10.0,
            panels: vec![
                Panel {
                    y_desc: "Gbps".into(),
                    y_lo: 0.0,
                    y_hi: 30.0,
                    lines: vec![Line {
                        label: "ref".into(),
                        points: vec![(0.0, 25.0), (10.0, 20.0)],
                        color: RGBColor(1, 2, 3),
                        width: 4,
                    }],
                },
                Panel {
                    y_desc: "KB".into(),
                    y_lo: 0.0,
                    y_hi: 20.0,
                    lines: vec![Line {
                        label: "<dut>".into(),
                        points: vec![(0.0, 10.0), (10.0, 12.0)],
                        color: RGBColor(4, 5, 6),
                        width: 1,
                    }],
                },
            ],
            markers: vec![Marker {
                id: "m".into(),
                x: 5.0,
                label: "first divergence".into(),
            }],
            ticks: Vec::new(),
        };
        let svg = render(&c).unwrap();
        assert!(svg.starts_with("<svg id=\"x&lt;1&gt;\" class=\"chart\""));
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(svg.trim_end().ends_with("</svg>"));
        // 34 px header + 2 panels of 200 px + 22 px for the x description = 456 px.
        assert!(svg.contains("height=\"456\""));
        assert!(svg.contains("stroke=\"#010203\" stroke-width=\"4\""));
        assert!(svg.contains("stroke=\"#040506\" stroke-width=\"1\""));
        assert!(svg.contains("&lt;dut&gt;"));
        assert!(!svg.contains("<dut>"));
        // The marker crosses both panels: two lines in one group.
        let g = &svg[svg.find("<g class=\"divergence\" id=\"m\">").unwrap()..];
        assert_eq!(g[..g.find("</g>").unwrap()].matches("<line").count(), 2);
        assert_eq!(render(&c).unwrap(), svg, "deterministic");
    }
}
