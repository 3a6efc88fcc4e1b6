//! The judge: one sender's transmit times, ACKs and pauses against the reference's decisions,
//! flow by flow, in one pass in trace order (memory O(flows + decisions within the reaction
//! allowance)). The checks and their bounds are docs/observed.md's:
//!
//! - **too fast** (a GCRA, ITU-T I.371's virtual scheduling, at the highest rate the reference
//!   allowed within the reaction allowance): a packet may leave no earlier than its theoretical
//!   time minus the burst and timing allowances;
//! - **too slow** (a deficit counter at the lowest rate the reference required within the
//!   reaction allowance): over the time the sender could send — not window-blocked by the
//!   reference's window, not paused, the link not busy with its other frames, inside a message —
//!   the bytes it sent may fall short of the rate's by at most the burst plus the timing error;
//! - **window**: bytes in flight when a packet leaves, above the largest window the reference
//!   set within the reaction allowance, by at most the window slack; confirmed by the next ACK
//!   unless that ACK shows the tap lost ACKs.

use std::collections::VecDeque;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::ib::Opcode;
use ccreplay_reference_cc::net::{PacketKind, frame_len};
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Outputs, State};

use super::allow::Allowances;
use super::tap::Pauses;
use crate::diff::{Divergence, FieldDiff, FlowDiff};

const PSN_MASK: u32 = 0x00FF_FFFF;
const PSN_HALF: u32 = 0x0080_0000;
/// PSN gaps larger than this are a new sequence, not packets the tap lost.
const MAX_LOST_RUN: u32 = 4_096;
/// Packets over which the reported observed rate is averaged.
const RATE_WINDOW: usize = 8;
const NS_PER_S: f64 = 1e9;

/// Which check a packet failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Sent earlier than the reference's rate allows.
    TooFast,
    /// Sent fewer bytes than the reference's rate requires.
    TooSlow,
    /// More bytes in flight than the reference's window.
    Window,
}

impl Check {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Check::TooFast => "too_fast",
            Check::TooSlow => "too_slow",
            Check::Window => "window",
        }
    }
}

/// One failed check.
#[derive(Clone, Debug)]
struct Violation {
    check: Check,
    t_ns: u64,
    event_index: u64,
    /// The reference's value in force (rate bps or window bytes) and the allowed bound.
    reference: f64,
    bound: f64,
    /// What the capture shows (rate over the last packets, or bytes in flight).
    observed: f64,
    /// How far past the bound: ns early, bytes short, bytes over.
    excess: f64,
    decided_by: Option<Decision>,
    /// The observed rate and bytes in flight when it failed (the charted decision).
    rate: f64,
    inflight: u64,
}

/// The sender's last packet of a flow.
#[derive(Clone, Copy, Debug)]
struct Prev {
    t: u64,
    frame: u32,
    /// Host link time used by all frames up to and including this one, ns.
    link_used: f64,
    paused: u64,
    ends_message: bool,
}

/// A flow's judge.
#[derive(Debug, Default)]
struct FlowJudge {
    /// Reference values in force since each time: (from, rate bps, window or u64::MAX); the
    /// first entry is in force at the oldest time a check still looks at.
    hist: VecDeque<(u64, f64, u64)>,
    last_decision: Option<Decision>,
    decisions: u64,
    prev: Option<Prev>,
    /// Theoretical time of the next packet, ns after `base` (f64 keeps ns exact only on
    /// relative times).
    tat: f64,
    /// The flow's first packet time.
    base: u64,
    deficit: f64,
    high_psn: Option<u32>,
    outstanding: VecDeque<(u32, u32)>,
    inflight: u64,
    min_stride: Option<u32>,
    acks: u64,
    blocked: bool,
    blocked_ns: u64,
    since: u64,
    last_payload: u32,
    recent: VecDeque<(u64, u32)>,
    /// The rate over `recent` (0 until two packets span a time).
    rate: f64,
    packets: u64,
    lost: u64,
    pending: Option<Violation>,
    violations: u64,
    first: Option<Violation>,
    by_check: [u64; 3],
    largest: [(f64, f64); 3],
    reaction: Reactions,
}

/// A reference rate step the sender has not yet been seen to follow.
#[derive(Clone, Copy, Debug)]
struct Step {
    t: u64,
    old: f64,
    new: f64,
}

/// After a reaction: the rate the sender settles to over its next [`SETTLE_GAPS`] gaps.
#[derive(Clone, Copy, Debug)]
struct Settle {
    new: f64,
    t0: u64,
    bytes: f64,
    gaps: u32,
}

/// The reaction estimator (docs/observed.md "Estimators"): for each step of the reference's
/// rate by [`STEP`] or more, the delay until the sender's spacing crossed the midpoint of the
/// old and new rates, and the rate it then kept, relative to the new one.
#[derive(Clone, Debug, Default)]
struct Reactions {
    pending: Option<Step>,
    settle: Option<Settle>,
    steps: u64,
    delays_ns: Vec<u64>,
    settled: Vec<f64>,
}

/// A rate change this large (relative) is a step whose reaction is measured.
const STEP: f64 = 0.1;
/// Gaps over which the settled rate is measured.
const SETTLE_GAPS: u32 = 8;

impl Reactions {
    fn decision(&mut self, t: u64, old: f64, new: f64) {
        if old > 0.0 && (new - old).abs() / old >= STEP {
            self.steps += 1;
            self.pending = Some(Step { t, old, new });
            self.settle = None;
        }
    }

    /// A gap of `bytes` frame bytes from `start` to `end`.
    fn gap(&mut self, start: u64, end: u64, bytes: f64) {
        if end <= start {
            return;
        }
        if let Some(st) = &mut self.settle {
            st.bytes += bytes;
            st.gaps += 1;
            if st.gaps == SETTLE_GAPS {
                let rate = st.bytes * 8.0 * NS_PER_S / (end - st.t0) as f64;
                self.settled.push(rate / st.new);
                self.settle = None;
            }
        }
        let Some(step) = self.pending else { return };
        if start < step.t {
            return;
        }
        let rate = bytes * 8.0 * NS_PER_S / (end - start) as f64;
        let mid = (step.old + step.new) / 2.0;
        if (step.new < step.old && rate < mid) || (step.new > step.old && rate > mid) {
            self.delays_ns.push(start - step.t);
            self.pending = None;
            self.settle = Some(Settle {
                new: step.new,
                t0: start,
                bytes: 0.0,
                gaps: 0,
            });
            // This gap is the first at the new rate: it counts towards the settled one.
            self.gap(start, end, bytes);
        }
    }
}

/// Reactions of one flow to the reference's rate steps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReactionFacts {
    /// Steps of the reference's rate by 10 % or more.
    pub steps: u64,
    /// Delay from each step to the first packet spaced by the new rate (past the midpoint of
    /// the old and new), ns, sorted; steps the sender never followed (window- or link-bound,
    /// or superseded by the next step) have none.
    pub delays_ns: Vec<u64>,
    /// The rate kept over the next 8 gaps after each reaction, relative to the new rate,
    /// sorted.
    pub settled: Vec<f64>,
}

impl ReactionFacts {
    /// The median delay, ns.
    pub fn median_delay_ns(&self) -> Option<u64> {
        self.delays_ns.get(self.delays_ns.len() / 2).copied()
    }

    /// The median settled rate relative to the new rate.
    pub fn median_settled(&self) -> Option<f64> {
        self.settled.get(self.settled.len() / 2).copied()
    }
}

/// The judge of one capture's sender.
pub struct Judge {
    allow: Allowances,
    dialect: Dialect,
    link_bps: f64,
    /// Rate and window every flow starts with (the model's initial values).
    initial_rate_bps: f64,
    slack_ns: f64,
    window_slack: u64,
    pauses: Pauses,
    link_used: f64,
    flows: Vec<FlowJudge>,
    /// The model sets a window: bytes in flight are part of what is observed.
    windowed: bool,
}

fn psn_le(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) & PSN_MASK < PSN_HALF
}

impl Judge {
    /// A judge for a sender on a `link_bps` link; `resolution_ns` is the capture's;
    /// `windowed` when the model sets a window (the observed decisions then carry the bytes
    /// in flight).
    pub fn new(
        allow: Allowances,
        dialect: Dialect,
        link_bps: u64,
        mtu_bytes: u64,
        resolution_ns: u64,
        pauses: Pauses,
        windowed: bool,
    ) -> Self {
        Judge {
            allow,
            dialect,
            link_bps: link_bps.max(1) as f64,
            initial_rate_bps: link_bps.max(1) as f64,
            // Two timestamps bound every interval: each off by the resolution plus the timing.
            slack_ns: 2.0 * (resolution_ns as f64 + allow.timing_ns as f64),
            window_slack: allow.window_slack_bytes.unwrap_or(mtu_bytes),
            pauses,
            link_used: 0.0,
            flows: Vec::new(),
            windowed,
        }
    }

    fn flow(&mut self, f: u32) -> &mut FlowJudge {
        let i = f as usize;
        if self.flows.len() <= i {
            let r = self.initial_rate_bps;
            self.flows.resize_with(i + 1, || FlowJudge {
                hist: VecDeque::from([(0, r, u64::MAX)]),
                ..FlowJudge::default()
            });
        }
        &mut self.flows[i]
    }

    /// A reference decision (after the event that caused it, in time order per flow).
    pub fn decision(&mut self, d: &Decision) {
        let f = self.flow(d.flow);
        f.decisions += 1;
        let (rate, window) = (d.outputs.rate_bps, d.outputs.window_bytes);
        if rate.is_none() && window.is_none() {
            return;
        }
        f.advance(d.t_ns);
        let &(_, r0, w0) = f.hist.back().expect("hist starts non-empty");
        let r = rate.map_or(r0, |r| r as f64);
        let w = window.unwrap_or(w0);
        f.reaction.decision(d.t_ns, r0, r);
        f.hist.push_back((d.t_ns, r, w));
        f.last_decision = Some(*d);
        f.update_blocked();
    }

    /// An event of the trace, before the reference's decisions on it.
    pub fn event(&mut self, ev: &Event) {
        match ev.kind {
            EventKind::TxData { psn, bytes, opcode } => self.tx(ev, psn, bytes, opcode),
            EventKind::RxAck(a) => self.ack(ev.flow, ev.t_ns, a.psn),
            // A NAK acknowledges what precedes its PSN.
            EventKind::RxNak(a) => self.ack(ev.flow, ev.t_ns, a.psn.wrapping_sub(1) & PSN_MASK),
            _ => {}
        }
    }

    fn ack(&mut self, flow: u32, t: u64, psn: u32) {
        let f = self.flow(flow);
        f.advance(t);
        f.acks += 1;
        let mut stride = 0u32;
        while let Some(&(p, bytes)) = f.outstanding.front() {
            if !psn_le(p, psn) {
                break;
            }
            f.outstanding.pop_front();
            f.inflight -= u64::from(bytes);
            stride += 1;
        }
        if stride > 0 {
            if let Some(v) = f.pending.take() {
                // An ACK covering more packets than any before it: the tap lost the ACKs the
                // NIC had seen when it sent — its window was not exceeded by what we know.
                if f.min_stride.is_some_and(|m| stride <= m) {
                    f.record(v);
                }
            }
            f.min_stride = Some(f.min_stride.map_or(stride, |m| m.min(stride)));
        }
        f.update_blocked();
    }

    fn tx(&mut self, ev: &Event, psn: u32, payload: u32, opcode: u8) {
        let frame = frame_len(self.dialect, PacketKind::Data, opcode, payload);
        let t = ev.t_ns;
        let link_bps = self.link_bps;
        let (allow, slack_ns, window_slack) = (self.allow, self.slack_ns, self.window_slack);
        let used_before = self.link_used;
        self.link_used += f64::from(frame) * 8.0 * NS_PER_S / link_bps;
        let paused = self.pauses.paused_before(t);
        let link_used = self.link_used;
        let f = self.flow(ev.flow);
        f.advance(t);
        f.packets += 1;
        // Packets the tap did not see (a PSN run skipped forwards) were sent all the same.
        let mut lost = 0u32;
        match f.high_psn {
            None => f.high_psn = Some(psn),
            Some(h) => {
                let ahead = psn.wrapping_sub(h) & PSN_MASK;
                if ahead != 0 && ahead < PSN_HALF {
                    lost = (ahead - 1).min(MAX_LOST_RUN);
                    if ahead - 1 > MAX_LOST_RUN {
                        f.outstanding.clear();
                        f.inflight = 0;
                        lost = 0;
                    }
                    for k in 1..=lost {
                        f.outstanding
                            .push_back((h.wrapping_add(k) & PSN_MASK, payload));
                        f.inflight += u64::from(payload);
                    }
                    f.high_psn = Some(psn);
                } else {
                    // A retransmission (go-back-N): what follows it is sent again.
                    while let Some(&(p, bytes)) = f.outstanding.back() {
                        if !psn_le(psn, p) {
                            break;
                        }
                        f.outstanding.pop_back();
                        f.inflight -= u64::from(bytes);
                    }
                }
            }
        }
        f.lost += u64::from(lost);
        let lost_bytes = f64::from(lost) * f64::from(frame);
        f.observe_rate(t, frame);
        let observed_rate = f.rate;
        let (r_hi, r_lo, w_hi) = f.bounds();
        let r_hi = r_hi * (1.0 + allow.rate_tolerance);
        let r_lo = r_lo * (1.0 - allow.rate_tolerance);
        if let Some(p) = f.prev {
            // Too fast: the theoretical time of this packet at the highest allowed rate.
            let bytes = f64::from(p.frame) + lost_bytes;
            let (t_rel, prev_rel) = ((t - f.base) as f64, (p.t - f.base) as f64);
            f.tat = f.tat.max(prev_rel) + bytes * 8.0 * NS_PER_S / r_hi;
            let early = f.tat - t_rel;
            let allowed = allow.burst_bytes as f64 * 8.0 * NS_PER_S / r_hi + slack_ns;
            f.note_largest(Check::TooFast, early, early / allowed.max(1.0));
            if early > allowed {
                let v = f.violation(
                    Check::TooFast,
                    ev,
                    r_hi,
                    r_hi,
                    observed_rate,
                    early - allowed,
                );
                f.record(v);
                // Judge what follows from here, not again against the same early start.
                f.tat = t_rel;
            }
            // Too slow: bytes owed at the lowest required rate over the time it could send.
            if p.ends_message {
                f.deficit = 0.0;
            } else {
                let gap = (t - p.t) as f64;
                let others = (used_before - p.link_used).max(0.0);
                let paused = (paused - p.paused) as f64;
                // Not clamped at 0: with coarse timestamps a gap can read shorter than the
                // other frames it held, and the sum over gaps must still telescope to the
                // true elapsed time (the deficit's floor bounds it).
                let could = gap - others - paused - f.blocked_ns as f64;
                f.deficit = (f.deficit + r_lo * could / 8.0 / NS_PER_S - bytes)
                    .max(-(allow.burst_bytes as f64));
                let allowed = allow.burst_bytes as f64 + r_lo * slack_ns / 8.0 / NS_PER_S;
                f.note_largest(Check::TooSlow, f.deficit, f.deficit / allowed.max(1.0));
                if f.deficit > allowed {
                    let v = f.violation(
                        Check::TooSlow,
                        ev,
                        r_lo,
                        r_lo,
                        observed_rate,
                        f.deficit - allowed,
                    );
                    f.record(v);
                    f.deficit = 0.0;
                }
            }
        } else {
            f.base = t;
            f.tat = 0.0;
        }
        // Window: what is in flight as this packet leaves.
        if w_hi != u64::MAX && f.inflight > 0 {
            let bound = w_hi.saturating_add(window_slack);
            let after = f.inflight + u64::from(payload);
            let over = after as f64 - bound as f64;
            f.note_largest(Check::Window, over, over / bound.max(1) as f64);
            if after > bound && f.pending.is_none() {
                let mut v = f.violation(
                    Check::Window,
                    ev,
                    w_hi as f64,
                    bound as f64,
                    after as f64,
                    over,
                );
                v.inflight = after;
                f.pending = Some(v);
            }
        }
        if let Some(p) = f.prev {
            f.reaction.gap(p.t, t, f64::from(p.frame) + lost_bytes);
        }
        f.outstanding.push_back((psn, payload));
        f.inflight += u64::from(payload);
        f.last_payload = payload;
        f.blocked_ns = 0;
        f.prev = Some(Prev {
            t,
            frame,
            link_used,
            paused,
            ends_message: Opcode(opcode).ends_message(),
        });
        f.prune(t.saturating_sub(allow.reaction_ns));
        f.update_blocked();
    }

    /// The observed decision of a flow at its last packet: the rate over its last packets and
    /// the bytes in flight (what `report diff` plots against the reference).
    pub fn observed_decision(&self, ev: &Event) -> Option<Decision> {
        let f = self.flows.get(ev.flow as usize)?;
        let rate = (f.rate > 0.0).then_some(f.rate as u64);
        Some(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                rate_bps: rate,
                window_bytes: self.windowed.then_some(f.inflight),
                ..Outputs::default()
            },
            state: State::default(),
        })
    }

    /// The trace ended: the per-flow results.
    pub fn finish(mut self) -> Vec<(FlowDiff, FlowFacts)> {
        let mut out = Vec::new();
        for (i, f) in self.flows.iter_mut().enumerate() {
            if let Some(v) = f.pending.take() {
                f.record(v);
            }
            let names = [
                ("tx_early_ns", Check::TooFast),
                ("rate_deficit_bytes", Check::TooSlow),
                ("inflight_over_window_bytes", Check::Window),
            ];
            let largest = names
                .iter()
                .map(|&(n, c)| {
                    let (abs, rel) = f.largest[c as usize];
                    (n.to_string(), abs, rel)
                })
                .collect();
            let first = f.first.take().map(|v| divergence(i as u32, &v));
            out.push((
                FlowDiff {
                    flow: i as u32,
                    reference_count: f.decisions,
                    dut_count: f.packets,
                    mismatches: f.violations,
                    missing: 0,
                    extra: 0,
                    largest,
                    first,
                },
                FlowFacts {
                    packets: f.packets,
                    acks: f.acks,
                    decisions: f.decisions,
                    lost: f.lost,
                    by_check: f.by_check,
                    reactions: {
                        let r = std::mem::take(&mut f.reaction);
                        let mut delays_ns = r.delays_ns;
                        delays_ns.sort_unstable();
                        let mut settled = r.settled;
                        settled.sort_unstable_by(f64::total_cmp);
                        ReactionFacts {
                            steps: r.steps,
                            delays_ns,
                            settled,
                        }
                    },
                },
            ));
        }
        out
    }
}

/// What a flow's judgement rested on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowFacts {
    /// Data packets judged.
    pub packets: u64,
    /// ACKs and NAKs seen.
    pub acks: u64,
    /// Reference decisions.
    pub decisions: u64,
    /// Data packets the tap missed (PSN runs skipped).
    pub lost: u64,
    /// Failed checks: too fast, too slow, window.
    pub by_check: [u64; 3],
    /// How the sender followed the reference's rate steps.
    pub reactions: ReactionFacts,
}

impl FlowJudge {
    /// Account the window-blocked time up to `t`.
    fn advance(&mut self, t: u64) {
        if self.blocked {
            self.blocked_ns += t.saturating_sub(self.since);
        }
        self.since = self.since.max(t);
    }

    /// Blocked: the reference's smallest window in force would not let the next packet out.
    fn update_blocked(&mut self) {
        let w_lo = self
            .hist
            .iter()
            .map(|&(_, _, w)| w)
            .min()
            .unwrap_or(u64::MAX);
        self.blocked = w_lo != u64::MAX
            && self.inflight > 0
            && self.inflight + u64::from(self.last_payload) > w_lo;
    }

    /// (highest rate, lowest rate, highest window) in force since the previous packet's time
    /// minus the reaction allowance (the entries `prune` kept).
    fn bounds(&self) -> (f64, f64, u64) {
        let mut hi = 0.0f64;
        let mut lo = f64::INFINITY;
        let mut w = 0u64;
        for &(_, r, win) in &self.hist {
            hi = hi.max(r);
            lo = lo.min(r);
            w = w.max(win);
        }
        (hi, lo, w)
    }

    /// Keep the entries in force at or after `cutoff`.
    fn prune(&mut self, cutoff: u64) {
        while self.hist.len() >= 2 && self.hist[1].0 <= cutoff {
            self.hist.pop_front();
        }
    }

    /// Add a packet to the rate window and recompute the rate over it: the frames before the
    /// last over the span from the first to the last.
    fn observe_rate(&mut self, t: u64, frame: u32) {
        self.recent.push_back((t, frame));
        if self.recent.len() > RATE_WINDOW + 1 {
            self.recent.pop_front();
        }
        let t0 = self.recent[0].0;
        let bytes: u64 = self
            .recent
            .iter()
            .take(self.recent.len() - 1)
            .map(|&(_, b)| u64::from(b))
            .sum();
        self.rate = if t > t0 {
            bytes as f64 * 8.0 * NS_PER_S / (t - t0) as f64
        } else {
            0.0
        };
    }

    fn note_largest(&mut self, c: Check, abs: f64, rel: f64) {
        let l = &mut self.largest[c as usize];
        if abs > l.0 {
            // Whole ns and bytes: finer is below what a capture resolves.
            *l = (abs.round(), rel);
        }
    }

    fn violation(
        &self,
        check: Check,
        ev: &Event,
        reference: f64,
        bound: f64,
        observed: f64,
        excess: f64,
    ) -> Violation {
        Violation {
            check,
            t_ns: ev.t_ns,
            event_index: ev.index,
            reference: match check {
                Check::Window => reference,
                _ => self.hist.back().map_or(reference, |&(_, r, _)| r),
            },
            bound,
            observed,
            excess,
            decided_by: self.last_decision,
            rate: self.rate,
            inflight: self.inflight,
        }
    }

    fn record(&mut self, v: Violation) {
        self.violations += 1;
        self.by_check[v.check as usize] += 1;
        if self.first.is_none() {
            self.first = Some(v);
        }
    }
}

fn g(x: f64) -> String {
    format!("{}", x.round() as i64)
}

/// The first failed check as a divergence of today's diff report: the reference's values in
/// force and the bound against what the capture shows, at the packet that broke it.
fn divergence(flow: u32, v: &Violation) -> Divergence {
    let cause = Cause::Event {
        kind: "tx_data",
        index: v.event_index,
    };
    let (field, unit, excess_unit) = match v.check {
        Check::TooFast => ("rate_bps", "bps", "ns early"),
        Check::TooSlow => ("rate_bps", "bps", "bytes short"),
        Check::Window => ("window_bytes", "B", "bytes over"),
    };
    let bound = match v.check {
        Check::TooFast => format!("≤ {} {unit}", g(v.bound)),
        Check::TooSlow => format!("≥ {} {unit}", g(v.bound)),
        Check::Window => format!("≤ {} {unit} in flight", g(v.bound)),
    };
    let mut fields = vec![
        FieldDiff {
            field: "check".into(),
            reference: bound,
            dut: format!("{}: {} {excess_unit}", v.check.name(), g(v.excess)),
            abs_err: Some(v.excess),
            rel_err: None,
        },
        FieldDiff {
            field: field.into(),
            reference: g(v.reference),
            dut: g(v.observed),
            abs_err: Some((v.observed - v.reference).abs()),
            rel_err: (v.reference != 0.0).then(|| (v.observed - v.reference).abs() / v.reference),
        },
    ];
    if let Some(d) = &v.decided_by {
        let by = match d.cause {
            Cause::Event { kind, index } => format!("{kind} #{index}"),
            Cause::Timer { name } => format!("timer {name}"),
        };
        fields.push(FieldDiff {
            field: "decided_by".into(),
            reference: format!("{by} at {} ns", d.t_ns),
            dut: String::new(),
            abs_err: None,
            rel_err: None,
        });
    }
    let decision = |outputs| Decision {
        t_ns: v.t_ns,
        flow,
        cause,
        outputs,
        state: State::default(),
    };
    let reference = v.decided_by.map(|d| Decision {
        t_ns: v.t_ns,
        cause,
        ..d
    });
    Divergence {
        reference,
        dut: Some(decision(Outputs {
            rate_bps: Some(v.rate as u64),
            window_bytes: Some(v.inflight),
            ..Outputs::default()
        })),
        fields,
        events: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccreplay_reference_cc::event::AckInfo;

    // 1,058-byte frames: 846.4 ns at 10 Gbps, 1,692.8 ns at 5 Gbps. The reference halves the
    // rate at 1,000 ns. The gap from 0 began before the step; the gap from 1,100 after it, but
    // at 10 Gbps, above the 7.5 Gbps midpoint; the gap from 1,946 is the first at 5 Gbps:
    // delay 946 ns. It and the next 7 settle at 1,058 × 8 × 8 / (8 × 1,693) ns = 4.9988 Gbps:
    // 0.99976 of the new rate.
    #[test]
    fn reaction_delay_and_settled_rate() {
        let mut r = Reactions::default();
        r.decision(1_000, 10e9, 5e9);
        r.gap(0, 846, 1058.0);
        r.gap(1_100, 1_946, 1058.0);
        assert!(r.delays_ns.is_empty());
        let mut t = 1_946;
        for _ in 0..9 {
            r.gap(t, t + 1_693, 1058.0);
            t += 1_693;
        }
        assert_eq!(r.delays_ns, vec![946]);
        assert_eq!(r.settled.len(), 1);
        let want = 1058.0 * 8.0 * 8.0 / (8.0 * 1693.0) * 1e9 / 5e9;
        assert!((r.settled[0] - want).abs() < 1e-12, "{}", r.settled[0]);
        // The settled rate is over all 8 gaps, not the first: after a step back up to 10 Gbps
        // at 30,000 ns, a first gap of 846 ns (10.005 Gbps: the reaction, delay 0) then 7 of
        // 900: 8 × 1,058 B over 7,146 ns = 9.47551 Gbps, 0.947551 of the new rate.
        r.decision(30_000, 5e9, 10e9);
        let mut t = 30_000;
        for gap in [846, 900, 900, 900, 900, 900, 900, 900, 900] {
            r.gap(t, t + gap, 1058.0);
            t += gap;
        }
        assert_eq!(r.delays_ns, vec![946, 0]);
        let want = 8.0 * 1058.0 * 8.0 / 7_146.0 * 1e9 / 10e9;
        assert!((r.settled[1] - want).abs() < 1e-12, "{}", r.settled[1]);
        // A step under 10 % is no step.
        r.decision(40_000, 10e9, 10.9e9);
        assert_eq!(r.steps, 2);
    }

    // The edges of a step. A gap that begins at the step's very instant is after it: at
    // 5 Gbps (1,058 B over 1,693 ns, below the 7.5 Gbps midpoint) it is the reaction, delay 0.
    // A gap that begins 1 ns before it is not. And a rate from 0 is no step (the relative
    // change would divide by 0).
    #[test]
    fn a_gap_at_the_steps_instant_follows_it_and_a_rate_from_zero_is_no_step() {
        let mut r = Reactions::default();
        r.decision(1_000, 10e9, 5e9);
        r.gap(999, 999 + 1_693, 1058.0);
        assert!(r.delays_ns.is_empty());
        r.gap(1_000, 1_000 + 1_693, 1058.0);
        assert_eq!(r.delays_ns, vec![0]);

        let mut r = Reactions::default();
        r.decision(1_000, 0.0, 5e9);
        assert_eq!((r.steps, r.pending.is_some()), (0, false));
    }

    // A step up, 5 → 10 Gbps at 1,000 ns (midpoint 7.5 Gbps): a gap at 5 Gbps (1,058 B over
    // 1,693 ns) is not the reaction; 750 B over 800 ns is exactly 7.5 Gbps (6,000 × 10^9 /
    // 800, exact in binary), the midpoint, not past it; 1,058 B over 846 ns (10.005 Gbps) is:
    // delay 3,493 − 1,000 = 2,493 ns. The same exact-midpoint gap is not a reaction to a step
    // down either.
    #[test]
    fn a_step_up_is_followed_past_the_midpoint_not_at_it() {
        let mut r = Reactions::default();
        r.decision(1_000, 5e9, 10e9);
        r.gap(1_000, 2_693, 1058.0);
        r.gap(2_693, 3_493, 750.0);
        assert!(r.delays_ns.is_empty());
        r.gap(3_493, 4_339, 1058.0);
        assert_eq!(r.delays_ns, vec![2_493]);

        let mut r = Reactions::default();
        r.decision(1_000, 10e9, 5e9);
        r.gap(1_000, 1_800, 750.0);
        assert!(r.delays_ns.is_empty());
    }

    /// A judge of a windowed model's sender on a 10 Gbps link, default allowances (window
    /// slack one 1,000-byte MTU), 1 ns timestamps.
    fn judge() -> Judge {
        judge_with(Allowances::default(), Pauses::default())
    }

    /// [`judge`] with these allowances and PFC pauses.
    fn judge_with(allow: Allowances, pauses: Pauses) -> Judge {
        Judge::new(allow, Dialect::Roce, 10_000_000_000, 1_000, 1, pauses, true)
    }

    /// Flow 0's data packet: RDMA WRITE MIDDLE (0x07), 1,000 bytes (a 1,058-byte frame).
    fn tx(j: &mut Judge, t_ns: u64, psn: u32) -> Event {
        tx_of(j, 0, t_ns, psn)
    }

    /// [`tx`] of another flow of the host.
    fn tx_of(j: &mut Judge, flow: u32, t_ns: u64, psn: u32) -> Event {
        let ev = Event {
            t_ns,
            flow,
            index: 0,
            kind: EventKind::TxData {
                psn,
                bytes: 1_000,
                opcode: 0x07,
            },
        };
        j.event(&ev);
        ev
    }

    fn reply(j: &mut Judge, t_ns: u64, psn: u32, nak: bool) {
        let a = AckInfo {
            psn,
            syndrome: if nak { 0x60 } else { 0 },
            int: None,
            n: None,
            cwnd: None,
            rcc_flags: None,
            ts_ns: None,
        };
        let kind = if nak {
            EventKind::RxNak(a)
        } else {
            EventKind::RxAck(a)
        };
        j.event(&Event {
            t_ns,
            flow: 0,
            index: 0,
            kind,
        });
    }

    /// Bytes in flight the judge holds for flow 0 as `ev` leaves (what `report diff` charts).
    fn inflight(j: &Judge, ev: &Event) -> Option<u64> {
        j.observed_decision(ev)?.outputs.window_bytes
    }

    // Window 3,000 B (+ 1,000 slack: bound 4,000). PSNs 0-3 leave 1 µs apart (in flight with
    // each: -, 2,000, 3,000, 4,000 — none over). A NAK naming 2 acknowledges 0 and 1: in
    // flight 2,000, so PSN 4 leaves with 3,000 — within the window. Had the NAK acknowledged
    // nothing, 5,000 > 4,000: a window failure.
    #[test]
    fn a_nak_acknowledges_what_precedes_its_psn() {
        let mut j = judge();
        decide(&mut j, 0, 10_000_000_000, Some(3_000));
        for k in 0..4 {
            tx(&mut j, 1_000 * u64::from(k), k);
        }
        reply(&mut j, 3_500, 2, true);
        let ev = tx(&mut j, 4_000, 4);
        assert_eq!(inflight(&j, &ev), Some(3_000));
        let facts = &j.finish()[0].1;
        let counts = (facts.packets, facts.acks, facts.decisions, facts.lost);
        assert_eq!((counts, facts.by_check), ((5, 1, 1, 0), [0, 0, 0]));
    }

    // Go-back-N without the NAK in the capture: PSNs 0-3 in flight (4,000 B), then PSN 1 again
    // takes back 1, 2 and 3 (what follows it is sent again) and is itself in flight: 2,000.
    #[test]
    fn a_retransmission_takes_back_what_follows_it() {
        let mut j = judge();
        for k in 0..4 {
            tx(&mut j, 1_000 * u64::from(k), k);
        }
        let ev = tx(&mut j, 4_000, 1);
        assert_eq!(inflight(&j, &ev), Some(2_000));
    }

    // Packets the tap missed: a PSN run skipped forwards was sent all the same. PSN 0, then 11
    // at 11 µs: 10 lost, 12,000 B in flight, and 11 frames of 1,058 B sent in the gap — at
    // the lowest allowed 9.8 Gbps 13,475 B were owed, 1,837 short, within the 8,192-byte
    // burst (counting only the frame seen, 12,417 short: too slow). A run of 4,096 (MAX_LOST_RUN) is still counted; one more
    // starts a new sequence (nothing counted, what was in flight forgotten). A PSN exactly half
    // the PSN space ahead (2^23) is not ahead: a retransmission, which takes back nothing here.
    #[test]
    fn psn_runs_the_tap_missed() {
        let mut j = judge();
        tx(&mut j, 0, 0);
        let ev = tx(&mut j, 11_000, 11);
        assert_eq!(inflight(&j, &ev), Some(12_000));
        // An ACK of 5 acknowledges the missed 1-5 too: 6-11 in flight.
        reply(&mut j, 11_500, 5, false);
        assert_eq!(inflight(&j, &ev), Some(6_000));
        let facts = &j.finish()[0].1;
        assert_eq!((facts.lost, facts.by_check), (10, [0, 0, 0]));

        let mut j = judge();
        tx(&mut j, 0, 0);
        tx(&mut j, 10_000_000, 4_097);
        assert_eq!(j.finish()[0].1.lost, 4_096);

        let mut j = judge();
        tx(&mut j, 0, 0);
        let ev = tx(&mut j, 10_000_000, 4_098);
        assert_eq!(inflight(&j, &ev), Some(1_000));
        assert_eq!(j.finish()[0].1.lost, 0);

        let mut j = judge();
        tx(&mut j, 0, 0);
        let ev = tx(&mut j, 10_000_000, PSN_HALF);
        assert_eq!(inflight(&j, &ev), Some(2_000));
        assert_eq!(j.finish()[0].1.lost, 0);
    }

    /// A reference decision for flow 0 at `t_ns`: a rate and maybe a window.
    fn decide(j: &mut Judge, t_ns: u64, rate_bps: u64, window_bytes: Option<u64>) {
        j.decision(&Decision {
            t_ns,
            flow: 0,
            cause: Cause::Event {
                kind: "rx_ack",
                index: 0,
            },
            outputs: Outputs {
                rate_bps: Some(rate_bps),
                window_bytes,
                ..Outputs::default()
            },
            state: State::default(),
        });
    }

    // Too fast. The reference sets 5 Gbps at 0; from 10 µs on (past the 5 µs reaction
    // allowance, the link's 10 Gbps no longer in force) the sender sends 1,058-byte frames
    // 847 ns apart. At 5.1 Gbps (5 × 1.02) a frame is 1,659.6078 ns: packet k (from 0) is
    // k × 812.6078 ns early, and the allowance is 8,192 B at 5.1 Gbps (12,850.196 ns) plus
    // 2 × (1 + 200) ns: 13,252.196 ns. k = 16 is 13,001.7 ns early (within), k = 17 is
    // 13,814.3 ns: too fast by 562 ns.
    #[test]
    fn too_fast_past_the_burst_at_the_highest_allowed_rate() {
        let run = |n: u32| {
            let mut j = judge();
            decide(&mut j, 0, 5_000_000_000, None);
            for k in 0..n {
                tx(&mut j, 10_000 + 847 * u64::from(k), k);
            }
            j.finish().remove(0)
        };
        let (diff, facts) = run(17);
        assert_eq!(facts.by_check, [0, 0, 0]);
        // The largest earliness reported: packet 16's, of the allowance.
        let (_, abs, rel) = diff.largest.iter().find(|l| l.0 == "tx_early_ns").unwrap();
        let early = 16.0 * (1058.0 * 8.0 / 5.1 - 847.0);
        let allowed = 8192.0 * 8.0 / 5.1 + 402.0;
        assert_eq!(*abs, 13_002.0);
        assert!((rel - early / allowed).abs() < 1e-9, "{rel}");
        // The observed rate, charted: the frames before the last of the last 9 packets over
        // their span — packets at 0, then 1,000 and every 847 ns after: 8,464 B in 6,929 ns
        // at the 9th, 9.7723 Gbps; at the 10th the window has moved past the longer first
        // gap: 8,464 B in 6,776 ns.
        let mut j = judge();
        tx(&mut j, 0, 0);
        for k in 1..10 {
            let ev = tx(&mut j, 153 + 847 * u64::from(k), k);
            let rate = j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps);
            match k {
                8 => assert_eq!(rate, Some(9_772_261_509)),
                9 => assert_eq!(rate, Some(9_992_916_174)),
                _ => {}
            }
        }
        let (diff, facts) = run(18);
        assert_eq!(facts.by_check, [1, 0, 0]);
        let first = diff.first.expect("a first failure");
        assert_eq!(first.fields[0].reference, "≤ 5100000000 bps");
        assert_eq!(first.fields[0].dut, "too_fast: 562 ns early");
        // The divergence charted at the packet that broke it (10,000 + 17 × 847 ns): the
        // reference's decision in force, the rate observed (9.9929 Gbps over the last 8
        // frames) and the 17 packets before it in flight.
        let reference = first.reference.expect("the decision in force");
        assert_eq!(
            (reference.t_ns, reference.outputs.rate_bps),
            (24_399, Some(5_000_000_000))
        );
        let dut = first.dut.expect("what the capture shows").outputs;
        assert_eq!(
            (dut.rate_bps, dut.window_bytes),
            (Some(9_992_916_174), Some(17_000))
        );
    }

    // Too slow, and PFC pauses. The host is paused from 0 to 10 µs; from 20 µs it sends a
    // 1,058-byte frame every 2 µs though the link's 10 Gbps is required (no decision): at 9.8
    // Gbps each gap owes 2,450 B, 1,392 more than it sent; the allowance is 8,192 B plus 9.8
    // Gbps over 402 ns (492.45 B): 8,684.45 B. After 6 gaps 8,352 B (within), after 7 9,744
    // B: too slow. The pause before the first packet is not time it could have sent in any
    // later gap.
    #[test]
    fn too_slow_past_the_burst_and_pauses_before_the_gap_do_not_count() {
        let run = |n: u32| {
            let pauses = Pauses::from_frames(&[(0, 10_000)]);
            let mut j = judge_with(Allowances::default(), pauses);
            for k in 0..n {
                tx(&mut j, 20_000 + 2_000 * u64::from(k), k);
            }
            j.finish().remove(0)
        };
        assert_eq!(run(7).1.by_check, [0, 0, 0]);
        assert_eq!(run(8).1.by_check, [0, 1, 0]);
        // The largest deficit reported: 8,352 B after 6 gaps, of the 8,684.45 allowed.
        let largest = run(7).0.largest;
        let (_, abs, rel) = largest
            .iter()
            .find(|l| l.0 == "rate_deficit_bytes")
            .unwrap();
        assert_eq!(*abs, 8_352.0);
        assert!((rel - 8_352.0 / 8_684.45).abs() < 1e-12, "{rel}");
    }

    // Window-blocked time is not time the sender could send, but a next packet that exactly
    // fills the window is not blocked (the engine's NIC sends while in flight + the packet
    // ≤ the window): window 2,000 B, PSN 0, then PSN 1 10 µs later — 12,250 B owed at 9.8
    // Gbps, 1,058 sent: too slow.
    #[test]
    fn a_packet_that_exactly_fills_the_window_is_not_blocked() {
        let mut j = judge();
        decide(&mut j, 0, 10_000_000_000, Some(2_000));
        tx(&mut j, 0, 0);
        tx(&mut j, 10_000, 1);
        assert_eq!(j.finish()[0].1.by_check, [0, 1, 0]);
    }

    // Window failures and the ACKs that confirm them (window 3,000 B + 1,000: bound 4,000;
    // packets 1 µs apart, ACK 0 covers one packet: the least any ACK covers). PSN 5 leaves
    // with 5,000 B in flight; the next ACK covers 1 and 2 — more packets than any before: the
    // tap lost ACK 1, which the NIC had when it sent, so the failure is dropped. Then: a
    // duplicate ACK (covering nothing) does not decide it either; the ACK of one packet
    // after it does.
    #[test]
    fn a_window_failure_waits_for_an_ack_that_covers_no_more_than_any_before() {
        let start = || {
            let mut j = judge();
            decide(&mut j, 0, 10_000_000_000, Some(3_000));
            tx(&mut j, 0, 0);
            tx(&mut j, 1_000, 1);
            reply(&mut j, 1_500, 0, false);
            for k in 2..6 {
                tx(&mut j, 1_000 * u64::from(k), k);
            }
            j
        };
        let mut j = start();
        reply(&mut j, 5_500, 2, false);
        assert_eq!(j.finish()[0].1.by_check, [0, 0, 0]);

        let mut j = start();
        reply(&mut j, 5_200, 0, false);
        reply(&mut j, 5_500, 1, false);
        tx(&mut j, 6_000, 6);
        reply(&mut j, 6_500, 2, false);
        assert_eq!(j.finish()[0].1.by_check, [0, 0, 2]);
    }

    // The host's other flows hold its link: that is not time a flow could send. Two flows
    // each send a 1,058-byte frame every 4 µs, interleaved (2 µs apart), 10 Gbps required:
    // each gap of a flow held 846.4 ns of the other's frame, so it could send for 3,153.6 ns
    // — 3,863.16 B owed at 9.8 Gbps, 2,805.16 more than sent. After 3 gaps 8,415.48 B
    // (within 8,684.45), after 4 11,220.64: too slow — for each flow.
    #[test]
    fn the_other_flows_frames_are_not_time_the_flow_could_send() {
        let run = |n: u32| {
            let mut j = judge();
            for k in 0..n {
                tx_of(&mut j, 0, 4_000 * u64::from(k), k);
                tx_of(&mut j, 1, 4_000 * u64::from(k) + 2_000, k);
            }
            let out = j.finish();
            [out[0].1.by_check, out[1].1.by_check]
        };
        assert_eq!(run(4), [[0, 0, 0]; 2]);
        assert_eq!(run(5), [[0, 1, 0]; 2]);
    }

    // Nothing in flight is never window-blocked, even under a window smaller than a packet
    // (500 B): PSN 0, its ACK at 500 ns, PSN 1 at 10 µs — blocked only until the ACK, so
    // 9,500 ns it could send: 11,637.5 B owed at 9.8 Gbps, 1,058 sent: too slow.
    #[test]
    fn nothing_in_flight_is_never_window_blocked() {
        let mut j = judge();
        decide(&mut j, 0, 10_000_000_000, Some(500));
        tx(&mut j, 0, 0);
        reply(&mut j, 500, 0, false);
        tx(&mut j, 10_000, 1);
        assert_eq!(j.finish()[0].1.by_check, [0, 1, 0]);
    }

    // The reaction counts the frames the tap missed: after a step up to 10 Gbps at 10 µs, PSN
    // 7 then PSN 9 1,693 ns later — two frames (PSN 8 unseen) in that gap, 9.999 Gbps, past
    // the 7.5 Gbps midpoint: delay 11,851 − 10,000 = 1,851 ns. One packet alone has no rate.
    #[test]
    fn the_reaction_counts_frames_the_tap_missed() {
        let mut j = judge();
        decide(&mut j, 0, 5_000_000_000, None);
        let ev = tx(&mut j, 0, 0);
        assert_eq!(
            j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps),
            None
        );
        for k in 1..8u32 {
            tx(&mut j, 1_693 * u64::from(k), k);
        }
        decide(&mut j, 10_000, 10_000_000_000, None);
        tx(&mut j, 1_693 * 8, 9);
        let facts = j.finish().remove(0).1;
        assert_eq!((facts.lost, facts.reactions.delays_ns), (1, vec![0, 1_851]));
    }

    // Coarse timestamps: two packets with one timestamp span no time, so no rate (not an
    // infinite one).
    #[test]
    fn packets_at_one_timestamp_have_no_rate() {
        let mut j = judge();
        tx(&mut j, 1_000, 0);
        let ev = tx(&mut j, 1_000, 1);
        assert_eq!(
            j.observed_decision(&ev).and_then(|d| d.outputs.rate_bps),
            None
        );
    }

    // A packet sent with nothing in flight may always go, whatever the window (the reference
    // models send one packet whatever theirs): window 0, no slack; PSN 0, its ACK, PSN 1.
    #[test]
    fn a_packet_with_nothing_in_flight_may_always_go() {
        let allow = Allowances {
            window_slack_bytes: Some(0),
            ..Allowances::default()
        };
        let mut j = judge_with(allow, Pauses::default());
        decide(&mut j, 0, 10_000_000_000, Some(0));
        tx(&mut j, 0, 0);
        reply(&mut j, 500, 0, false);
        tx(&mut j, 1_000, 1);
        assert_eq!(j.finish()[0].1.by_check, [0, 0, 0]);
    }

    // The window check, confirmed by the next ACK. Window 3,000 B + 1,000 slack: bound 4,000.
    // PSN 0, 1; ACK 0 (one packet: the least any ACK covers); PSN 2, 3, 4 — PSN 4 leaves with
    // 4,000 B in flight, at the bound, not over; ACK 1; PSN 5 (4,000 again), PSN 6 with 5,000:
    // 1,000 over, 0.25 of the bound, confirmed by ACK 2 (one packet again).
    #[test]
    fn window_over_its_bound_confirmed_by_the_next_ack() {
        let mut j = judge();
        decide(&mut j, 0, 10_000_000_000, Some(3_000));
        for k in 0..7u32 {
            tx(&mut j, 1_000 * u64::from(k), k);
            if k == 1 || k == 4 {
                reply(&mut j, 1_000 * u64::from(k) + 500, k / 4, false);
            }
        }
        reply(&mut j, 6_500, 2, false);
        let (diff, facts) = j.finish().remove(0);
        assert_eq!(facts.by_check, [0, 0, 1]);
        let first = diff.first.expect("a first failure");
        assert_eq!(first.fields[0].reference, "≤ 4000 B in flight");
        assert_eq!(first.fields[0].dut, "window: 1000 bytes over");
        let w = &first.fields[1];
        let row = (w.field.as_str(), w.reference.as_str(), w.dut.as_str());
        assert_eq!(row, ("window_bytes", "3000", "5000"));
        let largest = diff
            .largest
            .iter()
            .find(|l| l.0 == "inflight_over_window_bytes");
        assert_eq!(
            largest,
            Some(&("inflight_over_window_bytes".to_string(), 1_000.0, 0.25))
        );
    }

    // The reaction measured on the judge's own packets: the reference steps from the link's
    // 10 Gbps down to 5 at 0 and up to 10 at 20 µs. The sender spaces its 1,058-byte frames
    // by 1,693 ns (5 Gbps) from 0 — its first gap already below the 7.5 Gbps midpoint: delay
    // 0 — and by 847 ns (10 Gbps) after its packet at 28,781 ns: delay 8,781 ns.
    #[test]
    fn reactions_to_steps_down_and_up() {
        let mut j = judge();
        decide(&mut j, 0, 5_000_000_000, None);
        let mut t = 0;
        for k in 0..28u32 {
            if k == 12 {
                decide(&mut j, 20_000, 10_000_000_000, None);
            }
            tx(&mut j, t, k);
            t += if t < 28_781 { 1_693 } else { 847 };
        }
        let facts = j.finish().remove(0).1;
        assert_eq!(facts.reactions.steps, 2);
        assert_eq!(facts.reactions.delays_ns, vec![0, 8_781]);
    }

    // The medians reported: the middle value, the upper of the two middle ones for an even
    // count, none without values.
    #[test]
    fn medians_of_the_reaction_facts() {
        let mut f = ReactionFacts {
            steps: 4,
            delays_ns: vec![100, 200, 300],
            settled: vec![0.9, 0.95, 1.1],
        };
        assert_eq!(
            (f.median_delay_ns(), f.median_settled()),
            (Some(200), Some(0.95))
        );
        f.delays_ns.push(400);
        f.settled.push(1.2);
        assert_eq!(
            (f.median_delay_ns(), f.median_settled()),
            (Some(300), Some(1.1))
        );
        let none = ReactionFacts::default();
        assert_eq!(
            (none.median_delay_ns(), none.median_settled()),
            (None, None)
        );
    }
}
