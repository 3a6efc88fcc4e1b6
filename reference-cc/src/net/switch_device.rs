//! The switches as hardware (docs/sim.md "Switch bugs and imperfections"): bugs a real switch
//! may have in its ECN marking, its INT records or its PFC, and the drift of its INT clock.
//!
//! Every switch of a run has the same [`SwitchDeviceConfig`]; [`SwitchDeviceConfig::default`]
//! is the correct switch (every output byte as without it). The engine (`engine/`) asks
//! this module what to do at the few places a bug changes: the queue RED marks on
//! ([`ewma`]), the INT fields ([`SwitchBug::int_tx_payload_only`], ...), the XOFF threshold
//! ([`xoff_threshold`]) and whether pauses are refreshed.

use super::Cc;

/// Every switch of a run (`[switch_device]`). `Default` is the correct switch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwitchDeviceConfig {
    /// A switch bug, if any (every switch has it).
    pub bug: Option<SwitchBug>,
    /// INT clock drift: switch number `i` (`sw{i}`, the order INT switch IDs are given in)
    /// has a clock that runs fast by `i × clock_drift_ppm` ppm: `t` ns into the run it reads
    /// `t + floor(t × i × clock_drift_ppm × 10^-6)` ns (plus its `int_ts_offset_ns`). 0 =
    /// every clock exact. A correct switch (clocks are not synchronised).
    pub clock_drift_ppm: f64,
}

/// The largest |`clock_drift_ppm`| accepted.
pub const MAX_DRIFT_PPM: f64 = 1_000.0;
/// Default of `avg_weight`: 1/64.
pub const DEFAULT_AVG_WEIGHT: f64 = 1.0 / 64.0;
/// Default of `xoff_error_bytes`: XOFF 20 000 bytes late.
pub const DEFAULT_XOFF_ERROR_BYTES: i64 = 20_000;

/// A switch bug (`switch_device.bug`).
#[derive(Clone, Debug, PartialEq)]
pub enum SwitchBug {
    /// RED marks on an exponentially weighted moving average of the egress queue instead of
    /// the instantaneous queue: at every data enqueue `avg ← (1 − w) × avg + w × q` ([`ewma`],
    /// `q` the bytes waiting ahead of the packet), then the packet is marked on `floor(avg)`.
    MarkAverageQueue {
        /// `w`, in (0, 1].
        avg_weight: f64,
    },
    /// RED decides as the packet leaves, on the bytes still waiting behind it, not at enqueue.
    MarkOnDequeue,
    /// INT `txBytes` counts IB payload bytes of the frames sent (headers, ICRC, ACKs and PFC
    /// frames not counted) instead of whole frames.
    TxBytesNoHeaders,
    /// INT `qLen` written in bytes instead of 80-byte units (saturating at 0xFFFF).
    QlenWrongUnit,
    /// INT `ts` read when the packet arrived at the switch instead of when it leaves.
    IngressTimestamp,
    /// XOFF sent when the ingress bytes exceed `xoff_bytes + xoff_error_bytes` instead of
    /// `xoff_bytes` (XON unchanged).
    XoffThresholdOff {
        /// Bytes added to the XOFF threshold (may be negative; the sum is floored at 0).
        xoff_error_bytes: i64,
    },
    /// An XOFF is never refreshed: while the ingress stays above XON the pause runs out and
    /// the upstream port sends again.
    NoPauseRefresh,
}

impl SwitchBug {
    /// Every bug name, the model families it applies to, and what it needs of `[switch]`.
    pub const NAMES: &'static [(&'static str, &'static [&'static str], Needs)] = &[
        ("mark-average-queue", &["dcqcn"], Needs::Red),
        ("mark-on-dequeue", &["dcqcn"], Needs::Red),
        ("txbytes-no-headers", &["hpcc", "fncc"], Needs::Nothing),
        ("qlen-wrong-unit", &["hpcc", "fncc"], Needs::Nothing),
        ("ingress-timestamp", &["hpcc"], Needs::Nothing),
        (
            "xoff-threshold-off",
            &["dcqcn", "hpcc", "fncc", "rcc"],
            Needs::Pfc,
        ),
        (
            "no-pause-refresh",
            &["dcqcn", "hpcc", "fncc", "rcc"],
            Needs::Pfc,
        ),
    ];

    /// The bug of `name` with its keys at their defaults; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "mark-average-queue" => SwitchBug::MarkAverageQueue {
                avg_weight: DEFAULT_AVG_WEIGHT,
            },
            "mark-on-dequeue" => SwitchBug::MarkOnDequeue,
            "txbytes-no-headers" => SwitchBug::TxBytesNoHeaders,
            "qlen-wrong-unit" => SwitchBug::QlenWrongUnit,
            "ingress-timestamp" => SwitchBug::IngressTimestamp,
            "xoff-threshold-off" => SwitchBug::XoffThresholdOff {
                xoff_error_bytes: DEFAULT_XOFF_ERROR_BYTES,
            },
            "no-pause-refresh" => SwitchBug::NoPauseRefresh,
            _ => return None,
        })
    }

    /// The name `switch_device.bug` gives it.
    pub fn name(&self) -> &'static str {
        match self {
            SwitchBug::MarkAverageQueue { .. } => "mark-average-queue",
            SwitchBug::MarkOnDequeue => "mark-on-dequeue",
            SwitchBug::TxBytesNoHeaders => "txbytes-no-headers",
            SwitchBug::QlenWrongUnit => "qlen-wrong-unit",
            SwitchBug::IngressTimestamp => "ingress-timestamp",
            SwitchBug::XoffThresholdOff { .. } => "xoff-threshold-off",
            SwitchBug::NoPauseRefresh => "no-pause-refresh",
        }
    }

    /// Every valid name, comma-separated (error messages).
    pub fn names() -> String {
        SwitchBug::NAMES
            .iter()
            .map(|(n, _, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn entry(&self) -> (&'static [&'static str], Needs) {
        let name = self.name();
        SwitchBug::NAMES
            .iter()
            .find(|(n, _, _)| *n == name)
            .map_or((&[][..], Needs::Nothing), |(_, f, n)| (*f, *n))
    }

    /// The model families (`dcqcn`, `hpcc`, `fncc`, `rcc`) the bug shows in.
    pub fn families(&self) -> &'static [&'static str] {
        self.entry().0
    }

    /// True when INT `txBytes` counts payload bytes only.
    #[inline]
    pub fn int_tx_payload_only(&self) -> bool {
        matches!(self, SwitchBug::TxBytesNoHeaders)
    }

    /// True when INT `qLen` is written in bytes.
    #[inline]
    pub fn int_qlen_in_bytes(&self) -> bool {
        matches!(self, SwitchBug::QlenWrongUnit)
    }
}

/// What a switch bug needs of `[switch]` to show at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing.
    Nothing,
    /// RED marking (`[switch.red]`; `dcqcn` scenarios always have it).
    Red,
    /// PFC (`[switch.pfc]`).
    Pfc,
}

impl SwitchDeviceConfig {
    /// True for the correct switch: nothing to do.
    pub fn is_ideal(&self) -> bool {
        *self == SwitchDeviceConfig::default()
    }

    /// Reject values the engine cannot run with, and a bug that cannot show: of another model
    /// family, or without the RED / PFC it acts on (`red`, `pfc`: whether the switches have
    /// them).
    pub fn validate(&self, cc: &Cc, red: bool, pfc: bool) -> Result<(), String> {
        if !(self.clock_drift_ppm.is_finite() && self.clock_drift_ppm.abs() <= MAX_DRIFT_PPM) {
            return Err(format!(
                "switch_device.clock_drift_ppm = {}: must be in -1000..=1000 ppm",
                self.clock_drift_ppm
            ));
        }
        let Some(bug) = &self.bug else {
            return Ok(());
        };
        if let SwitchBug::MarkAverageQueue { avg_weight } = *bug
            && !(avg_weight > 0.0 && avg_weight <= 1.0)
        {
            return Err(format!(
                "switch_device.avg_weight = {avg_weight}: must be in (0, 1]"
            ));
        }
        let (families, needs) = bug.entry();
        if !families.contains(&cc.family()) {
            return Err(format!(
                "switch_device.bug = \"{}\" is a switch bug of {}, not of {} (switch bugs of {}: {})",
                bug.name(),
                families.join(", "),
                cc.family(),
                cc.family(),
                SwitchBug::NAMES
                    .iter()
                    .filter(|(_, f, _)| f.contains(&cc.family()))
                    .map(|(n, _, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        match needs {
            Needs::Red if !red => Err(format!(
                "switch_device.bug = \"{}\" acts on RED marking: add [switch.red]",
                bug.name()
            )),
            Needs::Pfc if !pfc => Err(format!(
                "switch_device.bug = \"{}\" acts on PFC: add [switch.pfc]",
                bug.name()
            )),
            _ => Ok(()),
        }
    }

    /// The XOFF threshold the switches use for a configured `xoff_bytes`.
    pub fn xoff_threshold(&self, xoff_bytes: u64) -> u64 {
        match self.bug {
            Some(SwitchBug::XoffThresholdOff { xoff_error_bytes }) => {
                xoff_threshold(xoff_bytes, xoff_error_bytes)
            }
            _ => xoff_bytes,
        }
    }

    /// Whether XOFFs are refreshed while the ingress stays above XON.
    pub fn refreshes_pauses(&self) -> bool {
        self.bug != Some(SwitchBug::NoPauseRefresh)
    }

    /// The drift of switch number `i`'s INT clock, ppm (0 when exact).
    pub fn drift_ppm(&self, i: u32) -> f64 {
        if self.clock_drift_ppm == 0.0 {
            0.0
        } else {
            f64::from(i) * self.clock_drift_ppm
        }
    }
}

/// One step of RED's average: `(1 − w) × avg + w × q` (`q` in bytes).
///
/// ```
/// use ccreplay_reference_cc::net::switch_device::ewma;
/// // w = 1/64 from 0 with q = 6400: 100, then 63/64 × 100 + 100 = 198.4375.
/// assert_eq!(ewma(0.0, 6_400, 1.0 / 64.0), 100.0);
/// assert_eq!(ewma(100.0, 6_400, 1.0 / 64.0), 198.4375);
/// ```
#[inline]
pub fn ewma(avg: f64, q_bytes: u64, w: f64) -> f64 {
    (1.0 - w) * avg + w * q_bytes as f64
}

/// `xoff_bytes + error`, floored at 0.
#[inline]
pub fn xoff_threshold(xoff_bytes: u64, error: i64) -> u64 {
    let t = i128::from(xoff_bytes) + i128::from(error);
    u64::try_from(t.max(0)).unwrap_or(u64::MAX)
}

/// The INT clock offset, ns, of a switch whose clock drifts by `ppm`, `sim_ns` into the run:
/// `floor(sim_ns × ppm / 10^6)` (wrapping: the field keeps the low 24 bits). The product is
/// exact in f64 for whole ppm (below 2^53), so the one rounding is the division's.
#[inline]
pub fn drift_ns(sim_ns: u64, ppm: f64) -> u64 {
    if ppm == 0.0 {
        0
    } else {
        ((sim_ns as f64 * ppm / 1e6).floor() as i64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpcc;

    /// w = 1/64, queues 6400, 6400, 0, 12 800 bytes (every step exact in binary):
    /// 100; 63/64 × 100 + 100 = 198.4375 = 3175/16; 63/64 × 3175/16 = 200 025/1024
    /// = 195.336 914 062 5; 63/64 × 200 025/1024 + 200 = 25 708 775/65 536 = 392.284 774 780 27.
    #[test]
    fn ewma_by_hand() {
        let w = DEFAULT_AVG_WEIGHT;
        let mut a = 0.0;
        let want = [
            100.0,
            3175.0 / 16.0,
            200_025.0 / 1024.0,
            25_708_775.0 / 65_536.0,
        ];
        for (q, want) in [6_400u64, 6_400, 0, 12_800].into_iter().zip(want) {
            a = ewma(a, q, w);
            assert_eq!(a, want);
        }
        assert_eq!(want[1], 198.4375);
        assert_eq!(want[2], 195.336_914_062_5);
        // w = 1: the instantaneous queue.
        assert_eq!(ewma(123.0, 7, 1.0), 7.0);
    }

    #[test]
    fn xoff_threshold_and_drift_by_hand() {
        assert_eq!(xoff_threshold(20_000, 20_000), 40_000);
        assert_eq!(xoff_threshold(20_000, -5_000), 15_000);
        assert_eq!(xoff_threshold(20_000, -50_000), 0);
        let d = SwitchDeviceConfig {
            bug: Some(SwitchBug::XoffThresholdOff {
                xoff_error_bytes: 1_234,
            }),
            clock_drift_ppm: 50.0,
        };
        assert_eq!(d.xoff_threshold(10_000), 11_234);
        assert!(d.refreshes_pauses());
        // Switch 2 at 50 ppm: 100 ppm; 1 ms in: 100 ns ahead; 12 345 ns in: 1.2345 -> 1.
        let r = d.drift_ppm(2);
        assert_eq!(r, 100.0);
        assert_eq!(drift_ns(1_000_000, r), 100);
        assert_eq!(drift_ns(12_345, r), 1);
        assert_eq!(drift_ns(12_345, d.drift_ppm(0)), 0);
        // 0.1 ppm over 10 s: 1000 ns exactly (10^10 × 0.1 / 10^6).
        assert_eq!(drift_ns(10_000_000_000, 0.1), 1000);
        // Negative drift wraps (the field keeps the low bits): -100 ns.
        let slow = SwitchDeviceConfig {
            bug: None,
            clock_drift_ppm: -50.0,
        };
        assert_eq!(drift_ns(1_000_000, slow.drift_ppm(2)), (-100i64) as u64);
    }

    #[test]
    fn names_round_trip_and_validation() {
        for (n, _, _) in SwitchBug::NAMES {
            assert_eq!(SwitchBug::from_name(n).unwrap().name(), *n);
        }
        assert!(SwitchBug::from_name("mark-late").is_none());
        let hp = Cc::Hpcc(hpcc::Params::default());
        let with = |bug: &str| SwitchDeviceConfig {
            bug: SwitchBug::from_name(bug),
            clock_drift_ppm: 0.0,
        };
        assert!(with("qlen-wrong-unit").validate(&hp, false, false).is_ok());
        let e = with("mark-on-dequeue")
            .validate(&hp, true, false)
            .unwrap_err();
        assert!(e.contains("not of hpcc"), "{e}");
        assert!(e.contains("txbytes-no-headers, qlen-wrong-unit"), "{e}");
        let e = with("no-pause-refresh")
            .validate(&hp, false, false)
            .unwrap_err();
        assert!(e.contains("[switch.pfc]"), "{e}");
        let bad = SwitchDeviceConfig {
            bug: Some(SwitchBug::MarkAverageQueue { avg_weight: 0.0 }),
            clock_drift_ppm: 0.0,
        };
        let dc = Cc::Dcqcn {
            rp: Default::default(),
            np: Default::default(),
        };
        assert!(bad.validate(&dc, true, false).is_err());
        let drift = SwitchDeviceConfig {
            bug: None,
            clock_drift_ppm: f64::NAN,
        };
        assert!(drift.validate(&dc, true, false).is_err());
        assert!(SwitchDeviceConfig::default().is_ideal());
    }
}
