//! The DCQCN rate-increase engine shared by `dcqcn` and `dcqcn-nic` (DCQCN-3, seed 001 §3.1
//! eqs. 3-4 and Figure 7; QCN rate increase).
//!
//! The timer (every `T` ns) and the byte counter (every `B` bytes sent) each advance their own
//! stage counter and then trigger one increase, classified on the advanced stages:
//! - `max(timer_stage, byte_stage) < F`: fast recovery, `Rc = (Rt + Rc) / 2` (eq. 3);
//! - else `min(timer_stage, byte_stage) > F`: hyper increase, `Rt = Rt + i × R_HAI` with
//!   `i = min(stages) − F`, then `Rc = (Rt + Rc) / 2`;
//! - else additive increase, `Rt = Rt + R_AI`, `Rc = (Rt + Rc) / 2` (eq. 4).
//!
//! `Rt` is clamped to the line rate, `Rc` to `[min rate, line rate]`. Rates are integer bps;
//! `(Rt + Rc) / 2` is floored (C-3), computed without overflow.

/// Increase parameters in model units (ns, bps, bytes), validated by the profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IncreaseConfig {
    /// Line rate, bps.
    pub line_rate_bps: u64,
    /// `Rc` lower clamp, bps.
    pub min_rate_bps: u64,
    /// `R_AI`, bps.
    pub ai_bps: u64,
    /// `R_HAI`, bps.
    pub hai_bps: u64,
    /// `F`, stages of fast recovery.
    pub f: u32,
    /// `T`, rate-increase timer period, ns (> 0).
    pub t_ns: u64,
    /// `B`, byte-counter period, bytes (> 0).
    pub b_bytes: u64,
}

/// Per-flow rate state: `Rc`, `Rt`, both stage counters, the byte counter and the
/// rate-increase timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RateState {
    /// `Rc`, current rate, bps.
    pub rc_bps: u64,
    /// `Rt`, target rate, bps.
    pub rt_bps: u64,
    /// Timer stage counter (`T` in Figure 7).
    pub timer_stage: u32,
    /// Byte-counter stage counter (`BC` in Figure 7).
    pub byte_stage: u32,
    /// Bytes sent since the byte counter last expired.
    pub byte_counter: u64,
    /// Rate-increase timer deadline, ns.
    pub increase_deadline_ns: Option<u64>,
}

/// `floor((a + b) / 2)` without overflow.
#[inline]
const fn half_sum(a: u64, b: u64) -> u64 {
    a / 2 + b / 2 + (a & b & 1)
}

impl RateState {
    /// A flow at line rate (no slow start, DCQCN-3), `Rt = Rc = line rate`, no timer.
    pub(crate) const fn at_line_rate(line_rate_bps: u64) -> Self {
        RateState {
            rc_bps: line_rate_bps,
            rt_bps: line_rate_bps,
            timer_stage: 0,
            byte_stage: 0,
            byte_counter: 0,
            increase_deadline_ns: None,
        }
    }

    /// After a rate reduction at `now_ns`: reset the byte counter, both stage counters and
    /// restart the rate-increase timer (DCQCN-3). A deadline beyond u64 time is dropped.
    pub(crate) fn reset_increase(&mut self, now_ns: u64, cfg: &IncreaseConfig) {
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.byte_counter = 0;
        self.increase_deadline_ns = now_ns.checked_add(cfg.t_ns);
    }

    /// The rate-increase timer fired at `now_ns`: advance the timer stage, re-arm, increase.
    pub(crate) fn on_increase_timer(&mut self, now_ns: u64, cfg: &IncreaseConfig) {
        self.timer_stage = self.timer_stage.saturating_add(1);
        self.increase_deadline_ns = now_ns.checked_add(cfg.t_ns);
        self.increase(cfg);
    }

    /// `bytes` were sent. When the counter reaches `B` it expires once (the remainder is kept,
    /// so a remainder >= `B` expires on the following packets: at most one increase per
    /// packet), the byte stage advances and one increase runs. Returns whether it expired.
    pub(crate) fn on_bytes_sent(&mut self, bytes: u64, cfg: &IncreaseConfig) -> bool {
        self.byte_counter = self.byte_counter.saturating_add(bytes);
        if self.byte_counter < cfg.b_bytes {
            return false;
        }
        self.byte_counter -= cfg.b_bytes;
        self.byte_stage = self.byte_stage.saturating_add(1);
        self.increase(cfg);
        true
    }

    /// One increase, classified on the (already advanced) stages (DCQCN-3).
    fn increase(&mut self, cfg: &IncreaseConfig) {
        let hi = self.timer_stage.max(self.byte_stage);
        let lo = self.timer_stage.min(self.byte_stage);
        if hi < cfg.f {
            // Fast recovery, eq. 3: Rt unchanged.
        } else if lo > cfg.f {
            // Hyper increase: Rt = Rt + i × R_HAI, i = min(stages) − F.
            let i = u64::from(lo - cfg.f);
            self.rt_bps = self.rt_bps.saturating_add(i.saturating_mul(cfg.hai_bps));
        } else {
            // Additive increase, eq. 4.
            self.rt_bps = self.rt_bps.saturating_add(cfg.ai_bps);
        }
        self.rt_bps = self.rt_bps.min(cfg.line_rate_bps);
        self.rc_bps = half_sum(self.rt_bps, self.rc_bps).clamp(cfg.min_rate_bps, cfg.line_rate_bps);
    }
}

/// Which branches of R4-R7 and C-3 one increase took, observed from the rate state before and
/// after it (rule coverage of both profiles: docs/conformance.md). Computed beside the
/// increase, never inside it, so counting cannot change a decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IncreaseTaken {
    /// R4: `max(stages) < F`.
    pub fast: bool,
    /// R6: neither fast recovery nor hyper increase.
    pub additive: bool,
    /// R5: `min(stages) > F`.
    pub hyper: bool,
    /// R5 with `i = min(stages) − F >= 2`.
    pub hyper_i2: bool,
    /// R7: `Rt + step` exceeded the line rate.
    pub rt_line_clamp: bool,
    /// C-3: `Rt + Rc` odd, so `(Rt + Rc) / 2` was floored.
    pub half_sum_odd: bool,
}

impl IncreaseTaken {
    /// The branches of the increase that took `before` to `after` (the stages in `after` are
    /// the advanced ones it was classified on, R3).
    pub(crate) fn of(cfg: &IncreaseConfig, before: &RateState, after: &RateState) -> Self {
        let hi = after.timer_stage.max(after.byte_stage);
        let lo = after.timer_stage.min(after.byte_stage);
        let mut t = IncreaseTaken::default();
        let step = if hi < cfg.f {
            t.fast = true;
            0
        } else if lo > cfg.f {
            t.hyper = true;
            let i = u64::from(lo - cfg.f);
            t.hyper_i2 = i >= 2;
            i.saturating_mul(cfg.hai_bps)
        } else {
            t.additive = true;
            cfg.ai_bps
        };
        t.rt_line_clamp = before.rt_bps.saturating_add(step) > cfg.line_rate_bps;
        t.half_sum_odd = (after.rt_bps ^ before.rc_bps) & 1 == 1;
        t
    }
}

/// A byte-counter expiry (R3, choice 7) observed around one `tx_data` of `bytes` on a flow
/// whose counter held `before` bytes: `None` when it did not expire, else (a remainder was
/// kept, the counter already held `B` or more before the packet).
pub(crate) fn byte_expiry(
    cfg: &IncreaseConfig,
    before: u64,
    bytes: u64,
    after: u64,
) -> Option<(bool, bool)> {
    (before.saturating_add(bytes) >= cfg.b_bytes).then_some((after > 0, before >= cfg.b_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: IncreaseConfig = IncreaseConfig {
        line_rate_bps: 100,
        min_rate_bps: 1,
        ai_bps: 3,
        hai_bps: 10,
        f: 2,
        t_ns: 10,
        b_bytes: 1000,
    };

    #[test]
    fn half_sum_floors_without_overflow() {
        assert_eq!(half_sum(3, 4), 3); // floor(7 / 2)
        assert_eq!(half_sum(5, 7), 6);
        assert_eq!(half_sum(u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(half_sum(u64::MAX, u64::MAX - 1), u64::MAX - 1);
    }

    #[test]
    fn phases_by_stage() {
        let mut s = RateState {
            rc_bps: 20,
            rt_bps: 60,
            ..RateState::at_line_rate(100)
        };
        s.reset_increase(0, &CFG);
        // Timer 1: stages (1, 0), max 1 < F=2: fast recovery, Rc = (60 + 20) / 2 = 40.
        s.on_increase_timer(10, &CFG);
        assert_eq!(
            (s.rc_bps, s.rt_bps, s.increase_deadline_ns),
            (40, 60, Some(20))
        );
        // Timer 2: stages (2, 0): additive, Rt = 63, Rc = floor((63 + 40) / 2) = 51.
        s.on_increase_timer(20, &CFG);
        assert_eq!((s.rc_bps, s.rt_bps), (51, 63));
        // Bytes: 999 do not expire; 1 more expires with remainder 0, stages (2, 1): additive,
        // Rt = 66, Rc = floor((66 + 51) / 2) = 58.
        assert!(!s.on_bytes_sent(999, &CFG));
        assert!(s.on_bytes_sent(1, &CFG));
        assert_eq!((s.rc_bps, s.rt_bps, s.byte_counter), (58, 66, 0));
        // Timer 3, bytes x2 -> stages (3, 3): min 3 > 2, hyper with i = 1: Rt = 66 + 3 = 69
        // after the timer (stages (3,1): additive), then byte (3,2): additive Rt = 72, then
        // byte (3,3): hyper Rt = 72 + 1 × 10 = 82.
        s.on_increase_timer(30, &CFG); // additive: Rt 69, Rc floor((69 + 58) / 2) = 63
        assert_eq!((s.rc_bps, s.rt_bps), (63, 69));
        assert!(s.on_bytes_sent(2500, &CFG)); // additive: Rt 72, Rc floor(135 / 2) = 67
        assert_eq!((s.rc_bps, s.rt_bps, s.byte_counter), (67, 72, 1500));
        assert!(s.on_bytes_sent(0, &CFG)); // remainder expires: hyper Rt 82, Rc 74
        assert_eq!((s.rc_bps, s.rt_bps, s.byte_counter), (74, 82, 500));
        // Clamp: Rt never above line rate.
        s.rt_bps = 99;
        s.on_increase_timer(40, &CFG); // stages (4, 3): hyper i = 1, Rt = min(109, 100)
        assert_eq!((s.rc_bps, s.rt_bps), (87, 100)); // floor((100 + 74) / 2) = 87
    }
}
