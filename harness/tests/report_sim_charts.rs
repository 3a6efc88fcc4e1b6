//! `ccreplay report sim` charts that people can read (issue 14, item 11): the steady-state
//! companion of the queue chart, the `--from/--to` time window, a distinct colour per series
//! and Jain's index over time.
//!
//! Every expected number is worked out in the comments from the hand-written `metrics.json`
//! below; the palette's distances are measured in CIELAB, a space the palette code does not
//! use, and its first generated colours come from an independent Python re-implementation of
//! the rule in docs/report.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ccreplay::report::chart::palette;
use ccreplay::report::sim::{SteadyState, Window, jain, jain_over_time, parse_time, steady_state};
use ccreplay_reference_cc::net::Metrics;

mod common;

/// Queue samples every 1 µs from 1 to 20 µs on `sw0:p1`: a 100 KB spike that drains by 5 µs,
/// then 2.5–3.1 KB; `sw0:p0` stays empty. Rates of three flows (flow 2 runs 2.5–3.5 µs).
const METRICS: &str = r#"{
  "version": 1, "scenario": "spike", "seed": 1, "model": "hpcc",
  "duration_ns": 20000, "sample_interval_ns": 1000,
  "flows": [
    {"id": 0, "src": "h0", "dst": "h3", "size_bytes": 1000000, "start_ns": 0,
     "rate_bps": {"t_ns": [1000, 2000, 3000, 4000], "v": [1000000000, 1000000000, 1000000000, 1000000000]}},
    {"id": 1, "src": "h1", "dst": "h3", "size_bytes": 1000000, "start_ns": 0,
     "rate_bps": {"t_ns": [1000, 2000, 3000, 4000], "v": [1000000000, 0, 2000000000, 2000000000]}},
    {"id": 2, "src": "h2", "dst": "h3", "size_bytes": 1000, "start_ns": 2500,
     "finish_ns": 3500, "fct_ns": 1000, "bytes_acked": 1000,
     "rate_bps": {"t_ns": [3000, 4000], "v": [3000000000, 3000000000]}}
  ],
  "ports": [
    {"name": "sw0:p0", "node": "sw0", "port": 0, "peer": "h0",
     "queue_bytes": {"t_ns": [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
                              11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000, 20000],
                     "v": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}},
    {"name": "sw0:p1", "node": "sw0", "port": 1, "peer": "h3",
     "queue_bytes": {"t_ns": [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
                              11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000, 20000],
                     "v": [100000, 80000, 40000, 9000, 3000, 2500, 3100, 2800, 2900, 3000,
                           2700, 3050, 2950, 2850, 3000, 2900, 2800, 2950, 3000, 2900]}}
  ]
}"#;

fn metrics() -> Metrics {
    serde_json::from_str(METRICS).unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("report-sim-{name}"))
}

fn ccreplay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run ccreplay")
}

fn run_ok(args: &[&str]) {
    let out = ccreplay(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "ccreplay {args:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The numeric tick labels of a plotters SVG: (x axis, y axis). y labels are right-aligned
/// (`text-anchor="end"`), x labels centred below the axis (`dy="0.76em"`, not rotated).
fn ticks(svg: &str) -> (Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap();
        let tag = &rest[..tag_end];
        let close = rest.find("</text>").unwrap();
        let label = rest[tag_end + 1..close].trim();
        if let Ok(v) = label.parse::<f64>() {
            if tag.contains("text-anchor=\"end\"") {
                ys.push(v);
            } else if tag.contains("text-anchor=\"middle\"")
                && tag.contains("dy=\"0.76em\"")
                && !tag.contains("transform")
            {
                xs.push(v);
            }
        }
        rest = &rest[close..];
    }
    (xs, ys)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

#[test]
fn steady_state_starts_after_the_last_sample_above_the_second_half_peak() {
    let m = metrics();
    // Whole run, 0..20 µs: the second half is t >= 10 µs, whose largest sample is 3050 B
    // (t = 12 µs). Samples above it: 1–4 µs (the spike) and 3100 B at 7 µs, the last one; the
    // next sample is at 8 µs.
    let w = Window::new(20_000, None, None).unwrap();
    assert_eq!(
        steady_state(&m.ports, w),
        Some(SteadyState {
            from_ns: 8_000,
            to_ns: 20_000,
            level_bytes: 3_050
        })
    );
    // Window 10–20 µs: second half t >= 15 µs, largest 3000 B; above it 3050 B at 12 µs, so
    // the steady state starts at 13 µs.
    let w = Window::new(20_000, Some(10_000), Some(20_000)).unwrap();
    assert_eq!(
        steady_state(&m.ports, w),
        Some(SteadyState {
            from_ns: 13_000,
            to_ns: 20_000,
            level_bytes: 3_000
        })
    );
    // Window 15–20 µs: second half t >= 17.5 µs has 2950, 3000, 2900: level 3000, and no
    // sample of 15–20 µs exceeds it (15 µs is 3000, not above): no transient, no companion.
    let w = Window::new(20_000, Some(15_000), None).unwrap();
    assert_eq!(steady_state(&m.ports, w), None);
}

#[test]
fn zoomed_queue_chart_is_scaled_by_the_steady_state_not_the_spike() {
    let work = tmpdir("zoom");
    std::fs::write(work.join("metrics.json"), METRICS).unwrap();
    let (html, svgs) = (work.join("sim.html"), work.join("svg"));
    let args = [
        "report",
        "sim",
        work.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--svg-dir",
        svgs.to_str().unwrap(),
    ];
    run_ok(&args);
    let page = read(&html);
    // The full chart goes up to the 100 KB spike: y ticks past 80 KB.
    let (_, full_y) = ticks(&read(&svgs.join("sim-queue.svg")));
    assert!(max(&full_y) >= 80.0, "{full_y:?}");
    // The companion runs from 8 µs (see above) and its y axis ends 8 % above the steady
    // level, 3.05 KB × 1.08 = 3.294 KB: every tick at or below that, the top one above 2.5.
    let steady = read(&svgs.join("sim-queue-steady.svg"));
    let (xs, ys) = ticks(&steady);
    assert!(max(&ys) <= 3.294 && max(&ys) >= 2.5, "{ys:?}");
    assert!(min(&xs) >= 8.0 && max(&xs) <= 20.0, "{xs:?}");
    assert!(page.contains("Egress queues, steady state (from 8.000 µs)"));
    assert!(page.contains("the last one above 3050 B"));
    // Same input, same bytes.
    let first = page.clone();
    run_ok(&args);
    assert_eq!(read(&html), first);
}

#[test]
fn from_to_restricts_every_time_chart() {
    let work = tmpdir("window");
    std::fs::write(work.join("metrics.json"), METRICS).unwrap();
    let (html, svgs) = (work.join("sim.html"), work.join("svg"));
    run_ok(&[
        "report",
        "sim",
        work.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--svg-dir",
        svgs.to_str().unwrap(),
        "--from",
        "10us",
        "--to",
        "20000",
    ]);
    let page = read(&html);
    for id in ["sim-rate", "sim-jain", "sim-queue", "sim-queue-steady"] {
        let (xs, _) = ticks(&read(&svgs.join(format!("{id}.svg"))));
        assert!(xs.len() >= 3, "{id}: {xs:?}");
        assert!(min(&xs) >= 10.0 && max(&xs) <= 20.0, "{id}: {xs:?}");
    }
    // Inside 10–20 µs the largest queue is 3050 B (12 µs): the queue chart's axis ends at
    // 3.294 KB, the spike is out of the window.
    let (_, ys) = ticks(&read(&svgs.join("sim-queue.svg")));
    assert!(max(&ys) <= 3.294, "{ys:?}");
    // The companion of the window starts at 13 µs (see above).
    assert!(page.contains("Egress queues, steady state (from 13.000 µs)"));
    assert!(page.contains("10.000 µs to 20.000 µs"));
    // A window outside the run, or empty: exit 2 with the reason; nothing is written.
    let out = work.join("no.html");
    for (from, to, why) in [
        ("30us", "40us", "the run ends at 20.000 µs"),
        ("5us", "5us", "must be after --from"),
    ] {
        let o = ccreplay(&[
            "report",
            "sim",
            work.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--from",
            from,
            "--to",
            to,
        ]);
        assert_eq!(o.status.code(), Some(2), "{from}..{to}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(why));
        assert!(!out.exists());
    }
    // Not a time: clap refuses it (exit 2).
    let o = ccreplay(&["report", "sim", work.to_str().unwrap(), "--from", "ten"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Without `--from` / `--to` the time charts show the time the run sampled: from one
/// interval before its first sample to its last (a run samples only from its first flow's
/// start until the network is quiet, docs/metrics.md). METRICS moved 500 µs later in a 1 ms
/// run: first sample 501,000 ns, interval 1,000 → the window is 500,000–520,000 ns, x ticks
/// within 500–520 µs. `sw0:p0` never queued: left out of the queue chart, and said so.
#[test]
fn the_default_window_is_the_sampled_time_and_idle_ports_are_not_drawn() {
    // Samples at 1-20 µs of a 20 µs run: the whole run, as before.
    assert_eq!(
        Window::sampled(&metrics()),
        Window {
            from_ns: 0,
            to_ns: 20_000
        }
    );
    let mut m = metrics();
    m.duration_ns = 1_000_000;
    let shift = |s: &mut ccreplay_reference_cc::net::metrics::Series| {
        s.t_ns.iter_mut().for_each(|t| *t += 500_000);
    };
    for f in &mut m.flows {
        shift(&mut f.rate_bps);
    }
    for p in &mut m.ports {
        shift(&mut p.queue_bytes);
    }
    assert_eq!(
        Window::sampled(&m),
        Window {
            from_ns: 500_000,
            to_ns: 520_000
        }
    );
    let (page, svgs) = ccreplay::report::sim::render(&m, "metrics.json").unwrap();
    let queue = &svgs.iter().find(|(id, _)| id == "sim-queue").unwrap().1;
    let (xs, _) = ticks(queue);
    assert!(xs.len() >= 3, "{xs:?}");
    assert!(min(&xs) >= 500.0 && max(&xs) <= 520.0, "{xs:?}");
    assert!(queue.contains("sw0:p1") && !queue.contains("sw0:p0"));
    assert!(page.contains("1 of 2 ports never queued a byte: not drawn."));
    // 34 ports that queued, port i peaking at (i + 1) × 100 B: the 32 lines drawn are the
    // deepest, sw0:p2..sw0:p33, not sw0:p0 or sw0:p1.
    let mut many = metrics();
    let template = many.ports[1].clone();
    many.ports = (0..34u64)
        .map(|i| {
            let mut p = template.clone();
            p.name = format!("sw0:p{i}");
            p.queue_bytes.v = vec![(i + 1) * 100; p.queue_bytes.t_ns.len()];
            p
        })
        .collect();
    let (page, svgs) = ccreplay::report::sim::render(&many, "metrics.json").unwrap();
    let queue = &svgs.iter().find(|(id, _)| id == "sim-queue").unwrap().1;
    let legend = |name: &str| queue.contains(&format!(">\n{name}\n<"));
    let missing: Vec<u64> = (2..34).filter(|i| !legend(&format!("sw0:p{i}"))).collect();
    assert!(missing.is_empty(), "not in the legend: {missing:?}");
    assert!(!legend("sw0:p0") && !legend("sw0:p1"));
    assert!(page.contains("32 of 34 series drawn."));
    // Nothing sampled: the whole run.
    let mut empty = metrics();
    empty.flows.clear();
    empty.ports.clear();
    assert_eq!(
        Window::sampled(&empty),
        Window {
            from_ns: 0,
            to_ns: 20_000
        }
    );
}

#[test]
fn times_take_units() {
    assert_eq!(parse_time("1500"), Ok(1_500));
    assert_eq!(parse_time("1500ns"), Ok(1_500));
    assert_eq!(parse_time("1.5us"), Ok(1_500));
    assert_eq!(parse_time("1.5µs"), Ok(1_500));
    assert_eq!(parse_time("2ms"), Ok(2_000_000));
    assert_eq!(parse_time("0.25s"), Ok(250_000_000));
    assert_eq!(parse_time("300 us"), Ok(300_000));
    // Half a nanosecond, negative, no number, an unknown unit, past u64: errors.
    for bad in [
        "1.0005us",
        "-1",
        "",
        "us",
        "1.2.3",
        "5h",
        "18446744073709551616",
        "1e3",
    ] {
        assert!(parse_time(bad).is_err(), "{bad}");
    }
}

#[test]
fn jain_index_by_hand() {
    // (Σx)² / (n·Σx²): 1,1 → 4/(2·2) = 1; 1,0 → 1/(2·1) = 0.5; 1,2,3 → 36/(3·14) = 36/42.
    assert_eq!(jain(&[1.0, 1.0]), Some(1.0));
    assert_eq!(jain(&[1.0, 0.0]), Some(0.5));
    assert!((jain(&[1.0, 2.0, 3.0]).unwrap() - 36.0 / 42.0).abs() < 1e-15);
    assert_eq!(jain(&[5.0]), Some(1.0));
    assert_eq!(jain(&[]), None);
    assert_eq!(jain(&[0.0, 0.0]), None);
}

#[test]
fn jain_over_time_counts_the_flows_active_at_each_sample() {
    let m = metrics();
    // 1 µs: flows 0 and 1 at 1 Gbps (flow 2 starts at 2.5 µs) → 1. 2 µs: 1 and 0 Gbps → 0.5.
    // 3 µs: 1, 2, 3 Gbps → 36/42. 4 µs: flow 2 finished at 3.5 µs; 1 and 2 Gbps →
    // 9/(2·5) = 0.9. At 0 no flow has a rate yet: no point.
    let j = jain_over_time(&m.flows, Window::new(20_000, None, None).unwrap());
    let want = [
        (1_000, 1.0),
        (2_000, 0.5),
        (3_000, 36.0 / 42.0),
        (4_000, 0.9),
    ];
    assert_eq!(j.len(), want.len(), "{j:?}");
    for ((t, v), (wt, wv)) in j.iter().zip(want) {
        assert_eq!(*t, wt);
        assert!((v - wv).abs() < 1e-12, "{t}: {v} vs {wv}");
    }
    // Window 2.5–3.5 µs: at 2.5 µs the rates hold their 2 µs values (1, 0) and flow 2 has
    // started but has no rate yet → 0.5; at 3 µs → 36/42.
    let j = jain_over_time(
        &m.flows,
        Window::new(20_000, Some(2_500), Some(3_500)).unwrap(),
    );
    assert_eq!(j.len(), 2, "{j:?}");
    assert_eq!(j[0], (2_500, 0.5));
    assert_eq!(j[1].0, 3_000);
    assert!((j[1].1 - 36.0 / 42.0).abs() < 1e-12);
}

/// sRGB (8 bit) to CIELAB (D65), by the CIE formulas: a space the palette code does not use.
fn lab(c: (u8, u8, u8)) -> [f64; 3] {
    let lin = |v: u8| {
        let v = f64::from(v) / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let (r, g, b) = (lin(c.0), lin(c.1), lin(c.2));
    let x = (0.412_456_4 * r + 0.357_576_1 * g + 0.180_437_5 * b) / 0.950_47;
    let y = 0.212_672_9 * r + 0.715_152_2 * g + 0.072_175 * b;
    let z = (0.019_333_9 * r + 0.119_192 * g + 0.950_304_1 * b) / 1.088_83;
    let f = |t: f64| {
        if t > 216.0 / 24389.0 {
            t.cbrt()
        } else {
            (24389.0 / 27.0 * t + 16.0) / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

fn delta_e(p: (u8, u8, u8), q: (u8, u8, u8)) -> f64 {
    let (a, b) = (lab(p), lab(q));
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

fn rgb(n: usize) -> Vec<(u8, u8, u8)> {
    palette(n).into_iter().map(|c| (c.0, c.1, c.2)).collect()
}

#[test]
fn palette_colours_are_distinct_and_far_apart() {
    let all = rgb(64);
    // The first ten are Tableau 10; the next 54, from the Python re-implementation of the
    // documented rule (farthest OKLab grid point, ties to the first in grid order: from the
    // 28th colour on there are ties).
    assert_eq!(all[0], (31, 119, 180));
    assert_eq!(all[9], (23, 190, 207));
    let generated: [(u8, u8, u8); 54] = [
        (80, 17, 174),
        (12, 87, 15),
        (144, 13, 123),
        (148, 1, 251),
        (17, 64, 252),
        (61, 70, 99),
        (230, 19, 227),
        (194, 167, 156),
        (160, 164, 253),
        (137, 3, 36),
        (173, 139, 28),
        (20, 208, 100),
        (251, 33, 137),
        (202, 115, 106),
        (98, 63, 12),
        (80, 138, 249),
        (39, 113, 101),
        (110, 121, 32),
        (176, 69, 125),
        (121, 174, 125),
        (21, 75, 181),
        (177, 20, 194),
        (105, 84, 227),
        (110, 86, 141),
        (85, 152, 191),
        (187, 88, 244),
        (35, 147, 130),
        (247, 137, 135),
        (99, 40, 123),
        (100, 16, 249),
        (130, 46, 193),
        (213, 38, 168),
        (175, 145, 189),
        (249, 107, 248),
        (1, 30, 203),
        (104, 53, 70),
        (27, 120, 11),
        (236, 88, 23),
        (171, 48, 63),
        (217, 163, 68),
        (144, 179, 207),
        (187, 128, 233),
        (178, 81, 28),
        (161, 109, 142),
        (63, 58, 137),
        (228, 87, 122),
        (128, 177, 52),
        (126, 18, 82),
        (18, 92, 128),
        (68, 94, 53),
        (141, 53, 28),
        (99, 99, 99),
        (84, 84, 183),
        (139, 60, 153),
    ];
    assert_eq!(all[10..], generated);
    for n in 1..=64 {
        let p = rgb(n);
        assert_eq!(p.len(), n);
        // Series i keeps its colour whatever n is.
        assert_eq!(p, all[..n]);
        let mut closest = f64::INFINITY;
        for i in 0..n {
            for j in i + 1..n {
                assert_ne!(p[i], p[j], "n = {n}: colours {i} and {j}");
                closest = closest.min(delta_e(p[i], p[j]));
            }
        }
        // CIELAB ΔE76 ≈ 2.3 is a just-noticeable difference; the Python re-implementation
        // measures 27.7 for Tableau 10 and 10.38 for all 64.
        assert!(closest >= 10.0, "n = {n}: two colours {closest:.2} apart");
        // Visible on the white page: CIELAB L* at most 75 (Tableau's lightest is 74.3).
        for c in &p {
            assert!(lab(*c)[0] <= 75.0, "{c:?}");
        }
    }
    // Past the grid's 1219 candidates the remaining sRGB colours are used: still distinct.
    let many = rgb(3000);
    let mut sorted = many.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 3000);
    assert_eq!(many[..64], all[..]);
}

#[test]
fn forty_flows_get_thirty_two_distinct_line_colours() {
    // 40 flows with a rate each: the chart draws MAX_LINES = 32, each in its own colour.
    let flows: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"id": {i}, "src": "h{i}", "dst": "h40", "rate_bps": {{"t_ns": [1000, 2000], "v": [{}, {}]}}}}"#,
                1_000_000_000 + i,
                2_000_000_000 + i
            )
        })
        .collect();
    let json = format!(
        r#"{{"version": 1, "scenario": "many", "duration_ns": 2000, "flows": [{}]}}"#,
        flows.join(",")
    );
    let work = tmpdir("many");
    std::fs::write(work.join("metrics.json"), json).unwrap();
    let (html, svgs) = (work.join("sim.html"), work.join("svg"));
    run_ok(&[
        "report",
        "sim",
        work.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--svg-dir",
        svgs.to_str().unwrap(),
    ]);
    let svg = read(&svgs.join("sim-rate.svg"));
    // Data lines are 2 px wide (legend swatches 3 px).
    let mut colours: Vec<&str> = svg
        .split("<polyline ")
        .skip(1)
        .filter(|p| p.contains("stroke-width=\"2\""))
        .filter_map(|p| p.split("stroke=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(colours.len(), 32);
    colours.sort_unstable();
    colours.dedup();
    assert_eq!(colours.len(), 32);
    assert!(read(&html).contains("32 of 40 series drawn."));
}
