//! What a run must show before its verdict can be trusted (issue 14): the accounting of every
//! record read — used as an event, or skipped and why — and the checks that turn an empty or
//! damaged comparison into an error instead of a pass.
//!
//! Role: `replay`, `diff`, `check` and the reports call [`assess`] after a replay and print
//! what it finds; [`Accounting`] is the one rendering of the counts (text, JSON, key/value
//! properties) that all of them carry. It may use the extraction's report, the trace and its
//! manifest; it runs no replay of its own and prints nothing.

use std::fmt::Write as _;

use ccreplay_codecs::mirror::MirrorKind;

use crate::extract::{ExtractReport, MirrorSource, Skip};
use crate::manifest::CapturePoint;
use crate::replay::{ReplayStats, Trace};

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Printed on every run; the verdict stands.
    Warning,
    /// The verdict cannot be trusted: exit status 2, never CONFORMANT.
    Error,
}

/// One thing a run found about its own input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Warning or error.
    pub severity: Severity,
    /// What happened, one sentence with the counts.
    pub message: String,
    /// The likeliest cause and what to change.
    pub hint: Option<String>,
}

impl Finding {
    fn error(message: String, hint: Option<String>) -> Self {
        Finding {
            severity: Severity::Error,
            message,
            hint,
        }
    }

    fn warning(message: String, hint: Option<String>) -> Self {
        Finding {
            severity: Severity::Warning,
            message,
            hint,
        }
    }

    /// True for an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Options of [`assess`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Strictness {
    /// Malformed or bad-ICRC packets inside the replayed traffic are an error, not a warning.
    pub strict: bool,
}

/// The event kinds a model makes decisions on (docs/models/): with none of them in a trace,
/// no decision is expected; with some and no decision, something is wrong.
pub fn model_inputs(model: &str) -> &'static [&'static str] {
    match model {
        "dcqcn" | "dcqcn-nic" | "dcqcn-ns3" => &["rx_cnp"],
        "dcqcn-np" | "rcc-receiver" | "fncc-receiver" => &["rx_data"],
        "dcqcn-cp" => &["dequeue"],
        "hpcc" | "hpcc-ns3" | "fncc" | "rcc-sender" => &["rx_ack", "rx_nak"],
        _ => &[],
    }
}

/// The counts of a replayed trace, as every output renders them.
pub struct Accounting<'a> {
    /// The trace's extraction report.
    pub report: &'a ExtractReport,
}

impl Accounting<'_> {
    fn is_events(&self) -> bool {
        self.report.events_file
    }

    /// One line: "2,700 frames: 2,690 RoCEv2, 2,672 events (tx_data 1,338, rx_ack 1,334);
    /// 28 skipped: 10 PFC pause frames, 18 of other hosts".
    pub fn line(&self) -> String {
        let r = self.report;
        let mut s = String::new();
        // "1 frame", "2 frames".
        let count =
            |c: u64, one: &str, many: &str| format!("{} {}", n(c), if c == 1 { one } else { many });
        if self.is_events() {
            let _ = write!(
                s,
                "{}: {}",
                count(r.packets, "line", "lines"),
                count(r.events, "event", "events")
            );
        } else {
            let _ = write!(
                s,
                "{}: {} RoCEv2, {}",
                count(r.packets, "frame", "frames"),
                n(r.roce),
                count(r.events, "event", "events")
            );
        }
        let kinds = r.event_kinds.nonzero();
        if !kinds.is_empty() {
            s.push_str(" (");
            for (i, (k, c)) in kinds.iter().enumerate() {
                let _ = write!(s, "{}{k} {}", if i > 0 { ", " } else { "" }, n(*c));
            }
            s.push(')');
        }
        let skipped = r.skipped.total();
        if skipped == 0 {
            s.push_str("; none skipped");
        } else {
            let _ = write!(s, "; {} skipped: ", n(skipped));
            for (i, (why, c)) in r.skipped.nonzero().enumerate() {
                let text = match (why, self.is_events()) {
                    (Skip::Malformed, true) if c == 1 => "bad line",
                    (Skip::Malformed, true) => "bad lines",
                    (Skip::OtherHost, false) => &match r.host {
                        Some(h) => format!("of other hosts than {h}"),
                        None => why.text().to_string(),
                    },
                    _ => why.text_n(c),
                };
                let _ = write!(s, "{}{} {text}", if i > 0 { ", " } else { "" }, n(c));
            }
        }
        s
    }

    /// The counts as a JSON object: `frames`, `roce`, `events`, `event_kinds`, `skipped`
    /// (by reason key).
    pub fn json(&self) -> serde_json::Value {
        let r = self.report;
        let kinds: serde_json::Map<String, serde_json::Value> = r
            .event_kinds
            .nonzero()
            .into_iter()
            .map(|(k, c)| (k.to_string(), c.into()))
            .collect();
        let skipped: serde_json::Map<String, serde_json::Value> = r
            .skipped
            .nonzero()
            .map(|(w, c)| (w.key().to_string(), c.into()))
            .collect();
        serde_json::json!({
            "frames": r.packets,
            "roce": r.roce,
            "events": r.events,
            "event_kinds": kinds,
            "skipped_total": r.skipped.total(),
            "skipped": skipped,
        })
    }

    /// Key/value pairs (JUnit properties, report tables), keys prefixed `accounting.`.
    pub fn properties(&self) -> Vec<(String, String)> {
        let r = self.report;
        let mut v = vec![
            ("accounting.frames".to_string(), r.packets.to_string()),
            ("accounting.roce".to_string(), r.roce.to_string()),
            ("accounting.events".to_string(), r.events.to_string()),
        ];
        for (k, c) in r.event_kinds.nonzero() {
            v.push((format!("accounting.events.{k}"), c.to_string()));
        }
        v.push((
            "accounting.skipped".to_string(),
            r.skipped.total().to_string(),
        ));
        for (w, c) in r.skipped.nonzero() {
            v.push((format!("accounting.skipped.{}", w.key()), c.to_string()));
        }
        v
    }
}

/// A signed count with thousands separators: -1,234.
pub fn n_signed(x: i64) -> String {
    if x < 0 {
        format!("-{}", n(x.unsigned_abs()))
    } else {
        n(x.unsigned_abs())
    }
}

/// A count with thousands separators, as the messages print them.
pub fn n(x: u64) -> String {
    let digits = x.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

fn host(trace: &Trace) -> String {
    trace
        .manifest
        .capture_point
        .host()
        .map_or_else(|| "the port".to_string(), |h| h.to_string())
}

/// When another dialect (or INT layout) reads the capture better than the manifest's: what it
/// is and how it reads, as (finding, the manifest keys to set). None for events files, and when
/// the manifest's reading is as good as any (the detection reads the first packets only).
/// What UDP to a port that is not RoCEv2's may be, for the hint that says what to set:
/// overlay tunnels (RFC 7348, RFC 8926; docs/wire.md 2.2) — setting `udp_port` to theirs
/// would read the tunnel header as BTH — or RoCEv2 on another port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtherPort {
    /// A tunnel port read (its name): its packets hold no Ethernet or IP frame.
    TunnelEmpty(&'static str),
    /// IANA's port of a tunnel (its name, its key's prefix) that the configuration moved.
    TunnelMoved(&'static str, &'static str),
    /// 8472: Linux's VXLAN port before IANA assigned 4789 (still its default).
    LinuxVxlan,
    /// Any other port.
    Other,
}

impl OtherPort {
    /// `port` under `cfg`'s tunnel ports.
    pub fn of(port: u16, cfg: &ccreplay_codecs::DecodeConfig) -> OtherPort {
        use ccreplay_codecs::tunnel::{GENEVE_UDP_PORT, VXLAN_UDP_PORT};
        match port {
            p if p == cfg.vxlan_port => OtherPort::TunnelEmpty("VXLAN"),
            p if p == cfg.geneve_port => OtherPort::TunnelEmpty("Geneve"),
            VXLAN_UDP_PORT => OtherPort::TunnelMoved("VXLAN", "vxlan"),
            GENEVE_UDP_PORT => OtherPort::TunnelMoved("Geneve", "geneve"),
            8472 => OtherPort::LinuxVxlan,
            _ => OtherPort::Other,
        }
    }
}

pub fn dialect_hint(trace: &Trace) -> Option<(String, String)> {
    if crate::events_in::is_events(trace) {
        return None;
    }
    let m = &trace.manifest;
    let ours = m.decode_config();
    let d = crate::detect::detect_file_on(&trace.capture, &ours).ok()?;
    if !d.better_than(&ours) {
        return None;
    }
    let b = d.best();
    let theirs = d.reading(&ours);
    let as_ours = theirs.map_or_else(String::new, |r| {
        let w = r.misreadings();
        if w.is_empty() {
            String::new()
        } else {
            format!(" ({})", w.join(", "))
        }
    });
    Some((
        format!(
            "of the first {} RoCEv2 packets, {} read cleanly as {}, {} as the manifest's {}{as_ours}",
            n(d.sampled),
            n(b.whole()),
            crate::detect::describe(&b.config, b.max_n_hop),
            n(theirs.map_or(0, |r| r.whole())),
            crate::detect::describe(&ours, 0),
        ),
        format!(
            "set {} in {}",
            crate::detect::manifest_keys(&b.config, b.max_n_hop),
            trace.manifest_path.display()
        ),
    ))
}

/// Why a trace gave no events (or none of the kind a model needs): the likeliest cause,
/// computed from what the extraction skipped, as (what happened, what to change).
pub fn likely_cause(trace: &Trace, r: &ExtractReport) -> (String, String) {
    let m = &trace.manifest;
    let manifest = trace.manifest_path.display();
    if crate::events_in::is_events(trace) {
        return if r.packets == 0 {
            (
                format!("{} has no events", trace.capture.display()),
                "an events file holds one JSON event per line (docs/protocol.md)".to_string(),
            )
        } else {
            (
                format!(
                    "all {} lines of {} are bad",
                    n(r.packets),
                    trace.capture.display()
                ),
                "each bad line is named above with its number".to_string(),
            )
        };
    }
    if r.packets == 0 {
        return (
            format!("{} holds no packets", trace.capture.display()),
            "was the capture still being written, or filtered to nothing?".to_string(),
        );
    }
    let other_sessions = r.skipped.get(Skip::OtherMirrorSession);
    if r.roce == 0 && other_sessions > 0 {
        let list = r
            .other_mirror_sessions
            .iter()
            .map(|(s, c)| match s {
                Some(s) => format!("session {s}: {}", n(*c)),
                None => format!("no session (ERSPAN I, gretap): {}", n(*c)),
            })
            .collect::<Vec<_>>()
            .join(", ");
        return (
            format!(
                "none of the {} frames is a copy of ERSPAN session {}; {} are other mirror sessions' ({list})",
                n(r.packets),
                m.mirror.session.map_or("-".to_string(), |s| s.to_string()),
                n(other_sessions)
            ),
            format!(
                "set `[mirror] session` in {manifest} to the session that copies the capture point's traffic"
            ),
        );
    }
    if r.roce == 0 {
        if let Some(&(port, count)) = r.other_udp_ports.first() {
            return (
                format!(
                    "none of the {} frames is RoCEv2 to UDP port {}; {} are UDP to port {port}",
                    n(r.packets),
                    m.network.udp_port,
                    n(count)
                ),
                match OtherPort::of(port, &m.decode_config()) {
                    OtherPort::TunnelEmpty(t) => format!(
                        "UDP {port} is the {t} port here, and these packets carry no Ethernet or IP frame inside (docs/wire.md 2.2): capture where the RoCEv2 travels"
                    ),
                    OtherPort::TunnelMoved(t, key) => format!(
                        "UDP {port} is {t}'s port, which {manifest} moves (`network.{key}_port`): remove that line to read the RoCEv2 inside the tunnel"
                    ),
                    OtherPort::LinuxVxlan => format!(
                        "UDP 8472 is Linux's VXLAN port: if the packets are VXLAN, set `network.vxlan_port = 8472` in {manifest} to read the RoCEv2 inside"
                    ),
                    OtherPort::Other => format!(
                        "if port {port} carries RoCEv2, set `network.udp_port = {port}` in {manifest}"
                    ),
                },
            );
        }
        let unread = r.skipped.get(Skip::UnsupportedLink);
        if unread > 0 {
            // Native InfiniBand (ERF 197, IB 247), or another link ccreplay does not read.
            return (
                format!(
                    "none of the {} frames is RoCEv2: {} {} of a link type ccreplay does not read ({})",
                    n(r.packets),
                    n(unread),
                    if unread == 1 { "is" } else { "are" },
                    ccreplay_codecs::capture::describe_links(&r.unsupported_links)
                ),
                "ccreplay reads RoCEv2 on link types Ethernet (1), Linux SLL (113) / SLL2 (276) and raw IP (101, 228, 229): a native InfiniBand capture carries no RoCEv2; capture on the Ethernet side".to_string(),
            );
        }
        let pfc = r.skipped.get(Skip::Pfc);
        return (
            format!(
                "none of the {} frames is RoCEv2 ({} PFC pause frames, {} other)",
                n(r.packets),
                n(pfc),
                n(r.packets - pfc - r.malformed)
            ),
            "capture the RoCEv2 traffic itself: UDP to port 4791 (docs/manifest.md)".to_string(),
        );
    }
    let damaged = r.skipped.get(Skip::Malformed) + r.skipped.get(Skip::BadIcrc);
    let other_host = r.skipped.get(Skip::OtherHost);
    let wrong_dir = r.skipped.get(Skip::WrongDirection) + r.skipped.get(Skip::ReceiverFeedback);
    let unpaired = r.skipped.get(Skip::UnpairedAck) + r.skipped.get(Skip::NoFlow);
    let biggest = [damaged, other_host, wrong_dir, unpaired]
        .into_iter()
        .max()
        .unwrap_or(0);
    if biggest == 0 && r.events > 0 {
        // Events, but not the model's: one direction captured, or the model of another side.
        let kinds = r
            .event_kinds
            .nonzero()
            .iter()
            .map(|(k, c)| format!("{k} {}", n(*c)))
            .collect::<Vec<_>>()
            .join(", ");
        return (
            format!(
                "its {} {} {kinds} only",
                n(r.events),
                if r.events == 1 {
                    "event is"
                } else {
                    "events are"
                }
            ),
            "capture both directions at the capture point (the feedback comes back the other \
             way), or choose the model for what it holds (--model)"
                .to_string(),
        );
    }
    if biggest == 0 {
        let management = r.skipped.get(Skip::Management);
        if management > r.skipped.get(Skip::NoCcEvent) {
            return (
                format!(
                    "{} of its {} RoCEv2 packets are management datagrams to QP1 (rdma_cm \
                     setting a connection up or tearing it down), no flow's data",
                    n(management),
                    n(r.roce)
                ),
                "capture while the connection carries its data: its packets come after these"
                    .to_string(),
            );
        }
        return (
            format!(
                "its {} RoCEv2 packets carry no congestion-control event (READ requests, atomics)",
                n(r.roce)
            ),
            "replay a capture of the data (SEND / WRITE, or a READ's responses) with its ACKs or CNPs"
                .to_string(),
        );
    }
    if biggest == damaged {
        // Frames cut short by the capture's snapshot length read as malformed in any dialect
        // (and those a mirroring switch cut, ERSPAN T: `Packet::cut`).
        if r.snaplen_short * 2 > damaged {
            return (
                format!(
                    "{} of the {} RoCEv2 packets were cut by the capture's snapshot length before \
                     the headers congestion control reads (BTH, INT, AETH)",
                    n(r.snaplen_short),
                    n(r.roce)
                ),
                "capture whole frames (tcpdump -s 0; a mirror session that does not truncate), \
                 or at least past the INT stack and the AETH"
                    .to_string(),
            );
        }
        if let Some((what, fix)) = dialect_hint(trace) {
            return (what, fix);
        }
        return (
            format!(
                "{} of the {} RoCEv2 packets are malformed or fail their ICRC when read as dialect `{}`",
                n(damaged),
                n(r.roce),
                m.dialect
            ),
            format!(
                "the manifest's dialect (or [int] layout) is likely wrong: `ccreplay inspect {}` without --dialect detects it; set `dialect` in {manifest}",
                trace.capture.display()
            ),
        );
    }
    if biggest == other_host {
        let h = host(trace);
        let senders = r
            .other_data_senders
            .iter()
            .take(3)
            .map(|(ip, c)| format!("{ip} ({} packet{})", n(*c), if *c == 1 { "" } else { "s" }))
            .collect::<Vec<_>>();
        let what = if other_host == r.roce {
            format!("all {} RoCEv2 packets", n(r.roce))
        } else {
            format!("{} of the {} RoCEv2 packets", n(other_host), n(r.roce))
        };
        return (
            format!("{what} are neither from nor to {h}"),
            if senders.is_empty() {
                format!("check `capture_point.host` in {manifest}")
            } else {
                format!(
                    "data is sent by {}: check `capture_point.host` in {manifest}",
                    senders.join(", ")
                )
            },
        );
    }
    if biggest == wrong_dir {
        let h = host(trace);
        let (kind, other) = match m.capture_point {
            CapturePoint::Sender { .. } => ("sender", "receiver"),
            _ => ("receiver", "sender"),
        };
        return (
            format!(
                "{} RoCEv2 packets of {h} go the way a {other} sees them, not a {kind}",
                n(wrong_dir)
            ),
            format!("check `capture_point.kind` in {manifest} (is {h} the {other}?)"),
        );
    }
    (
        format!(
            "{} ACK/NAK/CNP or data packets belong to no flow",
            n(unpaired)
        ),
        format!("check the [[flows]] entries of {manifest} against `ccreplay inspect`'s flow list"),
    )
}

/// The error of a model that made no decisions on `events` events: (message, hint) — the
/// hint the likeliest reason, from the capture's early end, a dialect that reads it better
/// (`dialect`: [`dialect_hint`]), or the event kinds the model decides on and what the
/// trace holds instead.
pub fn no_decisions(
    trace: &Trace,
    model: &str,
    events: u64,
    r: &ExtractReport,
    dialect: Option<&(String, String)>,
) -> (String, String) {
    let name = trace.capture.display();
    let inputs = model_inputs(model);
    let kinds = r.event_kinds.nonzero();
    let present = kinds.iter().any(|(k, _)| inputs.contains(k));
    let have = kinds
        .iter()
        .map(|(k, c)| format!("{k} {}", n(*c)))
        .collect::<Vec<_>>()
        .join(", ");
    let message = format!(
        "{name}: {model} made no decisions on {} event{} ({have}): nothing to compare",
        n(events),
        if events == 1 { "" } else { "s" }
    );
    let hint = if let Some(e) = &r.capture_error {
        format!(
            "the capture ends early after {} frames ({e}): take it again once the capture has stopped",
            n(r.packets)
        )
    } else if let Some((what, fix)) = dialect {
        format!("{what}: {fix}")
    } else if present || inputs.is_empty() {
        "the model's parameters may keep it from reacting; see docs/models/".to_string()
    } else if inputs == ["rx_cnp"] && r.events > 0 {
        // DCQCN's reaction point acts on CNPs alone: an uncongested run has none.
        format!(
            "{model} reacts to CNPs only, and none reached the sender: no switch marked its packets while the capture ran, or the capture holds one direction; capture both directions of the port while the flow is congested"
        )
    } else if r.event_kinds.read_responses > 0 && inputs.contains(&"rx_ack") {
        // READ traffic: the requester acknowledges nothing (its responses are the answer),
        // so a window model has no input; DCQCN's reaction point reacts to CNPs alone.
        format!(
            "{model} decides on ACKs, and {} of the data packets are READ responses, which no ACK answers: replay READ traffic with dcqcn, dcqcn-nic or dcqcn-ns3 (docs/verdicts.md \"READ traffic\")",
            n(r.event_kinds.read_responses)
        )
    } else {
        let (what, fix) = likely_cause(trace, r);
        format!(
            "{model} decides on {}, and the trace has none: {what}; {fix}",
            inputs.join(" / ")
        )
    };
    (message, hint)
}

/// What a replay of `model` on `trace` found about its own input: errors make the verdict
/// untrustworthy (exit status 2), warnings are printed on every run.
pub fn assess(trace: &Trace, model: &str, stats: &ReplayStats, opt: Strictness) -> Vec<Finding> {
    let r = &stats.extract;
    let mut out = Vec::new();
    let name = trace.capture.display();
    // 1. Nothing compared is never a pass.
    if stats.events == 0 {
        // The cause, alone: listed flows and damaged packets follow from it.
        let (what, hint) = likely_cause(trace, r);
        out.push(Finding::error(
            format!("{name}: no events to replay: {what}"),
            Some(hint),
        ));
        return out;
    }
    // A capture cut mid-record (or with a record that lies about its length): what was read
    // replays, but the verdict would be on part of the trace — a golden file of half the
    // decisions, a CONFORMANT on what happened to be whole.
    if let Some(e) = &r.capture_error
        && !crate::events_in::is_events(trace)
    {
        out.push(Finding::error(
            format!(
                "{name}: the capture ends early after {} frames: {e}",
                n(r.packets)
            ),
            Some(
                "was the file still being written or copied? Take it again once the capture has stopped"
                    .to_string(),
            ),
        ));
    }
    // The dialect the capture reads best in, when it is not the manifest's (3.: the ICRC as
    // the oracle; the first packets only, so it costs a few milliseconds).
    let dialect = dialect_hint(trace);
    if stats.decisions == 0 {
        let (message, hint) = no_decisions(trace, model, stats.events, r, dialect.as_ref());
        let misread = dialect.is_some() && r.capture_error.is_none();
        out.push(Finding::error(message, Some(hint)));
        if misread {
            // Missing flows follow from the misreading: the cause, alone.
            return out;
        }
    }
    // 2. A flow the manifest lists that never appears.
    if !crate::events_in::is_events(trace)
        && matches!(trace.manifest.capture_point, CapturePoint::Sender { .. })
    {
        for (i, f) in trace.manifest.flows.iter().enumerate() {
            let id = stats
                .flows
                .data_flow(f.remote_ip, f.remote_qp)
                .or_else(|| stats.flows.ack_flow(f.remote_ip, f.local_qp));
            let events = id.map_or(0, |id| r.flow_events.get(id as usize).copied().unwrap_or(0));
            if events == 0 {
                let host_note = match trace.manifest.capture_point.host() {
                    Some(h) if h != f.local_ip => {
                        format!(
                            " (its local_ip {} is not capture_point.host {h})",
                            f.local_ip
                        )
                    }
                    _ => String::new(),
                };
                out.push(Finding::error(
                    format!(
                        "{name}: [[flows]] entry {} ({} QP 0x{:06x} -> {} QP 0x{:06x}) never appears in the capture{host_note}",
                        i + 1,
                        f.local_ip,
                        f.local_qp,
                        f.remote_ip,
                        f.remote_qp
                    ),
                    Some(format!(
                        "fix or remove it in {}; `ccreplay inspect {name}` lists the flows the capture holds",
                        trace.manifest_path.display()
                    )),
                ));
            }
        }
    }
    // The same traffic copied by two mirror sources: each packet would replay once per copy.
    if let Some(c) = &r.mirror_conflict {
        out.push(mirror_conflict(trace, r.mirror_conflicts, c));
    }
    // `[mirror] clock = "switch"` and events the switches did not time: two clocks in one run.
    if let Some(c) = &r.switch_clock
        && c.untimed > 0
    {
        let (frame, why) = c.first_untimed.clone().unwrap_or_default();
        out.push(Finding::error(
            format!(
                "{name}: [mirror] clock = \"switch\", but {} event{} had no switch time (first: frame {frame}, {why}): they would be timed by the capture's clock, the others by the switch's",
                n(c.untimed),
                if c.untimed == 1 { "" } else { "s" },
            ),
            Some(if r.lumina.is_some() {
                {
                    // The dumper's files hold the copies on the RoCEv2 port: their TTLs tell.
                    let port = trace.manifest.mirror.lumina_port.unwrap_or(0);
                    let filter = if port == trace.manifest.network.udp_port {
                        "ip.ttl <= 3".to_string()
                    } else {
                        format!("udp.dstport == {port}")
                    };
                    format!(
                        "in a Lumina dump every RoCEv2 packet replayed must be one of the switch's copies to `lumina_port`: keep only those (`tshark -r {name} -Y '{filter}' -w copies.pcap`), or time every event by the capture: remove `clock = \"switch\"` from [mirror] in {}",
                        trace.manifest_path.display()
                    )
                }
            } else {
                format!(
                    "mirror the capture point's traffic as ERSPAN III (Gra 0, 1 or 2), or time every event by the capture: remove `clock = \"switch\"` from [mirror] in {}",
                    trace.manifest_path.display()
                )
            }),
        ));
    }
    // A Lumina dump that lost copies, or holds them out of the switch's order: the packets
    // the models see are not the packets the NICs exchanged (docs/wire.md 2.3).
    if let Some(l) = &r.lumina {
        if let Some((frame, first)) = l.first_gap {
            out.push(Finding::error(
                format!(
                    "{name}: the Lumina switch numbered {} packet{} that the capture does not hold (its sequence numbers skip them; first: {first}, missing before frame {frame}): the dump servers lost copies, and the models would replay the rest as if those packets never went by",
                    n(l.missing),
                    if l.missing == 1 { "" } else { "s" },
                ),
                Some(
                    "Lumina's own integrity check fails on this dump too: run the test again (fewer packets per iteration, or more dump servers); if the dump is several servers' captures, give them all to `ccreplay lumina`".to_string(),
                ),
            ));
        }
        if let Some((frame, seq, before)) = l.first_out_of_order {
            out.push(Finding::error(
                format!(
                    "{name}: {} Lumina cop{} out of the switch's order (first: frame {frame}, sequence number {seq} after {before}): events would replay out of the order they happened",
                    n(l.out_of_order),
                    if l.out_of_order == 1 { "y is" } else { "ies are" },
                ),
                Some(format!(
                    "merge the dump servers' captures by the switch's sequence number: `ccreplay lumina DUMP... --port {} -o merged.pcap` (`mergecap` and a concatenation order them by the servers' clocks, or not at all), and point the manifest's `capture` at it",
                    trace.manifest.mirror.lumina_port.unwrap_or(0)
                )),
            ));
        }
    }
    // A dialect that damages packets, or leaves bytes unread, where another reads them whole.
    // With no decisions it got here only when the capture's early end took that error's hint
    // (else it was the hint, alone, above): it is still named.
    if let Some((what, fix)) = dialect {
        out.push(Finding::warning(
            format!("{name}: the manifest's dialect misreads packets: {what}"),
            Some(fix),
        ));
    }
    // 3. Damage inside the replayed traffic.
    if r.damaged_in_traffic > 0 && !crate::events_in::is_events(trace) {
        let mut first = Vec::new();
        if let Some((f, m)) = r.malformed_examples.first() {
            first.push(format!("malformed: frame {f}: {m}"));
        }
        if let Some(f) = r.bad_icrc_examples.first() {
            first.push(format!("bad ICRC: frame {f}"));
        }
        let message = format!(
            "{name}: {} malformed or bad-ICRC packet{} of the replayed traffic skipped (first {})",
            n(r.damaged_in_traffic),
            if r.damaged_in_traffic == 1 { "" } else { "s" },
            first.join("; ")
        );
        let hint = Some(format!(
            "`ccreplay inspect {name} --dialect {} --strict` shows each one with its layer and byte offset{}",
            trace.manifest.dialect,
            if opt.strict {
                ""
            } else {
                "; --strict makes this an error"
            }
        ));
        out.push(if opt.strict {
            Finding::error(message, hint)
        } else {
            Finding::warning(message, hint)
        });
    }
    // 4. The same packets twice (docs/verdicts.md "Packets captured twice"): a quarter of
    // the data frames or more, so that a resend the cues missed (a timeout) is no error.
    let data = r.event_kinds.tx_data + r.event_kinds.rx_data;
    if let Some((frame, of)) = r.first_copy
        && r.copies * 4 >= data
    {
        out.push(Finding::error(
            format!(
                "{name}: {} of its {} data frames are copies of a frame of the same flow less than the base RTT ({} ns) before, with no NAK or READ request between (first: frame {frame}, of frame {of}): the capture holds packets twice, and each would replay once per copy",
                n(r.copies),
                n(data),
                n(trace.manifest.network.base_rtt_ns),
            ),
            Some(format!(
                "a mirror session with two ports of the path, two capture interfaces on one wire, or `tcpdump -i any` each record a packet twice: keep one copy — one interface's frames (`tshark -r {name} -Y 'frame.interface_id == 0' -w one.pcapng`), or `editcap -D 16 {name} one.pcap` (which also drops the identical ACKs and CNPs a receiver does repeat) — and point the manifest's `capture` at it, or capture at one point. A sender that puts each frame on the wire twice is itself a bug: no NIC resends unasked (a NAK, a repeated READ request) or before its timeout"
            )),
        ));
    }
    // 5. The same packets at two points of their path (docs/verdicts.md "Packets seen at two
    // points of their path"): at a host the host's copies were used; a switch port has no
    // host to be near, and a direction whose TTL keeps changing had copies too far apart to
    // be matched.
    if let Some(pp) = r.path_pair
        && r.host.is_none()
    {
        out.push(Finding::error(
            format!(
                "{name}: the capture holds packets at two points of their path (frame {} is frame {} again, TTL {} after {}): a switch port's capture is of one port, and each copy would replay as a packet leaving it",
                pp.frame, pp.of, pp.ttl, pp.of_ttl
            ),
            Some(format!(
                "keep the port's copies: `tshark -r {name} -Y 'ip.ttl == {}' -w one.pcap` (or {}; IPv6: ipv6.hlim), and point the manifest's `capture` at it",
                pp.ttl, pp.of_ttl
            )),
        ));
    }
    // (At a switch port whose copies were found, that error says it all.)
    if let Some(f) = r.ttl_flips
        && f.flips >= TTL_FLIPS
        && (r.host.is_some() || r.path_pair.is_none())
    {
        let (flow, what) = (
            f.dir / 2,
            if f.dir % 2 == 0 {
                "data"
            } else {
                "ACKs / NAKs / CNPs"
            },
        );
        out.push(Finding::error(
            format!(
                "{name}: flow {flow}'s {what} changed TTL {} times (last {} and {}), and none of its first {} frames came again at another TTL: packets at two points of their path whose copies are too far apart to be matched, or a path that keeps changing — each copy would replay as a packet",
                n(f.flips),
                f.ttls.0,
                f.ttls.1,
                crate::path::HOLD_FRAMES,
            ),
            Some(format!(
                "keep one point's copies: `tshark -r {name} -Y 'ip.ttl == {}' -w one.pcap` (or {}; the host's own are the higher TTL for what it sends, the lower for what it receives), and point the manifest's `capture` at it",
                f.ttls.0, f.ttls.1
            )),
        ));
    }
    out
}

/// TTL changes in one flow direction that make the verdict an error: a route that changes
/// once or twice is no copy; two points interleaved change on every other frame.
const TTL_FLIPS: u64 = 8;

/// The error for a flow's packets that came from two mirror sources (docs/verdicts.md), with
/// the way to keep one copy that fits the two sources.
fn mirror_conflict(trace: &Trace, events: u64, c: &crate::extract::Conflict) -> Finding {
    let name = trace.capture.display();
    let manifest = trace.manifest_path.display();
    let show = |s: &Option<MirrorSource>| {
        s.map_or("the port itself (not mirrored)".to_string(), |s| {
            s.to_string()
        })
    };
    let message = format!(
        "{name}: the same traffic came from two mirror sources: flow {}'s {} from {} and, from frame {} on, from {} ({} event{} from a second source): each packet would replay once per copy",
        c.flow,
        if c.data { "data" } else { "ACKs / NAKs / CNPs" },
        show(&c.first),
        c.frame,
        show(&c.other),
        n(events),
        if events == 1 { "" } else { "s" }
    );
    let keep = |s: &MirrorSource| match (s.kind, s.port) {
        (MirrorKind::ErspanII, Some(i)) => format!("erspan.index == 0x{i:x}"),
        (MirrorKind::ErspanIII, Some(p)) => {
            format!("erspan.hw == {} && erspan.direction == {}", p >> 1, p & 1)
        }
        _ => format!("ip.src == {}", s.switch),
    };
    let hint = match (c.first, c.other) {
        (Some(a), Some(b)) => match (a.session, b.session) {
            (Some(x), Some(y)) if x != y => format!(
                "replay one session's copies: set `[mirror] session = {x}` (or {y}) in {manifest} (docs/manifest.md)"
            ),
            _ => format!(
                "one mirror session copies this traffic at two places: mirror one port and direction, or keep one copy with `tshark -r {name} -Y '{}' -w one.pcap`",
                keep(&a)
            ),
        },
        _ => "the capture mixes the port's own packets with a switch's mirrored copies: capture one or the other".to_string(),
    };
    Finding::error(message, Some(hint))
}

#[cfg(test)]
mod tests;
