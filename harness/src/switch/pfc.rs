//! PFC against its thresholds (802.1Qbb; docs/switch.md "PFC").
//!
//! Each ingress port's occupancy — the data bytes that arrived through it and have not left
//! the port under test — is reconstructed from the taps, and the pause frames the switch sent
//! out of that port are checked against it:
//! - an XOFF that starts a pause while the occupancy is below XOFF (less the guard): early;
//! - the occupancy above XOFF (plus the guard) while no pause is in force and the upstream
//!   goes on sending (a quiet upstream was paused: the tap lost the XOFF): XOFF missing;
//! - an XON while the occupancy is above XON (plus the guard): early;
//! - every XOFF with the configured pause time;
//! - while a pause is in force it is refreshed (or ended) before it expires (pause time at the
//!   port's rate, plus the timing allowance).
//!
//! A tap that loses pause frames: data from the upstream well after the last pause frame (a
//! second frame after twice the timing allowance), before the pause expired, ends it (the XON
//! was lost); an upstream that stays quiet where a
//! pause was missing or expired was paused (the XOFF or refresh was lost).
//!
//! Only the traffic of the port under test is seen: a port whose data also goes to other
//! egress ports needs those taps too (docs/switch.md).

use super::taps::Port;
use super::{Failure, Options, Pfc, Setup};

/// The PFC verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// XOFF frames (pause time > 0) the switch sent, and XON (0).
    pub xoff: u64,
    /// XON frames.
    pub xon: u64,
    /// Pauses the upstream's traffic shows ended before they expired with no XON seen (the tap
    /// lost it).
    pub xon_inferred: u64,
    /// Largest occupancy reconstructed, bytes, per ingress tap.
    pub peak_bytes: Vec<u64>,
    /// Failed checks, all of them.
    pub failed: u64,
    /// Failed checks (the first of each kind).
    pub failures: Vec<Failure>,
}

/// Judge the pause frames of every ingress tap.
pub fn judge(port: &Port, setup: &Setup, cfg: &Pfc, opts: &Options) -> Report {
    let mut r = Report::default();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut fail = |r: &mut Report, check: &'static str, t: u64, m: String| {
        r.failed += 1;
        if !seen.contains(&check) {
            seen.push(check);
            r.failures.push(Failure {
                check,
                message: m,
                t_ns: Some(t),
            });
        }
    };
    // A tap that lost frames (seen on one side only) misplaces them in the occupancy until the
    // FIFO places them again: one more frame of guard.
    let lossy = port.summary.arrived_only + port.summary.left_only > 0;
    let max_frame = port
        .departures
        .iter()
        .map(|d| u64::from(d.1))
        .max()
        .unwrap_or(0);
    let guard = opts.guard_bytes + if lossy { max_frame } else { 0 };
    for (i, ing) in setup.ingress.iter().enumerate() {
        // Occupancy changes: (time, delta), departures first on ties.
        let mut ev: Vec<(u64, i64)> = Vec::new();
        for &(t, len, left) in &port.ingress_data[i] {
            ev.push((t, i64::from(len)));
            if left != u64::MAX {
                ev.push((left, -i64::from(len)));
            }
        }
        // A packet's own arrival before its departure at the same ns.
        ev.sort_by_key(|&(t, d)| (t, d < 0));
        let frames: Vec<_> = port.pfc_sent.iter().filter(|p| p.ingress == i).collect();
        let pause_ns = u64::from(cfg.pause_quanta) * 512 * 1_000_000_000 / ing.rate_bps.max(1);
        let (mut occ, mut peak) = (0i64, 0i64);
        let bytes = |o: i64| o.max(0) as u64;
        let mut k = 0; // next pause frame
        // The pause in force: (its last pause frame, expires).
        let mut paused: Option<(u64, u64)> = None;
        let sentinel = u64::MAX - opts.timing_ns;
        // Occupancy at any time by binary search on the running sums; arrivals in a span
        // likewise (both sorted by time): every check is O(log n).
        let mut cum = Vec::with_capacity(ev.len() + 1);
        cum.push(0i64);
        for e in &ev {
            cum.push(cum.last().copied().unwrap_or(0) + e.1);
        }
        let occ_at = |t: u64| -> i64 { cum[ev.partition_point(|e| e.0 <= t)] };
        let data = &port.ingress_data[i];
        let arrivals_in = |from: u64, to: u64| -> usize {
            data.partition_point(|d| d.0 <= to)
                .saturating_sub(data.partition_point(|d| d.0 <= from))
        };
        let mut last_t = 0;
        for &(t, d) in &ev {
            // Pause frames up to this change.
            while k < frames.len() && frames[k].t <= t {
                let f = frames[k];
                let o = bytes(occ_at(f.t));
                if let Some((_, exp)) = paused
                    && f.t > exp + opts.timing_ns
                {
                    fail(
                        &mut r,
                        "pfc.refresh",
                        exp,
                        format!(
                            "a pause expired at {exp} ns with {o} B still buffered from {}: no \
                             refresh before the {pause_ns} ns it lasts",
                            ing.peer
                        ),
                    );
                    paused = None;
                }
                if f.quanta > 0 {
                    r.xoff += 1;
                    if f.quanta != cfg.pause_quanta {
                        fail(
                            &mut r,
                            "pfc.quanta",
                            f.t,
                            format!(
                                "XOFF with {} quanta, configured {}",
                                f.quanta, cfg.pause_quanta
                            ),
                        );
                    }
                    if paused.is_none() && o + guard <= cfg.xoff_bytes {
                        fail(
                            &mut r,
                            "pfc.xoff_early",
                            f.t,
                            format!(
                                "XOFF to {} with {o} B buffered from it, XOFF threshold {} B",
                                ing.peer, cfg.xoff_bytes
                            ),
                        );
                    }
                    let exp = f.t + u64::from(f.quanta) * 512 * 1_000_000_000 / ing.rate_bps.max(1);
                    paused = Some((f.t, exp));
                } else {
                    r.xon += 1;
                    if o > cfg.xon_bytes + guard {
                        fail(
                            &mut r,
                            "pfc.xon_early",
                            f.t,
                            format!(
                                "XON to {} with {o} B buffered from it, XON threshold {} B",
                                ing.peer, cfg.xon_bytes
                            ),
                        );
                    }
                    paused = None;
                }
                k += 1;
            }
            // The upstream quiet after the pause expired: a refresh was in force (the tap lost it).
            let quiet_after = |from: u64| {
                let (from, window) = (from + 2 * opts.timing_ns, pause_ns.min(5_000));
                arrivals_in(from, from + window) == 0
            };
            if let Some((_, exp)) = paused
                && t > exp + opts.timing_ns
                && bytes(occ_at(exp)) > cfg.xon_bytes + guard
                && !quiet_after(exp)
            {
                let occ = bytes(occ_at(exp));
                fail(
                    &mut r,
                    "pfc.refresh",
                    exp,
                    format!(
                        "a pause to {} expired at {exp} ns with {occ} B buffered, above XON {} B: \
                         not refreshed",
                        ing.peer, cfg.xon_bytes
                    ),
                );
                paused = None;
            }
            // Data from the upstream well after its last pause frame, before the pause
            // expired: it was resumed — the tap lost the XON.
            if d > 0
                && let Some((last, exp)) = paused
                && exp != sentinel
                && t > last + 2 * opts.timing_ns
                && t < exp
                // A frame or two still in flight when the pause took hold are no resumption.
                && arrivals_in(last + 2 * opts.timing_ns, t) >= 2
            {
                r.xon_inferred += 1;
                paused = None;
            }
            occ += d;
            peak = peak.max(occ);
            // Above XOFF with no pause in force, longer than the timing allowance.
            if paused.is_none() && bytes(occ) > cfg.xoff_bytes + guard {
                let next = frames.get(k).map_or(u64::MAX, |f| f.t);
                // The upstream stopped sending soon after (nothing arrived from it over the
                // next stretch): a pause was in force, and the tap lost the XOFF.
                let settle = 2 * opts.timing_ns;
                let window = pause_ns.min(5_000);
                let from = t + settle;
                let quiet = arrivals_in(from, from + window) == 0;
                if next > t + opts.timing_ns && !quiet {
                    fail(
                        &mut r,
                        "pfc.xoff_missing",
                        t,
                        format!(
                            "{occ} B buffered from {}, above XOFF {} B, and no pause sent",
                            ing.peer, cfg.xoff_bytes
                        ),
                    );
                    // One failure per excursion: wait for the next pause frame.
                    paused = Some((t, sentinel));
                }
            }
            last_t = t;
        }
        let _ = last_t;
        r.peak_bytes.push(peak.max(0) as u64);
    }
    r
}
