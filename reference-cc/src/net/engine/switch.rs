//! A packet arriving at a switch: routing (ECMP), FNCC-3 on ACKs, the shared buffer, RED/ECN
//! at enqueue (DCQCN-1) and PFC ingress accounting.

use super::{NO_TAP, Network, PktMeta, abs_ns};
use crate::dcqcn::cp::{marking_probability, should_mark};
use crate::net::packet::{ECN_CE, PacketKind};
use crate::net::switch_device::{SwitchBug, ewma};
use crate::net::{AckIntTruth, NetError, SwitchTapPoint, TapSink};

impl Network {
    /// A switch: route, FNCC-3 for ACKs, then the egress port's queue (shared buffer,
    /// RED/ECN, PFC ingress accounting).
    pub(super) fn at_switch(
        &mut self,
        in_port: u32,
        id: u32,
        sink: &mut dyn TapSink,
    ) -> Result<(), NetError> {
        let (sw, node) = {
            let p = &self.ports[in_port as usize];
            (p.switch as usize, p.node)
        };
        let pkt = &self.slab[id as usize];
        let kind = pkt.kind;
        let out = self.route(node, pkt.route_host, pkt.flow_hash);
        let out_port = self.switches[sw].first_port + u32::from(out);
        let bytes = u64::from(pkt.wire_bytes);
        let stap = self.ports[out_port as usize].stap;
        if stap != NO_TAP {
            // The port under test's ingress side: the frame as it arrived.
            let from = self.ports[in_port as usize].peer;
            let at = SwitchTapPoint::Arrived { from };
            sink.record_switch(stap as usize, abs_ns(self.now), pkt, &self.int_of(id), at)?;
        }
        // A switch tap on the data direction's egress port: the ACK whose INT got its record.
        let mut ack_tap = None;
        if matches!(kind, PacketKind::Ack | PacketKind::Nak) && self.switches[sw].fncc.is_some() {
            // FNCC-3: the data direction's egress towards the ACK's source (the receiver).
            let f = &self.flows[pkt.flow as usize];
            let data_out = self.route(node, f.dst_route, f.hash);
            let dp = &self.ports[(self.switches[sw].first_port + u32::from(data_out)) as usize];
            let hop = dp.int_hop(self.now, self.quirks);
            if dp.stap != NO_TAP {
                let truth = AckIntTruth {
                    hop_index: self.slab[id as usize].int_n,
                    tx_bytes: dp.tx_bytes,
                    queued_bytes: dp.queued_bytes,
                };
                ack_tap = Some((dp.stap, truth));
            }
            let mut int = self.int_of(id);
            if let Some(fs) = self.switches[sw].fncc.as_mut() {
                fs.set_port_int(usize::from(data_out), hop)?;
                fs.forward_ack(usize::from(data_out), &mut int)?;
            }
            self.set_int(id, &int);
        }
        if self.switches[sw].used + bytes > self.cfg.switch.buffer_bytes {
            self.free.push(id);
            self.ports[out_port as usize].dropped += 1;
            self.drops += 1;
            return Ok(());
        }
        if let Some((t, truth)) = ack_tap {
            // Forwarded: as it leaves (nothing else changes an ACK in the switch).
            let at = SwitchTapPoint::AckInt { truth };
            let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
            sink.record_switch(t as usize, abs_ns(self.now), pkt, &int, at)?;
        }
        self.switches[sw].used += bytes;
        let op = &mut self.ports[out_port as usize];
        if kind != PacketKind::Data {
            op.ctrl.push_back(&mut self.link, id);
            op.queued_bytes += bytes;
        } else {
            // DCQCN-1: RED on the bytes waiting ahead of the packet (the one on the wire
            // excluded), only ECN-capable packets.
            let pkt = &mut self.slab[id as usize];
            let q_enq = op.queued_bytes;
            let (mut p, mut marked) = (0.0, false);
            match &self.cfg.switch_device.bug {
                None => {
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        marked = should_mark(q_enq, red, &mut self.switches[sw].rng);
                        if self.track {
                            p = marking_probability(q_enq, red);
                        }
                    }
                }
                Some(SwitchBug::MarkAverageQueue { avg_weight }) => {
                    // RED on the average queue, floored to whole bytes.
                    op.avg_q = ewma(op.avg_q, q_enq, *avg_weight);
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        let q = op.avg_q as u64;
                        marked = should_mark(q, red, &mut self.switches[sw].rng);
                        p = marking_probability(q, red);
                    }
                }
                // Decided as it leaves.
                Some(SwitchBug::MarkOnDequeue) => {}
                Some(_) => {
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        marked = should_mark(q_enq, red, &mut self.switches[sw].rng);
                        p = marking_probability(q_enq, red);
                    }
                }
            }
            if marked {
                pkt.ecn = ECN_CE;
                op.ecn_marked += 1;
            }
            pkt.ingress = self.ports[in_port as usize].index;
            if self.track {
                let i = id as usize;
                if self.meta.len() <= i {
                    self.meta
                        .resize(self.slab.len().max(i + 1), PktMeta::default());
                }
                self.meta[i] = PktMeta {
                    t_in_ps: self.now,
                    q_enq,
                    p,
                    marked,
                };
            }
            let op = &mut self.ports[out_port as usize];
            op.data.push_back(&mut self.link, id);
            op.queued_bytes += bytes;
            op.queue_max = op.queue_max.max(op.queued_bytes);
            let ip = &mut self.ports[in_port as usize];
            ip.ingress_bytes += bytes;
            if let Some(pfc) = self.cfg.switch.pfc
                && !ip.xoff
                && ip.ingress_bytes > self.xoff_at
            {
                ip.xoff = true;
                self.send_pfc(in_port, pfc.pause_quanta, sink)?;
            }
        }
        self.try_start(out_port, sink)
    }
}
