//! INT stamping against what the taps show (HPCC, wire.md 5 units; docs/switch.md "INT").
//!
//! For every data packet that left the port with the switch's record (the last of its stack):
//! - `nHop` one more than it arrived with;
//! - `B` the code of the port's rate;
//! - `txBytes` (128-byte units, modulo 2^20, unwrapped over the run) advances with the frame
//!   bytes that left the port: from the first stamped packet, the counter's bytes and the
//!   departed bytes may differ by one frame (whether a packet counts itself) and two units,
//!   and the counter may run ahead by the data frames the mirror lost (seen arriving, never
//!   leaving);
//! - `TS` (ns modulo 2^24, unwrapped) against the egress capture time: a least-squares line
//!   gives the switch clock's offset and drift (reported: a drifting clock is no bug); a
//!   residual above the timing allowance fails, and a TS that fits the packets' *arrival*
//!   times better than their departures is stamped at ingress;
//! - `qLen` (80-byte units) the reconstructed queue at departure, within the guard.

use ccreplay_codecs::shim::int::LineRate;

use super::taps::Port;

use super::{Failure, Options, Setup};

/// txBytes unit, bytes.
const TX_UNIT: u64 = 128;

/// The INT verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Packets whose record was checked.
    pub records: u64,
    /// Per field, records that failed: nHop, B, txBytes, TS, qLen.
    pub failed: [u64; 5],
    /// Largest |txBytes − departed bytes|, bytes.
    pub tx_bytes_error: u64,
    /// The switch clock: offset of TS from the capture's clock at the first packet, ns, and
    /// its drift, ppm.
    pub clock_offset_ns: f64,
    /// Drift, ppm.
    pub clock_drift_ppm: f64,
    /// Largest residual of TS from the fitted clock, against departures and arrivals, ns.
    pub ts_residual_ns: (f64, f64),
    /// Largest |qLen − reconstructed queue|, bytes.
    pub qlen_error: u64,
    /// Failed checks (the first of each field).
    pub failures: Vec<Failure>,
}

/// Least squares `y = a + b x`; the largest |residual|.
fn fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    let b = if sxx > 0.0 { sxy / sxx } else { 1.0 };
    let a = my - b * mx;
    let worst = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - a - b * x).abs())
        .fold(0.0, f64::max);
    (a, b, worst)
}

/// One record this switch wrote, with what the taps say it should hold.
struct Rec {
    /// When it was written (a data packet's departure, an ACK's arrival), ns.
    t: u64,
    /// A data packet's arrival (to tell an ingress stamp), ns.
    t_in: Option<u64>,
    /// nHop before and after the switch (data packets).
    nhop: Option<(u8, u8)>,
    hop: ccreplay_codecs::shim::int::IntHop,
    /// Frame bytes that had started to leave the port before `t`.
    departed: u64,
    /// Bytes queued at the port at `t` (`None`: no ingress taps to reconstruct it).
    queue: Option<u64>,
}

/// Judge the records this switch stamped into data packets (HPCC); `None` when no packet
/// carried INT.
pub fn judge(port: &Port, setup: &Setup, opts: &Options) -> Option<Report> {
    if let Some(only) = &port.egress_only {
        // The mirror alone: B, txBytes and TS; nHop and qLen need the arrivals.
        let recs: Vec<Rec> = only
            .iter()
            .map(|&(k, hop)| Rec {
                t: port.departures[k].0,
                t_in: None,
                nhop: None,
                hop,
                departed: port.departed_cum[k],
                queue: None,
            })
            .collect();
        return (!recs.is_empty()).then(|| check(&recs, port, setup, opts, "int"));
    }
    let recs: Vec<Rec> = port
        .packets
        .iter()
        .filter_map(|p| {
            let (n_in, n_out, hop) = p.int?;
            Some(Rec {
                t: p.t_out,
                t_in: Some(p.t_in),
                nhop: Some((n_in, n_out)),
                hop,
                departed: port.departed_cum[p.out_index],
                queue: Some(p.q_dequeue),
            })
        })
        .collect();
    (!recs.is_empty()).then(|| check(&recs, port, setup, opts, "int"))
}

/// Judge the records this switch wrote into ACKs for the port under test (FNCC-3: the data
/// path's INT carried back); `None` without an ACK capture.
pub fn judge_acks(port: &Port, setup: &Setup, opts: &Options) -> Option<Report> {
    setup.acks.as_ref()?;
    let recs: Vec<Rec> = port
        .ack_records
        .iter()
        .map(|&(t, hop)| Rec {
            t,
            t_in: None,
            nhop: None,
            hop,
            departed: port.departed_before(t),
            queue: (port.egress_only.is_none()).then(|| port.queue_at(t)),
        })
        .collect();
    Some(check(&recs, port, setup, opts, "int_ack"))
}

fn check(recs: &[Rec], port: &Port, setup: &Setup, opts: &Options, what: &'static str) -> Report {
    let mut r = Report {
        records: recs.len() as u64,
        ..Report::default()
    };
    let Some(r0) = recs.first() else {
        return r;
    };
    let name = |field: &str| -> &'static str {
        match (what, field) {
            ("int", "nhop") => "int.nhop",
            ("int", "B") => "int.B",
            ("int", "txBytes") => "int.txBytes",
            ("int", "ts") => "int.ts",
            ("int", _) => "int.qLen",
            (_, "nhop") => "int_ack.nhop",
            (_, "B") => "int_ack.B",
            (_, "txBytes") => "int_ack.txBytes",
            (_, "ts") => "int_ack.ts",
            _ => "int_ack.qLen",
        }
    };
    let mut first = [true; 5];
    let mut fail = |r: &mut Report, i: usize, check: &'static str, t: u64, m: String| {
        r.failed[i] += 1;
        if first[i] {
            first[i] = false;
            r.failures.push(Failure {
                check,
                message: m,
                t_ns: Some(t),
            });
        }
    };
    let code = LineRate::from_bps(setup.port_rate_bps).map(|c| c.0);
    let max_frame = port
        .departures
        .iter()
        .map(|d| u64::from(d.1))
        .max()
        .unwrap_or(0);
    let (mut tx_unwrapped, mut ts_unwrapped, mut prev) = (0u64, 0u64, r0.hop);
    let (mut xs_out, mut xs_in, mut ys) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lost_i, mut unseen) = (0usize, 0u64);
    for p in recs {
        let hop = p.hop;
        if let Some((n_in, n_out)) = p.nhop
            && n_out != n_in.wrapping_add(1)
        {
            fail(
                &mut r,
                0,
                name("nhop"),
                p.t,
                format!("nHop {n_in} on arrival, {n_out} on departure: one hop adds one record"),
            );
        }
        if code.is_some_and(|c| c != hop.b) {
            fail(
                &mut r,
                1,
                name("B"),
                p.t,
                format!(
                    "B = {} where the port's {} bps is code {}",
                    hop.b,
                    setup.port_rate_bps,
                    code.unwrap_or(0)
                ),
            );
        }
        tx_unwrapped += hop.tx_bytes_delta(prev);
        ts_unwrapped += hop.ts_delta_ns(prev);
        prev = hop;
        let departed = p.departed - r0.departed;
        // Frames the mirror lost left all the same: the counter may run ahead of what the
        // mirror shows by them, never behind.
        // Records come in time order: the lost frames up to this one accumulate.
        while lost_i < port.unseen_departures.len() && port.unseen_departures[lost_i].0 <= p.t {
            if port.unseen_departures[lost_i].0 > r0.t {
                unseen += u64::from(port.unseen_departures[lost_i].1);
            }
            lost_i += 1;
        }
        let slack = max_frame + 2 * TX_UNIT;
        let err = if tx_unwrapped < departed {
            departed - tx_unwrapped
        } else {
            (tx_unwrapped - departed).saturating_sub(unseen)
        };
        r.tx_bytes_error = r.tx_bytes_error.max(err);
        if err > slack {
            fail(
                &mut r,
                2,
                name("txBytes"),
                p.t,
                format!(
                    "txBytes advanced {tx_unwrapped} B since the first record, {departed} B of \
                     frames left the port (allowed: one frame and two 128-byte units)"
                ),
            );
        }
        let q = hop.qlen_bytes();
        let queue = p.queue.unwrap_or(q);
        let qerr = q.abs_diff(queue);
        r.qlen_error = r.qlen_error.max(qerr);
        if qerr > opts.guard_bytes + 80 {
            fail(
                &mut r,
                4,
                name("qLen"),
                p.t,
                format!(
                    "qLen says {q} B queued, the taps show {queue} B (allowed: {} B)",
                    opts.guard_bytes + 80
                ),
            );
        }
        xs_out.push((p.t - r0.t) as f64);
        xs_in.push(p.t_in.map_or(p.t, |t| t) as f64 - r0.t as f64);
        ys.push(ts_unwrapped as f64);
    }
    let (a, b, worst_out) = fit(&xs_out, &ys);
    let (_, _, worst_in) = fit(&xs_in, &ys);
    r.clock_offset_ns = a;
    r.clock_drift_ppm = (b - 1.0) * 1e6;
    r.ts_residual_ns = (worst_out, worst_in);
    let tol = opts.timing_ns as f64;
    if worst_out > tol {
        let stamped_in = recs[0].t_in.is_some() && worst_in < worst_out / 2.0;
        r.failed[3] += 1;
        r.failures.push(Failure {
            check: name("ts"),
            message: if stamped_in {
                format!(
                    "TS follows the packets' arrival (largest residual {worst_in:.0} ns) and not \
                     their departure ({worst_out:.0} ns): stamped at ingress, not egress"
                )
            } else {
                format!(
                    "TS strays {worst_out:.0} ns from the fitted clock (offset {a:.0} ns, drift \
                     {:.1} ppm; allowed {tol:.0} ns)",
                    r.clock_drift_ppm
                )
            },
            t_ns: None,
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    // y = 5 + 1.0001 x exactly: the fit returns the line, residual 0.
    #[test]
    fn fit_recovers_a_line() {
        let xs: Vec<f64> = (0..100).map(|i| f64::from(i) * 1000.0).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 5.0 + 1.0001 * x).collect();
        let (a, b, w) = fit(&xs, &ys);
        assert!((a - 5.0).abs() < 1e-6 && (b - 1.0001).abs() < 1e-12 && w < 1e-6);
    }
}
