//! Metric samples during the run and the metrics of its end (metrics.rs, docs/metrics.md).

use super::{CLASS_SAMPLE, Ev, NONE, Network};
use crate::net::metrics::{
    FlowMetrics, JainWindow, Metrics, PfcMetrics, PortMetrics, Series, percentile,
};
use crate::net::{PS_PER_NS, RunResult, TapRun};

impl Network {
    /// The first sample: the first `k × interval` (`k ≥ 1`) at or after the earliest flow
    /// start. Before it no packet exists, so every queue is empty and no flow has a series:
    /// an experiment that starts its flows after a warm-up (the ns-3 simulator's start at
    /// 2 s) samples nothing of the idle time.
    pub(super) fn first_sample_ps(&self) -> u64 {
        let first_start = self
            .by_start
            .first()
            .map_or(0, |&fi| self.flows[fi as usize].start_ps);
        first_start.div_ceil(self.sample_ps).max(1) * self.sample_ps
    }

    /// Whether no queue can fill again: every flow has started, finished and had its last
    /// sample, no packet is left anywhere (in a queue, on a wire, at a NIC), and no receiver
    /// model has a timer armed (a DCQCN NP's pending CNP is sent by its timer). From then on
    /// every queue sample would be 0 and no flow has a series, so sampling stops.
    fn quiet(&self) -> bool {
        self.started == self.by_start.len()
            && self.sampling.is_empty()
            && self.free.len() == self.slab.len()
            && self.hosts.iter().all(|h| h.timer_at[1] == NONE)
    }

    pub(super) fn sample(&mut self) {
        let t_ns = self.now / PS_PER_NS;
        self.sample_times.push(t_ns);
        let secs = self.cfg.sample_interval_ns;
        while let Some(&fi) = self.by_start.get(self.started)
            && self.flows[fi as usize].start_ps <= self.now
        {
            self.sampling.push(fi);
            self.started += 1;
        }
        let mut i = 0;
        while let Some(&fi) = self.sampling.get(i) {
            let f = &mut self.flows[fi as usize];
            // From its start to the first sample at or after its end (which holds its last
            // bytes): a finished flow's series stop, so memory follows the active flows, not
            // flows × run length.
            if f.finish_ps
                .is_some_and(|fin| self.now >= fin.saturating_add(self.sample_ps))
            {
                self.sampling.swap_remove(i);
                continue;
            }
            i += 1;
            let d = f.delivered_bytes - f.delivered_at_sample;
            f.delivered_at_sample = f.delivered_bytes;
            let bps = u128::from(d) * 8_000_000_000 / u128::from(secs);
            f.throughput
                .push(t_ns, u64::try_from(bps).unwrap_or(u64::MAX));
            f.rate_series.push(t_ns, f.rate_bps);
            if let Some(w) = f.window_bytes {
                f.window_series.push(t_ns, w);
            }
        }
        for p in &mut self.ports {
            if p.switch != u32::MAX {
                p.queue_samples.push(p.queued_bytes);
            }
        }
        if let Some(j) = &mut self.jain {
            // No flow finished before this sample: every finish so far is at or after it.
            let running = self.first_finish_ps == NONE || t_ns <= self.first_finish_ps / PS_PER_NS;
            j.sample_counts(t_ns, running, self.flows.iter().map(|f| f.delivered_bytes));
        }
        let next = self.now + self.sample_ps;
        if next <= self.end_ps && !self.quiet() {
            self.schedule(next, CLASS_SAMPLE, Ev::Sample);
        }
    }

    pub(super) fn finish(mut self) -> RunResult {
        let end = self.end_ps;
        let names = &self.cfg.topology.nodes;
        let mut taps: Vec<TapRun> = self
            .cfg
            .taps
            .iter()
            .map(|&n| TapRun {
                host: n,
                ..TapRun::default()
            })
            .collect();
        for h in &mut self.hosts {
            if let Some(t) = h.tap {
                taps[t].sender_flows = h.tx_flows.clone();
                taps[t].receiver_flows = h.rx_flows.clone();
                taps[t].sender_decisions = std::mem::take(&mut h.sender_decisions);
                taps[t].receiver_decisions = std::mem::take(&mut h.receiver_decisions);
            }
        }
        let host_name = |slot: u32| names[self.hosts[slot as usize].node as usize].name.clone();
        let flows: Vec<FlowMetrics> = self
            .flows
            .iter_mut()
            .enumerate()
            .map(|(i, f)| {
                let start_ns = f.start_ps / PS_PER_NS;
                let finish_ns = f.finish_ps.map(|t| t / PS_PER_NS);
                FlowMetrics {
                    id: i as u32,
                    src: host_name(f.src_host),
                    dst: host_name(f.dst_host),
                    size_bytes: f.message_bytes,
                    start_ns,
                    finish_ns,
                    fct_ns: finish_ns.map(|t| t - start_ns),
                    bytes_acked: f.bytes_before(f.una, self.cfg.mtu_bytes),
                    throughput_bps: std::mem::take(&mut f.throughput),
                    rate_bps: std::mem::take(&mut f.rate_series),
                    window_bytes: std::mem::take(&mut f.window_series),
                }
            })
            .collect();
        let duration_ns = self.cfg.duration_ns;
        let mut total_pause = 0u64;
        let mut total_paused_ps = 0u64;
        let ports: Vec<PortMetrics> = self
            .ports
            .iter_mut()
            .filter(|p| p.switch != u32::MAX)
            .map(|p| {
                let paused_ps = p.paused_total(end);
                total_pause += p.pause_sent;
                total_paused_ps += paused_ps;
                let samples = std::mem::take(&mut p.queue_samples);
                let node = names[p.node as usize].name.clone();
                PortMetrics {
                    name: format!("{node}:p{}", p.index),
                    node,
                    port: u32::from(p.index),
                    peer: names[p.peer as usize].name.clone(),
                    rate_bps: p.rate_bps,
                    tx_bytes: p.tx_bytes,
                    utilization: p.tx_bytes as f64 * 8.0
                        / (p.rate_bps as f64 * duration_ns as f64 * 1e-9),
                    queue_p95_bytes: percentile(&samples, 0.95),
                    queue_max_bytes: p.queue_max,
                    queue_bytes: Series {
                        t_ns: self.sample_times.clone(),
                        v: samples,
                    },
                    ecn_marked: p.ecn_marked,
                    dropped: p.dropped,
                    pfc: PfcMetrics {
                        pause_frames_sent: p.pause_sent,
                        paused_ns: paused_ps / PS_PER_NS,
                        pause_frames_received: p.pause_received,
                    },
                }
            })
            .collect();
        // Host NICs paused by their switch count too.
        for p in self.ports.iter().filter(|p| p.host != u32::MAX) {
            total_paused_ps += p.paused_total(end);
        }
        let jain = self.jain.as_ref().and_then(JainWindow::index);
        let metrics = Metrics {
            version: 1,
            scenario: self.cfg.name.clone(),
            seed: self.cfg.seed,
            model: self.cfg.cc.family().to_string(),
            duration_ns,
            sample_interval_ns: self.cfg.sample_interval_ns,
            events: self.events,
            base_rtt_ns: self.base_rtt_ns,
            flows,
            ports,
            pfc: crate::net::metrics::PfcTotals {
                pause_frames: total_pause,
                paused_ns: total_paused_ps / PS_PER_NS,
            },
            drops: self.drops,
            jain_index: jain,
        };
        RunResult { taps, metrics }
    }
}
