//! How a record looks from the capture point, shared by both passes: its direction and role
//! ([`Seen`]), whether the capture point's NIC would drop it for its ICRC, whether it is the
//! host's traffic at all.

use ccreplay_codecs::packet::{Packet, Roce};
use std::net::IpAddr;

use super::Skip;
use crate::manifest::CapturePoint;

/// How a packet looks from the capture point.
pub(super) enum Seen<'a> {
    /// Sender: data out (remote IP, DestQP = remote QP).
    DataOut(IpAddr, &'a Roce<'a>),
    /// Sender: ACK / NAK / CNP in (remote IP, DestQP = local QP).
    AckIn(IpAddr, &'a Roce<'a>),
    /// Receiver: data in (remote IP, DestQP = local QP).
    DataIn(IpAddr, &'a Roce<'a>),
    /// Switch port: data leaving the port (source IP, destination IP).
    PortData(IpAddr, IpAddr, &'a Roce<'a>),
    /// Not RoCEv2.
    NotRoce,
    /// Not a flow event here, and why.
    Skip(Skip),
}

impl Seen<'_> {
    /// Received by the capture point's NIC (the ones whose ICRC it checks).
    pub(super) fn received(&self) -> bool {
        matches!(self, Seen::AckIn(..) | Seen::DataIn(..))
    }
}

/// What `p` is at `point`: data out or in, feedback in, a switch port's data, or a skip and its
/// reason. `#[inline]`: on every record's path, from both passes' files.
#[inline]
pub(super) fn classify<'a>(point: &CapturePoint, p: &'a Packet<'a>) -> Seen<'a> {
    let (Some(ip), Some(r)) = (&p.ip, &p.roce) else {
        return Seen::NotRoce;
    };
    let (src, dst) = (ip.addrs.src(), ip.addrs.dst());
    let op = r.bth.opcode();
    let feedback = op.is_ack() || op.is_cnp();
    // SEND / WRITE requests and READ responses: a READ flow's data leaves the responder on
    // its QP, the requester's CNPs go back to that QP (docs/verdicts.md "READ traffic").
    let data = r.is_flow_data();
    let Some(host) = point.host() else {
        // A switch port sees data of every flow that crosses it.
        return if data {
            Seen::PortData(src, dst, r)
        } else if r.bth.is_gsi() {
            Seen::Skip(Skip::Management)
        } else {
            Seen::Skip(Skip::NoCcEvent)
        };
    };
    if src != host && dst != host {
        return Seen::Skip(Skip::OtherHost);
    }
    if r.bth.is_gsi() {
        // rdma_cm's REQ / REP / RTU before a flow, DREQ / DREP after: a flow of their own
        // would renumber the real ones.
        return Seen::Skip(Skip::Management);
    }
    if !data && !feedback {
        return Seen::Skip(Skip::NoCcEvent);
    }
    match point {
        CapturePoint::Sender { .. } => {
            if src == host && data {
                Seen::DataOut(dst, r)
            } else if dst == host && feedback {
                Seen::AckIn(src, r)
            } else {
                Seen::Skip(Skip::WrongDirection)
            }
        }
        CapturePoint::Receiver { .. } | CapturePoint::SwitchPort { .. } => {
            if dst == host && data {
                Seen::DataIn(src, r)
            } else if src == host && feedback {
                Seen::Skip(Skip::ReceiverFeedback)
            } else {
                Seen::Skip(Skip::WrongDirection)
            }
        }
    }
}

/// The ICRC fails (where the capture holds it whole). It is checked on the packets the
/// capture point receives — ACKs / NAKs / CNPs at a sender, data at a receiver — because the
/// NIC there drops a packet whose ICRC fails (wire.md 4), so no model may see it; what a host
/// or port transmits was sent whatever its ICRC, and checking its large payloads would cost a
/// read of every byte of the capture. A wrong dialect reads the shim as BTH and fails the
/// check of every received packet, which names the dialect as the likely cause.
#[inline]
pub(super) fn icrc_fails(p: &Packet<'_>) -> bool {
    p.icrc_check()
        .is_some_and(|(computed, found)| computed != found)
}

/// A Lumina switch dropped or corrupted the packet after copying it (docs/wire.md 2.3): where
/// it is received, its NIC never got it whole. Both passes skip it there.
#[inline]
pub(super) fn lost_on_the_way(p: &Packet<'_>) -> bool {
    p.lumina.is_some_and(|l| l.event.lost())
}

/// From or to the capture point's host (every packet at a switch port).
#[inline]
pub(super) fn ours(point: &CapturePoint, p: &Packet<'_>) -> bool {
    match (point.host(), &p.ip) {
        (None, _) => true,
        (Some(h), Some(ip)) => ip.addrs.src() == h || ip.addrs.dst() == h,
        (Some(_), None) => false,
    }
}
