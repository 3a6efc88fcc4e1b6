//! A packet arriving at a host: PFC frames, data at the receiver (its model, the RC
//! responder, the ACK or NAK and CNPs), ACKs, NAKs and CNPs at the sender (its model, the
//! requester's go-back-N).

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::IntStack;

use super::port::quanta_ps;
use super::{NO_INT, NO_TAP, NONE, Network, PSN_HALF, PSN_MASK, abs_ns};
use crate::event::AckInfo;
use crate::net::packet::{Packet, PacketKind, SYNDROME_ACK, SYNDROME_NAK_PSN, frame_len};
use crate::net::{NetError, PS_PER_NS, SwitchTapPoint, TapSink};
use crate::rcc::{MessagePosition, message_position};
use crate::{Event, EventKind};

impl Network {
    pub(super) fn arrive(
        &mut self,
        port: u32,
        id: u32,
        sink: &mut dyn TapSink,
    ) -> Result<(), NetError> {
        if !self.ports[port as usize].link_up {
            // On the wire when its link went down: lost (counted at the port that sent it).
            let from = self.ports[port as usize].peer_port;
            self.ports[from as usize].dropped += 1;
            self.drops += 1;
            self.free.push(id);
            return Ok(());
        }
        let kind = self.slab[id as usize].kind;
        if kind == PacketKind::Pfc {
            let pkt = self.slab[id as usize];
            self.free.push(id);
            let now = self.now;
            let p = &mut self.ports[port as usize];
            p.pause_received += 1;
            if p.host != u32::MAX
                && let Some(tap) = self.hosts[p.host as usize].tap
            {
                sink.record(tap, abs_ns(now), &pkt, &NO_INT, false)?;
            }
            if p.stap != NO_TAP {
                let at = SwitchTapPoint::PauseReceived;
                sink.record_switch(p.stap as usize, abs_ns(now), &pkt, &NO_INT, at)?;
            }
            let pause_ps = quanta_ps(pkt.pfc_quanta, p.rate_bps);
            p.pause(now, now + pause_ps);
            return self.try_start(port, sink);
        }
        let p = &self.ports[port as usize];
        if p.host != u32::MAX {
            let h = p.host;
            return match kind {
                PacketKind::Data => self.at_receiver(h, id, sink),
                _ => self.at_sender(h, id, sink),
            };
        }
        self.at_switch(port, id, sink)
    }

    /// The receiver NIC: tap, receiver model, RC responder (in-order accept, one NAK per gap,
    /// duplicates re-acknowledged), then the ACK or NAK.
    /// The data packet is in slot `id`; its ACK or NAK takes the slot over (an HPCC ACK
    /// echoes the data packet's INT stack unchanged, wire.md 5.3: it stays where it is).
    fn at_receiver(&mut self, h: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        let pkt = self.slab[id as usize];
        let fi = pkt.flow;
        if let Some(tap) = self.hosts[hi].tap {
            sink.record(tap, abs_ns(self.now), &pkt, &self.int_of(id), false)?;
        }
        if self.flows[fi as usize].local_rx == u32::MAX {
            self.flows[fi as usize].local_rx = self.hosts[hi].rx_flows.len() as u32;
            self.hosts[hi].rx_flows.push(fi);
        }
        let f = &mut self.flows[fi as usize];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: f.local_rx,
            index: f.rx_events,
            kind: EventKind::RxData {
                psn: pkt.psn,
                bytes: pkt.payload,
                opcode: pkt.opcode,
                ecn: pkt.ecn,
                send_ts_ns: (self.dialect == Dialect::Rcc).then_some(pkt.ts_ns),
            },
        };
        f.rx_events += 1;
        self.scratch.clear();
        if let Some(m) = self.hosts[hi].receiver.as_mut() {
            m.on_event(&ev, &mut self.scratch);
        }
        let (n, cwnd, flags) = self.receiver_outputs(hi);
        self.arm_timer(h, 1);

        let f = &mut self.flows[fi as usize];
        let expected_psn = f.psn(f.expected);
        let ahead = pkt.psn.wrapping_sub(expected_psn) & PSN_MASK;
        let reply = if ahead == 0 {
            f.expected += 1;
            f.nak_sent = false;
            f.delivered_bytes += u64::from(pkt.payload);
            if matches!(
                message_position(pkt.opcode),
                MessagePosition::Last | MessagePosition::Only
            ) {
                f.msn = (f.msn + 1) & PSN_MASK; // a message completed
            }
            Some((PacketKind::Ack, pkt.psn))
        } else if ahead < PSN_HALF {
            // A gap: NAK once (PSN sequence error, naming the expected PSN), drop the rest.
            (!std::mem::replace(&mut f.nak_sent, true)).then_some((PacketKind::Nak, expected_psn))
        } else {
            // A duplicate: acknowledge what was received.
            Some((PacketKind::Ack, expected_psn.wrapping_sub(1) & PSN_MASK))
        };
        if let Some((kind, psn)) = reply {
            let mut a = Packet::new(kind, fi);
            (a.route_host, a.flow_hash) = (f.src_route, f.hash);
            a.psn = psn;
            a.syndrome = if kind == PacketKind::Nak {
                SYNDROME_NAK_PSN
            } else {
                SYNDROME_ACK
            };
            a.msn = f.msn;
            (a.ack_n, a.ack_cwnd, a.ack_flags) = (n, cwnd, flags);
            if !self.hosts[hi].writes_n {
                a.ack_n = 0; // a NIC without FNCC-2: N unknown (wire.md 4)
            }
            a.wire_bytes = frame_len(self.dialect, kind, 0, 0);
            if self.dialect == Dialect::Hpcc {
                // The data's stack echoed (its records stay in the slot); FNCC: the switches
                // fill the ACK's, which starts empty.
                (a.int_n, a.int_path) = (pkt.int_n, pkt.int_path);
            }
            self.slab[id as usize] = a;
            self.queue_ctrl_id(self.hosts[hi].port, id);
        } else {
            self.free.push(id);
        }
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    /// The sender NIC: tap, the model's event, then the requester's transport.
    /// The ACK, NAK or CNP in slot `id` reaches its sender.
    fn at_sender(&mut self, h: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        let pkt = self.slab[id as usize];
        if let Some(tap) = self.hosts[hi].tap {
            sink.record(tap, abs_ns(self.now), &pkt, &self.int_of(id), false)?;
        }
        self.free.push(id);
        let fi = pkt.flow;
        let d = self.dialect;
        let f = &self.flows[fi as usize];
        let mut ev = Event {
            t_ns: abs_ns(self.now),
            flow: f.local_tx,
            index: f.tx_events,
            kind: EventKind::RxCnp,
        };
        if matches!(pkt.kind, PacketKind::Ack | PacketKind::Nak) {
            let info = AckInfo {
                psn: pkt.psn,
                syndrome: pkt.syndrome,
                int: None,
                n: matches!(d, Dialect::Fncc | Dialect::Rcc).then_some(pkt.ack_n),
                cwnd: (d == Dialect::Rcc).then_some(pkt.ack_cwnd),
                rcc_flags: (d == Dialect::Rcc).then_some(pkt.ack_flags),
                ts_ns: (d == Dialect::Rcc).then_some(pkt.ts_ns),
            };
            ev.kind = if pkt.kind == PacketKind::Ack {
                EventKind::RxAck(info)
            } else {
                EventKind::RxNak(info)
            };
            // The INT stack, most of the event's size, copied once, into its place (built
            // beside the rest and moved in, it was copied three times).
            if self.has_int
                && let EventKind::RxAck(info) | EventKind::RxNak(info) = &mut ev.kind
            {
                self.int_into(id, info.int.insert(IntStack::new()));
            }
        }
        self.flows[fi as usize].tx_events += 1;
        self.feed_sender(hi, &ev);

        let now = self.now;
        let rto = self.cfg.rto_ns * PS_PER_NS;
        let f = &mut self.flows[fi as usize];
        let before = f.una;
        match pkt.kind {
            PacketKind::Ack => {
                if let Some(k) = f.index_of(pkt.psn).filter(|&k| k < f.high) {
                    f.una = f.una.max(k + 1);
                    f.next = f.next.max(f.una);
                }
            }
            PacketKind::Nak => {
                if let Some(k) = f.index_of(pkt.psn) {
                    f.una = f.una.max(k);
                    f.next = f.una; // go back N
                }
            }
            _ => {}
        }
        if f.una != before || pkt.kind == PacketKind::Nak {
            if f.una == f.packets && f.finish_ps.is_none() {
                f.finish_ps = Some(now);
                self.first_finish_ps = self.first_finish_ps.min(now);
                let host = &mut self.hosts[hi];
                if let Some(k) = host.live_tx.iter().position(|&x| x == fi) {
                    host.live_tx.remove(k);
                    host.live_release.remove(k);
                }
            }
            let t = if f.una < f.high { now + rto } else { NONE };
            self.set_rto(fi, t);
        }
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    /// The receiver model's decisions in `scratch`: CNPs to send now (DCQCN-2), and the ACK
    /// fields the decisions set (FNCC N; RCC cwnd, N, flags).
    pub(super) fn receiver_outputs(&mut self, h: usize) -> (u16, u32, u8) {
        let (mut n, mut cwnd, mut flags) = (0, 0, 0);
        if self.scratch.is_empty() {
            return (n, cwnd, flags); // no decision (most data packets): nothing to do
        }
        let mut cnps = 0usize;
        let mut cnp_flows = [0u32; 16];
        for d in &self.scratch {
            n = d.outputs.ack_n.unwrap_or(n);
            cwnd = d.outputs.ack_cwnd.unwrap_or(cwnd);
            flags = d.outputs.ack_flags.unwrap_or(flags);
            if d.outputs.send_cnp == Some(true) && cnps < cnp_flows.len() {
                cnp_flows[cnps] = d.flow;
                cnps += 1;
            }
        }
        if self.hosts[h].tap.is_some() {
            self.hosts[h]
                .receiver_decisions
                .extend_from_slice(&self.scratch);
        }
        for &local in &cnp_flows[..cnps] {
            let Some(&fi) = self.hosts[h].rx_flows.get(local as usize) else {
                continue;
            };
            let mut p = Packet::new(PacketKind::Cnp, fi);
            let f = &self.flows[fi as usize];
            (p.route_host, p.flow_hash) = (f.src_route, f.hash);
            p.wire_bytes = frame_len(self.dialect, PacketKind::Cnp, 0, 0);
            self.queue_ctrl(self.hosts[h].port, p);
        }
        (n, cwnd, flags)
    }

    /// Queue a control frame (ACK, NAK, CNP) at a host port; strict priority over data.
    fn queue_ctrl(&mut self, port: u32, p: Packet) {
        let id = self.alloc(p);
        self.queue_ctrl_id(port, id);
    }

    /// Queue the control frame in slot `id` at a host port.
    fn queue_ctrl_id(&mut self, port: u32, id: u32) {
        let bytes = u64::from(self.slab[id as usize].wire_bytes);
        let ps = &mut self.ports[port as usize];
        ps.ctrl.push_back(&mut self.link, id);
        ps.queued_bytes += bytes;
    }
}
