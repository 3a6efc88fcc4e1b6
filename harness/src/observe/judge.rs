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
mod tests;
