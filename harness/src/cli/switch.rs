//! `ccreplay switch`: a switch under test judged from taps on its ports (docs/switch.md).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use ccreplay::report::junit::{self, Case, Outcome, Suite};
use ccreplay::switch::{self, Options, Verdict};

use super::{Failure, ReportFormat, write_atomic};

#[derive(Args)]
pub(crate) struct SwitchArgs {
    /// The switch's setup: `STEM.switch.toml` (its configuration and its taps).
    pub(crate) setup: PathBuf,
    /// Significance level of the statistical marking test (the whole test).
    #[arg(long, default_value_t = 1e-3)]
    pub(crate) alpha: f64,
    /// Queue-length error of the reconstruction the deterministic checks allow, bytes.
    #[arg(long, default_value_t = 2_200)]
    pub(crate) guard_bytes: u64,
    /// Timestamp error the INT and PFC checks allow, ns.
    #[arg(long, default_value_t = 1_000)]
    pub(crate) timing_ns: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: ReportFormat,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    pub(crate) junit: Option<PathBuf>,
    /// Also write a self-contained HTML page here: the verdict, the marking chart and table.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
}

fn text(v: &Verdict) -> String {
    let mut s = String::new();
    let t = &v.taps;
    let _ = writeln!(
        s,
        "switch {} port {}: {} frames in ({} PFC sent upstream), {} out; {} data packets seen \
         entering and leaving, {} only entering (dropped or not tapped), {} only leaving",
        v.switch,
        v.port,
        t.ingress_frames,
        t.pfc_sent,
        t.egress_frames,
        t.aligned,
        t.arrived_only,
        t.left_only
    );
    if let Some(m) = &v.marking {
        let _ = writeln!(
            s,
            "marking: {} ECN-capable packets, {} marked ({} arrived marked); below Kmin {} \
             ({} marked), above Kmax {} ({} unmarked)",
            m.packets,
            m.marked,
            m.marked_upstream,
            m.below_kmin.0,
            m.below_kmin.1,
            m.above_kmax.0,
            m.above_kmax.1
        );
        let _ = writeln!(
            s,
            "  {:>17}  {:>8}  {:>7}  {:>9}  {:>9}  {:>7}  {:>9}",
            "queue (B)", "packets", "marked", "observed", "profile", "z", "p"
        );
        for b in &m.bins {
            let _ = writeln!(
                s,
                "  {:>8}..{:<8}  {:>8}  {:>7}  {:>8.2}%  {:>8.2}%  {:>7.2}  {:>9.2e}",
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
        let _ = writeln!(s, "  each bin tested at p < {:.2e}", m.alpha_bin);
    }
    for (label, r) in [("INT", &v.int), ("INT in ACKs (FNCC)", &v.int_ack)] {
        let Some(i) = r else { continue };
        let _ = writeln!(
            s,
            "{label}: {} records; failed nHop {}, B {}, txBytes {}, TS {}, qLen {}; txBytes within {} \
             B, qLen within {} B; clock offset {:.0} ns, drift {:.2} ppm, TS residual {:.0} ns \
             (against arrivals {:.0} ns)",
            i.records,
            i.failed[0],
            i.failed[1],
            i.failed[2],
            i.failed[3],
            i.failed[4],
            i.tx_bytes_error,
            i.qlen_error,
            i.clock_offset_ns,
            i.clock_drift_ppm,
            i.ts_residual_ns.0,
            i.ts_residual_ns.1
        );
    }
    if let Some(p) = &v.pfc {
        let _ = writeln!(
            s,
            "PFC: {} XOFF, {} XON sent; peak occupancy per ingress {:?} B; {} failed checks",
            p.xoff, p.xon, p.peak_bytes, p.failed
        );
    }
    for f in &v.failures {
        let _ = writeln!(
            s,
            "FAIL {}: {}{}",
            f.check,
            f.message,
            f.t_ns.map(|t| format!(" (t = {t} ns)")).unwrap_or_default()
        );
    }
    for w in &v.not_judged {
        let _ = writeln!(s, "not judged: {w}");
    }
    for w in &v.insufficient {
        let _ = writeln!(s, "ERROR: not enough to judge: {w}");
    }
    let _ = writeln!(
        s,
        "{}",
        if !v.insufficient.is_empty() {
            "NOT JUDGED"
        } else if v.failures.is_empty() {
            "CONFORMANT"
        } else {
            "DEVIATES"
        }
    );
    s
}

fn json(v: &Verdict) -> serde_json::Value {
    use serde_json::json;
    json!({
        "ok": v.ok(),
        "switch": v.switch,
        "port": v.port,
        "taps": {
            "ingress_frames": v.taps.ingress_frames,
            "egress_frames": v.taps.egress_frames,
            "aligned": v.taps.aligned,
            "arrived_only": v.taps.arrived_only,
            "left_only": v.taps.left_only,
            "pfc_sent": v.taps.pfc_sent,
        },
        "marking": v.marking.as_ref().map(|m| json!({
            "packets": m.packets,
            "marked": m.marked,
            "marked_upstream": m.marked_upstream,
            "below_kmin": {"packets": m.below_kmin.0, "marked": m.below_kmin.1},
            "above_kmax": {"packets": m.above_kmax.0, "unmarked": m.above_kmax.1},
            "alpha_bin": m.alpha_bin,
            "bins": m.bins.iter().map(|b| json!({
                "lo": b.lo, "hi": b.hi, "packets": b.packets, "marked": b.marked,
                "expected": b.expected, "p_configured": b.p_configured, "z": b.z,
                "p_value": b.p_value,
            })).collect::<Vec<_>>(),
        })),
        "int": v.int.as_ref().map(|i| json!({
            "records": i.records,
            "failed": {"nhop": i.failed[0], "b": i.failed[1], "tx_bytes": i.failed[2],
                       "ts": i.failed[3], "qlen": i.failed[4]},
            "tx_bytes_error": i.tx_bytes_error,
            "qlen_error": i.qlen_error,
            "clock_offset_ns": i.clock_offset_ns,
            "clock_drift_ppm": i.clock_drift_ppm,
            "ts_residual_ns": i.ts_residual_ns.0,
            "ts_residual_vs_arrival_ns": i.ts_residual_ns.1,
        })),
        "int_ack": v.int_ack.as_ref().map(|i| json!({
            "records": i.records,
            "failed": {"b": i.failed[1], "tx_bytes": i.failed[2], "ts": i.failed[3], "qlen": i.failed[4]},
            "tx_bytes_error": i.tx_bytes_error,
            "qlen_error": i.qlen_error,
            "clock_offset_ns": i.clock_offset_ns,
            "clock_drift_ppm": i.clock_drift_ppm,
            "ts_residual_ns": i.ts_residual_ns.0,
        })),
        "pfc": v.pfc.as_ref().map(|p| json!({
            "xoff": p.xoff, "xon": p.xon, "peak_bytes": p.peak_bytes, "failed": p.failed,
        })),
        "failures": v.failures.iter().map(|f| json!({
            "check": f.check, "message": f.message, "t_ns": f.t_ns,
        })).collect::<Vec<_>>(),
        "insufficient": v.insufficient,
        "not_judged": v.not_judged,
    })
}

fn junit_suite(v: &Verdict, body: &str) -> Suite {
    let name = format!("switch {}", v.port);
    let mut cases = Vec::new();
    let mut case = |what: &str, fails: Vec<&switch::Failure>| {
        cases.push(Case {
            classname: name.clone(),
            name: what.to_string(),
            time_s: 0.0,
            outcome: match fails.first() {
                None => Outcome::Pass,
                Some(f) => Outcome::Failure {
                    message: f.message.clone(),
                    text: body.to_string(),
                },
            },
        });
    };
    let of = |prefix: &str| -> Vec<&switch::Failure> {
        v.failures
            .iter()
            .filter(|f| f.check.starts_with(prefix))
            .collect()
    };
    if v.marking.is_some() {
        case("marking", of("marking"));
    }
    if v.int.is_some() {
        case("int", of("int."));
    }
    if v.int_ack.is_some() {
        case("int_ack", of("int_ack"));
    }
    if v.pfc.is_some() {
        case("pfc", of("pfc"));
    }
    let mut suite = Suite {
        name: name.clone(),
        time_s: 0.0,
        properties: Vec::new(),
        cases,
    };
    if let Some(w) = v.insufficient.first() {
        suite = Suite::not_compared(&name, "taps", w, false);
    }
    suite
}

pub(crate) fn run(a: SwitchArgs) -> Result<u8, Failure> {
    let opts = Options {
        alpha: a.alpha,
        guard_bytes: a.guard_bytes,
        timing_ns: a.timing_ns,
    };
    let v = switch::judge(&a.setup, &opts).map_err(|e| Failure {
        code: 2,
        message: e.to_string(),
        hint: Some("docs/switch.md describes the setup file and its taps".to_string()),
    })?;
    let body = text(&v);
    match a.format {
        ReportFormat::Text => out!("{body}"),
        ReportFormat::Json => outln!("{}", json(&v)),
    }
    if let Some(j) = &a.junit {
        write_atomic(j, junit::render(&[junit_suite(&v, &body)]).as_bytes())?;
    }
    if let Some(r) = &a.report {
        let setup = switch::Setup::load(&a.setup).map_err(|e| Failure {
            code: 2,
            message: e.to_string(),
            hint: None,
        })?;
        let html =
            ccreplay::report::switch::render(&v, setup.red.as_ref(), &body).map_err(|e| {
                Failure {
                    code: 2,
                    message: e,
                    hint: None,
                }
            })?;
        write_atomic(r, html.as_bytes())?;
        note!("ccreplay: wrote {}", r.display());
    }
    Ok(if !v.insufficient.is_empty() {
        2
    } else if v.failures.is_empty() {
        0
    } else {
        1
    })
}
