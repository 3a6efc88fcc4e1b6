//! DCQCN congestion point (switch): RED/ECN marking (DCQCN-1, seed 001 §3.1 Figure 5, eq. 5).
//!
//! `p = 0` for `q <= Kmin`, `(q − Kmin) / (Kmax − Kmin) × Pmax` for `Kmin < q <= Kmax`, `1`
//! above `Kmax`, on the egress queue length `q` in bytes at enqueue. The marking decision draws
//! from a generator the switch model owns and seeds (C-1: never a global random source); the
//! seed is recorded in the trace manifest (DCQCN-1).

use serde::{Deserialize, Serialize};

use crate::dcqcn::err;
use crate::model::ParamError;

/// A source of uniformly distributed 32-bit words, injected into the marking decision (C-1).
pub trait UniformSource {
    /// The next uniformly distributed u32.
    fn next_u32(&mut self) -> u32;
}

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014), the seeding generator of `java.util.SplittableRandom` and xoshiro:
///
/// ```text
/// state += 0x9E3779B97F4A7C15
/// z = state
/// z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
/// z = (z ^ (z >> 27)) * 0x94D049BB133111EB
/// out = z ^ (z >> 31)                  (all arithmetic modulo 2^64)
/// ```
///
/// [`UniformSource::next_u32`] returns the high 32 bits of the next output. Pure integer
/// arithmetic, so the stream is the same on every platform (C-3). Seed 0 gives
/// 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed` (the seed recorded in the trace manifest).
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64-bit output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl UniformSource for SplitMix64 {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}

/// RED/ECN marking thresholds (Figure 5). Defaults: the deployment values of seed 001 §5.2 and
/// Figure 14 (`Kmin` 5 KB, `Kmax` 200 KB, `Pmax` 1 %), KB read as 10^3 bytes (the paper does
/// not say; docs/models/dcqcn.md).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedParams {
    /// `Kmin`: queue length in bytes at or below which nothing is marked.
    pub kmin_bytes: u64,
    /// `Kmax`: queue length in bytes above which every packet is marked.
    pub kmax_bytes: u64,
    /// `Pmax`: marking probability reached at `q = Kmax`, in [0, 1].
    pub pmax: f64,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            kmin_bytes: 5_000,
            kmax_bytes: 200_000,
            pmax: 0.01,
        }
    }
}

impl RedParams {
    /// Reject thresholds the marking function cannot use (C-7).
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.kmin_bytes > self.kmax_bytes {
            return Err(err(
                "kmin_bytes",
                self.kmin_bytes,
                "must be <= kmax_bytes (Kmin = Kmax gives DCTCP-like cut-off marking)",
            ));
        }
        if !(self.pmax.is_finite() && (0.0..=1.0).contains(&self.pmax)) {
            return Err(err("pmax", self.pmax, "must be in [0, 1]"));
        }
        Ok(())
    }
}

/// Marking probability for an egress queue of `q_bytes` (DCQCN-1, eq. 5), computed in f64 in
/// the order eq. 5 writes it: `(q − Kmin) / (Kmax − Kmin) × Pmax`. With `Kmin = Kmax` the middle
/// branch is empty, so there is no division by zero. Parameters are assumed validated.
pub fn marking_probability(q_bytes: u64, red: &RedParams) -> f64 {
    if q_bytes <= red.kmin_bytes {
        0.0
    } else if q_bytes <= red.kmax_bytes {
        // eq. 5, middle branch; here kmax > kmin, so the divisor is > 0.
        (q_bytes - red.kmin_bytes) as f64 / (red.kmax_bytes - red.kmin_bytes) as f64 * red.pmax
    } else {
        1.0
    }
}

/// Whether a packet enqueued behind `q_bytes` is CE-marked. Draws one word from `rng` only when
/// `0 < p < 1` and marks when `u / 2^32 < p` (so `p = 0` never marks, `p = 1` always marks,
/// and the generator's stream advances once per undecided packet).
pub fn should_mark<R: UniformSource + ?Sized>(q_bytes: u64, red: &RedParams, rng: &mut R) -> bool {
    let p = marking_probability(q_bytes, red);
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        // u / 2^32 is exact in f64 (a power-of-two scaling of a 32-bit integer).
        (rng.next_u32() as f64 / 4_294_967_296.0) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_stream() {
        // Independent: python3 splitmix64 (the algorithm in the doc comment), seed 0:
        // ['0xe220a8397b1dcdaf', '0x6e789e6aa1b965f4', '0x6c45d188009454f']
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
        // Seed 42, high words: ['0xbdd73226', '0x28efe333', '0x47526757'].
        let mut g = SplitMix64::new(42);
        assert_eq!(g.next_u32(), 0xBDD7_3226);
        assert_eq!(g.next_u32(), 0x28EF_E333);
        assert_eq!(g.next_u32(), 0x4752_6757);
    }
}
