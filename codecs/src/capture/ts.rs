//! Timestamp units of pcap and pcapng, converted to nanoseconds since the Unix epoch.

const NS_PER_S: u128 = 1_000_000_000;

/// A pcapng `if_tsresol` value: bit 7 clear, 10^-n seconds; bit 7 set, 2^-n seconds (n = the low
/// 7 bits). Classic pcap is 10^-6 (microsecond magic) or 10^-9 (nanosecond magic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TsResolution(u8);

impl TsResolution {
    /// Microseconds, the pcapng default when an interface has no `if_tsresol`.
    pub const MICRO: Self = TsResolution(6);
    /// Nanoseconds.
    pub const NANO: Self = TsResolution(9);

    /// From the `if_tsresol` option byte.
    pub const fn from_if_tsresol(byte: u8) -> Self {
        TsResolution(byte)
    }

    /// The `if_tsresol` option byte.
    pub const fn if_tsresol(self) -> u8 {
        self.0
    }

    /// `raw` units in nanoseconds, floored (as Wireshark does) and saturated at `u64::MAX`.
    pub fn to_ns(self, raw: u64) -> u64 {
        saturate(self.to_ns_wide(raw))
    }

    fn to_ns_wide(self, raw: u64) -> u128 {
        let raw = u128::from(raw);
        let n = u32::from(self.0 & 0x7F);
        if self.0 & 0x80 != 0 {
            // 2^-n s: raw * 10^9 / 2^n. raw * 10^9 < 2^94, so the product fits; n <= 127 < 128.
            (raw * NS_PER_S) >> n
        } else if n <= 9 {
            raw * 10u128.pow(9 - n)
        } else if n - 9 <= 38 {
            raw / 10u128.pow(n - 9)
        } else {
            0 // 10^(n-9) > 10^38 > u64::MAX >= raw
        }
    }
}

/// A pcapng timestamp in ns since the epoch: `raw` units of `resolution`, plus the interface's
/// `if_tsoffset` seconds. Saturates at 0 and `u64::MAX` instead of wrapping or panicking.
pub fn pcapng_ts_ns(raw: u64, resolution: TsResolution, tsoffset_s: i64) -> u64 {
    let ns = resolution.to_ns_wide(raw) as i128 + i128::from(tsoffset_s) * NS_PER_S as i128;
    saturate(ns.max(0) as u128)
}

/// A classic pcap record timestamp in ns: seconds and a fraction in µs or ns. Never overflows:
/// (2^32 - 1) × 10^9 + (2^32 - 1) × 10^3 < 2^64. A fraction of a second or more (an invalid
/// record) is added arithmetically, like libpcap.
pub(crate) fn pcap_ts_ns(ts_sec: u32, ts_frac: u32, nanosecond: bool) -> u64 {
    let frac_ns = if nanosecond {
        u64::from(ts_frac)
    } else {
        u64::from(ts_frac) * 1_000
    };
    u64::from(ts_sec) * 1_000_000_000 + frac_ns
}

/// The unit a capture's timestamps are written in, as they show it: per interface, the largest
/// power of ten (1 ns to 1 s) every nonzero timestamp is a multiple of; the coarsest interface's.
/// A nanosecond file written from a microsecond clock shows 1,000 ns, as its times do, whatever
/// its header says. An interface with no nonzero timestamp says nothing.
#[derive(Clone, Debug, Default)]
pub struct TsGrain {
    /// Per interface: the fewest trailing decimal zeros of its timestamps in ns so far.
    zeros: Vec<Option<u32>>,
}

impl TsGrain {
    /// Take one record's time.
    pub fn add(&mut self, interface_id: u32, ts_ns: u64) {
        if ts_ns == 0 {
            return; // no time: a multiple of every unit
        }
        let i = interface_id as usize;
        if self.zeros.len() <= i {
            self.zeros.resize(i + 1, None);
        }
        let z = trailing_decimal_zeros(ts_ns);
        self.zeros[i] = Some(self.zeros[i].map_or(z, |old| old.min(z)));
    }

    /// The coarsest interface's unit, ns (1 when no record had a time).
    pub fn ns(&self) -> u64 {
        10u64.pow(self.zeros.iter().flatten().copied().max().unwrap_or(0))
    }
}

/// Trailing decimal zeros of `t`, at most 9 (1 s).
fn trailing_decimal_zeros(mut t: u64) -> u32 {
    let mut z = 0;
    while z < 9 && t != 0 && t.is_multiple_of(10) {
        t /= 10;
        z += 1;
    }
    z
}

fn saturate(ns: u128) -> u64 {
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option byte back as it came (pcapng writers copy it).
    #[test]
    fn if_tsresol_round_trips() {
        for b in [0u8, 6, 9, 12, 0x80 | 30, 0xFF] {
            assert_eq!(TsResolution::from_if_tsresol(b).if_tsresol(), b);
        }
        assert_eq!(
            (
                TsResolution::MICRO.if_tsresol(),
                TsResolution::NANO.if_tsresol()
            ),
            (6, 9)
        );
    }

    /// Units read off the times: 1 µs, 1 ns, 1 s at most; the coarsest interface's; an
    /// interface without times (interface 0 here) says nothing.
    #[test]
    fn grain_is_the_coarsest_interfaces_unit() {
        assert_eq!(trailing_decimal_zeros(1_735_689_600_000_001_000), 3);
        assert_eq!(trailing_decimal_zeros(1_735_689_600_123_456_789), 0);
        assert_eq!(trailing_decimal_zeros(1_735_689_600_000_000_000), 9);
        let mut g = TsGrain::default();
        assert_eq!(g.ns(), 1);
        g.add(1, 1_735_689_600_000_001_000);
        g.add(1, 1_735_689_600_000_003_000);
        g.add(1, 0);
        assert_eq!(g.ns(), 1_000);
        g.add(2, 1_735_689_600_000_003_210);
        assert_eq!(g.ns(), 1_000, "the coarsest interface");
        g.add(1, 1_735_689_600_000_003_100);
        assert_eq!(g.ns(), 100);
        let mut s = TsGrain::default();
        s.add(0, 1_735_689_600_000_000_000);
        assert_eq!(s.ns(), 1_000_000_000);
    }

    #[test]
    fn decimal_resolutions() {
        // 10^-6: 1 µs = 1000 ns; 10^-9: identity; 10^-3: 1 ms = 10^6 ns.
        assert_eq!(TsResolution::MICRO.to_ns(1_500_000), 1_500_000_000);
        assert_eq!(TsResolution::NANO.to_ns(123), 123);
        assert_eq!(TsResolution::from_if_tsresol(3).to_ns(9), 9_000_000);
        // 10^0: seconds.
        assert_eq!(TsResolution::from_if_tsresol(0).to_ns(2), 2_000_000_000);
        // 10^-12 (ps): 1999 ps floors to 1 ns (tshark 4.0 prints 0.000000001 for this value).
        assert_eq!(TsResolution::from_if_tsresol(12).to_ns(1999), 1);
        // 10^-60: always below 1 ns for any u64.
        assert_eq!(TsResolution::from_if_tsresol(60).to_ns(u64::MAX), 0);
        // 10^-47: 10^38 divisor, u64::MAX / 10^38 = 0.
        assert_eq!(TsResolution::from_if_tsresol(47).to_ns(u64::MAX), 0);
        // 10^-28: u64::MAX / 10^19 = 1 (u64::MAX = 1.8e19).
        assert_eq!(TsResolution::from_if_tsresol(28).to_ns(u64::MAX), 1);
    }

    #[test]
    fn binary_resolutions() {
        // 2^-30: 2^30 units = 1 s; one unit = 0.93 ns floors to 0; 3 units = 2.79 ns -> 2
        // (tshark 4.0 prints 5.000000000 and 5.000000002 for 5 s + 1 and + 3 units).
        let r30 = TsResolution::from_if_tsresol(0x80 | 30);
        assert_eq!(r30.to_ns(5 << 30), 5_000_000_000);
        assert_eq!(r30.to_ns((5 << 30) + 1), 5_000_000_000);
        assert_eq!(r30.to_ns((5 << 30) + 3), 5_000_000_002);
        // 2^-20: 2^11 units = 2^11 * 10^9 / 2^20 = 1953125 ns exactly (10^9 = 2^9 * 5^9).
        assert_eq!(
            TsResolution::from_if_tsresol(0x80 | 20).to_ns(1 << 11),
            1_953_125
        );
        // 2^-127: u64::MAX * 10^9 < 2^94, shifted by 127 -> 0.
        assert_eq!(TsResolution::from_if_tsresol(0xFF).to_ns(u64::MAX), 0);
        // 2^0: seconds; u64::MAX s saturates.
        assert_eq!(
            TsResolution::from_if_tsresol(0x80).to_ns(u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn saturation_and_offset() {
        // µs: u64::MAX * 1000 overflows u64 -> saturates, no panic.
        assert_eq!(TsResolution::MICRO.to_ns(u64::MAX), u64::MAX);
        // if_tsoffset 100 s added to 5 ns (tshark 4.0 prints 100.000000005 for this).
        assert_eq!(pcapng_ts_ns(5, TsResolution::NANO, 100), 100_000_000_005);
        // Negative offset below the epoch clamps at 0.
        assert_eq!(pcapng_ts_ns(5, TsResolution::NANO, -1), 0);
        assert_eq!(
            pcapng_ts_ns(u64::MAX, TsResolution::NANO, i64::MAX),
            u64::MAX
        );
        assert_eq!(pcapng_ts_ns(u64::MAX, TsResolution::NANO, i64::MIN), 0);
    }

    #[test]
    fn classic_pcap() {
        // 1700000000 s + 123456 µs = 1700000000123456000 ns.
        assert_eq!(
            pcap_ts_ns(1_700_000_000, 123_456, false),
            1_700_000_000_123_456_000
        );
        assert_eq!(
            pcap_ts_ns(1_700_000_000, 123_456_789, true),
            1_700_000_000_123_456_789
        );
        // Largest inputs: (2^32-1)*10^9 + (2^32-1)*10^3 = 4294971589967295000 (Python integer
        // arithmetic), below u64::MAX = 18446744073709551615.
        assert_eq!(
            pcap_ts_ns(u32::MAX, u32::MAX, false),
            4_294_971_589_967_295_000
        );
    }
}
