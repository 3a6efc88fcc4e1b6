//! Unit tests of the verdict's own checks (verdict/mod.rs).

use super::*;

// A model added to the registry without its inputs here would get a useless hint.
#[test]
fn every_model_names_the_events_it_decides_on() {
    for (name, _) in crate::models::MODELS {
        assert!(!model_inputs(name).is_empty(), "{name}");
    }
}

/// A sender's manifest at 10.0.0.1, after its `capture` or `events` and `dialect`.
const BODY: &str = "\n[capture_point]\nkind = \"sender\"\nhost = \"10.0.0.1\"\n\n[network]\nlink_rate_bps = 100000000000\nbase_rtt_ns = 5000\nmtu_bytes = 1000\n\n[[models]]\nname = \"hpcc\"\n";

/// A trace of the manifest `head` + [`BODY`] + `tail` at a path that does not exist, with
/// `capture` as its capture or events file.
fn parsed(head: &str, tail: &str, capture: &str) -> Trace {
    let text = format!("{head}{BODY}{tail}");
    let path = std::path::Path::new("/nonexistent/t.toml");
    Trace {
        manifest_path: path.to_path_buf(),
        manifest: crate::manifest::Manifest::parse(&text, path).unwrap(),
        capture: capture.into(),
    }
}

/// A sender's trace at 10.0.0.1 whose capture does not exist (so no dialect hint: the
/// detection cannot read it), with `extra` appended to the manifest.
fn trace(extra: &str) -> Trace {
    let head = "capture = \"missing.pcap\"\ndialect = \"roce\"\n";
    parsed(head, extra, "/nonexistent/missing.pcap")
}

/// An events-file trace (`events` instead of `capture`).
fn events_trace() -> Trace {
    let head = "events = \"e.jsonl\"\ndialect = \"hpcc\"\n";
    parsed(head, "", "/nonexistent/e.jsonl")
}

fn report(skips: &[(Skip, u64)]) -> ExtractReport {
    let mut r = ExtractReport::default();
    for &(why, c) in skips {
        r.skipped.add_n(why, c);
    }
    r
}

fn stats(events: u64, decisions: u64, extract: ExtractReport) -> ReplayStats {
    ReplayStats {
        events,
        decisions,
        flows: Default::default(),
        extract,
        coverage: Vec::new(),
    }
}

const FLOW: &str = "\n[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 17\nremote_ip = \"10.0.0.3\"\nremote_qp = 33\n";

// The event kinds docs/models/ name as each model's inputs.
#[test]
fn model_inputs_are_the_documented_event_kinds() {
    assert_eq!(model_inputs("hpcc"), ["rx_ack", "rx_nak"]);
    assert_eq!(model_inputs("dcqcn-ns3"), ["rx_cnp"]);
    assert_eq!(model_inputs("fncc-receiver"), ["rx_data"]);
    assert_eq!(model_inputs("dcqcn-cp"), ["dequeue"]);
    assert!(model_inputs("no-such-model").is_empty());
}

#[test]
fn the_line_of_an_events_file_counts_lines_and_bad_lines() {
    let mut r = report(&[(Skip::Malformed, 2)]);
    (r.events_file, r.packets, r.events) = (true, 5, 3);
    r.event_kinds.rx_ack = 3;
    assert_eq!(
        Accounting { report: &r }.line(),
        "5 lines: 3 events (rx_ack 3); 2 skipped: 2 bad lines"
    );
    // The same counts from a capture: frames, RoCEv2 and the reason's own words.
    r.events_file = false;
    (r.roce, r.host) = (4, Some("10.0.0.1".parse().unwrap()));
    r.skipped.add(Skip::OtherHost);
    assert_eq!(
        Accounting { report: &r }.line(),
        "5 frames: 4 RoCEv2, 3 events (rx_ack 3); 3 skipped: 2 malformed, 1 of other hosts than 10.0.0.1"
    );
}

/// Counts of one are said in the singular, every reason's words included: "1 opcode with no
/// congestion-control event", not "1 opcodes ...".
#[test]
fn the_line_says_one_of_a_kind_in_the_singular() {
    let one: Vec<(Skip, u64)> = Skip::ALL.iter().map(|&w| (w, 1)).collect();
    let mut r = report(&one);
    (r.packets, r.roce, r.events) = (17, 12, 1);
    r.event_kinds.tx_data = 1;
    let line = Accounting { report: &r }.line();
    assert_eq!(
        line,
        "17 frames: 12 RoCEv2, 1 event (tx_data 1); 16 skipped: 1 PFC pause frame, 1 UDP to \
         another port, 1 not RoCEv2, 1 of a link type ccreplay does not read, 1 mirrored in \
         another session than [mirror] session, 1 \
         malformed, 1 bad ICRC, 1 dropped or corrupted by the switch on the way (Lumina \
         events), 1 of other hosts, 1 seen again at another point of its path (the host's copy \
         used), 1 management datagram to QP1 (connection setup), 1 in a \
         direction the capture point does not replay, 1 ACK/NAK/CNP sent by the receiver, 1 \
         opcode with no congestion-control event, 1 ACK/NAK/CNP of no flow, 1 data of no listed \
         flow"
    );
    // Two of each: the plural, the words docs/verdicts.md lists.
    let two: Vec<(Skip, u64)> = Skip::ALL.iter().map(|&w| (w, 2)).collect();
    let mut r = report(&two);
    (r.packets, r.roce, r.events) = (34, 24, 2);
    r.event_kinds.tx_data = 2;
    let line = Accounting { report: &r }.line();
    assert!(
        line.starts_with(
            "34 frames: 24 RoCEv2, 2 events (tx_data 2); 32 skipped: 2 PFC pause frames, "
        ),
        "{line}"
    );
    assert!(
        line.contains(", 2 management datagrams to QP1 (connection setup), "),
        "{line}"
    );
    assert!(
        line.contains(", 2 opcodes with no congestion-control event, "),
        "{line}"
    );
    // An events file of one line, bad.
    let mut r = report(&[(Skip::Malformed, 1)]);
    (r.events_file, r.packets) = (true, 1);
    assert_eq!(
        Accounting { report: &r }.line(),
        "1 line: 0 events; 1 skipped: 1 bad line"
    );
}

#[test]
fn an_empty_events_file_and_one_of_bad_lines_have_their_own_causes() {
    let t = events_trace();
    let (what, _) = likely_cause(&t, &report(&[]));
    assert_eq!(what, "/nonexistent/e.jsonl has no events");
    let mut r = report(&[(Skip::Malformed, 4)]);
    r.packets = 4;
    let (what, _) = likely_cause(&t, &r);
    assert_eq!(what, "all 4 lines of /nonexistent/e.jsonl are bad");
}

// Each cause is the largest of four sums of skip reasons; each sum's second term alone
// must make it the largest (10 RoCEv2 packets, 1 of each other reason).
#[test]
fn the_likeliest_cause_is_the_largest_sum_of_skip_reasons() {
    let t = trace("");
    let cause = |skips: &[(Skip, u64)]| {
        let mut r = report(skips);
        (r.packets, r.roce) = (10, 10);
        likely_cause(&t, &r).0
    };
    assert_eq!(
        cause(&[(Skip::BadIcrc, 3), (Skip::OtherHost, 1)]),
        "3 of the 10 RoCEv2 packets are malformed or fail their ICRC when read as dialect `roce`"
    );
    assert_eq!(
        cause(&[(Skip::ReceiverFeedback, 4), (Skip::BadIcrc, 1)]),
        "4 RoCEv2 packets of 10.0.0.1 go the way a receiver sees them, not a sender"
    );
    assert_eq!(
        cause(&[(Skip::NoFlow, 5), (Skip::ReceiverFeedback, 1)]),
        "5 ACK/NAK/CNP or data packets belong to no flow"
    );
}

// Nothing but packets without an event: management datagrams when they are more than the
// opcodes without an event (3 > 2 is; 2 > 2 is not), else those opcodes.
#[test]
fn a_capture_of_no_flow_data_names_what_it_holds() {
    let t = trace("");
    let cause = |mads: u64, other: u64| {
        let mut r = report(&[(Skip::Management, mads), (Skip::NoCcEvent, other)]);
        (r.packets, r.roce) = (mads + other, mads + other);
        likely_cause(&t, &r)
    };
    let (what, fix) = cause(3, 2);
    assert_eq!(
        what,
        "3 of its 5 RoCEv2 packets are management datagrams to QP1 (rdma_cm setting a \
         connection up or tearing it down), no flow's data"
    );
    assert!(fix.starts_with("capture while the connection carries its data"));
    let (what, fix) = cause(2, 2);
    assert_eq!(
        what,
        "its 4 RoCEv2 packets carry no congestion-control event (READ requests, atomics)"
    );
    assert!(fix.contains("a READ's responses"), "{fix}");
}

// Snapshot-length damage is the cause when it is more than half the damaged packets:
// 3 of 5 (6 > 5) is; 2 of 4 (4 > 4 fails) is not.
#[test]
fn snaplen_is_the_cause_when_it_cut_more_than_half_the_damaged_packets() {
    let t = trace("");
    let cause = |short: u64, damaged: u64| {
        let mut r = report(&[(Skip::Malformed, damaged)]);
        (r.packets, r.roce, r.snaplen_short) = (10, 10, short);
        likely_cause(&t, &r).0
    };
    assert!(
        cause(3, 5)
            .starts_with("3 of the 10 RoCEv2 packets were cut by the capture's snapshot length")
    );
    assert!(cause(2, 4).starts_with("4 of the 10 RoCEv2 packets are malformed"));
}

// No decisions where the model's inputs are present: its parameters, not the capture.
#[test]
fn no_decisions_on_the_models_inputs_blames_its_parameters_and_still_lists_flows() {
    let t = trace(FLOW);
    let mut r = report(&[]);
    (r.packets, r.roce, r.events) = (6, 6, 6);
    r.event_kinds.rx_ack = 6;
    let f = assess(&t, "hpcc", &stats(6, 0, r), Strictness::default());
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(
        f[0].message,
        "/nonexistent/missing.pcap: hpcc made no decisions on 6 events (rx_ack 6): nothing to compare"
    );
    assert_eq!(
        f[0].hint.as_deref(),
        Some("the model's parameters may keep it from reacting; see docs/models/")
    );
    // Without a misreading dialect the listed flow that never appears is reported too.
    assert!(f[1].message.contains("[[flows]] entry 1 (10.0.0.1 QP 0x000011 -> 10.0.0.3 QP 0x000021) never appears in the capture"), "{}", f[1].message);
    assert!(f.iter().all(Finding::is_error));
}

// A window model with no ACK to decide on: READ responses are named as the reason only
// when there are some (5 of 5 data events here), else the capture's likeliest cause.
#[test]
fn no_acks_names_read_responses_only_when_there_are_some() {
    let t = trace("");
    let hint = |reads: u64| {
        let mut r = report(&[]);
        (r.packets, r.roce, r.events) = (5, 5, 5);
        (r.event_kinds.tx_data, r.event_kinds.read_responses) = (5, reads);
        let f = assess(&t, "hpcc", &stats(5, 0, r), Strictness::default());
        f[0].hint.clone().unwrap()
    };
    assert_eq!(
        hint(5),
        "hpcc decides on ACKs, and 5 of the data packets are READ responses, which no ACK \
         answers: replay READ traffic with dcqcn, dcqcn-nic or dcqcn-ns3 (docs/verdicts.md \
         \"READ traffic\")"
    );
    let write = hint(0);
    assert_eq!(
        write,
        "hpcc decides on rx_ack / rx_nak, and the trace has none: its 5 events are tx_data \
         5 only; capture both directions at the capture point (the feedback comes back the \
         other way), or choose the model for what it holds (--model)"
    );
    assert!(!write.contains("READ"), "{write}");
}

// UDP to an overlay's port is a tunnel, not RoCEv2 on another port (RFC 7348, 8926):
// left as UDP only when it holds no frame, or the manifest moved the tunnel's port.
#[test]
fn an_overlay_tunnel_is_not_another_roce_port() {
    let fix_in = |t: &Trace, port: u16| {
        let mut r = report(&[(Skip::OtherUdpPort, 10)]);
        (r.packets, r.other_udp_ports) = (10, vec![(port, 10)]);
        likely_cause(t, &r).1
    };
    let t = trace("");
    let fix = |port: u16| fix_in(&t, port);
    assert!(
        fix(4789).starts_with("UDP 4789 is the VXLAN port here, and these packets carry no "),
        "{}",
        fix(4789)
    );
    assert!(
        fix(6081).starts_with("UDP 6081 is the Geneve port here"),
        "{}",
        fix(6081)
    );
    assert!(
        fix(8472).starts_with("UDP 8472 is Linux's VXLAN port: if the packets are VXLAN, set `network.vxlan_port = 8472`"),
        "{}",
        fix(8472)
    );
    let mut moved = trace("");
    moved.manifest.network.vxlan_port = 8472;
    moved.manifest.network.geneve_port = 0;
    for (port, key) in [(4789, "vxlan"), (6081, "geneve")] {
        let f = fix_in(&moved, port);
        assert!(
            f.contains(&format!(
                "which /nonexistent/t.toml moves (`network.{key}_port`)"
            )),
            "{f}"
        );
    }
    assert!(
        fix(4792).starts_with("if port 4792 carries RoCEv2, set `network.udp_port = 4792`"),
        "{}",
        fix(4792)
    );
}

// DCQCN's reaction point with no CNP: the hint says an uncongested run has none.
#[test]
fn a_reaction_point_without_cnps_says_why() {
    let t = trace("");
    let mut r = report(&[]);
    (r.packets, r.roce, r.events, r.event_kinds.tx_data) = (80, 80, 80, 80);
    let f = assess(&t, "dcqcn", &stats(80, 0, r), Strictness::default());
    assert_eq!(
        f[0].hint.as_deref(),
        Some(
            "dcqcn reacts to CNPs only, and none reached the sender: no switch marked its \
             packets while the capture ran, or the capture holds one direction; capture both \
             directions of the port while the flow is congested"
        )
    );
}

// The note on a flow whose local_ip is not the host, and none on one whose is.
#[test]
fn a_missing_flow_names_a_local_ip_that_is_not_the_host() {
    let other = FLOW.replace("10.0.0.1", "10.0.0.9");
    let t = trace(&format!("{FLOW}{other}"));
    let mut r = report(&[]);
    (r.packets, r.roce, r.events) = (6, 6, 6);
    let f = assess(&t, "hpcc", &stats(6, 6, r), Strictness::default());
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].message
            .ends_with("QP 0x000021) never appears in the capture"),
        "{}",
        f[0].message
    );
    assert!(
        f[1].message.ends_with(
            "never appears in the capture (its local_ip 10.0.0.9 is not capture_point.host 10.0.0.1)"
        ),
        "{}",
        f[1].message
    );
}

// A clean run finds nothing; damage is a warning, an error with --strict, naming the
// first malformed frame and the first bad ICRC.
#[test]
fn damage_in_the_traffic_is_a_warning_or_with_strict_an_error() {
    let t = trace("");
    let mut r = report(&[]);
    (r.packets, r.roce, r.events) = (6, 6, 6);
    assert_eq!(
        assess(&t, "hpcc", &stats(6, 6, r.clone()), Strictness::default()),
        []
    );
    r.damaged_in_traffic = 2;
    r.malformed_examples = vec![(7, "udp: bad length".into())];
    r.bad_icrc_examples = vec![9];
    let f = assess(&t, "hpcc", &stats(6, 6, r.clone()), Strictness::default());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        f[0].message,
        "/nonexistent/missing.pcap: 2 malformed or bad-ICRC packets of the replayed traffic skipped (first malformed: frame 7: udp: bad length; bad ICRC: frame 9)"
    );
    assert!(
        f[0].hint
            .as_deref()
            .unwrap()
            .ends_with("; --strict makes this an error")
    );
    let f = assess(&t, "hpcc", &stats(6, 6, r), Strictness { strict: true });
    assert_eq!(f[0].severity, Severity::Error);
    assert!(!f[0].hint.as_deref().unwrap().contains("--strict makes"));
}

#[test]
fn thousands_are_separated() {
    assert_eq!(n(0), "0");
    assert_eq!(n(999), "999");
    assert_eq!(n(1000), "1,000");
    assert_eq!(n(2672), "2,672");
    assert_eq!(n(1_234_567), "1,234,567");
}
