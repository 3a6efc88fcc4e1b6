//! Egress ports of hosts and switches: what goes on the wire next (a PFC frame, control,
//! then data unless paused), serialisation and propagation, PFC frames sent, links going
//! down and up.

use ccreplay_codecs::Dialect;

use super::{CLASS_PACKET, Ev, NO_INT, NO_PKT, NO_TAP, Network, abs_ns, prefetch};
use crate::dcqcn::cp::{marking_probability, should_mark};
use crate::net::packet::{ECN_CE, Packet, PacketKind, frame_len};
use crate::net::switch_device::SwitchBug;
use crate::net::topology::Routes;
use crate::net::{DequeueTruth, NetError, SwitchTapPoint, TapSink, ser_ps};

impl Network {
    /// Start the next transmission on `port` if it is idle: a pending PFC frame, then control
    /// frames, then data (unless paused by PFC).
    #[inline(always)]
    pub(super) fn try_start(&mut self, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        // A busy port (a packet queued behind the one on the wire) is the common case at a
        // switch: answered here, without the call and the large frame of `start_next`.
        let p = &mut self.ports[port as usize];
        if p.busy {
            let Some((t, order)) = p.free_later else {
                return Ok(());
            };
            // Its `PortFree` was not scheduled (`transmit`): has its key passed?
            p.free_later = None;
            if (t, order) > (self.now, self.queue.last_order()) {
                // Not yet: schedule it with its reserved key, counted when it runs.
                if t <= self.end_ps {
                    self.events -= 1;
                }
                self.queue.push(t, order, Ev::PortFree { port });
                return Ok(());
            }
            // It has: the port went idle then, with nothing to send (as the event found it).
            p.busy = false;
        }
        self.start_next(port, sink)
    }

    /// [`Self::try_start`] on an idle port.
    pub(super) fn start_next(&mut self, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let p = &mut self.ports[port as usize];
        if !p.link_up {
            // Down: nothing is routed here; an XON or XOFF for the peer is lost.
            p.pfc_pending = None;
            return Ok(());
        }
        let now = self.now;
        if let Some(q) = p.pfc_pending.take() {
            let mut pkt = Packet::new(PacketKind::Pfc, 0);
            pkt.pfc_quanta = q;
            pkt.pfc_from = p.node;
            pkt.wire_bytes = frame_len(self.dialect, PacketKind::Pfc, 0, 0);
            if p.switch != u32::MAX {
                // Switch taps: the ingress side's decision, and a frame leaving a tapped port.
                let (to, stap) = (p.peer, p.stap);
                for &t in &self.switches[p.switch as usize].taps {
                    sink.record_switch(
                        t as usize,
                        abs_ns(now),
                        &pkt,
                        &NO_INT,
                        SwitchTapPoint::PauseSent { to },
                    )?;
                }
                if stap != NO_TAP {
                    let at = SwitchTapPoint::Departed { truth: None };
                    sink.record_switch(stap as usize, abs_ns(now), &pkt, &NO_INT, at)?;
                }
            }
            let id = self.alloc(pkt);
            self.transmit(port, id);
            return Ok(());
        }
        if let Some(id) = p.ctrl.pop_front(&self.link) {
            let bytes = self.slab[id as usize].wire_bytes;
            p.queued_bytes -= u64::from(bytes);
            if p.host != u32::MAX {
                let h = p.host as usize;
                // RCC: the shim carries the receiver's transmit time (wire.md 5.5).
                self.slab[id as usize].ts_ns = abs_ns(now);
                if let Some(tap) = self.hosts[h].tap {
                    let int = self.int_of(id);
                    sink.record(tap, abs_ns(now), &self.slab[id as usize], &int, true)?;
                }
            } else {
                self.switches[p.switch as usize].used -= u64::from(bytes);
                let stap = p.stap;
                if stap != NO_TAP {
                    let at = SwitchTapPoint::Departed { truth: None };
                    let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
                    sink.record_switch(stap as usize, abs_ns(now), pkt, &int, at)?;
                }
            }
            self.transmit(port, id);
            return Ok(());
        }
        if p.paused_until > now {
            if p.wake_at > p.paused_until {
                p.wake_at = p.paused_until;
                let t = p.paused_until;
                self.schedule(t, CLASS_PACKET, Ev::PortWake { port });
            }
            return Ok(());
        }
        if p.host != u32::MAX {
            let h = p.host;
            return self.host_send(h, port, sink);
        }
        let Some(id) = p.data.pop_front(&self.link) else {
            return Ok(());
        };
        // The packet behind it leaves at the port's next `PortFree`: fetch it now.
        if let Some(next) = self.slab.get(p.data.head as usize) {
            prefetch(next);
            if let Some(int) = self.ints.get(p.data.head as usize) {
                prefetch(int);
            }
        }
        let bytes = u64::from(self.slab[id as usize].wire_bytes);
        p.queued_bytes -= bytes;
        let sw = p.switch as usize;
        if matches!(self.cfg.switch_device.bug, Some(SwitchBug::MarkOnDequeue))
            && let Some(red) = &p.red
            && self.slab[id as usize].ecn != 0
        {
            // `mark-on-dequeue`: RED on the bytes still waiting behind the packet.
            let q = p.queued_bytes;
            let marked = should_mark(q, red, &mut self.switches[sw].rng);
            if marked {
                self.slab[id as usize].ecn = ECN_CE;
                p.ecn_marked += 1;
            }
            if let Some(m) = self.meta.get_mut(id as usize) {
                m.p = marking_probability(q, red);
                m.marked = marked;
            }
        }
        if self.dialect == Dialect::Hpcc {
            // HPCC: the egress INT hop, taken as the packet leaves (txBytes before it, qLen
            // behind it, as the HPCC authors' switch does).
            let clock = if self.cfg.switch_device.bug == Some(SwitchBug::IngressTimestamp) {
                self.meta[id as usize].t_in_ps
            } else {
                now
            };
            let hop = p.int_hop(clock, self.quirks);
            let int_id = self.switches[p.switch as usize].int_id;
            self.int_push(id, int_id, hop);
        }
        self.switches[sw].used -= bytes;
        let ingress = self.switches[sw].first_port + u32::from(self.slab[id as usize].ingress);
        let p = &self.ports[port as usize];
        if p.stap != NO_TAP {
            let m = self.meta[id as usize];
            let truth = DequeueTruth {
                t_in_ns: abs_ns(m.t_in_ps),
                from: self.ports[ingress as usize].peer,
                qlen_at_enqueue: m.q_enq,
                qlen_at_dequeue: p.queued_bytes,
                marked: m.marked,
                p: m.p,
            };
            let at = SwitchTapPoint::Departed { truth: Some(truth) };
            let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
            sink.record_switch(p.stap as usize, abs_ns(now), pkt, &int, at)?;
        }
        self.transmit(port, id);
        self.release_ingress(ingress, bytes, sink)
    }

    /// PFC: `bytes` buffered for ingress port `ingress` have left the switch; XON when its
    /// buffered bytes are at or below the threshold.
    fn release_ingress(
        &mut self,
        ingress: u32,
        bytes: u64,
        sink: &mut dyn TapSink,
    ) -> Result<(), NetError> {
        let ip = &mut self.ports[ingress as usize];
        ip.ingress_bytes -= bytes;
        if let Some(pfc) = self.cfg.switch.pfc
            && ip.xoff
            && ip.ingress_bytes <= pfc.xon_bytes
        {
            ip.xoff = false;
            self.send_pfc(ingress, 0, sink)?;
        }
        Ok(())
    }

    /// Put packet `id` on the wire of `port` now.
    #[inline]
    pub(super) fn transmit(&mut self, port: u32, id: u32) {
        let p = &mut self.ports[port as usize];
        let bytes = self.slab[id as usize].wire_bytes;
        p.busy = true;
        p.tx_bytes += u64::from(bytes);
        p.tx_payload += u64::from(self.slab[id as usize].payload);
        let done = self.now + p.ser(bytes);
        let arrive = done + p.prop_ps;
        let peer_port = p.peer_port;
        self.seq += 1;
        let order = CLASS_PACKET << 56 | self.seq;
        // A host port idles the same way once its NIC has no flow left to send (`live_tx` only
        // shrinks; an ACK, NAK or CNP queued later comes with a `try_start`).
        if (p.host == u32::MAX || self.hosts[p.host as usize].live_tx.is_empty())
            && p.ctrl.head == NO_PKT
            && p.data.head == NO_PKT
            && p.pfc_pending.is_none()
            && p.paused_until <= done
        {
            // A port with nothing behind this packet: its `PortFree` at `done` would
            // find no frame to send and no pause to wait out (`start_next` does nothing), unless
            // something reaches the port first — every such change calls `try_start`, which
            // schedules the event then, with the key reserved here (so every other event keeps
            // its key and place). A link going down meanwhile leaves it nothing to do either.
            // `events` (metrics.json) counts it as if it ran: the count stays that of the
            // schedule, whichever events the loop could skip.
            p.free_later = Some((done, order));
            if done <= self.end_ps {
                self.events += 1;
            }
        } else {
            self.queue.push(done, order, Ev::PortFree { port });
        }
        self.schedule(
            arrive,
            CLASS_PACKET,
            Ev::Arrive {
                port: peer_port,
                pkt: id,
            },
        );
    }

    /// Send a PFC frame out of switch port `port` (quanta 0 = XON), ahead of anything queued.
    pub(super) fn send_pfc(
        &mut self,
        port: u32,
        quanta: u16,
        sink: &mut dyn TapSink,
    ) -> Result<(), NetError> {
        let p = &mut self.ports[port as usize];
        p.pfc_pending = Some(quanta);
        if quanta != 0 {
            p.pause_sent += 1;
            // Refresh before the pause runs out (a quantum is 512 bit times); never with
            // `no-pause-refresh`.
            if self.cfg.switch_device.refreshes_pauses() {
                let pause_ps = quanta_ps(quanta, p.rate_bps);
                let t = self.now + (pause_ps / 2).max(1);
                p.refresh_at = t;
                self.schedule(t, CLASS_PACKET, Ev::PfcRefresh { port });
            }
        }
        self.try_start(port, sink)
    }

    /// A link goes down or up (docs/sim.md "Link failures"): the switches take the routes of
    /// the new state; going down, both ends drop what they hold for it.
    pub(super) fn link_event(&mut self, i: usize, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let (_, link, up) = self.link_events[i];
        self.routes = std::mem::replace(&mut self.later_routes[i], Routes::empty());
        let l = self.cfg.topology.links[link as usize];
        let ends = [l.a, l.b].map(|n| {
            let first = self.port_base[n as usize];
            let k = self.ports[first as usize..]
                .iter()
                .position(|p| p.node == n && p.link == link)
                .unwrap_or(0);
            first + k as u32
        });
        for port in ends {
            self.ports[port as usize].link_up = up;
            if up {
                self.try_start(port, sink)?;
            } else {
                self.flush_port(port, sink)?;
            }
        }
        Ok(())
    }

    /// Drop everything switch port `port` holds (its link went down): queued frames leave the
    /// shared buffer and, for data, their ingress port's PFC count (which may send an XON);
    /// a pending PFC frame and a pause from the peer end.
    fn flush_port(&mut self, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        p.pfc_pending = None;
        p.pause(now, now);
        let sw = p.switch as usize;
        while let Some(id) = self.ports[port as usize].ctrl.pop_front(&self.link) {
            let bytes = u64::from(self.slab[id as usize].wire_bytes);
            self.drop_queued(port, sw, id, bytes);
        }
        while let Some(id) = self.ports[port as usize].data.pop_front(&self.link) {
            let bytes = u64::from(self.slab[id as usize].wire_bytes);
            self.drop_queued(port, sw, id, bytes);
            let ingress = self.switches[sw].first_port + u32::from(self.slab[id as usize].ingress);
            self.release_ingress(ingress, bytes, sink)?;
        }
        Ok(())
    }

    /// A frame queued at switch port `port` is dropped (its link went down).
    fn drop_queued(&mut self, port: u32, sw: usize, id: u32, bytes: u64) {
        let p = &mut self.ports[port as usize];
        p.queued_bytes -= bytes;
        p.dropped += 1;
        self.switches[sw].used -= bytes;
        self.drops += 1;
        self.free.push(id);
    }
}

/// A PFC pause of `quanta` (802.1Qbb: 512 bit times each) at `rate_bps`, ps: the time to
/// send `quanta × 64` bytes. u128 inside: 0xFFFF × 512 × 10^12 overflows u64.
pub(super) fn quanta_ps(quanta: u16, rate_bps: u64) -> u64 {
    ser_ps(u32::from(quanta) * 64, rate_bps)
}
