//! The switches' clocks of a mirrored capture (docs/manifest.md `[mirror] clock`): event
//! times from the ERSPAN III timestamps the mirroring switches put on their copies
//! ([`crate::mirror::ErspanInfo::switch_time`], wire.md 2.1) instead of the collector's
//! capture times, which add the path from the switch and the collector's own jitter.
//!
//! Stateful, one record at a time in capture order: whoever reads a capture's times (the
//! extraction, a tap's scan, the wire DUT, `init`'s survey) feeds every record to its own
//! [`SwitchClock`] and so gives each packet the same time.

use std::net::IpAddr;

use crate::mirror::{Mirror, SwitchTime, SwitchTimeError};

/// A packet's stamp from the switch that mirrored it, for `[mirror] clock = "switch"`: the
/// clock (the switch's address and ERSPAN III Hw ID, the engine that stamps) and its time, or
/// why it has none.
#[derive(Clone, Copy, Debug)]
pub enum Stamp {
    /// Captured on the port itself.
    NotMirrored,
    /// Mirrored; the header gives no time.
    Untimed(SwitchTimeError),
    /// The switch's time of the copy.
    Timed {
        /// The mirroring switch.
        switch: IpAddr,
        /// Its ERSPAN III Hw ID.
        hw_id: u8,
        /// The timestamp.
        time: SwitchTime,
    },
}

impl Stamp {
    /// The stamp of a packet (its mirror encapsulation, if any).
    #[inline]
    pub fn of(m: Option<&Mirror>) -> Self {
        let Some(m) = m else {
            return Stamp::NotMirrored;
        };
        match m.erspan.map(|e| (e.hw_id(), e.switch_time())) {
            None => Stamp::Untimed(SwitchTimeError::NoTimestamp),
            Some((_, Err(e))) => Stamp::Untimed(e),
            Some((hw_id, Ok(time))) => Stamp::Timed {
                switch: m.ip.addrs.src(),
                hw_id,
                time,
            },
        }
    }

    /// The stamp of a decoded packet: a Lumina copy's switch timestamp (lumina.rs: the one
    /// switch of its testbed, as the clock of address 0.0.0.0), else its mirror
    /// encapsulation's ([`Self::of`]).
    #[inline]
    pub fn of_packet(p: &crate::Packet<'_>) -> Self {
        match &p.lumina {
            Some(l) => Stamp::Timed {
                switch: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                hw_id: 0,
                time: l.switch_time(),
            },
            None => Stamp::of(p.mirror.as_ref()),
        }
    }

    /// Why a [`SwitchClock`] gave a record with this stamp no time.
    pub fn why_untimed(&self) -> String {
        match self {
            Stamp::NotMirrored => "captured on the port, not mirrored".to_string(),
            Stamp::Untimed(e) => e.to_string(),
            Stamp::Timed { .. } => format!("more than {MAX_CLOCKS} switch clocks"),
        }
    }
}

/// One switch clock: its first copy's capture time fixes the origin, its stamps the intervals.
#[derive(Clone, Copy, Debug)]
struct Clock {
    switch: IpAddr,
    hw_id: u8,
    /// Capture time minus switch time of the first copy, ns.
    offset: i128,
    /// The last copy's switch time (unwrapped) and capture time, ns.
    last_switch: i128,
    last_capture: i128,
    /// The last copy's unwrapped time minus its stamp: the turns of a wrapping stamp so far.
    turn: i128,
}

/// At most this many clocks are kept; copies of more are untimed.
const MAX_CLOCKS: usize = 64;

/// `[mirror] clock = "switch"` (docs/manifest.md): event times from the switches' ERSPAN III
/// timestamps instead of the collector's capture times, which add the path to the collector
/// and its jitter. Per clock, the first copy keeps its capture time (the switch's origin is
/// its own); each later one is that plus the switch's interval. A timestamp that wraps (2^32
/// units, or a second of IEEE 1588 nanoseconds) is unwrapped to the value nearest to what the
/// capture clock says elapsed, so a gap is read right while the two clocks disagree by less
/// than half the period.
#[derive(Debug, Default)]
pub struct SwitchClock {
    clocks: Vec<Clock>,
    /// What it did, for the report.
    pub report: SwitchClockReport,
}

/// What `[mirror] clock = "switch"` did to the events' times.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchClockReport {
    /// Events timed by their switch.
    pub timed: u64,
    /// Switch clocks (switch address, Hw ID).
    pub clocks: u64,
    /// The coarsest timestamp unit seen, ns.
    pub unit_ns: u64,
    /// The capture time minus the event time, least and most, ns: the collector's jitter and
    /// the drift of its clock against the switch's (0 on each clock's first copy).
    pub capture_minus_switch_ns: (i64, i64),
    /// Events that kept their capture time: not mirrored as ERSPAN III, or a stamp that does
    /// not read as a time (the verdict's error).
    pub untimed: u64,
    /// The first of them: its frame and why.
    pub first_untimed: Option<(u64, String)>,
}

impl SwitchClock {
    /// Every record in capture order, with its capture time and stamp: its time by its
    /// switch's clock, or `None` (no usable stamp: it keeps the capture's). Each clock's origin
    /// is its first stamped record, whatever that record is, so that every reader of a capture
    /// (the extraction, the tap's scan, the wire DUT) gives a packet the same time.
    pub fn time(&mut self, capture_ns: u64, stamp: &Stamp) -> Option<u64> {
        let &Stamp::Timed {
            switch,
            hw_id,
            time,
        } = stamp
        else {
            return None;
        };
        let capture = i128::from(capture_ns);
        let raw = i128::from(time.ns);
        let r = &mut self.report;
        r.unit_ns = r.unit_ns.max(time.unit_ns);
        let Some(i) = self
            .clocks
            .iter()
            .position(|c| c.switch == switch && c.hw_id == hw_id)
        else {
            if self.clocks.len() == MAX_CLOCKS {
                return None;
            }
            self.clocks.push(Clock {
                switch,
                hw_id,
                offset: capture - raw,
                last_switch: raw,
                last_capture: capture,
                turn: 0,
            });
            r.clocks += 1;
            return Some(capture_ns);
        };
        let c = &mut self.clocks[i];
        let now = match time.period_ns {
            None => raw,
            Some(p) => {
                // The representative of `raw` modulo the period nearest to what the capture
                // clock says elapsed (the lower of two as near): `now - expected` in
                // [-p/2, p/2) (p is even).
                let p = i128::from(p);
                let expected = c.last_switch + (capture - c.last_capture);
                // From the last stamp's turn: a step or two for the usual gap, a division
                // only for a gap of periods.
                let mut now = c.turn + raw;
                if (now - expected).abs() > 4 * p {
                    now = raw + (expected - raw).div_euclid(p) * p;
                }
                while 2 * (now - expected) >= p {
                    now -= p;
                }
                while 2 * (now - expected) < -p {
                    now += p;
                }
                now
            }
        };
        c.last_switch = now;
        c.last_capture = capture;
        c.turn = now - raw;
        let t = (now + c.offset).clamp(0, i128::from(u64::MAX));
        let d = (capture - t).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let (lo, hi) = &mut r.capture_minus_switch_ns;
        *lo = (*lo).min(d);
        *hi = (*hi).max(d);
        Some(t as u64)
    }

    /// Count an event (frame `frame`) that `time` gave `timed`; one it did not is the
    /// verdict's error, the first kept with why.
    pub fn count_event(&mut self, stamp: &Stamp, timed: Option<u64>, frame: u64) {
        let r = &mut self.report;
        if timed.is_some() {
            r.timed += 1;
            return;
        }
        r.untimed += 1;
        if r.first_untimed.is_none() {
            r.first_untimed = Some((frame, stamp.why_untimed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event through the clock, as the extraction does it.
    fn ev(c: &mut SwitchClock, capture_ns: u64, stamp: Stamp, frame: u64) -> u64 {
        let t = c.time(capture_ns, &stamp);
        c.count_event(&stamp, t, frame);
        t.unwrap_or(capture_ns)
    }

    fn timed(hw_id: u8, ns: u64, unit_ns: u64, period_ns: Option<u64>) -> Stamp {
        Stamp::Timed {
            switch: IpAddr::from([10, 9, 0, 1]),
            hw_id,
            time: SwitchTime {
                ns,
                unit_ns,
                period_ns,
            },
        }
    }

    /// A 100 ns counter that wraps between two copies 1.5 µs apart (capture clock): the second
    /// stamp, 17 units after the first modulo 2^32, is 1.7 µs after it.
    #[test]
    fn a_wrapped_counter_counts_on() {
        let period = Some(100 << 32);
        let mut c = SwitchClock::default();
        let first = (u64::from(u32::MAX) - 9) * 100; // 2^32 - 10 units
        assert_eq!(
            ev(&mut c, 1_000_000_000, timed(1, first, 100, period), 1),
            1_000_000_000
        );
        assert_eq!(
            ev(&mut c, 1_000_001_500, timed(1, 700, 100, period), 2),
            1_000_001_700
        );
        assert_eq!(c.report.capture_minus_switch_ns, (-200, 0));
        assert_eq!(
            (c.report.timed, c.report.clocks, c.report.unit_ns),
            (2, 1, 100)
        );
    }

    /// IEEE 1588 nanoseconds without seconds wrap each second: a 2.3 s gap is read from the
    /// capture clock (2.30004 s, 40 µs of collector jitter) and refined by the switch's.
    #[test]
    fn a_gap_longer_than_the_period_is_read_from_the_capture_clock() {
        let period = Some(1_000_000_000);
        let mut c = SwitchClock::default();
        assert_eq!(
            ev(&mut c, 5_000_000_000, timed(1, 200_000_000, 1, period), 1),
            5_000_000_000
        );
        assert_eq!(
            ev(&mut c, 7_300_040_000, timed(1, 500_000_000, 1, period), 2),
            7_300_000_000
        );
        assert_eq!(c.report.capture_minus_switch_ns, (0, 40_000));
    }

    /// The stamp taken nearest to the capture clock's estimate, ahead of it or behind: IEEE
    /// 1588 nanoseconds without seconds (period 1 s), the first copy at ns 0.
    #[test]
    fn the_nearest_turn_of_the_stamp_is_taken() {
        let period = Some(1_000_000_000);
        // Capture: 300 µs later; switch: 100 µs later (the collector's path was slower).
        let mut c = SwitchClock::default();
        assert_eq!(
            ev(&mut c, 10_000_000_000, timed(1, 0, 1, period), 1),
            10_000_000_000
        );
        assert_eq!(
            ev(&mut c, 10_000_300_000, timed(1, 100_000, 1, period), 2),
            10_000_100_000
        );
        // Capture: 100 µs later; switch: 700 µs later (the first copy's path was slower).
        let mut c = SwitchClock::default();
        assert_eq!(
            ev(&mut c, 5_000_000_000, timed(1, 200_000_000, 1, period), 1),
            5_000_000_000
        );
        assert_eq!(
            ev(&mut c, 5_000_100_000, timed(1, 200_700_000, 1, period), 2),
            5_000_700_000
        );
        assert_eq!(c.report.capture_minus_switch_ns, (-600_000, 0));
    }

    /// Each (switch, Hw ID) is its own clock with its own origin; a widened stamp is used as
    /// it is; an event without a stamp keeps its capture time and is counted, the first named.
    #[test]
    fn clocks_are_per_engine_and_unstamped_events_are_counted() {
        let mut c = SwitchClock::default();
        assert_eq!(ev(&mut c, 1_000, timed(1, 50_000, 1, None), 1), 1_000);
        assert_eq!(ev(&mut c, 1_200, timed(2, 9_000_000, 100, None), 2), 1_200);
        assert_eq!(ev(&mut c, 1_500, timed(1, 50_300, 1, None), 3), 1_300);
        assert_eq!(ev(&mut c, 1_900, timed(2, 9_000_500, 100, None), 4), 1_700);
        assert_eq!(ev(&mut c, 2_000, Stamp::NotMirrored, 5), 2_000);
        let e = SwitchTimeError::PlatformUnit;
        assert_eq!(ev(&mut c, 2_100, Stamp::Untimed(e), 6), 2_100);
        let r = &c.report;
        assert_eq!((r.timed, r.clocks, r.unit_ns, r.untimed), (4, 2, 100, 2));
        assert_eq!(r.capture_minus_switch_ns, (0, 200));
        assert_eq!(
            r.first_untimed,
            Some((5, "captured on the port, not mirrored".to_string()))
        );
    }
}
