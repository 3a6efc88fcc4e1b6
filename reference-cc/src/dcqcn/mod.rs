//! DCQCN (seed 001 §3.1 and §5; algorithms.md DCQCN-1..4).
//!
//! - [`cp`]: the switch (congestion point): RED/ECN marking probability from the egress queue
//!   length (DCQCN-1, paper eq. 5) and a marking decision drawing from an injected generator.
//! - [`Np`] (`dcqcn-np`): the receiver (notification point), CNP pacing (DCQCN-2).
//! - [`Rp`] (`dcqcn`): the sender (reaction point), paper profile with f64 `alpha` (DCQCN-3).
//! - [`RpNic`] (`dcqcn-nic`): the sender with NIC-firmware semantics: 10-bit fixed-point
//!   `alpha`, periodic alpha update and rate-reduction check (DCQCN-4, C-4).
//!
//! Both senders share one rate-increase engine (timer, byte counter, fast recovery, additive
//! and hyper increase: DCQCN-3), kept in a private module. Time is u64 ns, rates u64 bps,
//! bytes u64 (C-2); parameters keep the units of the firmware knobs users know (µs, Mbps) and
//! are converted once when a model is built. `docs/models/dcqcn.md` lists every formula with
//! its source and every choice made where the sources are silent.

pub mod cp;
mod flows;
mod increase;
pub mod nic;
pub mod np;
pub mod port;
pub mod rp;

pub use nic::{NicParams, RpNic};
pub use np::{Np, NpParams};
pub use port::{CpParams, CpPort};
pub use rp::{Rp, RpParams};

use crate::model::ParamError;

pub use crate::model::MAX_LINE_RATE_BPS;

/// Largest time knob accepted, in µs (1000 s): keeps every ns conversion and deadline sum far
/// from u64 overflow.
pub const MAX_TIME_US: u64 = 1_000_000_000;

/// ns per µs.
const NS_PER_US: u64 = 1_000;
/// bps per Mbps.
const BPS_PER_MBPS: u64 = 1_000_000;

pub(crate) use crate::model::err;

pub(crate) use crate::model::check_line_rate;

/// A time knob in µs, `min_us..=MAX_TIME_US`, converted to ns.
pub(crate) fn time_us_to_ns(
    name: &'static str,
    value_us: u64,
    min_us: u64,
) -> Result<u64, ParamError> {
    if value_us < min_us || value_us > MAX_TIME_US {
        return Err(err(
            name,
            value_us,
            if min_us == 0 {
                "must be in 0..=10^9 µs"
            } else {
                "must be in 1..=10^9 µs"
            },
        ));
    }
    Ok(value_us * NS_PER_US)
}

/// A rate knob in Mbps, `min_mbps..=line rate`, converted to bps.
pub(crate) fn rate_mbps_to_bps(
    name: &'static str,
    value_mbps: u64,
    min_mbps: u64,
    line_rate_bps: u64,
) -> Result<u64, ParamError> {
    let bps = value_mbps.checked_mul(BPS_PER_MBPS);
    match bps {
        Some(b) if value_mbps >= min_mbps && b <= line_rate_bps => Ok(b),
        _ => Err(err(
            name,
            value_mbps,
            if min_mbps == 0 {
                "must be in 0..=line_rate_bps / 10^6 Mbps"
            } else {
                "must be in 1..=line_rate_bps / 10^6 Mbps"
            },
        )),
    }
}

/// The first phase point `origin + k × period` (k >= 1) strictly after `t_ns`: how a
/// free-running periodic timer started at `origin` is re-armed after idling (`dcqcn-nic`).
/// `None` when it lies beyond u64 time.
pub(crate) fn next_phase_after(origin_ns: u64, period_ns: u64, t_ns: u64) -> Option<u64> {
    if period_ns == 0 {
        return None;
    }
    let k = if t_ns < origin_ns {
        1
    } else {
        (t_ns - origin_ns) / period_ns + 1
    };
    origin_ns.checked_add(k.checked_mul(period_ns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_points() {
        // origin 100, period 10: after 100 -> 110, after 109 -> 110, after 110 -> 120.
        assert_eq!(next_phase_after(100, 10, 100), Some(110));
        assert_eq!(next_phase_after(100, 10, 109), Some(110));
        assert_eq!(next_phase_after(100, 10, 110), Some(120));
        // A time before the origin (out-of-order input) gives the first point.
        assert_eq!(next_phase_after(100, 10, 5), Some(110));
        assert_eq!(next_phase_after(u64::MAX - 5, 10, u64::MAX - 1), None);
        assert_eq!(next_phase_after(0, 0, 7), None);
    }

    #[test]
    fn knob_conversions() {
        assert_eq!(time_us_to_ns("x", 55, 1), Ok(55_000));
        assert!(time_us_to_ns("x", 0, 1).is_err());
        assert!(time_us_to_ns("x", MAX_TIME_US + 1, 0).is_err());
        assert_eq!(rate_mbps_to_bps("x", 40, 0, 40_000_000_000), Ok(40_000_000));
        assert!(rate_mbps_to_bps("x", 40_001, 0, 40_000_000_000).is_err());
        assert!(rate_mbps_to_bps("x", u64::MAX, 0, u64::MAX).is_err());
        assert!(rate_mbps_to_bps("x", 0, 1, 40_000_000_000).is_err());
    }
}
