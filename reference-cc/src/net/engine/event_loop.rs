//! The event loop: events popped in (time, class, sequence) order and dispatched; model
//! timers (C-5) and retransmission timeouts.

use super::{
    CLASS_PACKET, CLASS_RTO, CLASS_SAMPLE, CLASS_TIMER, Ev, NONE, Network, deadline_ps, prefetch,
};
use crate::net::{NetError, PS_PER_NS, RunResult, TapSink};

impl Network {
    /// Run to the end of [`NetConfig::duration_ns`]; taps go to `sink`.
    pub fn run(mut self, sink: &mut dyn TapSink) -> Result<RunResult, NetError> {
        for h in 0..self.hosts.len() {
            if !self.hosts[h].tx_flows.is_empty() {
                let first = self.hosts[h].tx_flows[0] as usize;
                let t = self.flows[first].start_ps;
                self.wake_nic(h as u32, t);
            }
            self.arm_timers(h as u32);
        }
        let first_sample = self.first_sample_ps();
        self.schedule(first_sample, CLASS_SAMPLE, Ev::Sample);
        // Scheduled first: a link event comes before the packet events of its instant.
        for i in 0..self.link_events.len() {
            let t = self.link_events[i].0;
            self.schedule(t, CLASS_PACKET, Ev::Link { event: i as u32 });
        }
        while let Some((t_ps, _, ev)) = self.queue.pop() {
            if t_ps > self.end_ps {
                break;
            }
            self.now = t_ps;
            self.events += 1;
            // The next event's packet and port, fetched while this one runs.
            if let Some(&Ev::Arrive { port, pkt }) = self.queue.next_in_bucket() {
                if let Some(p) = self.slab.get(pkt as usize) {
                    prefetch(p);
                }
                if let Some(p) = self.ports.get(port as usize) {
                    prefetch(p);
                }
            }
            if self.events & 0xFFFF == 0 {
                sink.progress(self.now / PS_PER_NS);
            }
            match ev {
                Ev::Arrive { port, pkt } => self.arrive(port, pkt, sink)?,
                Ev::PortFree { port } => {
                    self.ports[port as usize].busy = false;
                    self.start_next(port, sink)?;
                }
                Ev::PortWake { port } => {
                    let p = &mut self.ports[port as usize];
                    if p.wake_at == self.now {
                        p.wake_at = NONE;
                    }
                    self.try_start(port, sink)?;
                }
                Ev::Timer { host, side } => self.fire_timers(host, side, sink)?,
                Ev::Rto { flow } => self.fire_rto(flow, sink)?,
                Ev::NicWake { host } => {
                    let h = &mut self.hosts[host as usize];
                    if h.wake_at == self.now {
                        h.wake_at = NONE;
                    }
                    let port = h.port;
                    self.try_start(port, sink)?;
                }
                Ev::PfcRefresh { port } => {
                    let p = &mut self.ports[port as usize];
                    if p.refresh_at == self.now {
                        p.refresh_at = NONE;
                        if p.xoff
                            && let Some(pfc) = self.cfg.switch.pfc
                        {
                            self.send_pfc(port, pfc.pause_quanta, sink)?;
                        }
                    }
                }
                Ev::Apply => self.apply_delayed(sink)?,
                Ev::Link { event } => self.link_event(event as usize, sink)?,
                Ev::Sample => self.sample(),
            }
        }
        self.now = self.end_ps;
        sink.progress(self.cfg.duration_ns);
        Ok(self.finish())
    }

    /// Schedule the host's model timers (C-5) when a deadline is earlier than the pending one.
    fn arm_timers(&mut self, h: u32) {
        self.arm_timer(h, 0);
        self.arm_timer(h, 1);
    }

    /// [`Self::arm_timers`] for one model, `side` 0 the sender's, 1 the receiver's: called
    /// after that model ran (an event, a timer). The other model's deadline cannot have moved
    /// (a model's deadline is its own state), so it was armed when it last ran.
    #[inline(always)]
    pub(super) fn arm_timer(&mut self, h: u32, side: u8) {
        // Answered at the call site for the models without timers (HPCC, FNCC): after every
        // event, a call and its frame for nothing.
        if self.hosts[h as usize].timers[side as usize] {
            self.arm_model_timer(h, side);
        }
    }

    /// [`Self::arm_timer`] for a model that may have a timer.
    fn arm_model_timer(&mut self, h: u32, side: u8) {
        let host = &self.hosts[h as usize];
        let m = if side == 0 {
            &host.sender
        } else {
            &host.receiver
        };
        let Some(d) = m.as_ref().and_then(|m| m.next_timer_ns()) else {
            return;
        };
        let t = deadline_ps(d).max(self.now);
        if t < host.timer_at[side as usize] {
            self.hosts[h as usize].timer_at[side as usize] = t;
            self.schedule(t, CLASS_TIMER, Ev::Timer { host: h, side });
        }
    }

    fn fire_timers(&mut self, h: u32, side: u8, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        if self.hosts[hi].timer_at[side as usize] == self.now {
            self.hosts[hi].timer_at[side as usize] = NONE;
        }
        loop {
            let host = &mut self.hosts[hi];
            let m = if side == 0 {
                host.sender.as_mut()
            } else {
                host.receiver.as_mut()
            };
            let Some(m) = m else { break };
            let Some(d) = m.next_timer_ns() else { break };
            if deadline_ps(d) > self.now {
                break;
            }
            self.scratch.clear();
            m.on_timer(d, &mut self.scratch);
            if m.next_timer_ns() == Some(d) {
                return Err(NetError::StuckTimer {
                    model: m.name(),
                    deadline_ns: d,
                });
            }
            if side == 0 {
                self.apply_sender_decisions(hi);
            } else {
                self.receiver_outputs(hi);
            }
        }
        self.arm_timer(h, side);
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    fn fire_rto(&mut self, fi: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let f = &mut self.flows[fi as usize];
        if f.rto_event != self.now {
            return Ok(());
        }
        f.rto_event = NONE;
        if f.rto_ps == NONE {
            return Ok(());
        }
        if f.rto_ps > self.now {
            // Progress pushed the deadline back: one pending event per flow.
            f.rto_event = f.rto_ps;
            let t = f.rto_ps;
            self.schedule(t, CLASS_RTO, Ev::Rto { flow: fi });
            return Ok(());
        }
        f.next = f.una; // go back N
        f.rto_ps = NONE;
        let h = f.src_host;
        let port = self.hosts[h as usize].port;
        self.try_start(port, sink)
    }

    pub(super) fn set_rto(&mut self, fi: u32, t: u64) {
        let f = &mut self.flows[fi as usize];
        f.rto_ps = t;
        if t != NONE && f.rto_event == NONE {
            f.rto_event = t;
            self.schedule(t, CLASS_RTO, Ev::Rto { flow: fi });
        }
    }
}
