//! Unit tests of the report helpers (report/mod.rs).

use super::*;
use ccreplay_reference_cc::State;

fn dec(flow: u32, t_ns: u64, index: u64, rate: u64, window: u64) -> Decision {
    Decision {
        t_ns,
        flow,
        cause: Cause::Event {
            kind: "rx_ack",
            index,
        },
        outputs: Outputs {
            rate_bps: Some(rate),
            window_bytes: Some(window),
            ..Outputs::default()
        },
        state: State::default(),
    }
}

#[test]
fn escapes_markup() {
    assert_eq!(
        escape_html("<a href=\"x\">'&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
}

#[test]
fn many_decisions_give_a_small_page() {
    // One flow, 100 000 decisions 100 ns apart (the chart's downsampling test runs 10x
    // more points); the DUT's window is 1 byte larger from decision 60 000 on
    // (t = 1 000 + 100 * 60 000 ns, i.e. 6 000 000 ns = 6000 µs after t0 = 1 000 ns).
    let (mut r, mut d) = (Side::default(), Side::default());
    for i in 0..100_000u64 {
        let w = 10_000 + (i % 1000);
        let t = 1_000 + 100 * i;
        r.push(&dec(0, t, i, w * 8, w));
        d.push(&dec(0, t, i, w * 8, w + u64::from(i >= 60_000)));
    }
    let report = diff::diff(&r, &d, &diff::DiffOptions::default());
    assert_eq!(report.mismatches(), 40_000);
    let meta = Meta {
        title: "big <flow>".into(),
        reference_name: "reference".into(),
        dut_name: "dut".into(),
        ..Meta::default()
    };
    let c = Comparison::build(meta, report, &r, &d, DEFAULT_MAX_CHARTS);
    drop((r, d));
    // Last decision at 1 000 + 100 * 99 999 = 10 000 900 ns.
    assert_eq!((c.t0_ns, c.span_ns), (1_000, 9_999_900));
    let (html, svgs) =
        render_comparisons("diff", &[], &[CheckEntry::Compared(Box::new(c))]).unwrap();
    assert_eq!(svgs.len(), 1);
    // 4 lines of at most 5 points per column, 1 000 columns: well under a megabyte.
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
    assert!(html.contains("big &lt;flow&gt;"));
    assert!(!html.contains("big <flow>"));
    // The marker label: 60 000 000 ns after t0 = 60000.000 µs.
    assert!(html.contains("first divergence 6000.000 µs: window_bytes"));
    assert!(html.contains("id=\"c0-div-0\""));
    // One polyline per series: reference bands 5 px wide, DUT lines 2 px (the legend's
    // marks are 3 px, the axes black).
    for stroke in [
        "stroke=\"#9ECAE1\" stroke-width=\"5\"",
        "stroke=\"#08519C\" stroke-width=\"2\"",
        "stroke=\"#FDAE6B\" stroke-width=\"5\"",
        "stroke=\"#A63603\" stroke-width=\"2\"",
    ] {
        assert_eq!(html.matches(stroke).count(), 1, "{stroke}");
    }
}
