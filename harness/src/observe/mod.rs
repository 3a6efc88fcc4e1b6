//! `--dut observed`: the sender in the capture is the DUT, judged by what it put on the wire.
//!
//! A NIC's congestion control does not print its decisions, but a capture at its port shows
//! their effect: when each data packet left (the pacing rate), how many bytes were in flight at
//! each ACK (the window), and how both moved after each CNP, ACK or INT report. The reference
//! model replays the capture's events as for any DUT; [`judge::Judge`] checks, packet by
//! packet, that the sender stayed within what the reference decided, allowing what correct
//! hardware does ([`Allowances`]: reaction latency, scheduler bursts, rate-limiter granularity,
//! timestamp resolution and jitter, packets the tap lost). The result is today's
//! [`DiffReport`], so text, JSON, JUnit and the HTML report carry it unchanged.
//!
//! Role: the `observed` DUT of `diff`, `check` and `report diff`. It may use the trace and its
//! extraction ([`crate::replay`]), the reference models and [`crate::diff`]'s report types; it
//! prints nothing. docs/observed.md documents the estimators, checks, bounds and what a capture
//! must hold.

pub mod allow;
pub mod judge;
pub mod tap;

use std::fmt::Write as _;

use ccreplay_reference_cc::{Cause, Decision};

pub use allow::{AllowError, Allowances};
pub use judge::{Check, FlowFacts, Judge};
pub use tap::TapFacts;

use crate::diff::{DiffReport, Side};
use crate::dut::{Dut, ModelDut};
use crate::manifest::{CapturePoint, ModelSpec};
use crate::replay::{self, ReplayError, ReplayStats, Trace};

/// The models whose decisions set a sender's rate or window: what the wire can show.
pub const MODELS: [&str; 7] = [
    "dcqcn",
    "dcqcn-nic",
    "dcqcn-ns3",
    "hpcc",
    "hpcc-ns3",
    "fncc",
    "rcc-sender",
];

/// True for the models an observed sender can be judged against.
pub fn judges(model: &str) -> bool {
    MODELS.contains(&model)
}

/// Models whose decisions set a window, so in-flight bytes need the ACKs.
fn windowed(model: &str) -> bool {
    matches!(model, "hpcc" | "hpcc-ns3" | "fncc" | "rcc-sender")
}

/// Why no verdict could be given.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The trace cannot be judged this way (capture point, model, events file).
    #[error("{message}")]
    Unsuitable {
        /// What is wrong.
        message: String,
        /// What to do.
        hint: Option<String>,
    },
    /// The replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// An observed-behaviour verdict.
pub struct Observed {
    /// Per flow: conformant or not, the first failed check, the largest errors.
    pub report: DiffReport,
    /// The replay's counts (accounting, flows); `decisions` counts the packets judged.
    pub stats: ReplayStats,
    /// Per flow (by id): what the judgement rested on.
    pub facts: Vec<FlowFacts>,
    /// The allowances applied, the resolution filled in.
    pub allowances: Allowances,
    /// What the capture said about itself.
    pub tap: TapFacts,
    /// The reference's decisions (kept only when asked: the HTML report plots them).
    pub reference: Side,
    /// The observed rate and bytes in flight at each data packet, as decisions.
    pub observed: Side,
    /// Reasons the capture holds too little for a verdict: each an error, never CONFORMANT.
    pub insufficient: Vec<Insufficient>,
}

/// Why a capture holds too little for a verdict (docs/observed.md "What a capture must hold").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insufficient {
    /// What is missing, with the counts.
    pub reason: String,
    /// What capture would do, when more can be said than docs/observed.md's list.
    pub hint: Option<String>,
}

impl Insufficient {
    /// The error message: `not enough to judge the sender: REASON`.
    pub fn message(&self) -> String {
        format!("not enough to judge the sender: {}", self.reason)
    }

    /// The hint: this reason's own, else where docs/observed.md lists what a capture must hold.
    pub fn hint(&self) -> String {
        self.hint
            .clone()
            .unwrap_or_else(|| "docs/observed.md says what a capture must hold".to_string())
    }
}

/// Judge the sender of `trace` against the reference model `spec`.
pub fn run(
    trace: &Trace,
    spec: &ModelSpec,
    allow: Allowances,
    keep_sides: bool,
    mut progress: impl FnMut(),
) -> Result<Observed, ObserveError> {
    let m = &trace.manifest;
    let CapturePoint::Sender { host } = m.capture_point else {
        return Err(ObserveError::Unsuitable {
            message: format!(
                "--dut observed judges a sender by its packets; this capture point is a {}",
                m.capture_point.kind()
            ),
            hint: Some(
                "at a receiver the decisions are in its ACKs and CNPs: --dut wire".to_string(),
            ),
        });
    };
    if !judges(&spec.name) {
        return Err(ObserveError::Unsuitable {
            message: format!(
                "`{}` decides no sending rate or window: nothing of it shows in a sender's packets",
                spec.name
            ),
            hint: Some(format!(
                "models a sender's capture can judge: {}",
                MODELS.join(", ")
            )),
        });
    }
    let facts = if crate::events_in::is_events(trace) {
        TapFacts {
            resolution_ns: 1,
            ..TapFacts::default()
        }
    } else {
        tap::scan(
            &trace.capture,
            &m.decode_config(),
            host,
            m.network.link_rate_bps,
            m.mirror.clock,
        )
    };
    let mut allowances = allow;
    let resolution = *allowances.resolution_ns.get_or_insert(facts.resolution_ns);
    let model = replay::build_model(trace, spec).map_err(|e| ObserveError::Unsuitable {
        message: e.to_string(),
        hint: None,
    })?;
    let mut reference_dut = ModelDut::new(model);
    let mut judge = Judge::new(
        allowances,
        m.dialect,
        m.network.link_rate_bps,
        m.network.mtu_bytes,
        resolution,
        facts.pauses.clone(),
        windowed(&spec.name),
    );
    let mut reference = Side::default();
    let mut observed = Side::default();
    let mut out: Vec<Decision> = Vec::new();
    let mut stats = ReplayStats::default();
    let mut last_t = 0;
    let (table, report) = replay::for_each_event(trace, |ev| {
        stats.events += 1;
        last_t = ev.t_ns;
        out.clear();
        // The model fires its timers due before the event, then decides on it; the judge sees
        // the timers' decisions before the event and the event's after it.
        let _ = reference_dut.event(ev, &mut out);
        let timer = |d: &&Decision| matches!(d.cause, Cause::Timer { .. });
        for d in out.iter().filter(timer) {
            judge.decision(d);
        }
        judge.event(ev);
        for d in out.iter().filter(|d| !timer(d)) {
            judge.decision(d);
        }
        progress();
        if keep_sides {
            for d in &out {
                reference.push(d);
            }
            if matches!(ev.kind, ccreplay_reference_cc::EventKind::TxData { .. })
                && let Some(d) = judge.observed_decision(ev)
            {
                observed.push(&d);
            }
        }
    })
    .map_err(ReplayError::from)?;
    out.clear();
    let _ = reference_dut.finish(last_t, &mut out);
    for d in &out {
        judge.decision(d);
        if keep_sides {
            reference.push(d);
        }
    }
    stats.flows = table;
    stats.extract = report;
    let mut flows = Vec::new();
    let mut per_flow = Vec::new();
    for (fd, ff) in judge.finish() {
        flows.push(fd);
        per_flow.push(ff);
    }
    // What is compared is each data packet's transmit time (after a flow's first) against the
    // reference's rate and window — even while the reference keeps its initial values: the
    // "nothing compared" of verdict::assess is judged on those.
    stats.decisions = per_flow.iter().map(|f| f.packets.saturating_sub(1)).sum();
    let t0_ns = flows
        .iter()
        .filter_map(|f| f.first.as_ref())
        .filter_map(|d| d.dut.as_ref().map(|x| x.t_ns))
        .min();
    let mut diff_report = DiffReport { flows, t0_ns };
    diff_report
        .flows
        .retain(|f| f.dut_count > 0 || f.reference_count > 0);
    let reads = stats.extract.event_kinds.read_responses;
    let mut insufficient: Vec<Insufficient> =
        insufficient(trace, spec, &per_flow, &facts, resolution, reads)
            .into_iter()
            .map(|reason| Insufficient { reason, hint: None })
            .collect();
    if per_flow.iter().all(|f| f.decisions == 0) {
        insufficient.push(nothing_decided(trace, spec, &stats, &per_flow));
    }
    if !diff_report.ok() {
        let evs = replay::divergence_events(trace, &diff_report, 3);
        crate::diff::attach_events(&mut diff_report, 3, evs);
    }
    Ok(Observed {
        report: diff_report,
        stats,
        facts: per_flow,
        allowances,
        tap: facts,
        reference,
        observed,
        insufficient,
    })
}

/// The reference made no decision at all: nothing happened that the sender had to react to,
/// so its packets could only be held to the rate every model starts at — the link rate of the
/// manifest, which `init` may itself have estimated from these packets. Judging them against
/// it would be a pass (or a failure) on nothing the congestion control did: nothing compared,
/// as when `replay` finds no decision (verdict::no_decisions, whose hint says what the
/// capture lacks).
fn nothing_decided(
    trace: &Trace,
    spec: &ModelSpec,
    stats: &ReplayStats,
    facts: &[FlowFacts],
) -> Insufficient {
    let r = &stats.extract;
    let dialect = crate::verdict::dialect_hint(trace);
    let (message, hint) =
        crate::verdict::no_decisions(trace, &spec.name, stats.events, r, dialect.as_ref());
    let packets: u64 = facts.iter().map(|f| f.packets).sum();
    let rate = trace.manifest.network.link_rate_bps;
    Insufficient {
        reason: format!(
            "{message} — the reference kept the link rate it starts at ({} Gbps, \
             network.link_rate_bps){}, so the sender's {} data packet{} show nothing of its \
             congestion control",
            rate as f64 / 1e9,
            if windowed(&spec.name) {
                " and set no window"
            } else {
                ""
            },
            crate::verdict::n(packets),
            if packets == 1 { "" } else { "s" }
        ),
        hint: Some(format!(
            "{hint}; docs/observed.md \"What a capture must hold\""
        )),
    }
}

/// What keeps the capture from supporting a verdict (docs/observed.md "What a capture must
/// hold").
fn insufficient(
    trace: &Trace,
    spec: &ModelSpec,
    facts: &[FlowFacts],
    tap: &TapFacts,
    resolution_ns: u64,
    read_responses: u64,
) -> Vec<String> {
    let mut why = Vec::new();
    let rtt = trace.manifest.network.base_rtt_ns;
    if resolution_ns > rtt {
        why.push(format!(
            "timestamps resolve {resolution_ns} ns, coarser than the base RTT of {rtt} ns: \
             transmit times cannot show a reaction within an RTT (capture with ns timestamps)"
        ));
    }
    let judged: Vec<(usize, &FlowFacts)> = facts
        .iter()
        .enumerate()
        .filter(|(_, f)| f.packets > 0)
        .collect();
    if judged.iter().all(|(_, f)| f.packets < 2) {
        why.push(
            "no flow has two data packets from the sender: no transmit time to judge (is the \
             capture point the sender?)"
                .to_string(),
        );
    }
    if windowed(&spec.name) {
        for (i, f) in &judged {
            if f.acks == 0 && read_responses > 0 {
                // Not a tap's fault: a READ is answered by its responses, never ACKed.
                why.push(format!(
                    "flow {i}: {} data packets but no ACK seen: `{}` sets a window from ACKs, and \
                     the capture's data are READ responses ({read_responses}), which no ACK \
                     answers (judge READ traffic with dcqcn, dcqcn-nic or dcqcn-ns3)",
                    f.packets, spec.name
                ));
            } else if f.acks == 0 {
                let mut s = format!(
                    "flow {i}: {} data packets but no ACK seen: `{}` sets a window, and bytes in \
                     flight need the ACKs (mirror both directions of the sender's port)",
                    f.packets, spec.name
                );
                if tap.truncated > 0 {
                    let _ = write!(
                        s,
                        "; {} frames were cut by the snapshot length — the INT of the ACKs \
                         needs the whole frame",
                        tap.truncated
                    );
                }
                why.push(s);
            }
        }
    }
    why
}

/// The lines before the report: the allowances applied and what each flow's verdict rests on.
pub fn render_header(a: &Allowances, tap: &TapFacts, facts: &[FlowFacts]) -> String {
    let mut s = format!(
        "observed sender: allowances reaction {} ns, burst {} B, rate ±{}%, timing {} ns, \
         resolution {} ns{}, window slack {}\n",
        a.reaction_ns,
        a.burst_bytes,
        a.rate_tolerance * 100.0,
        a.timing_ns,
        a.resolution_ns.unwrap_or(1),
        if a.resolution_ns == Some(tap.resolution_ns) {
            " (measured)"
        } else {
            ""
        },
        a.window_slack_bytes
            .map_or_else(|| "one MTU".to_string(), |b| format!("{b} B")),
    );
    if tap.pause_frames > 0 {
        let _ = writeln!(
            s,
            "  {} PFC frames paused the sender {} times: paused time is not judged slow",
            tap.pause_frames,
            tap.pauses.len()
        );
    }
    for (i, f) in facts.iter().enumerate() {
        if f.packets == 0 {
            continue;
        }
        let _ = write!(
            s,
            "  flow {i}: {} data packets, {} ACK/NAK, {} reference decisions",
            f.packets, f.acks, f.decisions
        );
        if f.decisions == 0 {
            // Another flow's decisions make the run a verdict; this one is held to the
            // starting link rate only (docs/observed.md).
            s.push_str(" (nothing to react to: held to the link rate only)");
        }
        if f.lost > 0 {
            let _ = write!(s, ", {} data packets the tap missed (PSN gaps)", f.lost);
        }
        let [fast, slow, win] = f.by_check;
        if fast + slow + win > 0 {
            let _ = write!(
                s,
                "; failed: {fast} too fast, {slow} too slow, {win} window"
            );
        }
        let r = &f.reactions;
        if r.steps > 0 {
            let _ = write!(
                s,
                "\n    {} reference rate steps of 10 % or more, {} followed",
                r.steps,
                r.delays_ns.len()
            );
            if let (Some(d), Some(max), Some(level)) =
                (r.median_delay_ns(), r.delays_ns.last(), r.median_settled())
            {
                let _ = write!(
                    s,
                    ": reaction delay median {d} ns, max {max} ns; settled at {:.1} % of the \
                     new rate (median)",
                    level * 100.0
                );
            }
        }
        s.push('\n');
    }
    s
}

/// The `observed` object of the JSON report.
pub fn render_json(o: &Observed) -> serde_json::Value {
    let a = &o.allowances;
    serde_json::json!({
        "allowances": {
            "reaction_ns": a.reaction_ns,
            "burst_bytes": a.burst_bytes,
            "rate_tolerance": a.rate_tolerance,
            "timing_ns": a.timing_ns,
            "resolution_ns": a.resolution_ns,
            "window_slack_bytes": a.window_slack_bytes,
        },
        "measured_resolution_ns": o.tap.resolution_ns,
        "pause_frames": o.tap.pause_frames,
        "truncated_frames": o.tap.truncated,
        "flows": o.facts.iter().enumerate().filter(|(_, f)| f.packets > 0).map(|(i, f)| {
            serde_json::json!({
                "flow": i,
                "packets": f.packets,
                "acks": f.acks,
                "decisions": f.decisions,
                "tap_lost_packets": f.lost,
                "too_fast": f.by_check[0],
                "too_slow": f.by_check[1],
                "window": f.by_check[2],
                "reactions": {
                    "rate_steps": f.reactions.steps,
                    "followed": f.reactions.delays_ns.len(),
                    "delay_ns_median": f.reactions.median_delay_ns(),
                    "delay_ns_max": f.reactions.delays_ns.last(),
                    "settled_ratio_median": f.reactions.median_settled(),
                },
            })
        }).collect::<Vec<_>>(),
    })
}
