//! What a run measured, in the shape of `metrics.json` (docs/metrics.md; serde field order is
//! the file's key order). The same types read the file back (`ccreplay report sim`): keys a
//! reader does not know are ignored and missing ones take empty values, so a file from a
//! newer simulator still reads.

use serde::{Deserialize, Serialize};

/// A time series: `t_ns[i]` ns from the start, value `v[i]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Series {
    /// Sample times, ns, increasing.
    pub t_ns: Vec<u64>,
    /// Values.
    pub v: Vec<u64>,
}

impl Series {
    /// Append a point.
    pub fn push(&mut self, t_ns: u64, v: u64) {
        self.t_ns.push(t_ns);
        self.v.push(v);
    }

    /// Values at times in `[from_ns, to_ns]`.
    pub fn between(&self, from_ns: u64, to_ns: u64) -> impl Iterator<Item = u64> + '_ {
        self.t_ns
            .iter()
            .zip(&self.v)
            .filter(move |(t, _)| (from_ns..=to_ns).contains(*t))
            .map(|(_, v)| *v)
    }
}

/// One flow.
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowMetrics {
    /// Scenario flow id.
    pub id: u32,
    /// Sending host.
    pub src: String,
    /// Receiving host.
    pub dst: String,
    /// Message size.
    pub size_bytes: u64,
    /// Start time, ns.
    pub start_ns: u64,
    /// When the last byte was acknowledged at the sender, ns; `None` if unfinished.
    pub finish_ns: Option<u64>,
    /// `finish_ns - start_ns`.
    pub fct_ns: Option<u64>,
    /// Payload bytes acknowledged by the end.
    pub bytes_acked: u64,
    /// Goodput at the receiver (in-order payload) over each sample interval, bps.
    pub throughput_bps: Series,
    /// The sender's pacing rate at each sample, bps.
    pub rate_bps: Series,
    /// The sender's window at each sample, bytes (empty when rate-only).
    pub window_bytes: Series,
}

/// PFC figures of one switch port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PfcMetrics {
    /// XOFF frames sent out of this port (its ingress crossed XOFF, or a refresh).
    pub pause_frames_sent: u64,
    /// Time this port's data egress was paused by its peer, ns.
    pub paused_ns: u64,
    /// PFC frames (XOFF and XON) received on this port.
    pub pause_frames_received: u64,
}

/// One switch port (its egress).
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PortMetrics {
    /// `switch:pN`.
    pub name: String,
    /// Switch name.
    pub node: String,
    /// Port index at the switch.
    pub port: u32,
    /// The node at the other end.
    pub peer: String,
    /// Line rate.
    pub rate_bps: u64,
    /// Bytes transmitted (all frames).
    pub tx_bytes: u64,
    /// `tx_bytes × 8 / (rate_bps × duration)`.
    pub utilization: f64,
    /// Bytes waiting in the egress queues at each sample.
    pub queue_bytes: Series,
    /// 95th percentile (nearest rank) of the queue samples.
    pub queue_p95_bytes: u64,
    /// Largest queue at any enqueue.
    pub queue_max_bytes: u64,
    /// Data packets CE-marked at enqueue.
    pub ecn_marked: u64,
    /// Packets dropped because the shared buffer was full.
    pub dropped: u64,
    /// PFC.
    pub pfc: PfcMetrics,
}

/// Network-wide PFC totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PfcTotals {
    /// XOFF frames sent by all switches.
    pub pause_frames: u64,
    /// Time any port (switch or host NIC) spent paused, summed over ports, ns.
    pub paused_ns: u64,
}

/// Everything `metrics.json` holds.
#[derive(Clone, Default, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metrics {
    /// Format version (1).
    pub version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Seed that ran.
    pub seed: u64,
    /// Model family.
    pub model: String,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Sample interval, ns.
    pub sample_interval_ns: u64,
    /// Events of the run: those the loop processed, and the port-free instants it proved idle
    /// and did not queue (docs/sim.md "Clocks and order").
    pub events: u64,
    /// The base RTT `T` the models ran with, ns.
    pub base_rtt_ns: u64,
    /// Per flow.
    pub flows: Vec<FlowMetrics>,
    /// Per switch port.
    pub ports: Vec<PortMetrics>,
    /// PFC totals.
    pub pfc: PfcTotals,
    /// Packets dropped anywhere.
    pub drops: u64,
    /// Jain's fairness index over the flows' mean goodput while all were active; `None` when
    /// they never were all active over a full sample interval.
    pub jain_index: Option<f64>,
}

/// Nearest-rank percentile `q` of `samples` (0 when empty): the `ceil(q × n)`-th smallest.
pub fn percentile(samples: &[u64], q: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    let mut s = samples.to_vec();
    s.sort_unstable();
    let rank = (q * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

/// Jain's index `(Σx)² / (n Σx²)` of the flows' goodput over the samples where every flow
/// had started and none had finished. `flows` = (start ns, finish ns, cumulative delivered
/// bytes at each sample time).
pub fn jain_index(flows: &[(u64, Option<u64>, &[u64])], sample_times: &[u64]) -> Option<f64> {
    if flows.is_empty() {
        return None;
    }
    let from = flows.iter().map(|f| f.0).max()?;
    let to = flows.iter().map(|f| f.1.unwrap_or(u64::MAX)).min()?;
    // First and last sample inside (from, to].
    let first = sample_times.iter().position(|&t| t > from)?;
    let last = sample_times.iter().rposition(|&t| t <= to)?;
    if last <= first {
        return None;
    }
    let x: Vec<f64> = flows
        .iter()
        .map(|f| f.2[last].saturating_sub(f.2[first]) as f64)
        .collect();
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
}

/// [`jain_index`] computed as the samples come, without keeping them: the flows' cumulative
/// delivered bytes at two samples only — the first after every flow has started, and the last
/// before any has finished (a `Vec` per flow of every sample's count grew with the simulated
/// time, beyond the series `metrics.json` holds).
#[derive(Clone, Debug, Default)]
pub struct JainWindow {
    /// The latest start, ns (flows' starts are known before the run).
    from_ns: u64,
    /// Samples so far.
    n: usize,
    /// Index and counts of the first sample after `from_ns`.
    first: Option<(usize, Vec<u64>)>,
    /// Index and counts of the latest sample no later than every finish so far.
    last: Option<(usize, Vec<u64>)>,
}

impl JainWindow {
    /// For flows starting at these times, ns; `None` without flows.
    pub fn new(starts_ns: impl IntoIterator<Item = u64>) -> Option<Self> {
        Some(JainWindow {
            from_ns: starts_ns.into_iter().max()?,
            ..JainWindow::default()
        })
    }

    /// One sample at `t_ns` (increasing): per flow, its finish so far, ns, and the bytes it
    /// has delivered. A flow that finishes after this sample finishes at or after `t_ns`
    /// (samples come last at their time), so "no later than every finish so far" is
    /// [`jain_index`]'s "no later than the first finish".
    pub fn sample(&mut self, t_ns: u64, flows: impl Iterator<Item = (Option<u64>, u64)> + Clone) {
        let running = flows
            .clone()
            .all(|(finish, _)| finish.is_none_or(|f| t_ns <= f));
        self.sample_counts(t_ns, running, flows.map(|f| f.1));
    }

    /// [`JainWindow::sample`] with "no flow finished before `t_ns`" (`running`) known: the
    /// counts are read only when the sample is kept, so a sample after the first finish
    /// costs nothing per flow.
    pub fn sample_counts(
        &mut self,
        t_ns: u64,
        running: bool,
        counts: impl Iterator<Item = u64> + Clone,
    ) {
        let i = self.n;
        self.n += 1;
        if self.first.is_none() && t_ns > self.from_ns {
            self.first = Some((i, counts.clone().collect()));
        }
        // Not before the first sample after every start: a `last` that early is either
        // replaced by a later one or before `first`, where the index is `None` as without
        // it. Skipped, the counts of every flow are not read sample after sample while the
        // flows have yet to start (a run whose traffic starts late).
        if running && self.first.is_some() {
            match &mut self.last {
                Some((at, kept)) => {
                    *at = i;
                    kept.clear();
                    kept.extend(counts);
                }
                None => self.last = Some((i, counts.collect())),
            }
        }
    }

    /// The index: what [`jain_index`] gives over all the samples.
    pub fn index(&self) -> Option<f64> {
        let ((first, a), (last, b)) = (self.first.as_ref()?, self.last.as_ref()?);
        if last <= first {
            return None;
        }
        let x = || a.iter().zip(b).map(|(a, b)| b.saturating_sub(*a) as f64);
        let sum: f64 = x().sum();
        let sq: f64 = x().map(|v| v * v).sum();
        (sq > 0.0).then(|| sum * sum / (a.len() as f64 * sq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three flows sampled every 10 ns; flow 1 starts at 25 ns, flow 2 finishes at 72 ns:
    /// [`jain_index`] over the kept counts and [`JainWindow`] fed sample by sample agree, and
    /// by hand: first sample after 25 is t = 30 (index 3), last no later than 72 is t = 70
    /// (index 7); deltas over it 40, 20, 40 bytes: (100)² / (3 × 3,600) = 0.9259...
    #[test]
    fn streaming_jain_is_the_index_over_all_samples() {
        let times: Vec<u64> = (0..12).map(|i| 10 * i).collect();
        let starts = [0u64, 25, 0];
        let finishes = [None, None, Some(72u64)];
        // Cumulative bytes: flow 0 and 2 deliver 10 per sample, flow 1 5 from its start.
        let cum: Vec<Vec<u64>> = vec![
            times.clone(),
            times.iter().map(|t| t.saturating_sub(20) / 2).collect(),
            times.iter().map(|t| (*t).min(80)).collect(),
        ];
        let expected = jain_index(
            &[
                (starts[0], finishes[0], &cum[0][..]),
                (starts[1], finishes[1], &cum[1][..]),
                (starts[2], finishes[2], &cum[2][..]),
            ],
            &times,
        );
        let by_hand = 100.0 * 100.0 / (3.0 * (40.0 * 40.0 + 20.0 * 20.0 + 40.0 * 40.0));
        assert_eq!(expected, Some(by_hand));
        let mut w = JainWindow::new(starts).unwrap();
        for (i, &t) in times.iter().enumerate() {
            // Flow 2's finish is known from the sample at or after 72 ns on.
            let fin = |f: usize| finishes[f].filter(|&x| x <= t);
            w.sample(t, (0..3).map(|f| (fin(f), cum[f][i])));
        }
        assert_eq!(w.index(), expected);
        // Every flow's counts read only from the first sample after the last start (30 ns):
        // the samples at 0, 10, 20 leave `last` as it was.
        let mut w = JainWindow::new(starts).unwrap();
        for (i, &t) in times.iter().enumerate().take(3) {
            w.sample(t, (0..3).map(|f| (None, cum[f][i])));
            assert!(w.last.is_none() && w.first.is_none(), "{t}");
        }
        // Running until 55 ns, flows starting at 100 ns: the samples while running are before
        // the first after 100, so no index (as when the sample at 50 is kept: last 0 <= first).
        let mut w = JainWindow::new([100]).unwrap();
        w.sample(50, [(None, 1)].into_iter());
        for t in [60, 110, 120] {
            w.sample(t, [(Some(55), 1)].into_iter());
        }
        assert_eq!(w.index(), None);
        // No flows, or no sample inside the window: none.
        assert!(JainWindow::new([]).is_none());
        let mut w = JainWindow::new([100]).unwrap();
        w.sample(50, [(None, 1)].into_iter());
        assert_eq!(w.index(), None);
    }
}
