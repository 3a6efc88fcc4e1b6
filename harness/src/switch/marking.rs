//! ECN marking against the RED profile (DCQCN-1, docs/switch.md "Marking").
//!
//! Each ECN-capable data packet that arrived unmarked is a Bernoulli trial: marked (CE as it
//! left) with probability `p(q)`, `q` the bytes queued ahead of it when it arrived
//! (reconstructed from the taps), `p` the profile's (`dcqcn::cp::marking_probability`).
//! - Deterministic: a packet more than the guard below Kmin marked, or more than the guard
//!   above Kmax unmarked (where `p = 1`), fails at once.
//! - Statistical: the ramp Kmin..Kmax in [`BINS`] bins by `q`; in each, the marks against their
//!   expectation `Σp` with variance `Σp(1−p)` — a two-sided z test (normal approximation to the
//!   Poisson binomial; bins with fewer than 5 expected marks or non-marks are pooled into their
//!   neighbour) at `alpha / bins` (Bonferroni), so the whole test's false-alarm rate is at
//!   most `alpha`.
//! - Which queue: the likelihood of the marks under `p` of the queue each packet left behind
//!   against `p` of the queue it found; a ratio above `1/alpha` (false alarm at most `alpha`,
//!   by Markov's inequality) says the switch marks at dequeue.

use ccreplay_reference_cc::dcqcn::cp::{RedParams, marking_probability};

use super::taps::{ECN_CE, Port};
use super::{Failure, Options, Red};

/// Bins of the ramp.
pub const BINS: usize = 8;

/// One queue-length bin.
#[derive(Clone, Debug, PartialEq)]
pub struct Bin {
    /// Queue lengths `lo..hi`, bytes.
    pub lo: u64,
    /// Upper end (exclusive).
    pub hi: u64,
    /// Packets.
    pub packets: u64,
    /// Marked.
    pub marked: u64,
    /// Expected marks, `Σp`.
    pub expected: f64,
    /// The configured probability at the bin's packets, mean.
    pub p_configured: f64,
    /// z score of the marks.
    pub z: f64,
    /// Two-sided p value.
    pub p_value: f64,
}

/// The marking verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// ECN-capable data packets judged.
    pub packets: u64,
    /// Of them marked by this switch.
    pub marked: u64,
    /// Arrived already marked (upstream): not judged.
    pub marked_upstream: u64,
    /// Not ECN-capable: never marked, not judged.
    pub not_ect: u64,
    /// Below Kmin (less the guard), and marked there.
    pub below_kmin: (u64, u64),
    /// Above Kmax (plus the guard), and unmarked there.
    pub above_kmax: (u64, u64),
    /// The ramp, bin by bin.
    pub bins: Vec<Bin>,
    /// The significance level each bin was tested at.
    pub alpha_bin: f64,
    /// ln of the likelihood ratio of the marks under the profile applied to the queue each
    /// packet left behind (at dequeue) against the queue it found (at enqueue).
    pub ln_lr_dequeue: f64,
    /// Failed checks.
    pub failures: Vec<Failure>,
}

/// Two-sided p value of a standard normal z.
fn two_sided(z: f64) -> f64 {
    libm::erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// Judge the port's marking against `red`.
pub fn judge(port: &Port, red: &Red, opts: &Options) -> Report {
    let profile = RedParams {
        kmin_bytes: red.kmin_bytes,
        kmax_bytes: red.kmax_bytes,
        pmax: red.pmax,
    };
    let mut r = Report::default();
    let width = (red.kmax_bytes.saturating_sub(red.kmin_bytes) / BINS as u64).max(1);
    // Likelihoods with p kept off 0 and 1, so one mark where the other measure says p = 0
    // weighs ln(1e-6), not minus infinity.
    let ll = |p: f64, marked: bool| {
        let p = p.clamp(1e-6, 1.0 - 1e-6);
        if marked { p.ln() } else { (1.0 - p).ln() }
    };
    // Per bin: packets, marks, Σp, Σp(1−p).
    let mut raw: Vec<(u64, u64, f64, f64)> = vec![(0, 0, 0.0, 0.0); BINS];
    for p in &port.packets {
        if p.ecn_in == 0 {
            r.not_ect += 1;
            continue;
        }
        if p.ecn_in == ECN_CE {
            r.marked_upstream += 1;
            continue;
        }
        r.packets += 1;
        let marked = p.ecn_out == ECN_CE;
        r.marked += u64::from(marked);
        let q = p.q_enqueue;
        let prob = marking_probability(q, &profile);
        r.ln_lr_dequeue +=
            ll(marking_probability(p.q_dequeue, &profile), marked) - ll(prob, marked);
        if q + opts.guard_bytes <= red.kmin_bytes {
            r.below_kmin.0 += 1;
            if marked {
                r.below_kmin.1 += 1;
                if r.below_kmin.1 == 1 {
                    r.failures.push(Failure {
                        check: "marking.below_kmin",
                        message: format!(
                            "a packet was marked with {q} B queued ahead of it, below Kmin = {} B \
                             (p = 0)",
                            red.kmin_bytes
                        ),
                        t_ns: Some(p.t_in),
                    });
                }
            }
        } else if q > red.kmax_bytes + opts.guard_bytes {
            r.above_kmax.0 += 1;
            if !marked {
                r.above_kmax.1 += 1;
                if r.above_kmax.1 == 1 {
                    r.failures.push(Failure {
                        check: "marking.above_kmax",
                        message: format!(
                            "a packet left unmarked with {q} B queued ahead of it, above Kmax = {} \
                             B (p = 1)",
                            red.kmax_bytes
                        ),
                        t_ns: Some(p.t_in),
                    });
                }
            }
        } else if q > red.kmin_bytes && q <= red.kmax_bytes {
            let b = (((q - red.kmin_bytes - 1) / width) as usize).min(BINS - 1);
            let e = &mut raw[b];
            e.0 += 1;
            e.1 += u64::from(marked);
            e.2 += prob;
            e.3 += prob * (1.0 - prob);
        }
    }
    // Pool bins too small for the normal approximation into the next one (the last into the
    // previous).
    let mut pooled: Vec<(u64, u64, u64, u64, f64, f64)> = Vec::new();
    let mut acc: Option<(u64, u64, u64, u64, f64, f64)> = None;
    for (i, e) in raw.iter().enumerate() {
        let lo = red.kmin_bytes + i as u64 * width;
        let hi = if i + 1 == BINS {
            red.kmax_bytes
        } else {
            lo + width
        };
        let cur = match acc.take() {
            Some((l, _, n, k, s, v)) => (l, hi, n + e.0, k + e.1, s + e.2, v + e.3),
            None => (lo, hi, e.0, e.1, e.2, e.3),
        };
        let big = cur.4 >= 5.0 && (cur.2 as f64 - cur.4) >= 5.0;
        if big {
            pooled.push(cur);
        } else {
            acc = Some(cur);
        }
    }
    if let Some(rest) = acc {
        match pooled.last_mut() {
            Some(last) => {
                last.1 = rest.1;
                last.2 += rest.2;
                last.3 += rest.3;
                last.4 += rest.4;
                last.5 += rest.5;
            }
            None if rest.2 > 0 => pooled.push(rest),
            None => {}
        }
    }
    let tested = pooled.iter().filter(|b| b.5 > 0.0).count().max(1);
    r.alpha_bin = opts.alpha / tested as f64;
    for (lo, hi, n, k, s, v) in pooled {
        let z = if v > 0.0 {
            (k as f64 - s) / v.sqrt()
        } else {
            0.0
        };
        let pv = two_sided(z);
        let bin = Bin {
            lo,
            hi,
            packets: n,
            marked: k,
            expected: s,
            p_configured: if n > 0 { s / n as f64 } else { 0.0 },
            z,
            p_value: pv,
        };
        if v > 0.0 && pv < r.alpha_bin {
            r.failures.push(Failure {
                check: "marking.ramp",
                message: format!(
                    "queue {lo}..{hi} B: {k} of {n} packets marked ({:.2} %), the profile expects \
                     {s:.1} ({:.2} %): z = {z:.2}, p = {pv:.2e} < {:.2e}",
                    100.0 * k as f64 / n as f64,
                    100.0 * bin.p_configured,
                    r.alpha_bin
                ),
                t_ns: None,
            });
        }
        r.bins.push(bin);
    }
    // A likelihood ratio of simple hypotheses exceeds 1/alpha with probability at most alpha
    // under the null (Markov: its mean is 1), so this test's false-alarm rate is bounded too.
    let bound = (1.0 / opts.alpha).ln();
    if r.ln_lr_dequeue > bound {
        r.failures.push(Failure {
            check: "marking.measure",
            message: format!(
                "the marks follow the queue a packet leaves behind (at dequeue) better than the \
                 one it found (at enqueue, DCQCN-1): ln likelihood ratio {:.1} > ln(1/alpha) = \
                 {bound:.1}",
                r.ln_lr_dequeue
            ),
            t_ns: None,
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::taps::{Aligned, Summary};
    use ccreplay_reference_cc::dcqcn::cp::SplitMix64;

    const RED: Red = Red {
        kmin_bytes: 5_000,
        kmax_bytes: 50_000,
        pmax: 0.2,
    };

    fn port(pkts: impl Iterator<Item = (u64, bool)>) -> Port {
        let packets = pkts
            .map(|(q, marked)| Aligned {
                t_in: 0,
                t_out: 0,
                ingress: 0,
                frame: 1_058,
                ecn_in: 2,
                ecn_out: if marked { ECN_CE } else { 2 },
                q_enqueue: q,
                q_dequeue: q,
                int: None,
                out_index: 0,
            })
            .collect();
        Port {
            summary: Summary::default(),
            packets,
            departures: Vec::new(),
            pfc_sent: Vec::new(),
            ingress_data: Vec::new(),
            rate_bps: 25_000_000_000,
            unseen_departures: Vec::new(),
            queue: Vec::new(),
            departed_cum: vec![0],
            ack_records: Vec::new(),
            egress_only: None,
        }
    }

    /// 16,000 packets at queue lengths spread evenly over Kmin..Kmax + 10 KB, marked by a seeded
    /// draw with `scale × p(q)`.
    fn ramp(scale: f64) -> Port {
        let profile = RedParams {
            kmin_bytes: RED.kmin_bytes,
            kmax_bytes: RED.kmax_bytes,
            pmax: RED.pmax,
        };
        let mut rng = SplitMix64::new(7);
        port((0..16_000u64).map(move |i| {
            let q = RED.kmin_bytes + 1 + i * 55_000 / 16_000;
            let p = (scale * marking_probability(q, &profile)).min(1.0);
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            (q, u < p)
        }))
    }

    #[test]
    fn a_switch_marking_by_its_profile_passes_and_half_the_rate_fails() {
        let opts = Options::default();
        let r = judge(&ramp(1.0), &RED, &opts);
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        // The ramp is 45,000 B over 8 bins of 5,625 B; the lowest bins expect few marks (p
        // from 0 to 0.025 in the first) and are pooled with the next.
        assert!(r.bins.len() >= 5 && r.bins.len() <= 8, "{:?}", r.bins);
        assert_eq!(r.bins.first().map(|b| b.lo), Some(5_000));
        assert_eq!(r.bins.last().map(|b| b.hi), Some(50_000));
        let r = judge(&ramp(0.5), &RED, &opts);
        assert!(
            r.failures.iter().any(|f| f.check == "marking.ramp"),
            "{:?}",
            r.failures
        );
    }

    // Deterministic: one mark at 2,000 B (below Kmin less the 2,200 B guard) and one packet
    // unmarked at 53,000 B (above Kmax plus the guard) each fail; at 4,500 B (inside the
    // guard) a mark passes.
    #[test]
    fn marks_outside_the_ramp_fail_at_once() {
        let opts = Options::default();
        let r = judge(&port([(2_000, true)].into_iter()), &RED, &opts);
        assert_eq!(r.below_kmin, (1, 1));
        assert_eq!(r.failures[0].check, "marking.below_kmin");
        let r = judge(&port([(53_000, false)].into_iter()), &RED, &opts);
        assert_eq!(r.above_kmax, (1, 1));
        assert_eq!(r.failures[0].check, "marking.above_kmax");
        let r = judge(&port([(4_500, true)].into_iter()), &RED, &opts);
        assert!(r.failures.is_empty());
    }

    // Standard normal tail values (Abramowitz & Stegun table 26.1): P(|Z| > 1.96) = 0.05,
    // P(|Z| > 3.2905) = 0.001.
    #[test]
    fn two_sided_tails() {
        assert!((two_sided(1.959_964) - 0.05).abs() < 1e-6);
        assert!((two_sided(-3.290_527) - 0.001).abs() < 1e-6);
        assert_eq!(two_sided(0.0), 1.0);
    }
}
