//! The port under test as its taps show it: every frame that arrived for it (per ingress
//! port), every frame that left it, each data packet aligned entering and leaving, and the
//! egress queue reconstructed from both.
//!
//! Alignment: a data packet is known by (source IP, destination IP, destination QP, PSN); the
//! k-th arrival of a key is the k-th departure of it (a retransmission is a new arrival). The
//! queue: the frame bytes that arrived and did not yet start to leave — at equal timestamps a
//! departure counts first (the switch frees the frame on the wire when it starts it).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock};
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};

use crate::manifest::MirrorClock;

use super::{Setup, SwitchError};

/// ECN codepoint CE.
pub const ECN_CE: u8 = 3;

type Key = (IpAddr, IpAddr, u32, u32);

/// One data packet seen entering and leaving the port.
#[derive(Clone, Copy, Debug)]
pub struct Aligned {
    /// Arrival time (ingress tap), ns.
    pub t_in: u64,
    /// Departure time (egress mirror), ns.
    pub t_out: u64,
    /// Index of its ingress tap in the setup.
    pub ingress: usize,
    /// Frame bytes (on the egress side).
    pub frame: u32,
    /// ECN as it arrived and as it left.
    pub ecn_in: u8,
    /// ECN as it left.
    pub ecn_out: u8,
    /// Bytes queued ahead of it when it arrived (reconstructed).
    pub q_enqueue: u64,
    /// Bytes queued behind it when it started to leave (reconstructed).
    pub q_dequeue: u64,
    /// INT hop count as it arrived and as it left, and the record this switch wrote.
    pub int: Option<(u8, u8, IntHop)>,
    /// Its index in [`Port::departures`].
    pub out_index: usize,
}

/// A PFC frame the switch sent out of an ingress port.
#[derive(Clone, Copy, Debug)]
pub struct PfcSent {
    /// Time, ns.
    pub t: u64,
    /// Index of the ingress tap.
    pub ingress: usize,
    /// Largest pause time of the enabled classes (0 = XON).
    pub quanta: u16,
}

/// What the taps held.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Frames read from the ingress taps.
    pub ingress_frames: u64,
    /// Frames read from the egress mirror.
    pub egress_frames: u64,
    /// Data packets seen on both sides.
    pub aligned: u64,
    /// Data packets that arrived but were never seen leaving (dropped, or lost by a tap).
    pub arrived_only: u64,
    /// Data packets that left but were never seen arriving (lost by a tap).
    pub left_only: u64,
    /// PFC frames the switch sent upstream.
    pub pfc_sent: u64,
    /// Frames no check reads (not RoCEv2 nor PFC, malformed).
    pub other: u64,
}

/// The port under test.
pub struct Port {
    /// Counts.
    pub summary: Summary,
    /// Aligned data packets, in departure order.
    pub packets: Vec<Aligned>,
    /// Every frame that left: (time, frame bytes), in order (txBytes counts them all).
    pub departures: Vec<(u64, u32)>,
    /// PFC frames the switch sent, in time order.
    pub pfc_sent: Vec<PfcSent>,
    /// Arrivals of data from each ingress tap: (time, frame bytes), and when each left
    /// (`u64::MAX`: never seen leaving) — the ingress occupancy of PFC.
    pub ingress_data: Vec<Vec<(u64, u32, u64)>>,
    /// The port's rate, bps.
    pub rate_bps: u64,
    /// Data frames seen arriving and never leaving, at the time the FIFO says they left:
    /// (time, frame bytes) — the mirror lost them, or the switch dropped them.
    pub unseen_departures: Vec<(u64, u32)>,
    /// The reconstructed queue after each arrival and departure: (time, bytes), in time order.
    pub queue: Vec<(u64, u64)>,
    /// Frame bytes of `departures[..i]`, for each `i` (one more entry than departures).
    pub departed_cum: Vec<u64>,
    /// FNCC: each tapped ACK's time and the record this switch wrote (its last).
    pub ack_records: Vec<(u64, IntHop)>,
    /// No ingress taps: only the egress mirror. Each data packet that left with INT: (its
    /// index in `departures`, the record this switch wrote, the last of its stack).
    pub egress_only: Option<Vec<(usize, IntHop)>>,
}

impl Port {
    /// The reconstructed queue at `t` (after every change at or before it), bytes.
    pub fn queue_at(&self, t: u64) -> u64 {
        let i = self.queue.partition_point(|e| e.0 <= t);
        if i == 0 { 0 } else { self.queue[i - 1].1 }
    }

    /// Frame bytes of the departures that started before `t`.
    pub fn departed_before(&self, t: u64) -> u64 {
        self.departed_cum[self.departures.partition_point(|d| d.0 < t)]
    }
}

struct Frame {
    t: u64,
    len: u32,
    key: Option<Key>,
    ecn: u8,
    int: Option<(u8, Option<IntHop>)>,
    pfc: Option<u16>,
}

/// A record's time: the capture's, or with `[mirror] clock = "switch"` (`clock` given, one
/// for all the setup's captures: one switch stamps them all) its mirroring switch's, which
/// every record of those captures must carry.
fn frame_time(
    clock: &mut Option<SwitchClock>,
    p: &Packet<'_>,
    ts_ns: u64,
    frame: u64,
    path: &Path,
) -> Result<u64, SwitchError> {
    let Some(c) = clock else {
        return Ok(ts_ns);
    };
    let stamp = Stamp::of_packet(p);
    c.time(ts_ns, &stamp).ok_or_else(|| SwitchError::Capture {
        path: path.to_path_buf(),
        message: format!(
            "[mirror] clock = \"switch\", but frame {frame} has no switch time ({}): mirror the taps as ERSPAN III, or remove `clock = \"switch\"` from the setup's [mirror]",
            stamp.why_untimed()
        ),
    })
}

fn read(
    path: &Path,
    cfg: &DecodeConfig,
    clock: &mut Option<SwitchClock>,
) -> Result<(Vec<Frame>, u64), SwitchError> {
    let err = |m: String| SwitchError::Capture {
        path: path.to_path_buf(),
        message: m,
    };
    let mut r = CaptureReader::open(path).map_err(|e| err(e.to_string()))?;
    let mut out = Vec::new();
    let mut other = 0;
    while let Some(rec) = r.next_record() {
        let rec = rec.map_err(|e| err(e.to_string()))?;
        let p = Packet::from_record(&rec, cfg);
        let mut f = Frame {
            t: frame_time(clock, &p, rec.ts_ns, rec.frame_number, path)?,
            // A mirrored copy's own frame, not the encapsulation around it.
            len: u32::try_from(p.wire_len(rec.orig_len as usize)).unwrap_or(u32::MAX),
            key: None,
            ecn: 0,
            int: None,
            pfc: None,
        };
        if let Some(pfc) = p.pfc {
            f.pfc = Some(
                (0..8)
                    .filter(|c| pfc.class_enable & (1 << c) != 0)
                    .map(|c| pfc.quanta[c])
                    .max()
                    .unwrap_or(0),
            );
        } else if let (Some(ip), Some(roce), true) = (&p.ip, &p.roce, p.error.is_none()) {
            f.ecn = p.ecn().unwrap_or(0);
            if roce.is_flow_data() {
                f.key = Some((
                    ip.addrs.src(),
                    ip.addrs.dst(),
                    roce.bth.dest_qp(),
                    roce.bth.psn(),
                ));
                f.int = roce.int_stack().map(|s| {
                    let n = s.n_hop();
                    (n, n.checked_sub(1).and_then(|i| s.hop(usize::from(i))))
                });
            }
        } else {
            other += 1;
        }
        out.push(f);
    }
    Ok((out, other))
}

impl Port {
    /// Read the taps of `setup` (paths relative to `dir`) and align them.
    pub fn read(setup: &Setup, dir: &Path) -> Result<Self, SwitchError> {
        let dialect: Dialect = setup
            .dialect_name()
            .parse()
            .map_err(|e| SwitchError::Setup {
                path: dir.join("switch.toml"),
                message: format!("dialect: {e}"),
            })?;
        let cfg = DecodeConfig {
            mirror_session: setup.mirror.session,
            ..DecodeConfig::for_dialect(dialect)
        };
        let mut clock = (setup.mirror.clock == MirrorClock::Switch).then(SwitchClock::default);
        let mut summary = Summary::default();
        // (time, +bytes / −bytes, order) events of the queue, and the arrivals by key.
        let mut arrivals: Vec<(Frame, usize)> = Vec::new();
        let mut pfc_sent = Vec::new();
        for (i, ing) in setup.ingress.iter().enumerate() {
            let (frames, other) = read(&dir.join(&ing.capture), &cfg, &mut clock)?;
            summary.ingress_frames += frames.len() as u64;
            summary.other += other;
            for f in frames {
                if let Some(q) = f.pfc {
                    pfc_sent.push(PfcSent {
                        t: f.t,
                        ingress: i,
                        quanta: q,
                    });
                } else {
                    arrivals.push((f, i));
                }
            }
        }
        pfc_sent.sort_by_key(|p| p.t);
        summary.pfc_sent = pfc_sent.len() as u64;
        // Arrivals in time order (stable: file order within a tap).
        arrivals.sort_by_key(|(f, _)| f.t);
        let (egress, other) = read(&dir.join(setup.egress_capture()), &cfg, &mut clock)?;
        summary.egress_frames = egress.len() as u64;
        summary.other += other;
        let egress: Vec<Frame> = egress.into_iter().filter(|f| f.pfc.is_none()).collect();
        // An egress mirror alone: what the packets carry is all there is.
        let egress_only = setup.ingress.is_empty().then(|| {
            egress
                .iter()
                .enumerate()
                .filter_map(|(k, f)| Some((k, f.int?.1?)))
                .collect::<Vec<_>>()
        });
        // Alignment.
        let mut by_key: HashMap<Key, VecDeque<usize>> = HashMap::new();
        for (k, (f, _)) in arrivals.iter().enumerate() {
            if let Some(key) = f.key {
                by_key.entry(key).or_default().push_back(k);
            }
        }
        let arrival_of: Vec<Option<usize>> = egress
            .iter()
            .map(|f| {
                f.key
                    .and_then(|key| by_key.get_mut(&key).and_then(VecDeque::pop_front))
            })
            .collect();
        // Queue reconstruction: merge arrivals (+) and departures (−). At equal timestamps a
        // departure goes first (the switch frees the frame it starts) unless it is of a packet
        // whose own arrival is still to come (cut through the same ns).
        //
        // A frame one tap missed still went through the queue, which is FIFO for data: a data
        // packet seen arriving but not leaving left when the next packet seen on both sides
        // left (the switch may have dropped it instead: then the queue is overstated until
        // then); one seen leaving but not arriving arrived when the next such packet did.
        let mut departure_of = vec![None; arrivals.len()];
        for (d, a) in arrival_of.iter().enumerate() {
            if let Some(a) = a {
                departure_of[*a] = Some(d);
            }
        }
        let mut inferred: Vec<(u64, i64)> = Vec::new();
        let mut inferred_left = vec![u64::MAX; arrivals.len()];
        let mut next_left = None;
        for (a, (f, _)) in arrivals.iter().enumerate().rev() {
            match departure_of[a] {
                Some(d) => next_left = Some(egress[d].t),
                None if f.key.is_some() => {
                    if let Some(t) = next_left {
                        inferred.push((t, -i64::from(f.len)));
                        inferred_left[a] = t;
                    }
                }
                None => {}
            }
        }
        let mut next_arrived = None;
        for (d, f) in egress.iter().enumerate().rev() {
            match arrival_of[d] {
                Some(a) => next_arrived = Some(arrivals[a].0.t),
                None if f.key.is_some() => {
                    inferred.push((next_arrived.unwrap_or(f.t).min(f.t), i64::from(f.len)));
                }
                None => {}
            }
        }
        inferred.sort_unstable();
        let mut inf = 0;
        let mut q: i64 = 0;
        let mut timeline: Vec<(u64, u64)> = Vec::with_capacity(arrivals.len() + egress.len());
        let mut q_at_arrival = vec![0u64; arrivals.len()];
        let mut q_after_departure = vec![0u64; egress.len()];
        let (mut a, mut d) = (0, 0);
        while a < arrivals.len() || d < egress.len() {
            let now = match (arrivals.get(a), egress.get(d)) {
                (Some(x), Some(y)) => x.0.t.min(y.t),
                (Some(x), None) => x.0.t,
                (None, Some(y)) => y.t,
                (None, None) => u64::MAX,
            };
            while inf < inferred.len() && inferred[inf].0 <= now {
                q += inferred[inf].1;
                timeline.push((inferred[inf].0, q.max(0) as u64));
                inf += 1;
            }
            let take_departure = d < egress.len()
                && (a == arrivals.len()
                    || egress[d].t < arrivals[a].0.t
                    || (egress[d].t == arrivals[a].0.t && arrival_of[d].is_none_or(|ai| ai < a)));
            if take_departure {
                q -= i64::from(egress[d].len);
                q_after_departure[d] = q.max(0) as u64;
                timeline.push((egress[d].t, q_after_departure[d]));
                d += 1;
            } else {
                q_at_arrival[a] = q.max(0) as u64;
                q += i64::from(arrivals[a].0.len);
                timeline.push((arrivals[a].0.t, q.max(0) as u64));
                a += 1;
            }
        }
        let mut ingress_data: Vec<Vec<(u64, u32, u64)>> = vec![Vec::new(); setup.ingress.len()];
        let mut left_at = vec![u64::MAX; arrivals.len()];
        let mut packets = Vec::new();
        let mut departures = Vec::with_capacity(egress.len());
        for (k, f) in egress.iter().enumerate() {
            departures.push((f.t, f.len));
            if f.key.is_none() {
                continue;
            }
            let Some(ai) = arrival_of[k] else {
                summary.left_only += 1;
                continue;
            };
            left_at[ai] = f.t;
            let (fin, ingress) = &arrivals[ai];
            summary.aligned += 1;
            packets.push(Aligned {
                t_in: fin.t,
                t_out: f.t,
                ingress: *ingress,
                frame: f.len,
                ecn_in: fin.ecn,
                ecn_out: f.ecn,
                q_enqueue: q_at_arrival[ai],
                q_dequeue: q_after_departure[k],
                int: match (fin.int, f.int) {
                    (Some((n_in, _)), Some((n_out, Some(hop)))) => Some((n_in, n_out, hop)),
                    _ => None,
                },
                out_index: k,
            });
        }
        let mut unseen_departures = Vec::new();
        for (k, (f, i)) in arrivals.iter().enumerate() {
            if f.key.is_some() {
                if left_at[k] == u64::MAX {
                    summary.arrived_only += 1;
                    if inferred_left[k] != u64::MAX {
                        unseen_departures.push((inferred_left[k], f.len));
                    }
                }
                ingress_data[*i].push((f.t, f.len, left_at[k].min(inferred_left[k])));
            }
        }
        unseen_departures.sort_unstable();
        // FNCC: the ACKs the switch wrote the port's record into, as they left (the record is
        // the last of the stack: docs/sim.md "Switch port taps").
        let mut ack_records = Vec::new();
        if let Some(acks) = &setup.acks {
            let path = dir.join(acks);
            let err = |m: String| SwitchError::Capture {
                path: path.clone(),
                message: m,
            };
            let mut r = CaptureReader::open(&path).map_err(|e| err(e.to_string()))?;
            while let Some(rec) = r.next_record() {
                let rec = rec.map_err(|e| err(e.to_string()))?;
                let p = Packet::from_record(&rec, &cfg);
                let t = frame_time(&mut clock, &p, rec.ts_ns, rec.frame_number, &path)?;
                if let Some(hop) = p.roce.as_ref().and_then(|roce| {
                    let s = roce.int_stack()?;
                    s.hop(usize::from(s.n_hop().checked_sub(1)?))
                }) {
                    ack_records.push((t, hop));
                }
            }
        }
        let mut departed_cum = Vec::with_capacity(departures.len() + 1);
        departed_cum.push(0u64);
        for d in &departures {
            departed_cum.push(departed_cum.last().copied().unwrap_or(0) + u64::from(d.1));
        }
        Ok(Port {
            summary,
            packets,
            departures,
            pfc_sent,
            ingress_data,
            rate_bps: setup.port_rate_bps,
            unseen_departures,
            queue: timeline,
            departed_cum,
            ack_records,
            egress_only,
        })
    }
}
