//! The papers' results, reproduced in closed loop by the network simulator (issue 5 item 4;
//! algorithms.md "Paper results"). Each test runs a scenario of `scenarios/papers/` and
//! asserts the bound the paper states; the paper and section are in the test's name. The
//! bounds come from the papers' text, not from this simulator's output.

use std::path::PathBuf;

use ccreplay::sim::{self, Scenario};
use ccreplay_reference_cc::net::Metrics;
use ccreplay_reference_cc::net::metrics::{FlowMetrics, PortMetrics};
use rstest::rstest;

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/papers")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run(sc: &Scenario) -> Metrics {
    sim::simulate(sc, None, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", sc.name))
        .metrics
}

/// The egress port of switch `node` towards `peer`.
fn port<'m>(m: &'m Metrics, node: &str, peer: &str) -> &'m PortMetrics {
    m.ports
        .iter()
        .find(|p| p.node == node && p.peer == peer)
        .unwrap_or_else(|| panic!("no port {node} -> {peer}"))
}

/// Mean of a flow's goodput samples in `[from, to]` ns, bit/s.
fn mean_goodput_bps(f: &FlowMetrics, from: u64, to: u64) -> f64 {
    let v: Vec<u64> = f.throughput_bps.between(from, to).collect();
    assert!(
        !v.is_empty(),
        "flow {} has no samples in [{from}, {to}]",
        f.id
    );
    v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
}

/// Mean of a flow's sender rate samples in `[from, to]` ns, bit/s.
fn mean_rate_bps(f: &FlowMetrics, from: u64, to: u64) -> f64 {
    let v: Vec<u64> = f.rate_bps.between(from, to).collect();
    assert!(
        !v.is_empty(),
        "flow {} has no rate samples in [{from}, {to}]",
        f.id
    );
    v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
}

/// Jain's index (Σx)² / (n Σx²).
fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * sq)
}

fn hpcc_incast(w_ai_bytes: f64) -> Metrics {
    let mut sc = scenario("hpcc_incast_16");
    sc.params
        .insert("w_ai_bytes".into(), toml::Value::Float(w_ai_bytes));
    let m = run(&sc);
    assert_eq!(m.drops, 0);
    m
}

/// Seed 000 §5.4: "all W_AI within 150 bytes achieve a queue length within 4 KB at 95-th
/// percentile" (16-to-1, 100 Gbps, queue sampled every 1 µs for 10 ms).
#[rstest]
#[case::w_ai_25(25.0)]
#[case::w_ai_80(80.0)]
#[case::w_ai_150(150.0)]
fn hpcc_s5_4_incast_16_w_ai_up_to_150_keeps_p95_queue_within_4kb(#[case] w_ai: f64) {
    let m = hpcc_incast(w_ai);
    let p = port(&m, "sw0", "h16");
    assert_eq!(p.queue_bytes.t_ns.len(), 10_000, "1 µs samples over 10 ms");
    assert!(
        p.queue_p95_bytes <= 4_000,
        "w_ai {w_ai} B: p95 queue {} B > 4 KB",
        p.queue_p95_bytes
    );
}

/// Seed 000 §5.4: "W_AI = 300 bytes has a queue length of 13 KB at 95-th percentile": clearly
/// above the 4 KB of W_AI <= 150 B; we accept half to twice the paper's 13 KB.
#[test]
fn hpcc_s5_4_incast_16_w_ai_300_gives_a_clearly_larger_p95_queue() {
    let p95_300 = port(&hpcc_incast(300.0), "sw0", "h16").queue_p95_bytes;
    let p95_150 = port(&hpcc_incast(150.0), "sw0", "h16").queue_p95_bytes;
    assert!(
        (6_500..=26_000).contains(&p95_300),
        "w_ai 300 B: p95 queue {p95_300} B, the paper reports about 13 KB"
    );
    assert!(
        p95_300 > 4_000 && p95_300 >= 2 * p95_150,
        "w_ai 300 B: p95 {p95_300} B vs {p95_150} B at 150 B"
    );
}

/// Seed 000 §5.2 (Fig. 9a/9b): "HPCC recovers the rate of the long flow right after the short
/// flow ends, while DCQCN cannot recover to line rate even after 2 ms". Bound: HPCC's long flow
/// is back above 90 % of line rate within 10 base RTTs of the short flow's end; DCQCN's is not
/// within 1 ms.
#[test]
fn hpcc_vs_dcqcn_s5_2_long_flow_recovers_after_short_flow_leaves() {
    const LINE_BPS: f64 = 25e9;
    let first_at_90 = |m: &Metrics| -> (u64, Option<u64>) {
        let (long, short) = (&m.flows[0], &m.flows[1]);
        assert_eq!(short.size_bytes, 1_000_000);
        let end = short.finish_ns.expect("the short flow finishes");
        // Not vacuous: while both flows share the link, the long one is below 90 %.
        let during: Vec<u64> = long.rate_bps.between(end - 20_000, end - 1).collect();
        assert!(
            during.iter().all(|&r| (r as f64) < 0.9 * LINE_BPS),
            "{}: the long flow never slowed down",
            m.model
        );
        let back = long
            .rate_bps
            .t_ns
            .iter()
            .zip(&long.rate_bps.v)
            .find(|&(&t, &r)| t >= end && r as f64 >= 0.9 * LINE_BPS)
            .map(|(&t, _)| t - end);
        (end, back)
    };

    let hpcc = run(&scenario("hpcc_long_short"));
    let (_, back) = first_at_90(&hpcc);
    let back = back.expect("HPCC's long flow gets back above 90 %");
    assert!(
        back <= 10 * hpcc.base_rtt_ns,
        "HPCC: back above 90 % {back} ns after the short flow, > 10 base RTTs ({} ns)",
        10 * hpcc.base_rtt_ns
    );

    let dcqcn = run(&scenario("dcqcn_long_short"));
    let (end, back) = first_at_90(&dcqcn);
    assert!(
        end + 1_000_000 <= dcqcn.duration_ns,
        "the run covers 1 ms after"
    );
    assert!(
        back.is_none_or(|b| b > 1_000_000),
        "DCQCN's long flow recovered in {back:?} ns"
    );
}

/// Seed 002 §V-B.1: "when N varies from 1 to 4, each flow's goodput quickly converges to
/// ~100 × 0.95 / N Gbps, giving a Jain fairness index within 0.998 ~ 0.999". Bound: within
/// 2 % of 95 / N Gbps, Jain >= 0.998, over the second half of each step.
#[test]
fn rcc_s5_b1_four_flows_joining_converge_to_fair_share() {
    let m = run(&scenario("rcc_join_4"));
    let step = 500_000;
    for n in 1..=4u64 {
        let (from, to) = ((n - 1) * step + step / 2, n * step);
        let target = 95e9 / n as f64;
        let g: Vec<f64> = m.flows[..n as usize]
            .iter()
            .map(|f| mean_goodput_bps(f, from, to))
            .collect();
        for (i, x) in g.iter().enumerate() {
            assert!(
                (x / target - 1.0).abs() <= 0.02,
                "N = {n}: flow {i} at {:.2} Gbps, target {:.2} Gbps ± 2 %",
                x / 1e9,
                target / 1e9
            );
        }
        assert!(jain(&g) >= 0.998, "N = {n}: Jain {}", jain(&g));
    }
}

/// Seed 004 §5.1 (Fig. 10): "FNCC is the first to slow down at 300 µs, followed by HPCC at
/// 330 µs", and FNCC keeps the queue at the congested port lower.
#[test]
fn fncc_vs_hpcc_s5_1_second_flow_at_300us_fncc_cuts_first_with_lower_peak_queue() {
    let first_cut_and_peak = |m: &Metrics| -> (u64, u64) {
        let f = &m.flows[0];
        let before = f
            .rate_bps
            .between(295_000, 299_999)
            .last()
            .expect("rate at 300 µs");
        let cut = f
            .rate_bps
            .t_ns
            .iter()
            .zip(&f.rate_bps.v)
            .find(|&(&t, &r)| t >= 300_000 && (r as f64) < 0.98 * before as f64)
            .map(|(&t, _)| t)
            .unwrap_or_else(|| panic!("{}: flow 0 never slows down", m.model));
        let peak = port(m, "sw1", "sw2")
            .queue_bytes
            .between(300_000, m.duration_ns)
            .max()
            .unwrap_or(0);
        (cut, peak)
    };
    let (fncc_cut, fncc_peak) = first_cut_and_peak(&run(&scenario("fncc_join_300")));
    let (hpcc_cut, hpcc_peak) = first_cut_and_peak(&run(&scenario("hpcc_join_300")));
    assert!(
        fncc_cut < hpcc_cut,
        "first cut: FNCC at {fncc_cut} ns, HPCC at {hpcc_cut} ns"
    );
    assert!(hpcc_peak > 0, "the join builds a queue");
    assert!(
        fncc_peak < hpcc_peak,
        "peak queue: FNCC {fncc_peak} B, HPCC {hpcc_peak} B"
    );
}

/// Seed 001 §5 (eq. 10, the fluid model's fixed point): two DCQCN flows on one bottleneck each
/// get C/2. Bound: each sender's rate within 10 % of C/2 over 20-40 ms.
#[test]
fn dcqcn_s5_two_flows_converge_to_half_the_bottleneck() {
    let m = run(&scenario("dcqcn_fair_2"));
    let half = 25e9 / 2.0;
    for f in &m.flows {
        let r = mean_rate_bps(f, 20_000_000, 40_000_000);
        assert!(
            (r / half - 1.0).abs() <= 0.10,
            "flow {}: {:.2} Gbps, C/2 = {:.2} Gbps ± 10 %",
            f.id,
            r / 1e9,
            half / 1e9
        );
    }
}

/// Seed 001 §4 (PFC makes RoCE lossless): a 16-to-1 incast with PFC loses no packet and
/// reports its pauses; without PFC the same buffer overflows (so the test can fail).
#[test]
fn dcqcn_s4_incast_16_with_pfc_loses_nothing_and_reports_pauses() {
    let sc = scenario("dcqcn_incast_pfc");
    let m = run(&sc);
    assert_eq!(m.drops, 0, "PFC on: no loss");
    assert!(m.pfc.pause_frames > 0 && m.pfc.paused_ns > 0, "{:?}", m.pfc);
    let ingress_pauses: u64 = m.ports.iter().map(|p| p.pfc.pause_frames_sent).sum();
    assert_eq!(ingress_pauses, m.pfc.pause_frames);

    let mut no_pfc = sc.clone();
    no_pfc.switch.pfc = None;
    let m = run(&no_pfc);
    assert!(m.drops > 0, "without PFC the 2 MB buffer overflows");
    assert_eq!(m.pfc.pause_frames, 0);
}
