//! `--dut wire`: the device in the capture is the DUT, where its decisions are on the wire.
//!
//! A receiver's congestion-control decisions travel in the packets it sends: RCC's receiver
//! writes its window, N and flags into every ACK (RCC-1..5), FNCC's receiver its flow count N
//! (FNCC-2). At a receiver's capture point the extraction turns the data packets into `rx_data`
//! events for the reference model; this DUT answers each of those events with the decision the
//! NIC actually sent: the fields of the reply (ACK or NAK) that answered that packet. The same
//! diff then says, exactly, whether the NIC's receiver computed what the reference does.
//!
//! Pairing ([`replies`]): an RC responder answers a QP's data packets in arrival order, each
//! with at most one reply — an ACK of its PSN, one NAK for the first packet out of sequence,
//! none for the next ones until the missing PSN arrives, an ACK of the last PSN accepted for a
//! duplicate. Per flow, a reply answers the earliest waiting data packet it can; the packets it
//! passes over got none: dropped by that rule after a NAK (*silent*: the decision is not on
//! the wire, and the reference's is not compared — [`Dut::unobservable`]), or unanswered (the
//! diff's *missing*, as for a NIC that coalesces ACKs) — but for those that arrived within the
//! NIC's slowest turnaround of the capture's end, whose reply the capture may not hold (*cut
//! by the end*: not compared either). A reply that answers no packet is an extra decision.
//! Every packet the host sent and every data packet is accounted for
//! ([`Dut::accounting`], printed after the verdict).
//!
//! DCQCN's notification point (`dcqcn-np`, DCQCN-2) decides when to send a CNP, and the CNP
//! is on the wire. Each CNP the host sent is attributed as the NP rule would have caused it
//! (docs/dut.md "CNP pacing"): when a CE-marked packet arrived inside the interval `N` the
//! previous CNP opened, it is that interval's timer CNP (`cnp_interval`) — sent before the
//! interval ends it is `cnp_within_interval`, more than the response allowance after it
//! `cnp_interval_late`; otherwise it answers the first marked packet after the interval (its
//! `rx_data` event), sent within the response allowance; a CNP that answers no mark is
//! `cnp_unprompted`. A CNP leaves when the NIC's port is free, so its wire time may trail the
//! timer's instant (by the frame ahead of it): the decision keeps the rule's instant, a mark
//! that arrived at or after it (C-5: a timer fires before the events of its ns) belongs to the
//! next interval, and a CNP whose instant lies after the trace's last event is past what the
//! reference replays (not compared). The diff then counts, exactly, CNPs missing, extra or
//! mistimed.
// DutError is the Dut trait's error type, as in process.rs and cabi.rs.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::IpAddr;

use ccreplay_codecs::Packet;
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock};
use ccreplay_codecs::packet::AckExt;
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, FlowId, Outputs, State};

use super::{Dut, DutError, DutSetup};
use crate::manifest::MirrorClock;
use crate::replay::Trace;
use crate::verdict::n;

mod replies;

use replies::{Answer, FlowReplies};

/// The models whose decisions a receiver's packets carry, and what this DUT reads for them.
pub const MODELS: [&str; 3] = ["rcc-receiver", "fncc-receiver", "dcqcn-np"];

/// The fields of one ACK or NAK the host sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AckSeen {
    n: Option<u16>,
    cwnd: Option<u32>,
    flags: Option<u8>,
}

/// What became of every packet the host sent and of every data packet it received: the
/// accounting printed after the verdict (docs/dut.md "`--dut wire`").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    /// ACK / NAK / CNP frames the host sent.
    sent: u64,
    /// Data packets of the flows (the `rx_data` events).
    data: u64,
    /// Replies that answered a data packet: an ACK of its PSN, a duplicate's ACK, a NAK.
    acks: u64,
    dups: u64,
    naks: u64,
    /// Of the ACKs, those that came after a later packet's reply (out of order on the wire).
    late: u64,
    /// Data packets with no reply: dropped after a NAK (not compared), acknowledged by a later
    /// reply within `ack_coalescing` (not compared), arrived too close to the capture's end
    /// for their reply (not compared), or missing.
    silent: u64,
    coalesced: u64,
    cut_by_end: u64,
    unanswered: u64,
    /// The allowance `ack_coalescing`: packets one reply may acknowledge.
    coalesce: u64,
    /// Unanswered packets a later reply acknowledged (beyond `ack_coalescing`), and the most
    /// packets one reply acknowledged: the hint after a verdict with missing decisions.
    acked_later: u64,
    most_acked: u64,
    /// The NIC's slowest turnaround in the capture: a data packet to the ACK of its PSN, ns.
    turnaround_ns: u64,
    /// Replies that answered no data packet: extra decisions; before the flow's first data
    /// packet in the capture (skipped); of no flow (skipped).
    extra: u64,
    before_data: u64,
    no_flow: u64,
    /// `dcqcn-np`: CNPs compared, after the trace's last event (skipped), of no flow (skipped).
    cnps: u64,
    cnps_after_end: u64,
    cnps_no_flow: u64,
    /// Packets the host sent that carry no decision of the model (CNPs at an FNCC / RCC
    /// receiver, ACKs and NAKs at a DCQCN NP).
    other: u64,
}

impl Tally {
    /// One line: every packet the host sent, then every data packet, by what became of it.
    fn line(&self, host: IpAddr, model: &str) -> String {
        let mut sent: Vec<String> = Vec::new();
        let mut part = |count: u64, what: &str| {
            if count > 0 {
                sent.push(format!("{} {what}", n(count)));
            }
        };
        let np = model == "dcqcn-np";
        if np {
            part(self.cnps, "CNPs compared");
            part(
                self.cnps_after_end,
                "CNPs after the trace's last event (not compared)",
            );
            part(self.cnps_no_flow, "CNPs of no flow");
            part(self.other, "ACK/NAK (no dcqcn-np decision)");
        } else {
            part(self.acks, "ACKs of their data packet's PSN");
            part(
                self.late,
                "of them after a later packet's reply (out of order on the wire: a capture that merged queues, or a NIC that reordered; compared)",
            );
            part(self.dups, "ACKs of a duplicate");
            part(self.naks, "NAKs");
            part(self.extra, "answering no data packet (extra)");
            part(
                self.before_data,
                "before their flow's first data packet (not compared)",
            );
            part(self.no_flow, "of no flow");
            part(self.other, &format!("CNPs (no {model} decision)"));
        }
        let mut s = format!(
            "wire: {} ACK/NAK/CNP sent by {host}: {}",
            n(self.sent),
            if sent.is_empty() {
                "none".to_string()
            } else {
                sent.join(", ")
            }
        );
        if !np {
            let answered = self.acks + self.dups + self.naks;
            let _ = write!(
                s,
                "; {} data packets: {} answered",
                n(self.data),
                n(answered)
            );
            if self.silent > 0 {
                let _ = write!(
                    s,
                    ", {} dropped out of sequence after a NAK (no reply by IB RC rules: not compared)",
                    n(self.silent)
                );
            }
            if self.coalesced > 0 {
                let _ = write!(
                    s,
                    ", {} acknowledged by a later ACK (coalesced, ack_coalescing {}: not compared)",
                    n(self.coalesced),
                    self.coalesce
                );
            }
            if self.cut_by_end > 0 {
                let _ = write!(
                    s,
                    ", {} within the NIC's slowest turnaround ({} ns) of the capture's end (reply not captured: not compared)",
                    n(self.cut_by_end),
                    n(self.turnaround_ns)
                );
            }
            if self.unanswered > 0 {
                let _ = write!(s, ", {} unanswered (missing)", n(self.unanswered));
            }
            if self.acked_later > 0 {
                let _ = write!(
                    s,
                    "\nhint: {} of {} unanswered data packets were acknowledged by a later \
                     ACK or NAK of the flow (a cumulative ACK for several packets: FNCC \
                     3.2.3 allows one for every m); if the NIC does so by design, allow it: --allow ack_coalescing={} (the most \
                     one reply acknowledged here; docs/dut.md)",
                    n(self.acked_later),
                    n(self.unanswered),
                    self.most_acked
                );
            }
        }
        s
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "sent": self.sent,
            "acks": self.acks,
            "dup_acks": self.dups,
            "naks": self.naks,
            "late": self.late,
            "extra": self.extra,
            "before_data": self.before_data,
            "no_flow": self.no_flow,
            "cnps": self.cnps,
            "cnps_after_end": self.cnps_after_end,
            "cnps_no_flow": self.cnps_no_flow,
            "other": self.other,
            "data": self.data,
            "silent": self.silent,
            "coalesced": self.coalesced,
            "ack_coalescing": self.coalesce,
            "acked_later": self.acked_later,
            "most_acked": self.most_acked,
            "cut_by_end": self.cut_by_end,
            "turnaround_ns": self.turnaround_ns,
            "unanswered": self.unanswered,
        })
    }
}

/// The capture's receiver as a DUT.
pub struct WireDut {
    name: String,
    model: String,
    host: IpAddr,
    /// Flow id → its data packets and the replies that answered them.
    flows: HashMap<FlowId, FlowReplies>,
    /// The last event, when its decision is not on the wire (`Answer::Silent`).
    hidden: Option<(FlowId, u64)>,
    tally: Tally,
    /// `dcqcn-np`: the CNPs the host sent, attributed per flow.
    np: Option<NpWire>,
}

/// The CNPs a DCQCN notification point sent, and what each answered.
struct NpWire {
    /// `N`: the NP's minimum time between CNPs of a flow, ns.
    n_ns: u64,
    /// How late after the mark (or the interval's end) a CNP still answers it, ns.
    allow_ns: u64,
    /// Flow → its CNPs' times, in capture order.
    cnps: HashMap<FlowId, VecDeque<u64>>,
    /// Flow → the NP state the attribution needs.
    flows: HashMap<FlowId, NpFlow>,
    /// CNPs attributed (decisions), and those of them past the trace's last event (dropped).
    compared: u64,
    after_end: u64,
}

#[derive(Default)]
struct NpFlow {
    last_cnp: Option<u64>,
    /// CE-marked packets since the last CNP: (time, event index).
    marks: VecDeque<(u64, u64)>,
}

impl NpWire {
    /// Attribute the flow's CNPs sent before `t` (all of them at the end: `t` = MAX).
    fn consume(&mut self, flow: FlowId, t: u64, out: &mut Vec<Decision>) {
        let Some(q) = self.cnps.get_mut(&flow) else {
            return;
        };
        let st = self.flows.entry(flow).or_default();
        while let Some(&c) = q.front() {
            if c >= t {
                break;
            }
            q.pop_front();
            // The decision's time is the reference's clock: the mark's arrival for a CNP that
            // answers it, the interval's end for the timer's; `c` only has to be near it (the
            // NIC sends it when its port is free).
            let (cause, at) = match st.last_cnp {
                // A mark inside the interval the last CNP opened: this is its timer's CNP.
                Some(last)
                    if st
                        .marks
                        .iter()
                        .any(|&(m, _)| m < last.saturating_add(self.n_ns)) =>
                {
                    let end = last.saturating_add(self.n_ns);
                    let name = if c < end {
                        "cnp_within_interval"
                    } else if c - end > self.allow_ns {
                        "cnp_interval_late"
                    } else {
                        "cnp_interval"
                    };
                    (Cause::Timer { name }, end)
                }
                _ => match st.marks.front() {
                    Some(&(m, index)) if c >= m && c - m <= self.allow_ns => (
                        Cause::Event {
                            kind: "rx_data",
                            index,
                        },
                        m,
                    ),
                    _ => (
                        Cause::Timer {
                            name: "cnp_unprompted",
                        },
                        c,
                    ),
                },
            };
            out.push(Decision {
                t_ns: at,
                flow,
                cause,
                outputs: Outputs {
                    send_cnp: Some(true),
                    ..Outputs::default()
                },
                state: State::default(),
            });
            self.compared += 1;
            match cause {
                // The mark it answers; later ones fall in the interval this CNP opens.
                Cause::Event { .. } => {
                    st.marks.pop_front();
                }
                // The marks before the timer's instant; one at that very ns arrived after it
                // fired (C-5: timers first) and is pending in the next interval. A mistimed
                // CNP covers the marks before it left.
                Cause::Timer { name } => {
                    let covers = if name == "cnp_interval" { at } else { c };
                    st.marks.retain(|&(m, _)| m >= covers);
                }
            }
            // The next interval runs from the reference's send time (a mistimed CNP from its own).
            st.last_cnp = Some(
                if matches!(cause, Cause::Timer { name } if name != "cnp_interval") {
                    c
                } else {
                    at
                },
            );
        }
    }
}

fn err(what: impl Into<String>, hint: Option<String>) -> DutError {
    DutError {
        dut: "wire".into(),
        what: what.into(),
        event: None,
        last_reply: None,
        stderr_tail: String::new(),
        hint,
    }
}

impl WireDut {
    /// Read the ACKs the capture point's host sent, with the allowances of the manifest's
    /// `[observed]` table.
    pub fn load(trace: &Trace, setup: &DutSetup) -> Result<Self, DutError> {
        Self::load_with(trace, setup, &[])
    }

    /// [`Self::load`], with the command line's `--allow KEY=VALUE` pairs after the manifest's
    /// (`ack_coalescing`; `reaction` for the NP's CNPs).
    pub fn load_with(trace: &Trace, setup: &DutSetup, allow: &[String]) -> Result<Self, DutError> {
        let m = &trace.manifest;
        let allow = crate::observe::Allowances::resolve(&m.observed, allow)
            .map_err(|e| err(e.to_string(), None))?;
        if !MODELS.contains(&setup.model.as_str()) {
            return Err(err(
                format!(
                    "`{}` decisions are not on the wire: --dut wire reads a receiver's ACKs and CNPs (a sender: --dut observed)",
                    setup.model
                ),
                Some(format!(
                    "models whose decisions the capture carries: {} (a receiver's capture)",
                    MODELS.join(", ")
                )),
            ));
        }
        let host = match &m.capture_point {
            crate::manifest::CapturePoint::Receiver { host } => *host,
            other => {
                return Err(err(
                    format!(
                        "the capture point is a {}: --dut wire needs a receiver's capture (its ACKs carry the decisions)",
                        other.kind()
                    ),
                    None,
                ));
            }
        };
        if crate::events_in::is_events(trace) {
            return Err(err(
                "an events file holds no packets: --dut wire reads the capture",
                None,
            ));
        }
        let np = setup.model == "dcqcn-np";
        // Data DestQP (the host's QP) and peer → flow.
        let by_data: HashMap<(IpAddr, u32), FlowId> = setup
            .flows
            .iter()
            .map(|f| ((f.remote_ip, f.local_qp), f.id))
            .collect();
        // A reply's (peer, DestQP = the peer's QP) → flow: the manifest's [[flows]], else
        // learned from the first reply a flow of that peer can take (or the peer's only flow).
        let mut by_reply: HashMap<(IpAddr, u32), FlowId> = m
            .flows
            .iter()
            .filter_map(|f| {
                let id = *by_data.get(&(f.remote_ip, f.local_qp))?;
                Some(((f.remote_ip, f.remote_qp), id))
            })
            .collect();
        let mut per_peer: HashMap<IpAddr, Vec<FlowId>> = HashMap::new();
        for f in &setup.flows {
            per_peer.entry(f.remote_ip).or_default().push(f.id);
        }
        for ids in per_peer.values_mut() {
            ids.sort_unstable();
        }
        let mut flows: HashMap<FlowId, FlowReplies> = HashMap::new();
        let mut tally = Tally::default();
        // CNPs: (time, peer, the peer's QP), put to their flows once every ACK has been read.
        let mut cnps: Vec<(u64, IpAddr, u32)> = Vec::new();
        let cfg = m.decode_config();
        let mut reader = CaptureReader::open(&trace.capture)
            .map_err(|e| err(format!("{}: {e}", trace.capture.display()), None))?;
        let mut end_ns = 0;
        // `[mirror] clock = "switch"`: the times the extraction gives the same packets.
        let mut clock = (m.mirror.clock == MirrorClock::Switch).then(SwitchClock::default);
        while let Some(rec) = reader.next_record() {
            // A capture that ends early is the verdict's error (verdict::assess), not the DUT's.
            let Ok(mut rec) = rec else { break };
            let p = Packet::from_record(&rec, &cfg);
            if let Some(c) = &mut clock {
                rec.ts_ns = c
                    .time(rec.ts_ns, &Stamp::of_packet(&p))
                    .unwrap_or(rec.ts_ns);
            }
            end_ns = end_ns.max(rec.ts_ns);
            let (Some(ip), Some(r)) = (p.ip.as_ref(), p.roce.as_ref()) else {
                continue;
            };
            // What the extraction skips (malformed; received with a bad ICRC: the NIC drops
            // it) is no event and gets no reply.
            if !p.headers_complete() {
                continue;
            }
            let (src, dst) = (ip.addrs.src(), ip.addrs.dst());
            let op = r.bth.opcode();
            let psn = r.bth.psn();
            if dst == host && r.is_flow_data() {
                let icrc_ok = p.icrc_check().is_none_or(|(c, f)| c == f);
                if let (true, Some(&id)) = (icrc_ok, by_data.get(&(src, r.bth.dest_qp()))) {
                    flows
                        .entry(id)
                        .or_default()
                        .data(psn, rec.ts_ns, &mut tally);
                }
                continue;
            }
            if src != host || !(op.is_ack() || op.is_cnp()) {
                continue;
            }
            tally.sent += 1;
            if op.is_cnp() {
                if np {
                    cnps.push((rec.ts_ns, dst, r.bth.dest_qp()));
                } else {
                    tally.other += 1;
                }
                continue;
            }
            let nak = r.aeth().is_some_and(|a| a.decoded().is_nak());
            let key = (dst, r.bth.dest_qp());
            let flow = by_reply.get(&key).copied().or_else(|| {
                let ids = per_peer.get(&dst)?;
                let id = match ids.as_slice() {
                    [only] => *only,
                    _ => *ids
                        .iter()
                        .find(|id| flows.get(id).is_some_and(|f| f.takes(nak, psn)))?,
                };
                by_reply.insert(key, id);
                Some(id)
            });
            tally.other += u64::from(np);
            let Some(flow) = flow else {
                tally.no_flow += u64::from(!np);
                continue;
            };
            let (n, cwnd, flags) = match r.ack_ext {
                AckExt::Rcc(e) => (Some(e.n), Some(e.cwnd), Some(e.flags)),
                AckExt::Fncc(f) => (Some(f.n), None, None),
                AckExt::None => (None, None, None),
            };
            // The NP's ACKs carry none of its decisions: paired all the same (they pair the
            // CNPs of a peer with several flows), counted as other packets.
            let mut unused = Tally::default();
            flows.entry(flow).or_default().reply(
                nak,
                psn,
                rec.ts_ns,
                AckSeen { n, cwnd, flags },
                usize::try_from(allow.ack_coalescing).unwrap_or(usize::MAX),
                if np { &mut unused } else { &mut tally },
            );
        }
        let mut unused = Tally::default();
        // No ACK of a packet's own PSN: no turnaround seen, nothing excused at the end.
        let turnaround = (tally.acks > 0).then_some(tally.turnaround_ns);
        for f in flows.values_mut() {
            f.finish(
                end_ns,
                turnaround,
                if np { &mut unused } else { &mut tally },
            );
        }
        tally.coalesce = allow.ack_coalescing;
        let np = np
            .then(|| np_wire(setup, &allow, &by_reply, &per_peer, &cnps, &mut tally))
            .transpose()?;
        Ok(WireDut {
            name: format!("wire ({host})"),
            model: setup.model.clone(),
            host,
            flows,
            hidden: None,
            tally,
            np,
        })
    }
}

/// The NP's CNPs by flow: a CNP names the peer's QP, which the host's ACKs (or the manifest)
/// pair with a flow; else the peer's only flow.
fn np_wire(
    setup: &DutSetup,
    allow: &crate::observe::Allowances,
    by_reply: &HashMap<(IpAddr, u32), FlowId>,
    per_peer: &HashMap<IpAddr, Vec<FlowId>>,
    cnps: &[(u64, IpAddr, u32)],
    tally: &mut Tally,
) -> Result<NpWire, DutError> {
    let n_us = setup
        .params
        .get("min_time_between_cnps")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(50);
    let mut by_flow: HashMap<FlowId, VecDeque<u64>> = HashMap::new();
    for &(t, peer, peer_qp) in cnps {
        let flow = by_reply.get(&(peer, peer_qp)).copied().or_else(|| {
            match per_peer.get(&peer).map(Vec::as_slice) {
                Some([only]) => Some(*only),
                _ => None,
            }
        });
        match flow {
            Some(f) => by_flow.entry(f).or_default().push_back(t),
            None => tally.cnps_no_flow += 1,
        }
    }
    Ok(NpWire {
        n_ns: n_us.saturating_mul(1_000),
        allow_ns: allow.reaction_ns,
        cnps: by_flow,
        flows: HashMap::new(),
        compared: 0,
        after_end: 0,
    })
}

impl Dut for WireDut {
    fn name(&self) -> &str {
        &self.name
    }

    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError> {
        let EventKind::RxData { psn, ecn, .. } = ev.kind else {
            return Ok(());
        };
        self.hidden = None;
        if let Some(np) = &mut self.np {
            np.consume(ev.flow, ev.t_ns, out);
            if ecn == 3 {
                np.flows
                    .entry(ev.flow)
                    .or_default()
                    .marks
                    .push_back((ev.t_ns, ev.index));
            }
            return Ok(());
        }
        let Some(f) = self.flows.get_mut(&ev.flow) else {
            return Ok(());
        };
        let Some((answer, extra)) = f.answer(psn) else {
            return Ok(());
        };
        let rcc = self.model == "rcc-receiver";
        // The decision is what the reply carries for this packet; its time is the packet's,
        // as the reference's: the NIC's ACK turnaround is not part of the receiver's decision.
        let decision = |a: &AckSeen| Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                ack_n: a.n,
                ack_cwnd: a.cwnd.filter(|_| rcc),
                ack_flags: a.flags.filter(|_| rcc),
                ..Outputs::default()
            },
            state: State::default(),
        };
        match answer {
            Answer::Reply(a) => out.push(decision(&a)),
            // Dropped by the responder's rule, or its reply after the capture's end: what the
            // receiver decided is not on the wire.
            Answer::Silent | Answer::Coalesced | Answer::CutByEnd => {
                self.hidden = Some((ev.flow, ev.index));
            }
            Answer::Waiting | Answer::Unanswered => {}
        }
        // Replies that answered no packet: decisions the reference did not make (extra).
        out.extend(extra.iter().map(|(_, a)| decision(a)));
        Ok(())
    }

    fn finish(&mut self, t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError> {
        if let Some(np) = &mut self.np {
            let mut flows: Vec<FlowId> = np.cnps.keys().copied().collect();
            flows.sort_unstable();
            let from = out.len();
            for f in flows {
                np.consume(f, u64::MAX, out);
            }
            // The reference fires its timers up to the trace's last event: a CNP whose instant
            // lies after it is past the replay (its wire time alone may trail the end).
            let mut tail = out.split_off(from);
            let before = tail.len();
            tail.retain(|d| d.t_ns <= t_end_ns);
            let past = (before - tail.len()) as u64;
            out.append(&mut tail);
            np.after_end += past;
            np.compared -= past;
        }
        Ok(())
    }

    fn unobservable(&self, ev: &Event) -> bool {
        self.hidden == Some((ev.flow, ev.index))
    }

    fn accounting(&self) -> Option<(String, serde_json::Value)> {
        let mut t = self.tally;
        if let Some(np) = &self.np {
            t.cnps = np.compared;
            t.cnps_after_end = np.after_end;
        }
        Some((t.line(self.host, &self.model), t.json()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "10.0.0.3";

    /// Flow 0's CNPs at `cnps` attributed by an NP with N = 1,000 ns and a response allowance of
    /// 100 ns, whose last CNP went at `last` with marks `marks` (time, event index) pending:
    /// each decision's (time, cause).
    fn attribute(last: Option<u64>, marks: &[(u64, u64)], cnps: &[u64]) -> Vec<(u64, Cause)> {
        let mut np = NpWire {
            n_ns: 1_000,
            allow_ns: 100,
            cnps: HashMap::from([(0, cnps.iter().copied().collect())]),
            flows: HashMap::from([(
                0,
                NpFlow {
                    last_cnp: last,
                    marks: marks.iter().copied().collect(),
                },
            )]),
            compared: 0,
            after_end: 0,
        };
        let mut out = Vec::new();
        np.consume(0, u64::MAX, &mut out);
        assert_eq!(np.compared, cnps.len() as u64);
        out.iter().map(|d| (d.t_ns, d.cause)).collect()
    }

    fn timer(name: &'static str) -> Cause {
        Cause::Timer { name }
    }

    // A mark at 500 inside the interval the CNP at 0 opened (to 1,000): the interval's timer
    // CNP, due at 1,000. Sent at 900 it is early; at 1,100 (100 late: the allowance) on time;
    // at 1,101 late.
    #[test]
    fn a_timer_cnp_is_early_on_time_or_late_by_the_allowance() {
        let cases = [
            (900, "cnp_within_interval"),
            (1_100, "cnp_interval"),
            (1_101, "cnp_interval_late"),
        ];
        for (c, name) in cases {
            assert_eq!(
                attribute(Some(0), &[(500, 7)], &[c]),
                [(1_000, timer(name))],
                "CNP at {c}"
            );
        }
    }

    // No interval open: a CNP answers the first mark (at 500, event 7) when sent at it or
    // within 100 ns after it (600); at 601, or before the mark (400), it answers none.
    #[test]
    fn a_cnp_answers_a_mark_within_the_allowance_after_it() {
        let answer = Cause::Event {
            kind: "rx_data",
            index: 7,
        };
        assert_eq!(attribute(None, &[(500, 7)], &[500]), [(500, answer)]);
        assert_eq!(attribute(None, &[(500, 7)], &[600]), [(500, answer)]);
        assert_eq!(
            attribute(None, &[(500, 7)], &[601]),
            [(601, timer("cnp_unprompted"))]
        );
        assert_eq!(
            attribute(None, &[(500, 7)], &[400]),
            [(400, timer("cnp_unprompted"))]
        );
    }

    // The accounting line's counts and sums, by hand: 5 + 2 + 1 replies answered a packet; a
    // part with a zero count is left out; the NP variant lists CNPs instead.
    #[test]
    fn the_accounting_line_counts_every_packet_by_what_became_of_it() {
        let host: IpAddr = HOST.parse().unwrap();
        let t = Tally {
            sent: 3,
            data: 3,
            acks: 3,
            ..Tally::default()
        };
        assert_eq!(
            t.line(host, "rcc-receiver"),
            "wire: 3 ACK/NAK/CNP sent by 10.0.0.3: 3 ACKs of their data packet's PSN; 3 data packets: 3 answered"
        );
        assert_eq!(
            Tally::default().line(host, "fncc-receiver"),
            "wire: 0 ACK/NAK/CNP sent by 10.0.0.3: none; 0 data packets: 0 answered"
        );
        let t = Tally {
            sent: 13,
            data: 14,
            acks: 5,
            late: 1,
            dups: 2,
            naks: 1,
            extra: 1,
            before_data: 1,
            no_flow: 1,
            other: 2,
            silent: 1,
            coalesced: 2,
            coalesce: 3,
            cut_by_end: 1,
            turnaround_ns: 2_500,
            unanswered: 2,
            acked_later: 1,
            most_acked: 4,
            ..Tally::default()
        };
        let line = t.line(host, "rcc-receiver");
        let (sent, data) = line.split_once("; 14 data packets: ").unwrap();
        assert_eq!(
            sent,
            "wire: 13 ACK/NAK/CNP sent by 10.0.0.3: 5 ACKs of their data packet's PSN, 1 of them \
             after a later packet's reply (out of order on the wire: a capture that merged queues, \
             or a NIC that reordered; compared), 2 ACKs of a duplicate, 1 NAKs, 1 answering no \
             data packet (extra), 1 before their flow's first data packet (not compared), 1 of \
             no flow, 2 CNPs (no rcc-receiver decision)"
        );
        let (data, hint) = data.split_once('\n').unwrap();
        assert_eq!(
            data,
            "8 answered, 1 dropped out of sequence after a NAK (no reply by IB RC rules: not \
             compared), 2 acknowledged by a later ACK (coalesced, ack_coalescing 3: not \
             compared), 1 within the NIC's slowest turnaround (2,500 ns) of the capture's end \
             (reply not captured: not compared), 2 unanswered (missing)"
        );
        assert!(
            hint.starts_with("hint: 1 of 2 unanswered data packets were acknowledged by a later")
                && hint.contains("--allow ack_coalescing=4 "),
            "{hint}"
        );
        let np = Tally {
            sent: 4,
            cnps: 2,
            cnps_after_end: 1,
            other: 1,
            data: 9,
            ..Tally::default()
        };
        assert_eq!(
            np.line(host, "dcqcn-np"),
            "wire: 4 ACK/NAK/CNP sent by 10.0.0.3: 2 CNPs compared, 1 CNPs after the trace's last \
             event (not compared), 1 ACK/NAK (no dcqcn-np decision)"
        );
    }
}
