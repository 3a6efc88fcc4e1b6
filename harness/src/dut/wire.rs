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
// DutError is the Dut trait's error type, as in process.rs and cabi.rs.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use ccreplay_codecs::Packet;
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::AckExt;
use ccreplay_reference_cc::{Decision, Event, EventKind, FlowId, Outputs, State};

use super::{Dut, DutError, DutSetup};
use crate::replay::Trace;

/// The models whose decisions a receiver's packets carry, and what this DUT reads for them.
pub const MODELS: [&str; 2] = ["rcc-receiver", "fncc-receiver"];

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
                    "`{}` decisions are not on the wire: --dut wire reads a receiver's ACKs",
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
            } else if src == host && op.is_ack() {
                let Some(&qp) = last_data.get(&(dst, psn)) else {
                    continue;
                };
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
        Ok(WireDut {
            name: format!("wire ({host})"),
            model: setup.model.clone(),
            flows: setup
                .flows
                .iter()
                .map(|f| (f.id, (f.remote_ip, f.local_qp)))
                .collect(),
            acks,
        })
    }
}

impl Dut for WireDut {
    fn name(&self) -> &str {
        &self.name
    }

    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError> {
        let EventKind::RxData { psn, .. } = ev.kind else {
            return Ok(());
        };
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

    fn finish(&mut self, _t_end_ns: u64, _out: &mut Vec<Decision>) -> Result<(), DutError> {
        Ok(())
    }
}
