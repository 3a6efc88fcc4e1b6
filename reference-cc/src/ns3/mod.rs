//! Profiles of the ns-3 simulator published with the HPCC paper (GitHub
//! `alibaba-edu/High-Precision-Congestion-Control`, "the simulator" below):
//!
//! - [`HpccNs3`] (`hpcc-ns3`): `RdmaHw::HandleAckHp` / `UpdateRateHp` / `FastReactHp`
//!   (`simulation/src/point-to-point/model/rdma-hw.cc`, `CC_MODE 3`) — rate-based HPCC with
//!   per-ACK fast react, per-hop rates (`MULTI_RATE`) and a window derived from the rate.
//! - [`DcqcnNs3`] (`dcqcn-ns3`): the simulator's "Mellanox version of DCQCN" (`CC_MODE 1`):
//!   `cnp_received_mlx`, `UpdateAlphaMlx`, `CheckRateDecreaseMlx`, `RateIncEventTimerMlx`.
//!
//! Parameters are named exactly as the simulator's config file (`mix/config.txt`) names them
//! (`U_TARGET`, `MI_THRESH`, `RATE_AI`, ...), so an ns-3 configuration maps onto them key by key;
//! `docs/models/ns3.md` has the table and every difference from the paper profiles.
//!
//! Arithmetic follows the C++ operation by operation: the simulator's `DataRate` is a `u64` bps
//! and its arithmetic with `double` goes through `double` and back (`data-rate.cc`), so each
//! such step here is an f64 expression in the same order followed by [`cxx_f64_to_u64`].

pub mod dcqcn;
pub mod hpcc;

pub use dcqcn::{DcqcnNs3, DcqcnNs3Params};
pub use hpcc::{HpccNs3, HpccNs3Params};

use serde::{Deserialize, Deserializer};

use crate::model::ParamError;

pub use crate::model::MAX_LINE_RATE_BPS;

/// Largest interval accepted, µs (1000 s): deadlines stay far from u64 overflow.
pub const MAX_INTERVAL_US: f64 = 1e9;

pub(crate) use crate::model::err;

/// C++ `(uint64_t)x` for a `double`, as GCC compiles it for x86-64 (SSE2), the platform the
/// simulator runs on: `x < 2^63` → `cvttsd2si x`; otherwise `cvttsd2si(x − 2^63)` with bit 63
/// flipped. Inside `[0, 2^64)` this is truncation toward zero, like Rust's `as u64`. Outside
/// (undefined behaviour in C++) it gives what that code gives: `+inf` and values `>= 2^64` →
/// 0, NaN and values below `−2^63` → 2^63. The models only reach those through a division by
/// a zero utilisation (see `docs/models/ns3.md`), where the simulator's rate becomes the
/// additive step and is then clamped to `MIN_RATE`.
#[inline]
pub fn cxx_f64_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // `comisd x, 2^63; jae`: NaN is unordered and takes the first branch.
    if x >= TWO_63 {
        (cvttsd2si(x - TWO_63) as u64) ^ (1 << 63)
    } else {
        cvttsd2si(x) as u64
    }
}

/// `cvttsd2si` (64-bit): truncation, or the "integer indefinite" `i64::MIN` when the result
/// does not fit (NaN, ±inf, out of range).
#[inline]
fn cvttsd2si(x: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x > -TWO_63 - 1.0 && x < TWO_63 {
        x as i64
    } else {
        i64::MIN
    }
}

/// ns-3 `MicroSeconds(double)` at the default ns resolution: `floor(us × 1000)` computed
/// exactly (ns-3 converts the double to 64.64 fixed point without loss and multiplies by the
/// integer 1000 exactly), so `0.3` µs is 299 ns, not the 300 ns of `0.3 * 1000.0` in f64.
/// `None` when `us` is not finite, not in `(0, MAX_INTERVAL_US]`, or gives 0 ns.
pub fn micros_to_ns(us: f64) -> Option<u64> {
    if !(us.is_finite() && us > 0.0 && us <= MAX_INTERVAL_US) {
        return None;
    }
    // us = mantissa × 2^exp exactly (us is positive and normal here: us > 0 and us ≥ the
    // smallest value that can give 1 ns is far above the subnormal range).
    let bits = us.to_bits();
    let exp_field = ((bits >> 52) & 0x7FF) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mantissa, exp) = if exp_field == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_field - 1075)
    };
    let scaled = mantissa as u128 * 1000;
    let ns = if exp >= 0 {
        // us <= 1e9 keeps this far below 2^128.
        scaled << exp
    } else if exp > -128 {
        scaled >> (-exp)
    } else {
        0
    };
    match u64::try_from(ns) {
        Ok(n) if n > 0 => Some(n),
        _ => None,
    }
}

/// A config flag: the config file writes `0` / `1`; TOML and JSON may also say `true` /
/// `false`. Any other integer is rejected (the simulator reads `uint32_t v; flag = v;` so
/// any non-zero would be true, but a value other than 0 or 1 is more likely a mistake).
pub(crate) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Int(i64),
    }
    match Raw::deserialize(d)? {
        Raw::Bool(b) => Ok(b),
        Raw::Int(0) => Ok(false),
        Raw::Int(1) => Ok(true),
        Raw::Int(other) => Err(serde::de::Error::custom(format!(
            "flag must be 0, 1, true or false, not {other}"
        ))),
    }
}

pub(crate) use crate::model::check_line_rate;

/// Check `MIN_RATE` against the line rate (both profiles): the simulator clamps to it, and a
/// rate of 0 would never send.
pub(crate) fn check_min_rate(min_rate_bps: u64, line_rate_bps: u64) -> Result<(), ParamError> {
    if min_rate_bps == 0 || min_rate_bps > line_rate_bps {
        return Err(err(
            "MIN_RATE",
            min_rate_bps,
            "must be in 1..=line_rate_bps bps (the config's \"100Mb/s\" is 100000000)",
        ));
    }
    Ok(())
}

/// Check an additive step (`RATE_AI`, `RATE_HAI`): `0..=line_rate_bps`.
pub(crate) fn check_step(
    name: &'static str,
    step_bps: u64,
    line_rate_bps: u64,
) -> Result<(), ParamError> {
    if step_bps > line_rate_bps {
        return Err(err(
            name,
            step_bps,
            "must be in 0..=line_rate_bps bps (the config's \"50Mb/s\" is 50000000)",
        ));
    }
    Ok(())
}

/// An interval knob in µs (f64, as the config writes it), converted like ns-3 does.
pub(crate) fn interval_ns(name: &'static str, us: f64) -> Result<u64, ParamError> {
    micros_to_ns(us).ok_or_else(|| {
        err(
            name,
            us,
            "must be a finite number of µs in (0, 10^9] that is at least 1 ns",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values checked against GCC on x86-64: `g++ -O2` of `volatile double x; (uint64_t)x`.
    #[test]
    fn cxx_conversion_matches_x86_64_gcc() {
        assert_eq!(cxx_f64_to_u64(2.9), 2);
        assert_eq!(cxx_f64_to_u64(0.0), 0);
        assert_eq!(cxx_f64_to_u64(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(
            cxx_f64_to_u64(18_446_744_073_709_549_568.0),
            u64::MAX - 2047
        );
        assert_eq!(cxx_f64_to_u64(f64::INFINITY), 0);
        assert_eq!(cxx_f64_to_u64(18_446_744_073_709_551_616.0), 0);
        assert_eq!(cxx_f64_to_u64(f64::NAN), 1 << 63);
        assert_eq!(cxx_f64_to_u64(-1.5), u64::MAX);
        assert_eq!(cxx_f64_to_u64(f64::NEG_INFINITY), 1 << 63);
    }

    #[test]
    fn micros_like_ns3() {
        // python3 -c "from fractions import Fraction as F; import math; print(math.floor(F(0.3)*1000))" -> 299
        assert_eq!(micros_to_ns(0.3), Some(299));
        assert_eq!(micros_to_ns(4.0), Some(4_000));
        assert_eq!(micros_to_ns(0.5), Some(500));
        assert_eq!(micros_to_ns(900.0), Some(900_000));
        assert_eq!(micros_to_ns(1e9), Some(1_000_000_000_000));
        assert_eq!(micros_to_ns(0.0009), None); // 0.9 ns floors to 0
        assert_eq!(micros_to_ns(0.0), None);
        assert_eq!(micros_to_ns(-1.0), None);
        assert_eq!(micros_to_ns(f64::NAN), None);
        assert_eq!(micros_to_ns(1e9 + 1.0), None);
    }
}
