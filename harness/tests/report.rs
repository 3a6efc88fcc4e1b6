//! `ccreplay report`: the HTML files it writes, checked as text and, when Chromium is
//! installed, rendered by headless Chromium (`--dump-dom` for the elements, `--screenshot` for
//! the pixels). Without Chromium the browser half is skipped with a message, unless
//! `CCREPLAY_REQUIRE_CHROMIUM=1` (CI) turns that into a failure.
//!
//! Numbers asserted come from the bundled files, read independently of the report code: the
//! golden file's line count (the reference decisions), the edit a test makes to a copy of it
//! (which decision, by how much), and a hand-written `metrics.json`.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("report-{name}"))
}

fn ccreplay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run ccreplay")
}

fn run_ok(args: &[&str], code: i32) -> String {
    let out = ccreplay(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "ccreplay {args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The Chromium binary, or `None` (skip) when it is not installed and not required.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        if std::env::var("CCREPLAY_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!(
                "CCREPLAY_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)"
            );
        }
        eprintln!(
            "SKIPPED: chromium is not installed: the HTML report was checked as text only \
             (apt-get install chromium to render it; CCREPLAY_REQUIRE_CHROMIUM=1 makes this fail)"
        );
    }
    found
}

/// Run headless Chromium on `html` with `mode` (`--dump-dom` or `--screenshot=FILE`), with a
/// time limit; returns its stdout.
fn headless(browser: &Path, html: &Path, mode: &str, work: &Path) -> String {
    let profile = work.join(format!(
        "profile-{}",
        mode.trim_start_matches("--")
            .split('=')
            .next()
            .unwrap_or("x")
    ));
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--window-size=1200,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut s);
        s
    });
    let start = Instant::now();
    loop {
        match child.try_wait().unwrap() {
            Some(_) => break,
            None if start.elapsed() > Duration::from_secs(120) => {
                let _ = child.kill();
                panic!("chromium did not finish in 120 s on {}", html.display());
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    reader.join().unwrap()
}

/// Pixels of a screenshot: (total, not white, close to each of `colors`).
type Pixels = (usize, usize, Vec<usize>);

/// Count the [`Pixels`] of a PNG screenshot.
fn pixels(png_path: &Path, colors: &[(u8, u8, u8)]) -> Pixels {
    let f = std::fs::File::open(png_path).unwrap_or_else(|e| panic!("{}: {e}", png_path.display()));
    let mut dec = png::Decoder::new(BufReader::new(f));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    let data = &buf[..info.buffer_size()];
    let (mut total, mut non_white) = (0, 0);
    let mut hits = vec![0; colors.len()];
    for px in data.chunks_exact(step) {
        total += 1;
        if px[..3].iter().any(|&c| c < 245) {
            non_white += 1;
        }
        for (i, c) in colors.iter().enumerate() {
            if px[0].abs_diff(c.0) <= 3 && px[1].abs_diff(c.1) <= 3 && px[2].abs_diff(c.2) <= 3 {
                hits[i] += 1;
            }
        }
    }
    (total, non_white, hits)
}

// Colours of the report (harness/src/report/mod.rs): reference rate band, DUT rate line,
// divergence marker.
const REF_RATE: (u8, u8, u8) = (0x9e, 0xca, 0xe1);
const DUT_RATE: (u8, u8, u8) = (0x08, 0x51, 0x9c);
const MARKER_RED: (u8, u8, u8) = (0xd6, 0x27, 0x28);

/// Render in Chromium: the DOM after parsing and the screenshot's pixel counts.
fn render(html: &Path, work: &Path) -> Option<(String, Pixels)> {
    let browser = chromium()?;
    let dom = headless(&browser, html, "--dump-dom", work);
    assert!(
        dom.contains("</html>"),
        "chromium printed no DOM: {dom:.200}"
    );
    let shot = work.join("shot.png");
    headless(
        &browser,
        html,
        &format!("--screenshot={}", shot.display()),
        work,
    );
    let px = pixels(&shot, &[REF_RATE, DUT_RATE, MARKER_RED]);
    // 1200 x 2000 window.
    assert_eq!(px.0, 1200 * 2000, "screenshot size");
    Some((dom, px))
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Decisions of the golden file, as (t, flow, line index).
fn golden_lines() -> Vec<String> {
    read(&root().join("golden/hpcc_dumbbell/hpcc.jsonl"))
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn buggy_dut_diff_report_marks_divergences_and_renders() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 is not installed (the example DUT is a Python script)");
        return;
    }
    let work = tmpdir("bug");
    let out = work.join("diff.html");
    let out_s = out.to_str().unwrap();
    // The example DUT with its deliberate bug: W_AI added twice (HPCC-8) -> windows differ.
    let stdout = run_ok(
        &[
            "report",
            "diff",
            "traces/hpcc_dumbbell.toml",
            "--dut",
            "process:python3 examples/duts/hpcc_dut.py --bug wai-twice",
            "-o",
            out_s,
        ],
        1,
    );
    assert!(stdout.contains("DIFFERENCES FOUND"), "{stdout}");
    let html = read(&out);
    // The manifest lists 3 flows: 3 table rows, 3 charts.
    assert_eq!(count(&html, "<tr class=\"flow-row "), 3);
    assert_eq!(count(&html, "class=\"chart\""), 3);
    // The reference makes the golden file's decisions: one per line.
    let n_ref = golden_lines().len();
    assert!(
        html.contains(&format!(
            "<td class=\"l\" colspan=\"2\">3 flows</td><td>{n_ref}</td>"
        )),
        "total row with {n_ref} reference decisions"
    );
    assert!(html.contains("id=\"verdict\">DIFFERENCES FOUND<"));
    // One marker per differing flow. The bug is in the window (W_AI twice in ComputeWind,
    // HPCC-6), and the pacing rate follows the window (HPCC-1), so both show at the first divergence.
    let differing = count(&html, "<tr class=\"flow-row differs\"");
    assert!(differing >= 1);
    assert_eq!(count(&html, "<g class=\"divergence\""), differing);
    assert_eq!(
        count(&html, "µs: rate_bps, window_bytes</text>"),
        differing,
        "markers name the window and the rate"
    );
    // The DUT's command line is shown, escaped.
    assert!(html.contains("process:python3 examples/duts/hpcc_dut.py --bug wai-twice"));
    // Nothing to fetch.
    for external in ["<script", "<link", "http://", "https://", "@import", "url("] {
        let n = count(&html, external)
            - if external == "http://" {
                count(&html, "http://www.w3.org/2000/svg")
            } else {
                0
            };
        assert_eq!(n, 0, "{external} in a self-contained page");
    }

    let Some((dom, (total, non_white, hits))) = render(&out, &work) else {
        return;
    };
    // Chromium parsed the SVG as SVG: three chart elements, each with its four series
    // (reference rate, DUT rate, reference window, DUT window) as polylines.
    assert_eq!(count(&dom, "<svg id=\"c0-chart-"), 3, "charts in the DOM");
    assert_eq!(count(&dom, "stroke=\"#9ECAE1\" stroke-width=\"5\""), 3);
    assert_eq!(count(&dom, "stroke=\"#08519C\" stroke-width=\"2\""), 3);
    assert_eq!(count(&dom, "<g class=\"divergence\""), differing);
    assert_eq!(count(&dom, "<tr class=\"flow-row "), 3);
    // The screenshot is a page, not a blank: text, axes and lines cover well over 2 % of it,
    // and the charts' own colours are on screen.
    assert!(
        non_white * 50 > total,
        "{non_white} of {total} pixels not white"
    );
    assert!(hits[0] > 500, "reference rate band: {} px", hits[0]);
    assert!(hits[1] > 200, "DUT rate line: {} px", hits[1]);
    assert!(hits[2] > 50, "divergence marker: {} px", hits[2]);
}

#[test]
fn edited_golden_file_diverges_exactly_where_edited() {
    let work = tmpdir("edit");
    // Edit flow 1's 10th decision in a copy of the golden file: window_bytes + 1000.
    let lines = golden_lines();
    let t0: u64 = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["t"]
                .as_u64()
                .unwrap()
        })
        .min()
        .unwrap();
    let mut seen = 0;
    let mut edited = Vec::new();
    let mut target = None;
    for l in &lines {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["flow"] == 1 {
            seen += 1;
            if seen == 10 {
                let w = v["window_bytes"].as_u64().unwrap();
                v["window_bytes"] = (w + 1000).into();
                target = Some((v["t"].as_u64().unwrap(), w));
            }
        }
        edited.push(serde_json::to_string(&v).unwrap());
    }
    let (t_edit, w_orig) = target.expect("flow 1 has 10 decisions");
    let golden = work.join("edited.jsonl");
    std::fs::write(&golden, edited.join("\n") + "\n").unwrap();
    let out = work.join("edit.html");
    run_ok(
        &[
            "diff",
            "traces/hpcc_dumbbell.toml",
            "--golden",
            golden.to_str().unwrap(),
            "--report",
            out.to_str().unwrap(),
        ],
        1,
    );
    let html = read(&out);
    // Only flow 1 differs, by one decision.
    assert_eq!(count(&html, "<tr class=\"flow-row differs\""), 1);
    assert_eq!(count(&html, "<tr class=\"flow-row ok\""), 2);
    assert!(html.contains("<tr class=\"flow-row differs\" data-flow=\"1\">"));
    assert_eq!(count(&html, "<g class=\"divergence\""), 1);
    assert!(html.contains("<g class=\"divergence\" id=\"c0-div-1\">"));
    // The marker sits at the edited decision's time, in µs after the first decision.
    let dt = t_edit - t0;
    let label = format!(
        "first divergence {}.{:03} µs: window_bytes",
        dt / 1000,
        dt % 1000
    );
    assert!(html.contains(&label), "{label}");
    // Largest error: 1000 bytes, relative to the reference's (unedited) window.
    let largest = format!("window_bytes 1000 (rel {:.3e})", 1000.0 / w_orig as f64);
    assert!(html.contains(&largest), "{largest}");
    assert!(html.contains(&format!("(t = {t_edit} ns)")));
    assert!(html.contains(&format!("<td>{w_orig}</td><td>{}</td>", w_orig + 1000)));

    // Same input, same bytes.
    let again = work.join("again.html");
    run_ok(
        &[
            "report",
            "diff",
            "traces/hpcc_dumbbell.toml",
            "--golden",
            golden.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
        ],
        1,
    );
    assert!(read(&again) == html, "the report is deterministic");
}

#[test]
fn names_from_the_user_are_escaped() {
    let work = tmpdir("escape");
    // A trace whose file name is markup.
    let name = "x<b>&\"q'";
    let manifest = read(&root().join("traces/hpcc_dumbbell.toml")).replace(
        "capture = \"hpcc_dumbbell.pcap\"",
        &format!(
            "capture = \"{}\"",
            root().join("traces/hpcc_dumbbell.pcap").display()
        ),
    );
    let m = work.join(format!("{name}.toml"));
    std::fs::write(&m, manifest).unwrap();
    let out = work.join("e.html");
    run_ok(
        &[
            "report",
            "diff",
            m.to_str().unwrap(),
            "--dut",
            "model:hpcc",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let html = read(&out);
    assert!(html.contains("x&lt;b&gt;&amp;&quot;q&#39; / hpcc"));
    assert!(!html.contains("x<b>"));
    assert!(html.contains("id=\"verdict\">CONFORMANT<"));
    assert_eq!(count(&html, "<g class=\"divergence\""), 0);
    if let Some((dom, _)) = render(&out, &work) {
        assert!(
            !dom.contains("<b>&amp;"),
            "the name did not become an element"
        );
        assert!(dom.contains("x&lt;b&gt;&amp;\"q' / hpcc"));
    }
}

#[test]
fn check_report_covers_every_bundled_trace() {
    let work = tmpdir("check");
    let out = work.join("check.html");
    let svgs = work.join("svg");
    run_ok(
        &[
            "report",
            "check",
            "-o",
            out.to_str().unwrap(),
            "--svg-dir",
            svgs.to_str().unwrap(),
        ],
        0,
    );
    let html = read(&out);
    // One row per golden file: golden/<trace>/<model>.jsonl.
    let mut pairs = 0;
    let mut flows = 0;
    for t in std::fs::read_dir(root().join("golden")).unwrap() {
        for g in std::fs::read_dir(t.unwrap().path()).unwrap() {
            pairs += 1;
            // Flows: distinct "flow" values of the golden file.
            let mut fs: Vec<u64> = read(&g.unwrap().path())
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["flow"]
                        .as_u64()
                        .unwrap()
                })
                .collect();
            fs.sort_unstable();
            fs.dedup();
            // At most DEFAULT_MAX_CHARTS (24) charts per pair (rcc_bursts_receiver has 35 flows).
            flows += fs.len().min(ccreplay::report::DEFAULT_MAX_CHARTS);
        }
    }
    assert_eq!(count(&html, "<tr class=\"pair-row ok\""), pairs);
    assert_eq!(count(&html, "<tr class=\"pair-row differs\""), 0);
    assert_eq!(count(&html, "class=\"chart\""), flows);
    assert_eq!(count(&html, "<g class=\"divergence\""), 0);
    // --svg-dir: one standalone SVG per chart.
    let n_svg = std::fs::read_dir(&svgs).unwrap().count();
    assert_eq!(n_svg, flows);
    if let Some((dom, (total, non_white, hits))) = render(&out, &work) {
        assert_eq!(count(&dom, "<tr class=\"pair-row ok\""), pairs);
        assert_eq!(count(&dom, "<svg id=\"c"), flows);
        assert!(
            non_white * 50 > total,
            "{non_white} of {total} pixels not white"
        );
        assert!(hits[0] > 500, "reference rate band: {} px", hits[0]);
        assert_eq!(hits[2], 0, "no divergence marker");
    }
}

/// A hand-written metrics.json (docs/metrics.md): two flows, two ports, one of which paused.
const METRICS: &str = r#"{
  "version": 1, "scenario": "incast_<2>", "seed": 7, "model": "hpcc",
  "duration_ns": 1000000, "sample_interval_ns": 1000, "events": 4242,
  "flows": [
    {"id": 0, "src": "h0", "dst": "h2", "size_bytes": 1000000, "start_ns": 0,
     "finish_ns": 800000, "fct_ns": 800000, "bytes_acked": 1000000,
     "throughput_bps": {"t_ns": [0, 250000, 500000, 750000], "v": [0, 9000000000, 11000000000, 10000000000]},
     "rate_bps": {"t_ns": [0, 100000, 400000], "v": [25000000000, 12500000000, 10000000000]},
     "window_bytes": {"t_ns": [0, 100000, 400000], "v": [16000, 8000, 6400]}},
    {"id": 1, "src": "h1", "dst": "h2", "size_bytes": 500000, "start_ns": 200000,
     "finish_ns": null, "fct_ns": null, "bytes_acked": 400000,
     "throughput_bps": {"t_ns": [250000, 500000, 750000], "v": [5000000000, 6000000000, 7000000000]},
     "rate_bps": {"t_ns": [200000, 600000], "v": [25000000000, 15000000000]},
     "window_bytes": {"t_ns": [], "v": []}}
  ],
  "ports": [
    {"name": "sw0:p2", "node": "sw0", "port": 2, "peer": "h2", "rate_bps": 25000000000,
     "tx_bytes": 1400000, "utilization": 0.448,
     "queue_bytes": {"t_ns": [0, 300000, 600000, 900000], "v": [0, 42000, 9000, 0]},
     "queue_p95_bytes": 40000, "queue_max_bytes": 42000, "ecn_marked": 12, "dropped": 0,
     "pfc": {"pause_frames_sent": 3, "paused_ns": 4096, "pause_frames_received": 0}},
    {"name": "sw0:p0", "node": "sw0", "port": 0, "peer": "h0", "rate_bps": 25000000000,
     "tx_bytes": 0, "utilization": 0.0,
     "queue_bytes": {"t_ns": [], "v": []},
     "queue_p95_bytes": 0, "queue_max_bytes": 0, "ecn_marked": 0, "dropped": 0,
     "pfc": {"pause_frames_sent": 0, "paused_ns": 0, "pause_frames_received": 3}}
  ],
  "pfc": {"pause_frames": 3, "paused_ns": 4096},
  "drops": 0,
  "jain_index": 0.9876
}"#;

#[test]
fn sim_report_from_metrics_json() {
    let work = tmpdir("sim");
    std::fs::write(work.join("metrics.json"), METRICS).unwrap();
    let out = work.join("sim.html");
    run_ok(
        &[
            "report",
            "sim",
            work.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let html = read(&out);
    assert!(html.contains("ccreplay sim — incast_&lt;2&gt;"));
    assert_eq!(count(&html, "<tr class=\"flow-row\""), 2);
    assert_eq!(count(&html, "<tr class=\"port-row\""), 2);
    // Flow 0: 1 000 000 B in 800 000 ns = 8e6 bit / 8e5 ns = 10 Gbps; flow 1 unfinished:
    // 400 000 B from its start (200 000 ns) to the end of the run (1 000 000 ns) =
    // 3.2e6 bit / 8e5 ns = 4 Gbps.
    assert!(html.contains("<td>800.000</td><td>1000000</td><td>10.000</td>"));
    assert!(html.contains("<td>unfinished</td><td>400000</td><td>4.000</td>"));
    // Charts: rate (2 flows), window (flow 0 only), goodput (2), queue (1 port with samples),
    // its steady-state zoom (the queue reaches 42 000 B at 300 µs, above the 9 000 B peak of
    // the run's second half), Jain's index (2 flows), PFC bars (1 port paused).
    for id in [
        "sim-rate",
        "sim-window",
        "sim-goodput",
        "sim-queue",
        "sim-queue-steady",
        "sim-jain",
        "sim-pfc",
    ] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("PFC per port: PAUSE frames sent, time paused"));
    assert!(html.contains("<td class=\"l\">sw0:p2</td><td class=\"l\">h2</td><td>25</td><td>0.448</td><td>40000</td><td>42000</td><td>12</td><td>0</td><td>3</td><td>0</td><td>4096</td>"));
    if let Some((dom, (total, non_white, _))) = render(&out, &work) {
        assert_eq!(count(&dom, "<svg id=\"sim-"), 7);
        assert!(
            non_white * 50 > total,
            "{non_white} of {total} pixels not white"
        );
    }

    // A file of another version is refused (exit 2) with the reason.
    std::fs::write(
        work.join("metrics.json"),
        METRICS.replace("\"version\": 1", "\"version\": 9"),
    )
    .unwrap();
    let o = ccreplay(&[
        "report",
        "sim",
        work.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("metrics version 9"));
}

#[test]
fn sim_then_report_on_a_paper_scenario() {
    // The simulator's own output, end to end: DCQCN incast with PFC (scenarios/papers).
    let work = tmpdir("simrun");
    let scenario = root().join("scenarios/papers/dcqcn_incast_pfc.toml");
    run_ok(
        &[
            "sim",
            scenario.to_str().unwrap(),
            "--out",
            work.to_str().unwrap(),
        ],
        0,
    );
    let out = work.join("sim.html");
    run_ok(
        &[
            "report",
            "sim",
            work.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let html = read(&out);
    // One table row per [[flows]] of the scenario (16 senders); one per switch port: the
    // incast switch has 16 sender ports and 1 receiver port.
    let flows = count(&read(&scenario), "[[flows]]");
    assert_eq!(flows, 16);
    assert_eq!(count(&html, "<tr class=\"flow-row\""), flows);
    assert_eq!(count(&html, "<tr class=\"port-row\""), 17);
    for id in ["sim-rate", "sim-goodput", "sim-queue"] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id}");
    }
    // The PFC chart is there exactly when the run sent PAUSE frames, and the summary shows
    // the file's totals.
    let m: serde_json::Value = serde_json::from_str(&read(&work.join("metrics.json"))).unwrap();
    let frames = m["pfc"]["pause_frames"].as_u64().unwrap();
    assert_eq!(html.contains("<svg id=\"sim-pfc\""), frames > 0);
    assert!(html.contains(&format!(
        "<th class=\"l\">PFC pause frames</th><td>{frames}</td>"
    )));
    if let Some((dom, (total, non_white, _))) = render(&out, &work) {
        assert!(count(&dom, "<svg id=\"sim-") >= 3);
        assert!(
            non_white * 50 > total,
            "{non_white} of {total} pixels not white"
        );
    }
}
