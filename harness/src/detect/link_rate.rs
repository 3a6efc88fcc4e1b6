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
        // Exact enough: the rate its spacing reads, snapped.
        let n = nearest(point);
        if (n / point).ln().abs() < SNAP.ln() {
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
}
