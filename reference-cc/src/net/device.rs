//! The sender NIC as hardware (docs/sim.md "NIC hardware and bugs (`[device]`)"): what a real
//! NIC does that the ideal NIC of the engine does not, and which a correct NIC may still show —
//! a coarse rate limiter, batch scheduling, a reaction latency — and bugs a real NIC may have.
//!
//! Every sender host of a run has the same [`DeviceConfig`]; [`DeviceConfig::default`] is the
//! ideal NIC (every output byte as without it). The hardware behaviours act in the engine
//! (`engine/`: the rate the pacer runs at, the scheduler, when a decision takes effect); the
//! bugs act on the sender model: as a parameter change ([`NicBug::adjust_rp`]) or as a wrapper
//! ([`NicBug::wrap`]) that owns the model, forwards everything and changes only what the bug
//! changes. A wrapper is a [`Model`] itself, so it can also replay a capture as a buggy DUT.

use ccreplay_codecs::shim::int::IntStack;

use super::Cc;
use crate::dcqcn::RpParams;
use crate::{Decision, Event, EventKind, FlowId, Model};

/// The sender NIC of every host (`[device]`). `Default` is the ideal NIC.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceConfig {
    /// Significant bits of the rate the rate limiter is programmed with: a decided rate is
    /// floored to the largest `m × 2^e <= rate` with `m < 2^bits` ([`floor_rate`]). 0 = exact.
    pub rate_mantissa_bits: u32,
    /// Batch scheduling: once a flow's pacer releases it, the NIC sends that flow's packets
    /// back to back until the batch holds at least this many frame bytes (as captured), then
    /// the flow waits for its pacer again. 0 = one packet per release (the ideal NIC).
    pub burst_bytes: u32,
    /// Every sender decision takes effect this long after the model makes it, ns. 0 = at once.
    pub reaction_ns: u64,
    /// A NIC bug, if any.
    pub bug: Option<NicBug>,
}

/// The largest reaction latency accepted, ns (1 s).
pub const MAX_REACTION_NS: u64 = 1_000_000_000;

impl DeviceConfig {
    /// True for the ideal NIC: nothing to do.
    pub fn is_ideal(&self) -> bool {
        *self == DeviceConfig::default()
    }

    /// Reject values the engine cannot run with, and a bug that does not apply to `cc`.
    pub fn validate(&self, cc: &Cc) -> Result<(), String> {
        if self.rate_mantissa_bits > 63 {
            return Err(format!(
                "device.rate_mantissa_bits = {}: must be in 0..=63 (0 = exact)",
                self.rate_mantissa_bits
            ));
        }
        if self.reaction_ns > MAX_REACTION_NS {
            return Err(format!(
                "device.reaction_ns = {}: must be at most 1 s (10^9 ns)",
                self.reaction_ns
            ));
        }
        if let Some(bug) = &self.bug {
            bug.validate()?;
            if !bug.applies_to(cc) {
                return Err(format!(
                    "device.bug = \"{}\" is a bug of {}, not of {} (bugs of {}: {})",
                    bug.name(),
                    bug.families().join(", "),
                    cc.family(),
                    cc.family(),
                    NicBug::NAMES
                        .iter()
                        .filter(|(_, fam)| fam.contains(&cc.family()))
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The rate the rate limiter runs at when the model decides `rate_bps`.
    #[inline]
    pub fn program_rate(&self, rate_bps: u64) -> u64 {
        floor_rate(rate_bps, self.rate_mantissa_bits)
    }
}

/// `rate_bps` floored to `bits` significant bits: the largest `m × 2^e <= rate_bps` with
/// `m < 2^bits`. `bits` = 0 (or at least the bit length of the rate) leaves it unchanged.
///
/// ```
/// use ccreplay_reference_cc::net::floor_rate;
/// // 9.87 Gbps is 36.77 × 2^28: 6 bits keep 36 × 2^28.
/// assert_eq!(floor_rate(9_870_000_000, 6), 36 << 28);
/// assert_eq!(floor_rate(9_870_000_000, 0), 9_870_000_000);
/// ```
#[inline]
pub fn floor_rate(rate_bps: u64, bits: u32) -> u64 {
    let len = u64::BITS - rate_bps.leading_zeros();
    if bits == 0 || len <= bits {
        return rate_bps;
    }
    let shift = len - bits;
    rate_bps >> shift << shift
}

/// The ECN codepoint a host's NIC writes into the data packets it sends in the `roce` dialect
/// (`[hosts.NAME]` `ecn`, [`super::NetConfig::host_data_ecn`]). RFC 3168 section 5: ECT(0)
/// and ECT(1) both say "ECN-capable", a switch marks either to CE (DCQCN-1 marks any ECT
/// packet), and only CE (0b11) is a mark to the notification point (DCQCN-2). Other dialects
/// send Not-ECT data and take no such option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataEcn {
    /// ECT(0), 0b10: what every RoCEv2 NIC sends (the default).
    #[default]
    Ect0,
    /// ECT(1), 0b01: an L4S-style sender (RFC 9331), ECN-capable as ECT(0) is.
    Ect1,
}

impl DataEcn {
    /// Every value's name, as `ecn` takes it.
    pub const NAMES: [&'static str; 2] = ["ect0", "ect1"];

    /// The value of `name`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ect0" => Some(DataEcn::Ect0),
            "ect1" => Some(DataEcn::Ect1),
            _ => None,
        }
    }

    /// Its name in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            DataEcn::Ect0 => "ect0",
            DataEcn::Ect1 => "ect1",
        }
    }

    /// The two ECN bits of the IP header (RFC 3168 section 5).
    pub fn codepoint(self) -> u8 {
        match self {
            DataEcn::Ect0 => 0b10,
            DataEcn::Ect1 => 0b01,
        }
    }
}

/// A NIC bug (`device.bug`): a NIC that is wrong, at every sender host.
#[derive(Clone, Debug, PartialEq)]
pub enum NicBug {
    /// DCQCN: after a CNP reaches the model, further CNPs of the same flow within
    /// `ignore_cnp_ns` are not passed to it.
    IgnoreCnp {
        /// The window after a CNP that was passed, ns.
        ignore_cnp_ns: u64,
    },
    /// DCQCN: every CNP is passed to the model twice (each cut applied twice).
    CutTwice,
    /// DCQCN: the model runs with the additive-increase step `rpg_ai_rate` = 0.
    NoAdditiveIncrease,
    /// DCQCN: the model runs with alpha gain `g` (`dce_tcp_g`) = `alpha_g`.
    AlphaGain {
        /// The gain the NIC uses, in (0, 1].
        alpha_g: f64,
    },
    /// Window-based models: a window decision is applied only when it is smaller than the
    /// window applied now, and a rate only when it is lower than the rate applied now.
    WindowNeverGrows,
    /// HPCC, FNCC: each ACK's INT stack is cut to its first hop record (the NIC reads hop 0,
    /// not the most loaded hop).
    IntWrongHop,
    /// HPCC, FNCC: every window decision is applied, but the pacing rate stays the one of the
    /// first decision of each base RTT `T`.
    StaleWindow,
}

/// Default of `ignore_cnp_ns`: 100 µs.
pub const DEFAULT_IGNORE_CNP_NS: u64 = 100_000;
/// Default of `alpha_g`: 1/16.
pub const DEFAULT_ALPHA_G: f64 = 1.0 / 16.0;

impl NicBug {
    /// Every bug name and the model families it applies to.
    pub const NAMES: &'static [(&'static str, &'static [&'static str])] = &[
        ("ignore-cnp", &["dcqcn"]),
        ("cut-twice", &["dcqcn"]),
        ("no-additive-increase", &["dcqcn"]),
        ("alpha-gain", &["dcqcn"]),
        ("window-never-grows", &["hpcc", "fncc", "rcc"]),
        ("int-wrong-hop", &["hpcc", "fncc"]),
        ("stale-window", &["hpcc", "fncc"]),
    ];

    /// The bug of `name` with its keys at their defaults; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ignore-cnp" => NicBug::IgnoreCnp {
                ignore_cnp_ns: DEFAULT_IGNORE_CNP_NS,
            },
            "cut-twice" => NicBug::CutTwice,
            "no-additive-increase" => NicBug::NoAdditiveIncrease,
            "alpha-gain" => NicBug::AlphaGain {
                alpha_g: DEFAULT_ALPHA_G,
            },
            "window-never-grows" => NicBug::WindowNeverGrows,
            "int-wrong-hop" => NicBug::IntWrongHop,
            "stale-window" => NicBug::StaleWindow,
            _ => return None,
        })
    }

    /// The name `device.bug` gives it.
    pub fn name(&self) -> &'static str {
        match self {
            NicBug::IgnoreCnp { .. } => "ignore-cnp",
            NicBug::CutTwice => "cut-twice",
            NicBug::NoAdditiveIncrease => "no-additive-increase",
            NicBug::AlphaGain { .. } => "alpha-gain",
            NicBug::WindowNeverGrows => "window-never-grows",
            NicBug::IntWrongHop => "int-wrong-hop",
            NicBug::StaleWindow => "stale-window",
        }
    }

    /// The model families (`dcqcn`, `hpcc`, `fncc`, `rcc`) the bug applies to.
    pub fn families(&self) -> &'static [&'static str] {
        let name = self.name();
        NicBug::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&[], |(_, f)| f)
    }

    /// True when the bug applies to the congestion control `cc`.
    pub fn applies_to(&self, cc: &Cc) -> bool {
        self.families().contains(&cc.family())
    }

    fn validate(&self) -> Result<(), String> {
        match *self {
            NicBug::AlphaGain { alpha_g } if !(alpha_g > 0.0 && alpha_g <= 1.0) => Err(format!(
                "device.alpha_g = {alpha_g}: must be in (0, 1] (DCQCN's g)"
            )),
            _ => Ok(()),
        }
    }

    /// The parameter change of a DCQCN bug (`no-additive-increase`, `alpha-gain`); other bugs
    /// leave `rp` alone.
    pub fn adjust_rp(&self, rp: &mut RpParams) {
        match *self {
            NicBug::NoAdditiveIncrease => rp.rpg_ai_rate = 0,
            NicBug::AlphaGain { alpha_g } => rp.dce_tcp_g = alpha_g,
            _ => {}
        }
    }

    /// The sender model as the buggy NIC runs it: `inner` wrapped for the bugs that act on
    /// its inputs or outputs, `inner` itself for the others. `start` is what the NIC applies
    /// before the first decision (window, rate); `base_rtt_ns` is the models' `T`.
    pub fn wrap(&self, inner: Box<dyn Model>, start: Start, base_rtt_ns: u64) -> Box<dyn Model> {
        match *self {
            NicBug::IgnoreCnp { ignore_cnp_ns } => Box::new(IgnoreCnp::new(inner, ignore_cnp_ns)),
            NicBug::CutTwice => Box::new(CutTwice::new(inner)),
            NicBug::WindowNeverGrows => Box::new(NeverGrows::new(inner, start)),
            NicBug::IntWrongHop => Box::new(IntWrongHop::new(inner)),
            NicBug::StaleWindow => Box::new(StaleRate::new(inner, base_rtt_ns)),
            NicBug::NoAdditiveIncrease | NicBug::AlphaGain { .. } => inner,
        }
    }
}

/// What a NIC applies to a flow before its model's first decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// Window, bytes (`None`: not window-limited).
    pub window_bytes: Option<u64>,
    /// Pacing rate, bps.
    pub rate_bps: u64,
}

/// Grow a per-flow table to hold `flow`.
fn slot<T: Clone>(v: &mut Vec<T>, flow: FlowId, init: T) -> &mut T {
    let i = flow as usize;
    if i >= v.len() {
        v.resize(i + 1, init);
    }
    &mut v[i]
}

/// Forward the [`Model`] methods a wrapper does not change to its `inner` field.
macro_rules! forward {
    () => {
        fn name(&self) -> &'static str {
            self.inner.name()
        }
        fn next_timer_ns(&self) -> Option<u64> {
            self.inner.next_timer_ns()
        }
        fn per_flow(&self) -> bool {
            self.inner.per_flow()
        }
        fn coverage(&self) -> Vec<(&'static str, u64)> {
            self.inner.coverage()
        }
        fn outputs_only(&mut self, on: bool) {
            self.inner.outputs_only(on);
        }
        fn has_timers(&self) -> bool {
            self.inner.has_timers()
        }
    };
}

/// `ignore-cnp`: a CNP within `window_ns` of the flow's last CNP passed to the model is not
/// passed.
pub struct IgnoreCnp {
    inner: Box<dyn Model>,
    window_ns: u64,
    /// Per flow: time of the last CNP passed, ns.
    last: Vec<Option<u64>>,
}

impl IgnoreCnp {
    /// Wrap `inner`.
    pub fn new(inner: Box<dyn Model>, window_ns: u64) -> Self {
        IgnoreCnp {
            inner,
            window_ns,
            last: Vec::new(),
        }
    }
}

impl Model for IgnoreCnp {
    forward!();

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        if ev.kind == EventKind::RxCnp {
            let last = slot(&mut self.last, ev.flow, None);
            if last.is_some_and(|t| ev.t_ns.saturating_sub(t) < self.window_ns) {
                return;
            }
            *last = Some(ev.t_ns);
        }
        self.inner.on_event(ev, out);
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.inner.on_timer(now_ns, out);
    }
}

/// `cut-twice`: every CNP is passed to the model twice.
pub struct CutTwice {
    inner: Box<dyn Model>,
}

impl CutTwice {
    /// Wrap `inner`.
    pub fn new(inner: Box<dyn Model>) -> Self {
        CutTwice { inner }
    }
}

impl Model for CutTwice {
    forward!();

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        self.inner.on_event(ev, out);
        if ev.kind == EventKind::RxCnp {
            self.inner.on_event(ev, out);
        }
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.inner.on_timer(now_ns, out);
    }
}

/// `int-wrong-hop`: the model sees each ACK's (and NAK's) INT stack cut to its first hop
/// record; nHop becomes 1, the pathID is kept (the NIC reads the header as it is).
pub struct IntWrongHop {
    inner: Box<dyn Model>,
}

impl IntWrongHop {
    /// Wrap `inner`.
    pub fn new(inner: Box<dyn Model>) -> Self {
        IntWrongHop { inner }
    }

    /// `int` cut to its first record (unchanged when it has none).
    pub fn first_hop(int: &IntStack) -> IntStack {
        match int.hops().first() {
            Some(h) => IntStack::from_hops(int.path_id(), std::slice::from_ref(h)).unwrap_or(*int),
            None => *int,
        }
    }
}

impl Model for IntWrongHop {
    forward!();

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        let mut ev = *ev;
        if let EventKind::RxAck(a) | EventKind::RxNak(a) = &mut ev.kind
            && let Some(int) = &mut a.int
        {
            *int = IntWrongHop::first_hop(int);
        }
        self.inner.on_event(&ev, out);
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.inner.on_timer(now_ns, out);
    }
}

/// `window-never-grows`: a window (rate) output is kept only when it is below the window
/// (rate) the NIC applies now; otherwise it is dropped from the decision.
pub struct NeverGrows {
    inner: Box<dyn Model>,
    start: Start,
    /// Per flow: the window and rate applied now.
    applied: Vec<Start>,
    from: usize,
}

impl NeverGrows {
    /// Wrap `inner`; every flow starts at `start`.
    pub fn new(inner: Box<dyn Model>, start: Start) -> Self {
        NeverGrows {
            inner,
            start,
            applied: Vec::new(),
            from: 0,
        }
    }

    fn filter(&mut self, out: &mut [Decision]) {
        for d in &mut out[self.from..] {
            let a = slot(&mut self.applied, d.flow, self.start);
            if let Some(w) = d.outputs.window_bytes {
                if a.window_bytes.is_none_or(|cur| w < cur) {
                    a.window_bytes = Some(w);
                } else {
                    d.outputs.window_bytes = None;
                }
            }
            if let Some(r) = d.outputs.rate_bps {
                if r < a.rate_bps {
                    a.rate_bps = r;
                } else {
                    d.outputs.rate_bps = None;
                }
            }
        }
    }
}

impl Model for NeverGrows {
    forward!();

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        self.from = out.len();
        self.inner.on_event(ev, out);
        self.filter(out);
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.from = out.len();
        self.inner.on_timer(now_ns, out);
        self.filter(out);
    }
}

/// `stale-window`: every window output is kept, but the rate output is the rate of the
/// flow's first decision of the current RTT (an RTT starts at a decision at least `T` after
/// the previous start).
pub struct StaleRate {
    inner: Box<dyn Model>,
    rtt_ns: u64,
    /// Per flow: (start of the current RTT, ns; the rate kept in it).
    kept: Vec<Option<(u64, u64)>>,
    from: usize,
}

impl StaleRate {
    /// Wrap `inner`; an RTT lasts `rtt_ns` (the models' `T`).
    pub fn new(inner: Box<dyn Model>, rtt_ns: u64) -> Self {
        StaleRate {
            inner,
            rtt_ns,
            kept: Vec::new(),
            from: 0,
        }
    }

    fn filter(&mut self, out: &mut [Decision]) {
        for d in &mut out[self.from..] {
            let Some(r) = d.outputs.rate_bps else {
                continue;
            };
            let k = slot(&mut self.kept, d.flow, None);
            match *k {
                Some((start, rate)) if d.t_ns.saturating_sub(start) < self.rtt_ns => {
                    d.outputs.rate_bps = Some(rate);
                }
                _ => *k = Some((d.t_ns, r)),
            }
        }
    }
}

impl Model for StaleRate {
    forward!();

    fn on_event(&mut self, ev: &Event, out: &mut Vec<Decision>) {
        self.from = out.len();
        self.inner.on_event(ev, out);
        self.filter(out);
    }

    fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Decision>) {
        self.from = out.len();
        self.inner.on_timer(now_ns, out);
        self.filter(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_rate_keeps_the_top_bits() {
        // 9_870_000_000 has 34 bits (2^33 = 8_589_934_592 <= it < 2^34); 6 bits keep
        // floor(9.87e9 / 2^28) = 36 (36 × 268_435_456 = 9_663_676_416, 37 × 2^28 =
        // 9_932_111_872 > 9.87e9).
        assert_eq!(floor_rate(9_870_000_000, 6), 9_663_676_416);
        // 25 Gbps = 0b1_0111_0100_1000_0111_0110_1110_0000_0000_000 (35 bits): 4 bits keep
        // 0b1011 × 2^31 = 23_622_320_128.
        assert_eq!(floor_rate(25_000_000_000, 4), 23_622_320_128);
        // A value of at most `bits` bits, 0 bits, or one of the form m × 2^e stays.
        assert_eq!(floor_rate(63, 6), 63);
        assert_eq!(floor_rate(64, 6), 64);
        assert_eq!(floor_rate(127, 6), 126);
        assert_eq!(floor_rate(12_345, 0), 12_345);
        assert_eq!(floor_rate(36 << 28, 6), 36 << 28);
        assert_eq!(floor_rate(1, 1), 1);
        assert_eq!(floor_rate(u64::MAX, 1), 1 << 63);
    }

    #[test]
    fn bug_names_round_trip_and_name_their_families() {
        for (name, fams) in NicBug::NAMES {
            let b = NicBug::from_name(name).unwrap();
            assert_eq!(b.name(), *name);
            assert_eq!(b.families(), *fams);
        }
        assert_eq!(NicBug::from_name("cut-thrice"), None);
    }

    #[test]
    fn data_ecn_names_round_trip_to_rfc_3168_codepoints() {
        // RFC 3168 section 5: ECT(1) = 01, ECT(0) = 10 (CE = 11, Not-ECT = 00).
        assert_eq!(DataEcn::default(), DataEcn::Ect0);
        assert_eq!(DataEcn::Ect0.codepoint(), 2);
        assert_eq!(DataEcn::Ect1.codepoint(), 1);
        for name in DataEcn::NAMES {
            assert_eq!(DataEcn::from_name(name).map(DataEcn::name), Some(name));
        }
        assert_eq!(DataEcn::from_name("ce"), None);
        assert_eq!(DataEcn::from_name("ECT1"), None);
    }

    #[test]
    fn int_wrong_hop_keeps_record_zero_only() {
        use ccreplay_codecs::shim::int::IntHop;
        let h = |q| IntHop {
            b: 5,
            ts: 100,
            tx_bytes: 7,
            qlen: q,
        };
        let two = IntStack::from_hops(0x123, &[h(1), h(9)]).unwrap();
        let one = IntWrongHop::first_hop(&two);
        assert_eq!(one.hops(), &[h(1)]);
        assert_eq!((one.n_hop(), one.path_id()), (1, 0x123));
        assert_eq!(IntWrongHop::first_hop(&IntStack::new()), IntStack::new());
    }
}
