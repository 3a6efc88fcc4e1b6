//! The host NIC's send side: the scheduler picking a flow by pacer release, the data packet
//! it sends and the sender model's event, the decisions applied at once or `reaction_ns`
//! later.

use ccreplay_codecs::Dialect;

use super::{CLASS_APPLY, CLASS_NIC, Ev, FlowState, NO_INT, NONE, Network, abs_ns};
use crate::net::packet::{Packet, PacketKind, frame_len};
use crate::net::{NetError, PS_PER_NS, TapSink, device, ser_ps};
use crate::{Event, EventKind};

impl Network {
    /// Schedule a NIC wake-up of host slot `h` at `t` unless an earlier one is pending.
    #[inline]
    pub(super) fn wake_nic(&mut self, h: u32, t: u64) {
        let t = t.max(self.now);
        let host = &mut self.hosts[h as usize];
        if t < host.wake_at {
            host.wake_at = t;
            self.schedule(t, CLASS_NIC, Ev::NicWake { host: h });
        }
    }

    /// The sender model's decisions in `scratch`: the flows' rates and windows, now or, with
    /// `[device]` `reaction_ns`, that much later.
    pub(super) fn apply_sender_decisions(&mut self, h: usize) {
        if self.scratch.is_empty() {
            return; // no decision (a tx_data event): nothing to apply or record
        }
        let dev = &self.cfg.device;
        let host = &mut self.hosts[h];
        let mut delayed = 0;
        for d in &self.scratch {
            let Some(&fi) = host.tx_flows.get(d.flow as usize) else {
                continue;
            };
            let (rate, window) = (d.outputs.rate_bps, d.outputs.window_bytes);
            if dev.reaction_ns == 0 {
                set_flow(&mut self.flows[fi as usize], rate, window, dev);
            } else if rate.is_some() || window.is_some() {
                self.delayed.push_back((fi, rate, window));
                delayed += 1;
            }
        }
        if host.tap.is_some() {
            host.sender_decisions.extend_from_slice(&self.scratch);
        }
        let t = self.now + self.cfg.device.reaction_ns * PS_PER_NS;
        for _ in 0..delayed {
            self.schedule(t, CLASS_APPLY, Ev::Apply);
        }
    }

    /// The oldest delayed decision takes effect (`reaction_ns` after the model made it).
    pub(super) fn apply_delayed(&mut self, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let Some((fi, rate, window)) = self.delayed.pop_front() else {
            return Ok(());
        };
        let f = &mut self.flows[fi as usize];
        set_flow(f, rate, window, &self.cfg.device);
        let port = self.hosts[f.src_host as usize].port;
        self.try_start(port, sink)
    }

    /// The NIC of host slot `h` picks the flow whose pacer released earliest (ties: lowest
    /// sender flow id) among those that may send, and sends its next packet now; or wakes up
    /// when the first pacer releases. With `[device]` `burst_bytes`, a flow's batch under way
    /// goes first, whatever its pacer says.
    pub(super) fn host_send(
        &mut self,
        h: u32,
        port: u32,
        sink: &mut dyn TapSink,
    ) -> Result<(), NetError> {
        let mtu = self.cfg.mtu_bytes;
        let now = self.now;
        // (release, flow, its index in `live_tx`)
        let mut best: Option<(u64, u32, usize)> = None;
        // Batch scheduling: a batch under way goes on while its flow may send.
        let host = &self.hosts[h as usize];
        let batch = host.batch_flow;
        if batch != u32::MAX {
            if self.flows[batch as usize].can_send(mtu)
                && let Some(k) = host.live_tx.iter().position(|&x| x == batch)
            {
                best = Some((now, batch, k));
            } else {
                self.hosts[h as usize].batch_flow = u32::MAX;
            }
        }
        if best.is_none() {
            best = self.first_release(h, mtu);
        }
        let Some((release, fi, slot)) = best else {
            return Ok(());
        };
        if release > now {
            self.wake_nic(h, release);
            return Ok(());
        }
        let f = &self.flows[fi as usize];
        let k = f.next;
        let mut pkt = Packet::new(PacketKind::Data, fi);
        (pkt.route_host, pkt.flow_hash) = (f.dst_route, f.hash);
        pkt.psn = f.psn(k);
        pkt.opcode = f.opcode(k);
        pkt.payload = f.payload(k, mtu);
        // DCQCN needs ECN-capable data, ECT(0) or the host's ECT(1) (`[hosts.NAME]` `ecn`);
        // HPCC: the sender writes an empty stack (wire.md 5.2).
        pkt.ecn = if self.dialect == Dialect::Roce {
            self.hosts[h as usize].data_ecn
        } else {
            0
        };
        pkt.ts_ns = abs_ns(now);
        pkt.wire_bytes = frame_len(self.dialect, PacketKind::Data, pkt.opcode, pkt.payload);
        let local = f.local_tx;
        if let Some(tap) = self.hosts[h as usize].tap {
            sink.record(tap, abs_ns(now), &pkt, &NO_INT, true)?;
        }
        self.sender_event(
            h as usize,
            fi,
            local,
            EventKind::TxData {
                psn: pkt.psn,
                bytes: pkt.payload,
                opcode: pkt.opcode,
            },
        );
        let rto = self.cfg.rto_ns * PS_PER_NS;
        let f = &mut self.flows[fi as usize];
        f.next = k + 1;
        f.high = f.high.max(k + 1);
        // The pacer spaces frames at the flow's rate; after an idle spell it restarts now.
        f.pace_ps = f.pace_ps.max(now) + ser_ps(pkt.wire_bytes, f.rate_bps);
        self.hosts[h as usize].live_release[slot] = f.pace_ps.max(f.start_ps);
        if f.rto_ps == NONE {
            self.set_rto(fi, now + rto);
        }
        let burst = u64::from(self.cfg.device.burst_bytes);
        if burst > 0 {
            // The batch goes on until it holds `burst_bytes`; a new one starts with this frame
            // when the flow was not the one batching.
            let host = &mut self.hosts[h as usize];
            let before = if host.batch_flow == fi {
                host.batch_bytes
            } else {
                0
            };
            let sent = before + u64::from(pkt.wire_bytes);
            (host.batch_flow, host.batch_bytes) = if sent >= burst {
                (u32::MAX, 0)
            } else {
                (fi, sent)
            };
        }
        let id = self.alloc(pkt);
        self.transmit(port, id);
        Ok(())
    }

    /// The scheduler's choice among host `h`'s live flows: the earliest pacer release among
    /// the flows that may send, ties to the first in order: (release, flow, index in
    /// `live_tx`). The k = 8 tree's hosts have a hundred live flows each, and this scan was 7 %
    /// of its instructions: after the first flow that may send, a block of eight releases is
    /// looked at one by one only when one of them is earlier than the best so far (the flows
    /// behind a later release cannot win, whatever `can_send` says).
    #[inline]
    fn first_release(&self, h: u32, mtu: u32) -> Option<(u64, u32, usize)> {
        let host = &self.hosts[h as usize];
        let n = host.live_tx.len().min(host.live_release.len());
        let (tx, rel) = (&host.live_tx[..n], &host.live_release[..n]);
        let may = |k: usize| self.flows[tx[k] as usize].can_send(mtu);
        if n == 1 {
            // One live flow (a NIC with one QP sending: the tiny example's, the incast's).
            return may(0).then(|| (rel[0], tx[0], 0));
        }
        let k0 = (0..n).find(|&k| may(k))?;
        let (mut best_k, mut best_r) = (k0, rel[k0]);
        let rest = k0 + 1;
        let (blocks, tail) = rel[rest..].as_chunks::<8>();
        for (b, block) in blocks.iter().enumerate() {
            // Only an earlier release wins (ties: the first in order); then may it send?
            if block.iter().fold(u64::MAX, |m, &r| m.min(r)) < best_r {
                let at = rest + 8 * b;
                for (j, &r) in block.iter().enumerate() {
                    if r < best_r && may(at + j) {
                        (best_k, best_r) = (at + j, r);
                    }
                }
            }
        }
        let at = rest + 8 * blocks.len();
        for (j, &r) in tail.iter().enumerate() {
            if r < best_r && may(at + j) {
                (best_k, best_r) = (at + j, r);
            }
        }
        Some((best_r, tx[best_k], best_k))
    }

    fn sender_event(&mut self, h: usize, fi: u32, local: u32, kind: EventKind) {
        let f = &mut self.flows[fi as usize];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: local,
            index: f.tx_events,
            kind,
        };
        f.tx_events += 1;
        self.feed_sender(h, &ev);
    }

    /// The sender model of host slot `h` takes `ev`; its decisions apply.
    pub(super) fn feed_sender(&mut self, h: usize, ev: &Event) {
        self.scratch.clear();
        if let Some(m) = self.hosts[h].sender.as_mut() {
            m.on_event(ev, &mut self.scratch);
        }
        self.apply_sender_decisions(h);
        self.arm_timer(h as u32, 0);
    }
}

/// Program a flow's rate limiter and window with a decision's outputs (the limiter keeps
/// `rate_mantissa_bits` of the rate).
#[inline]
fn set_flow(f: &mut FlowState, rate: Option<u64>, window: Option<u64>, dev: &device::DeviceConfig) {
    if let Some(r) = rate {
        f.rate_bps = dev.program_rate(r.max(1));
    }
    if let Some(w) = window {
        f.window_bytes = Some(w);
    }
}
