//! `--dut wire`: the device in the capture is the DUT, where its decisions are on the wire.
//!
//! A receiver's congestion-control decisions travel in the packets it sends: RCC's receiver
//! writes its window, N and flags into every ACK (RCC-1..5), FNCC's receiver its flow count N
//! (FNCC-2). At a receiver's capture point the extraction turns the data packets into `rx_data`
//! events for the reference model; this DUT answers each of those events with the decision the
//! NIC actually sent: the fields of the ACK that acknowledges that packet's PSN. The same diff
//! then says, exactly, whether the NIC's receiver computed what the reference does.
//!
//! Pairing: an ACK from the host to a peer with PSN p answers the latest data packet from that
//! peer with PSN p (per-packet ACKs, as both papers' receivers send them); the k-th `rx_data`
//! event of a (flow, PSN) takes the k-th such ACK, so retransmissions pair with their own ACK.
//! A data packet no ACK answers gets no decision: the diff reports it missing (an ACK
//! coalescing NIC shows up that way — docs/dut.md).
//!
//! DCQCN's notification point (`dcqcn-np`, DCQCN-2) decides when to send a CNP, and the CNP
//! is on the wire. Each CNP the host sent is attributed as the NP rule would have caused it
//! (docs/dut.md "CNP pacing"): when a CE-marked packet arrived inside the interval `N` the
//! previous CNP opened, it is that interval's timer CNP (`cnp_interval`) — sent before the
//! interval ends it is `cnp_within_interval`, more than the response allowance after it
//! `cnp_interval_late`; otherwise it answers the first marked packet after the interval (its
//! `rx_data` event), sent within the response allowance; a CNP that answers no mark is
//! `cnp_unprompted`. The diff then counts, exactly, CNPs missing, extra or mistimed.
// DutError is the Dut trait's error type, as in process.rs and cabi.rs.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use ccreplay_codecs::Packet;
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::AckExt;
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, FlowId, Outputs, State};

use super::{Dut, DutError, DutSetup};
use crate::replay::Trace;

/// The models whose decisions a receiver's packets carry, and what this DUT reads for them.
pub const MODELS: [&str; 3] = ["rcc-receiver", "fncc-receiver", "dcqcn-np"];

/// The fields of one ACK the host sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AckSeen {
    n: Option<u16>,
    cwnd: Option<u32>,
    flags: Option<u8>,
}

/// The capture's receiver as a DUT.
pub struct WireDut {
    name: String,
    model: String,
    /// Flow id → (peer IP, the host's QP: the DestQP of the flow's data).
    flows: HashMap<FlowId, (IpAddr, u32)>,
    /// (peer, data DestQP, PSN) → the ACKs that answered it, in capture order.
    acks: HashMap<(IpAddr, u32, u32), VecDeque<AckSeen>>,
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
            // answers it, the interval's end for the timer's; `c` only has to be near it.
            let (cause, at) = match st.last_cnp {
                // A mark inside the interval the last CNP opened: this is its timer's CNP.
                Some(last) if st.marks.iter().any(|&(m, _)| m < last + self.n_ns) => {
                    let end = last + self.n_ns;
                    let name = if c < end {
                        "cnp_within_interval"
                    } else if c > end + self.allow_ns {
                        "cnp_interval_late"
                    } else {
                        "cnp_interval"
                    };
                    (Cause::Timer { name }, end)
                }
                _ => match st.marks.front() {
                    Some(&(m, index)) if c - m <= self.allow_ns => (
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
            st.marks.retain(|&(m, _)| m > at);
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
    /// Read the ACKs the capture point's host sent.
    pub fn load(trace: &Trace, setup: &DutSetup) -> Result<Self, DutError> {
        let m = &trace.manifest;
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
        let cfg = m.decode_config();
        let mut reader = CaptureReader::open(&trace.capture)
            .map_err(|e| err(format!("{}: {e}", trace.capture.display()), None))?;
        // (peer, PSN) → DestQP of the latest data packet from that peer with that PSN.
        let mut last_data: HashMap<(IpAddr, u32), u32> = HashMap::new();
        let mut acks: HashMap<(IpAddr, u32, u32), VecDeque<AckSeen>> = HashMap::new();
        // (peer, the peer's QP) → the host's QP, from the ACKs; CNPs: (time, peer, peer's QP).
        let mut qp_of: HashMap<(IpAddr, u32), u32> = HashMap::new();
        let mut cnps: Vec<(u64, IpAddr, u32)> = Vec::new();
        while let Some(rec) = reader.next_record() {
            // A capture that ends early is the verdict's error (verdict::assess), not the DUT's.
            let Ok(rec) = rec else { break };
            let p = Packet::from_record(&rec, &cfg);
            let (Some(ip), Some(r)) = (p.ip.as_ref(), p.roce.as_ref()) else {
                continue;
            };
            if !p.headers_complete() {
                continue;
            }
            let (src, dst) = (ip.addrs.src(), ip.addrs.dst());
            let op = r.bth.opcode();
            let psn = r.bth.psn();
            if dst == host && op.is_data() {
                last_data.insert((src, psn), r.bth.dest_qp());
            } else if src == host && op.is_cnp() {
                cnps.push((rec.ts_ns, dst, r.bth.dest_qp()));
            } else if src == host && op.is_ack() {
                let Some(&qp) = last_data.get(&(dst, psn)) else {
                    continue;
                };
                qp_of.insert((dst, r.bth.dest_qp()), qp);
                let (n, cwnd, flags) = match r.ack_ext {
                    AckExt::Rcc(e) => (Some(e.n), Some(e.cwnd), Some(e.flags)),
                    AckExt::Fncc(f) => (Some(f.n), None, None),
                    AckExt::None => (None, None, None),
                };
                acks.entry((dst, qp, psn))
                    .or_default()
                    .push_back(AckSeen { n, cwnd, flags });
            }
        }
        let flows: HashMap<FlowId, (IpAddr, u32)> = setup
            .flows
            .iter()
            .map(|f| (f.id, (f.remote_ip, f.local_qp)))
            .collect();
        let np = (setup.model == "dcqcn-np")
            .then(|| np_wire(trace, setup, &flows, &qp_of, &cnps))
            .transpose()?;
        Ok(WireDut {
            name: format!("wire ({host})"),
            model: setup.model.clone(),
            flows,
            acks,
            np,
        })
    }
}

/// The NP's CNPs by flow: a CNP names the peer's QP; the host's ACKs pair it with the flow's
/// (the host's) QP, else the peer's only flow.
fn np_wire(
    trace: &Trace,
    setup: &DutSetup,
    flows: &HashMap<FlowId, (IpAddr, u32)>,
    qp_of: &HashMap<(IpAddr, u32), u32>,
    cnps: &[(u64, IpAddr, u32)],
) -> Result<NpWire, DutError> {
    let n_us = setup
        .params
        .get("min_time_between_cnps")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(50);
    let allow = crate::observe::Allowances::resolve(&trace.manifest.observed, &[])
        .map_err(|e| err(e.to_string(), None))?;
    let by_key: HashMap<(IpAddr, u32), FlowId> = flows
        .iter()
        .map(|(&id, &(ip, qp))| ((ip, qp), id))
        .collect();
    let mut per_peer: HashMap<IpAddr, Vec<FlowId>> = HashMap::new();
    for (&id, &(ip, _)) in flows {
        per_peer.entry(ip).or_default().push(id);
    }
    let mut by_flow: HashMap<FlowId, VecDeque<u64>> = HashMap::new();
    for &(t, peer, peer_qp) in cnps {
        let flow = qp_of
            .get(&(peer, peer_qp))
            .and_then(|qp| by_key.get(&(peer, *qp)).copied())
            .or_else(|| match per_peer.get(&peer).map(Vec::as_slice) {
                Some([only]) => Some(*only),
                _ => None,
            });
        if let Some(f) = flow {
            by_flow.entry(f).or_default().push_back(t);
        }
    }
    Ok(NpWire {
        n_ns: n_us.saturating_mul(1_000),
        allow_ns: allow.reaction_ns,
        cnps: by_flow,
        flows: HashMap::new(),
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
        let Some(&(peer, qp)) = self.flows.get(&ev.flow) else {
            return Ok(());
        };
        let Some(a) = self
            .acks
            .get_mut(&(peer, qp, psn))
            .and_then(VecDeque::pop_front)
        else {
            return Ok(());
        };
        let outputs = match self.model.as_str() {
            "rcc-receiver" => Outputs {
                ack_n: a.n,
                ack_cwnd: a.cwnd,
                ack_flags: a.flags,
                ..Outputs::default()
            },
            _ => Outputs {
                ack_n: a.n,
                ..Outputs::default()
            },
        };
        // The decision is what the ACK carries for this packet; its time is the packet's, as
        // the reference's: the NIC's ACK turnaround is not part of the receiver's decision.
        out.push(Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs,
            state: State::default(),
        });
        Ok(())
    }

    fn finish(&mut self, _t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError> {
        if let Some(np) = &mut self.np {
            let mut flows: Vec<FlowId> = np.cnps.keys().copied().collect();
            flows.sort_unstable();
            for f in flows {
                np.consume(f, u64::MAX, out);
            }
        }
        Ok(())
    }
}
