//! The link rate as a capture's data frames show it, bounded by the unit of its timestamps.
//!
//! A link sends its frames one after another, so from the first frame of a run of consecutive
//! data frames to the last, the link sent at least every frame before the last: the line rate
//! is at least their bits over that time (each frame with the 24 bytes of preamble,
//! inter-frame gap and FCS a capture does not hold). With times floored to a unit `g` the
//! time is `span ± g`, so a run puts the rate (of that run, the line rate if it was sent back
//! to back) between bits / (span + g) and bits / (span − g): exact on a nanosecond capture;
//! on a microsecond one only over a run long enough — two frames a microsecond apart say only
//! "at least half the rate their spacing reads". Runs of 2, 4, ..., 64 frames are measured;
//! the run with the highest floor speaks (of those within 1 % of it, the narrowest range).

use std::collections::VecDeque;

use super::survey::Estimate;

/// Run lengths measured, frames.
const RUNS: [usize; 6] = [2, 4, 8, 16, 32, 64];
/// Preamble and start delimiter (8), inter-frame gap (12) and FCS (4), bytes.
const WIRE_EXTRA: u64 = 24;
/// Ethernet rates, Gbps: an estimate is snapped to one within 15 %.
const RATES_GBPS: [u64; 10] = [1, 10, 25, 40, 50, 56, 100, 200, 400, 800];
/// How far from an Ethernet rate a rate may be and still be read as it (framing the 24 bytes
/// do not cover, a clock's drift).
const SNAP: f64 = 1.15;

/// A run of consecutive data frames on one link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Frames in the run.
    pub frames: u32,
    /// Time from its first frame to its last, ns (> 0).
    pub span_ns: u64,
    /// Bytes of every frame before the last, each with [`WIRE_EXTRA`].
    pub bytes: u64,
    /// The first frame's length, bytes (without [`WIRE_EXTRA`]).
    pub first_len: u64,
}

impl Run {
    /// `bytes` over `span_ns + pad` is faster than `other`'s.
    fn faster(&self, other: &Run, pad: u64) -> bool {
        u128::from(self.bytes) * u128::from(other.span_ns + pad)
            > u128::from(other.bytes) * u128::from(self.span_ns + pad)
    }

    /// The rate it proves, with times floored to `g`: bits over the longest span they allow.
    fn floor(&self, g: u64) -> f64 {
        self.bps(self.span_ns + g)
    }

    /// How wide a range of rates times floored to `g` leave (highest over lowest), 1.01 at
    /// least: any run exact to 1 % is exact.
    fn width(&self, g: u64) -> f64 {
        (self.bps(self.span_ns.saturating_sub(g)) / self.floor(g)).max(1.01)
    }

    /// What it is, for an estimate's comment.
    fn describe(&self) -> String {
        if self.frames == 2 {
            format!(
                "two data frames {} ns apart, the first of {} B (+24 B preamble, gap and FCS)",
                self.span_ns, self.first_len
            )
        } else {
            format!(
                "{} consecutive data frames in {} ns, {} B before the last (with 24 B each of preamble, gap and FCS)",
                self.frames, self.span_ns, self.bytes
            )
        }
    }

    /// Bits per second over `span_ns` (f64::INFINITY for no time).
    fn bps(&self, span_ns: u64) -> f64 {
        if span_ns == 0 {
            f64::INFINITY
        } else {
            (self.bytes * 8) as f64 * 1e9 / span_ns as f64
        }
    }
}

/// The fastest run of each length seen on one link.
#[derive(Clone, Debug, Default)]
pub struct LinkRuns {
    best: [Option<Run>; RUNS.len()],
}

impl LinkRuns {
    /// Keep `run` (of length `RUNS[k]`) if it is the fastest of its length, by its floor
    /// with the timestamps' unit `grain` as known so far.
    pub fn offer(&mut self, k: usize, run: Run, grain: u64) {
        let slot = &mut self.best[k];
        if slot.is_none_or(|b| run.faster(&b, grain)) {
            *slot = Some(run);
        }
    }
}

/// The latest data frames of one direction, to measure the runs that end at each new one.
#[derive(Clone, Debug, Default)]
pub struct Recent {
    /// (time, bytes of the direction's frames before this one with [`WIRE_EXTRA`], length):
    /// the last 63 frames.
    frames: VecDeque<(u64, u64, u64)>,
    /// Bytes of every frame so far, with [`WIRE_EXTRA`].
    total: u64,
}

impl Recent {
    /// A data frame of `len` bytes at `ts`: the runs it ends, by index into [`RUNS`]. Frames
    /// out of time order (a merged capture) or on the same timestamp as a run's first end no
    /// run.
    pub fn push(&mut self, ts: u64, len: u64) -> [Option<Run>; RUNS.len()] {
        let mut out = [None; RUNS.len()];
        let n = self.frames.len();
        for (k, &frames) in RUNS.iter().enumerate() {
            let Some(&(t0, before, first_len)) = n.checked_sub(frames - 1).map(|i| &self.frames[i])
            else {
                break;
            };
            if ts > t0 {
                out[k] = Some(Run {
                    frames: frames as u32,
                    span_ns: ts - t0,
                    bytes: self.total - before,
                    first_len,
                });
            }
        }
        if n == RUNS[RUNS.len() - 1] - 1 {
            self.frames.pop_front();
        }
        self.frames.push_back((ts, self.total, len));
        self.total += len + WIRE_EXTRA;
        out
    }
}

/// The link rate `runs` show, with timestamps in units of `grain_ns`.
pub fn estimate(runs: Option<&LinkRuns>, grain_ns: u64) -> Estimate {
    let g = grain_ns.max(1);
    let all = || runs.iter().flat_map(|l| l.best.iter().flatten());
    // The highest floor speaks; among runs within 1 % of it, the one its unit leaves the
    // narrowest range (any within 1 % alike), then the shortest (a nanosecond capture's
    // pairs are exact, and say it in fewer words).
    let top = all().map(|r| r.floor(g)).fold(0.0, f64::max);
    let best = all()
        .filter(|r| r.floor(g) * 1.01 >= top)
        .min_by(|a, b| {
            a.width(g)
                .total_cmp(&b.width(g))
                .then(a.frames.cmp(&b.frames))
        })
        .copied();
    let Some(run) = best else {
        return Estimate {
            value: 100_000_000_000,
            how:
                "no two consecutive data frames to measure: 100 Gbps assumed; set your link's rate"
                    .into(),
            measured: false,
        };
    };
    let what = run.describe();
    let point = run.bps(run.span_ns);
    let (lo, hi) = (run.floor(g), run.bps(run.span_ns.saturating_sub(g)));
    let unit = if g == 1 || hi <= lo * 1.01 {
        String::new() // exact: the unit says nothing
    } else if hi.is_finite() {
        format!(
            " (timestamps to {g} ns: between {} and {})",
            rate_text(lo),
            rate_text(hi)
        )
    } else {
        format!(" (timestamps to {g} ns: {} or more)", rate_text(lo))
    };
    let fits: Vec<f64> = if hi <= lo * SNAP {
        // Exact enough: the rate its spacing reads, snapped (15 % off included, as a range
        // fits a rate and a run of 4 agrees with one).
        let n = nearest(point);
        if (n / point).ln().abs() <= SNAP.ln() {
            vec![n]
        } else {
            vec![]
        }
    } else {
        // The unit leaves a range: the Ethernet rates that fit it.
        RATES_GBPS
            .iter()
            .map(|r| *r as f64 * 1e9)
            .filter(|&r| r * SNAP >= lo && r <= hi * SNAP)
            .collect()
    };
    let rate = match fits[..] {
        [only] => only,
        [] => {
            // No Ethernet rate fits: not sent back to back, or the times are not the wire's.
            // The link is at least as fast as any run on it.
            let at_least = RATES_GBPS
                .iter()
                .map(|r| *r as f64 * 1e9)
                .find(|&r| r * SNAP >= lo)
                .unwrap_or(800e9);
            return Estimate {
                value: at_least as u64,
                how: format!(
                    "{what}: {}{unit}, no Ethernet rate (not sent back to back, or times that are not the wire's); the link is at least that fast: {} assumed, set your link's rate",
                    rate_text(point),
                    eth_text(at_least)
                ),
                measured: false,
            };
        }
        _ => {
            let n = nearest(point);
            let range = if hi.is_finite() {
                format!("between {} and {}", rate_text(lo), rate_text(hi))
            } else {
                format!("{} or more", rate_text(lo))
            };
            return Estimate {
                value: n as u64,
                how: format!(
                    "the capture's timestamps are to {g} ns: {what} say only {range}; {} is the Ethernet rate nearest the {} their times read: set your link's rate",
                    eth_text(n),
                    rate_text(point)
                ),
                measured: false,
            };
        }
    };
    // Two frames alone can be a host's timestamps (taken as software sends or polls, not as
    // the frames cross the wire), which bunch frames: a run of 4 or more must read the rate
    // too.
    let agrees = |r: &Run| {
        r.frames >= 4
            && r.floor(g) <= rate * SNAP
            && rate <= r.bps(r.span_ns.saturating_sub(g)) * SNAP
    };
    if run.frames < 4 && !all().any(agrees) {
        return Estimate {
            value: rate as u64,
            how: format!(
                "{what}: {}{unit}, and no run of 4 or more frames reads it (times that are not the wire's, as a host's software timestamps, bunch frames): {} assumed, set your link's rate",
                rate_text(point),
                eth_text(rate)
            ),
            measured: false,
        };
    }
    Estimate {
        value: rate as u64,
        how: format!(
            "{what}: {}{unit}, the nearest Ethernet rate",
            rate_text(point)
        ),
        measured: true,
    }
}

/// An Ethernet rate: `100 Gbps`.
fn eth_text(bps: f64) -> String {
    format!("{} Gbps", bps / 1e9)
}

/// A rate as people write it: `25.80 Gbps`, `139.52 Mbps`, `12.00 kbps`.
fn rate_text(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbps", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbps", bps / 1e6)
    } else {
        format!("{:.2} kbps", bps / 1e3)
    }
}

/// The Ethernet rate nearest `bps`, as a ratio.
fn nearest(bps: f64) -> f64 {
    RATES_GBPS
        .iter()
        .map(|g| *g as f64 * 1e9)
        .min_by(|a, b| (a / bps).ln().abs().total_cmp(&(b / bps).ln().abs()))
        .unwrap_or(bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_of(frames: &[(u64, u64)]) -> LinkRuns {
        let mut recent = Recent::default();
        let mut link = LinkRuns::default();
        for &(ts, len) in frames {
            for (k, r) in recent.push(ts, len).into_iter().enumerate() {
                if let Some(r) = r {
                    link.offer(k, r, 1);
                }
            }
        }
        link
    }

    /// 1,000-byte frames back to back at 25 Gbps: (1,000 + 24) × 8 bits / 25 Gbps = 327.68 ns
    /// apart. In nanoseconds (floored) the pair is exact; floored to microseconds, a pair
    /// reads 0 or 1,000 ns and says "4.10 Gbps or more" (8,192 bits / 2,000 ns), while 64
    /// frames (63 × 327.68 = 20,643.84 ns, 20,000 or 21,000 as written) read 20,000 at best:
    /// between 63 × 8,192 bits / 21,000 ns = 24.58 Gbps and / 19,000 ns = 27.16 Gbps, read as
    /// 25.80 Gbps: 25 Gbps.
    #[test]
    fn a_run_long_enough_measures_through_microseconds() {
        let ns: Vec<(u64, u64)> = (0..200u64)
            .map(|i| (1_000_000 + i * 32_768 / 100, 1_000))
            .collect();
        let e = estimate(Some(&runs_of(&ns)), 1);
        assert_eq!(e.value, 25_000_000_000);
        assert!(e.measured);
        assert!(
            e.how.starts_with("two data frames 327 ns apart"),
            "{}",
            e.how
        );
        let us: Vec<(u64, u64)> = ns.iter().map(|&(t, l)| (t / 1_000 * 1_000, l)).collect();
        let e = estimate(Some(&runs_of(&us)), 1_000);
        assert_eq!(e.value, 25_000_000_000, "{}", e.how);
        assert!(e.measured, "{}", e.how);
        assert!(
            e.how
                .starts_with("64 consecutive data frames in 20000 ns, 64512 B before the last"),
            "{}",
            e.how
        );
        assert!(
            e.how.contains(
                ": 25.80 Gbps (timestamps to 1000 ns: between 24.58 Gbps and 27.16 Gbps), the nearest"
            ),
            "{}",
            e.how
        );
        // Only pairs (frames 2 µs apart in pairs, 1 ms between pairs): the unit leaves the
        // rate open.
        let pairs: Vec<(u64, u64)> = (0..20u64)
            .flat_map(|i| [(i * 1_000_000, 1_058), (i * 1_000_000 + 1_000, 1_058)])
            .collect();
        let e = estimate(Some(&runs_of(&pairs)), 1_000);
        assert!(!e.measured, "{}", e.how);
        // (1,058 + 24) × 8 / 2,000 ns = 4.33 Gbps at least; read as 1,000 ns, 8.66 Gbps.
        assert!(e.how.contains("say only 4.33 Gbps or more"), "{}", e.how);
        assert!(
            e.how.contains("the 8.66 Gbps their times read"),
            "{}",
            e.how
        );
        assert_eq!(e.value, 10_000_000_000);
    }

    /// Nothing to measure: a default, said to be one.
    #[test]
    fn no_run_is_a_guess() {
        let e = estimate(Some(&runs_of(&[(5, 1_000)])), 1);
        assert!(!e.measured);
        assert_eq!(e.value, 100_000_000_000);
        assert!(!estimate(None, 1).measured);
    }

    /// A merged capture's frame before its predecessor, or on its timestamp, ends no run.
    #[test]
    fn frames_without_time_between_end_no_run() {
        let mut r = Recent::default();
        assert_eq!(r.push(100, 1_000), [None; 6]);
        assert_eq!(r.push(100, 1_000), [None; 6]);
        assert_eq!(r.push(50, 1_000), [None; 6]);
        let runs = r.push(150, 1_000);
        assert_eq!(
            runs[0],
            Some(Run {
                frames: 2,
                span_ns: 100,
                bytes: 1_024,
                first_len: 1_000
            })
        );
        assert_eq!(
            runs[1],
            Some(Run {
                frames: 4,
                span_ns: 50,
                bytes: 3 * 1_024,
                first_len: 1_000
            })
        );
    }

    /// `frames` (time, length) as [`runs_of`] keeps them, estimated with timestamps to `g` ns.
    fn estimate_of(frames: &[(u64, u64)], g: u64) -> Estimate {
        estimate(Some(&runs_of(frames)), g)
    }

    /// The fastest pair is kept wherever it comes: four pairs of 1,001-byte frames (1,025
    /// bytes with the 24) 1 ms apart, 400, 328, 327 and 500 ns from first to second. By their
    /// floors (bits over span + 1 ns) 8,200 / 401, / 329, / 328, / 501: the third is the
    /// fastest, 25.00 Gbps, and beats the second (25.00 against 24.92 Gbps) by 1 ns alone.
    /// The pairs across a millisecond, and every run of 4 or 8 frames, are slower.
    #[test]
    fn the_fastest_run_of_a_length_is_kept_wherever_it_comes() {
        let frames: Vec<(u64, u64)> = [400u64, 328, 327, 500]
            .iter()
            .enumerate()
            .flat_map(|(i, &span)| {
                let t = 1_000_000 * (i as u64 + 1);
                [(t, 1_001), (t + span, 1_001)]
            })
            .collect();
        assert_eq!(
            runs_of(&frames).best[0],
            Some(Run {
                frames: 2,
                span_ns: 327,
                bytes: 1_025,
                first_len: 1_001
            })
        );
    }

    /// Of two equally fast runs the first stays (a later run must be faster to replace it):
    /// 1,001 bytes (1,025 with the 24) 327 ns apart, and 1 ms later 2,026 bytes (2,050) 655 ns
    /// apart: floors 8,200 bits / 328 ns and 16,400 / 656, both 25 Gbps exactly
    /// (1,025 × 656 = 2,050 × 328 = 672,400).
    #[test]
    fn the_first_of_equally_fast_runs_stays() {
        let frames = [
            (1_000_000, 1_001),
            (1_000_327, 1_001),
            (2_000_000, 2_026),
            (2_000_655, 2_026),
        ];
        assert_eq!(
            runs_of(&frames).best[0],
            Some(Run {
                frames: 2,
                span_ns: 327,
                bytes: 1_025,
                first_len: 1_001
            })
        );
        let e = estimate_of(&frames, 1);
        assert!(
            e.how
                .starts_with("two data frames 327 ns apart, the first of 1001 B"),
            "{}",
            e.how
        );
    }

    /// Microsecond times over a run long enough are exact to 1 %, and the unit goes unsaid:
    /// 32 frames of 976 bytes (1,000 with the 24, 8,000 bits) 8,000 ns apart, a 1 Gbps link.
    /// Floors (bits over span + 1,000 ns): 32 frames 31 × 8,000 = 248,000 bits / 249,000 ns =
    /// 995.98 Mbps, the highest; 16 frames 120,000 / 121,000 = 991.74 Mbps, within 1 % of it;
    /// 8 frames 56,000 / 57,000 = 982.46 Mbps, not. Their ranges (highest over lowest): 16
    /// frames 121,000 / 119,000 = 1.0168; 32 frames 249,000 / 247,000 = 1.0081, within 1 %:
    /// exact. 248,000 bits in 248,000 ns: 1.00 Gbps.
    #[test]
    fn a_range_within_one_percent_is_exact() {
        let frames: Vec<(u64, u64)> = (0..32u64).map(|i| (1_000_000 + i * 8_000, 976)).collect();
        let e = estimate_of(&frames, 1_000);
        assert_eq!(
            e,
            Estimate {
                value: 1_000_000_000,
                how: "32 consecutive data frames in 248000 ns, 31000 B before the last (with 24 B each of preamble, gap and FCS): 1.00 Gbps, the nearest Ethernet rate".into(),
                measured: true,
            }
        );
    }

    /// An exact reading is snapped to the nearest Ethernet rate, not to every rate within 15 %
    /// of it: 4 frames of 976 bytes (1,000 with the 24) 160 ns apart, 50 Gbps to the bit.
    /// Floors (bits over span + 1 ns): a pair 8,000 / 161 = 49.69 Gbps, the 4 frames 24,000 /
    /// 481 = 49.90 Gbps (within 1 %); ranges 161 / 159 = 1.013 and 481 / 479 = 1.004: the 4
    /// frames speak, 24,000 bits in 480 ns, 50.00 Gbps — 50 Gbps, though 56 Gbps is within
    /// 15 % too (56 / 50 = 1.12).
    #[test]
    fn an_exact_reading_is_the_nearest_rate_alone() {
        let frames: Vec<(u64, u64)> = (0..4u64).map(|i| (1_000_000 + i * 160, 976)).collect();
        let e = estimate_of(&frames, 1);
        assert_eq!(
            e,
            Estimate {
                value: 50_000_000_000,
                how: "4 consecutive data frames in 480 ns, 3000 B before the last (with 24 B each of preamble, gap and FCS): 50.00 Gbps, the nearest Ethernet rate".into(),
                measured: true,
            }
        );
    }

    /// When the unit leaves a range, an Ethernet rate within 15 % of it fits, below it or
    /// above. 8 frames 1 µs apart as written (g = 1,000 ns), so 7 × (len + 24) × 8 bits over
    /// 7,000 ± 1,000 ns; runs of 2 and 4 frames prove less (bits over 2,000 and 4,000 ns).
    ///
    /// - 3,676 bytes (3,700 with the 24): 207,200 bits, between 207,200 / 8,000 = 25.90 Gbps
    ///   and / 6,000 = 34.53 Gbps, read as / 7,000 = 29.60 Gbps (pairs 29,600 / 2,000 = 14.8,
    ///   runs of 4 88,800 / 4,000 = 22.2 Gbps). 25 Gbps fits (25 × 1.15 = 28.75 ≥ 25.90);
    ///   40 does not (40 > 34.53 × 1.15 = 39.71), nor 10 (11.5 < 25.90).
    /// - 2,476 bytes (2,500): 140,000 bits, between 17.50 and 23.33 Gbps, read as 20.00
    ///   (pairs 10, runs of 4 15 Gbps). 25 Gbps fits (25 ≤ 23.33 × 1.15 = 26.83); 10 does not
    ///   (11.5 < 17.50), nor 40.
    #[test]
    fn a_rate_within_fifteen_percent_of_a_range_fits_it() {
        let at = |len: u64| -> Vec<(u64, u64)> {
            (0..8u64).map(|i| (1_000_000 + i * 1_000, len)).collect()
        };
        assert_eq!(
            estimate_of(&at(3_676), 1_000),
            Estimate {
                value: 25_000_000_000,
                how: "8 consecutive data frames in 7000 ns, 25900 B before the last (with 24 B each of preamble, gap and FCS): 29.60 Gbps (timestamps to 1000 ns: between 25.90 Gbps and 34.53 Gbps), the nearest Ethernet rate".into(),
                measured: true,
            }
        );
        assert_eq!(
            estimate_of(&at(2_476), 1_000),
            Estimate {
                value: 25_000_000_000,
                how: "8 consecutive data frames in 7000 ns, 17500 B before the last (with 24 B each of preamble, gap and FCS): 20.00 Gbps (timestamps to 1000 ns: between 17.50 Gbps and 23.33 Gbps), the nearest Ethernet rate".into(),
                measured: true,
            }
        );
    }

    /// No Ethernet rate within 15 % of the reading: the link is assumed the slowest rate its
    /// floor can be read as. 976 bytes (1,000 with the 24) 278 ns apart: 8,000 bits / 278 ns =
    /// 28.78 Gbps, 15.1 % above 25 Gbps (and 40 / 28.78 = 1.39), so no rate; the floor,
    /// 8,000 / 279 = 28.67 Gbps, is within 25 Gbps × 1.15 = 28.75: 25 Gbps, not 40.
    #[test]
    fn no_rate_fits_and_the_floor_names_the_slowest_it_can_be() {
        let e = estimate_of(&[(1_000_000, 976), (1_000_278, 976)], 1);
        assert_eq!(
            e,
            Estimate {
                value: 25_000_000_000,
                how: "two data frames 278 ns apart, the first of 976 B (+24 B preamble, gap and FCS): 28.78 Gbps, no Ethernet rate (not sent back to back, or times that are not the wire's); the link is at least that fast: 25 Gbps assumed, set your link's rate".into(),
                measured: false,
            }
        );
    }

    /// A pair's rate is measured when a run of 4 reads it within 15 %, though slower: 1,000-byte
    /// frames (1,024 with the 24, 8,192 bits) 330, 400 and 340 ns apart. The pairs' floors
    /// 8,192 / 331 = 24.75, / 401, / 341 Gbps; the 4 frames' 24,576 / 1,071 = 22.95 Gbps is
    /// not within 1 % of 24.75: the first pair speaks, 8,192 / 330 = 24.82 Gbps, 25 Gbps.
    /// The 4 frames read at most 24,576 / 1,069 = 22.99 Gbps, and 22.99 × 1.15 = 26.44 ≥ 25.
    #[test]
    fn a_run_of_four_within_fifteen_percent_confirms_a_pair() {
        let frames = [
            (1_000_000, 1_000),
            (1_000_330, 1_000),
            (1_000_730, 1_000),
            (1_001_070, 1_000),
        ];
        assert_eq!(
            estimate_of(&frames, 1),
            Estimate {
                value: 25_000_000_000,
                how: "two data frames 330 ns apart, the first of 1000 B (+24 B preamble, gap and FCS): 24.82 Gbps, the nearest Ethernet rate".into(),
                measured: true,
            }
        );
    }

    /// "Within 15 %" includes 15 % itself, as a range's fit and a run's agreement do: 4 frames
    /// of 976 bytes (1,000 with the 24, 8,000 bits) 9,200 ns apart read 8,000 / 9,200 =
    /// 869.57 Mbps, 1 Gbps / 1.15 (in f64 too: 1 Gbps over it rounds to the f64 1.15). The
    /// floors: pairs 8,000 / 9,201, the 4 frames 24,000 / 27,601 (within 1 %); ranges 9,201 /
    /// 9,199 and 27,601 / 27,599, both within 1 %: the pair speaks. The 4 frames read at most
    /// 24,000 / 27,599 = 869.60 Mbps, and × 1.15 = 1.00004 Gbps ≥ 1 Gbps: measured.
    #[test]
    fn fifteen_percent_off_is_within_fifteen_percent() {
        let frames: Vec<(u64, u64)> = (0..4u64).map(|i| (1_000_000 + i * 9_200, 976)).collect();
        assert_eq!(
            estimate_of(&frames, 1),
            Estimate {
                value: 1_000_000_000,
                how: "two data frames 9200 ns apart, the first of 976 B (+24 B preamble, gap and FCS): 869.57 Mbps, the nearest Ethernet rate".into(),
                measured: true,
            }
        );
    }
}
