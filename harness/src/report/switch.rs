//! The HTML page of `ccreplay switch --report`: the verdict, the marking table and the chart of
//! observed against configured marking probability over the queue, INT and PFC findings.

use std::fmt::Write as _;

use ccreplay_reference_cc::dcqcn::cp::{RedParams, marking_probability};
use plotters::style::RGBColor;

use super::chart::{self, Chart, Line, Panel};
use super::{escape_html, page};
use crate::switch::{Red, Verdict};

/// The marking chart: the profile's p(q) and the observed share marked per bin (at the bin's
/// middle), queue in KB.
fn marking_chart(v: &Verdict, red: &Red) -> Result<Option<String>, String> {
    let Some(m) = &v.marking else {
        return Ok(None);
    };
    let profile = RedParams {
        kmin_bytes: red.kmin_bytes,
        kmax_bytes: red.kmax_bytes,
        pmax: red.pmax,
    };
    let x_max = red.kmax_bytes as f64 * 1.25;
    let configured: Vec<(f64, f64)> = (0..=400)
        .map(|i| {
            let q = x_max * f64::from(i) / 400.0;
            (q / 1e3, marking_probability(q as u64, &profile))
        })
        .collect();
    let observed: Vec<(f64, f64)> = m
        .bins
        .iter()
        .filter(|b| b.packets > 0)
        .map(|b| {
            (
                (b.lo + b.hi) as f64 / 2.0 / 1e3,
                b.marked as f64 / b.packets as f64,
            )
        })
        .collect();
    let ch = Chart {
        id: "marking".into(),
        title: format!("ECN marking at {}", v.port),
        x_desc: "bytes queued ahead of the packet (KB)".into(),
        x_max: x_max / 1e3,
        panels: vec![Panel {
            y_desc: "marking probability".into(),
            y_lo: 0.0,
            y_hi: 1.05,
            lines: vec![
                Line {
                    label: "configured (RED profile)".into(),
                    points: configured,
                    color: RGBColor(158, 202, 225),
                    width: 5,
                },
                Line {
                    label: "observed (share marked per bin)".into(),
                    points: observed,
                    color: RGBColor(8, 81, 156),
                    width: 2,
                },
            ],
        }],
        markers: Vec::new(),
        ticks: Vec::new(),
    };
    chart::render(&ch).map(Some)
}

/// The page.
pub fn render(v: &Verdict, red: Option<&Red>, text: &str) -> Result<String, String> {
    let mut body = String::new();
    let verdict = if !v.insufficient.is_empty() {
        ("NOT JUDGED", "differs")
    } else if v.failures.is_empty() {
        ("CONFORMANT", "ok")
    } else {
        ("DEVIATES", "differs")
    };
    let _ = writeln!(
        body,
        "<h1>ccreplay switch — {}</h1>\n<p><span class=\"verdict {}\" id=\"verdict\">{}</span></p>",
        escape_html(&v.port),
        verdict.1,
        verdict.0
    );
    if !v.failures.is_empty() {
        body.push_str("<h2>Failed checks</h2>\n<ul>\n");
        for f in &v.failures {
            let _ = writeln!(
                body,
                "<li><code>{}</code>: {}</li>",
                escape_html(f.check),
                escape_html(&f.message)
            );
        }
        body.push_str("</ul>\n");
    }
    if let (Some(red), Some(m)) = (red, &v.marking) {
        body.push_str("<h2>ECN marking</h2>\n");
        if let Some(svg) = marking_chart(v, red)? {
            body.push_str(&svg);
        }
        body.push_str(
            "<table class=\"summary\" id=\"marking-bins\">\n<thead><tr><th>queue (B)</th>\
             <th>packets</th><th>marked</th><th>observed</th><th>configured</th><th>z</th>\
             <th>p</th></tr></thead>\n<tbody>\n",
        );
        for b in &m.bins {
            let _ = writeln!(
                body,
                "<tr><td>{}..{}</td><td>{}</td><td>{}</td><td>{:.2} %</td><td>{:.2} %</td>\
                 <td>{:.2}</td><td>{:.2e}</td></tr>",
                b.lo,
                b.hi,
                b.packets,
                b.marked,
                if b.packets > 0 {
                    100.0 * b.marked as f64 / b.packets as f64
                } else {
                    0.0
                },
                100.0 * b.p_configured,
                b.z,
                b.p_value
            );
        }
        body.push_str("</tbody></table>\n");
    }
    let _ = writeln!(
        body,
        "<h2>All findings</h2>\n<pre>{}</pre>",
        escape_html(text)
    );
    Ok(page(&format!("ccreplay switch — {}", v.port), &body))
}
