//! Pass 2: every record decoded and classified on its own (`pre_event`, on several threads
//! with `--jobs`), then applied in capture order (`Apply`): flow lookup, per-flow numbering,
//! time clamping, copies, the account of every record.

// Flow lookups happen per packet: FxHash (rustc-hash) instead of SipHash, whose DoS resistance
// buys nothing for keys read from the user's own capture.
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::Record;
use ccreplay_codecs::ib::Syndrome;
use ccreplay_codecs::lumina::LuminaEvent;
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock};
use ccreplay_codecs::packet::{AckExt, Packet, Roce, Shim};
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::{Event, EventKind, FlowId};

use super::account::{LuminaReport, TALLY_KEYS, top};
use super::classify::{Seen, classify, icrc_fails, lost_on_the_way, ours};
use super::copies::{DupKey, Recent};
use super::open_capture;
use super::{ExtractError, ExtractReport, FlowTable, MirrorSource, Skip, Sources};
use crate::manifest::{CapturePoint, Manifest, MirrorClock};
use crate::path::{Fate, Frame, HOLD_NS, PathKey, Points, Way};

fn ack_info(r: &Roce<'_>) -> (bool, AckInfo) {
    let aeth = r.aeth().unwrap_or_default();
    let nak = matches!(aeth.decoded(), Syndrome::Nak(_) | Syndrome::RnrNak { .. });
    let (mut n, mut cwnd, mut flags) = (None, None, None);
    let (mut ts, mut int): (Option<u64>, Option<IntStack>) = (None, None);
    match r.shim {
        Shim::Int(s) => int = Some(s.to_owned_stack()),
        Shim::RccTimestamp(t) => ts = Some(t),
        Shim::None => {}
    }
    match r.ack_ext {
        AckExt::Fncc(f) => {
            n = Some(f.n);
            int = Some(f.int.to_owned_stack());
        }
        AckExt::Rcc(e) => {
            n = Some(e.n);
            cwnd = Some(e.cwnd);
            flags = Some(e.flags);
        }
        AckExt::None => {}
    }
    (
        nak,
        AckInfo {
            psn: r.bth.psn(),
            syndrome: aeth.syndrome,
            int,
            n,
            cwnd,
            rcc_flags: flags,
            ts_ns: ts,
        },
    )
}

/// What one record is at the capture point before its flow is looked up. Computed for each
/// record on its own (on several threads with `--jobs`), then applied in capture order. The
/// event is built here, in place: applying it only fills in the flow, the ordinal and the
/// clamped time, and hands it on without copying (an HPCC event is ~250 bytes).
struct Pre {
    /// Cut by snaplen after its headers (replayed: the event is whole).
    cut: bool,
    what: What,
    /// The record's frame number.
    frame: u64,
    /// Where a switch mirrored it from (`None`: captured on the port itself).
    source: Option<MirrorSource>,
    /// The mirroring switch's timestamp.
    stamp: Stamp,
    /// The event, if `what` is `Data` or `Ack`; `t_ns` is the record's time.
    ev: Event,
    /// What tells a data frame from another of its flow (`Data` only): a copy has the same.
    dup: DupKey,
    /// What tells a frame from another of its direction through routers, and its TTL
    /// (`Data` and `Ack`): the same packet at another point of its path has the same key.
    path: (PathKey, u8),
    /// A Lumina copy's switch sequence number and event.
    lumina: Option<(u64, LuminaEvent)>,
    /// A NAK, an RNR NAK or a READ request, in either direction: what makes a sender resend
    /// (go-back-N resends frames it sent just before, so a resend can follow its original by
    /// less than a round trip; after one of these, no frame is taken for a copy of one before).
    resend_cue: bool,
}

enum What {
    Malformed {
        frame: u64,
        error: ccreplay_codecs::DecodeError,
        /// UDP to the RoCEv2 port.
        roce: bool,
        /// From or to the capture point's host.
        ours: bool,
        /// The record is shorter than the packet was (snaplen).
        cut: bool,
    },
    /// A packet the capture point receives (always its host's traffic).
    BadIcrc {
        frame: u64,
    },
    /// UDP to another port.
    OtherUdp(u16),
    /// A record of a link type the decoder does not read (the link type).
    UnsupportedLink(u32),
    Skip(Skip),
    /// Of another host: the data sender, if it is data.
    OtherHost(Option<IpAddr>),
    /// A mirrored copy of another session than `[mirror] session` (its session, if any).
    OtherMirror(Option<u16>),
    /// A data packet of the flow (local IP at a switch port, remote IP, QP).
    Data {
        local: Option<IpAddr>,
        remote: IpAddr,
        qp: u32,
    },
    /// An ACK / NAK / CNP of the flow (remote IP, local QP).
    Ack {
        remote: IpAddr,
        qp: u32,
    },
}

/// Decode and classify one record.
#[inline]
fn pre_event(rec: &Record<'_>, cfg: &DecodeConfig, point: &CapturePoint) -> Pre {
    let p = Packet::from_record(rec, cfg);
    let mut pre = Pre {
        cut: false,
        what: What::Skip(Skip::NotRoce),
        frame: rec.frame_number,
        source: None,
        stamp: Stamp::NotMirrored,
        ev: Event {
            t_ns: rec.ts_ns,
            flow: 0,
            index: 0,
            kind: EventKind::RxCnp,
        },
        dup: DupKey::default(),
        path: (PathKey::default(), 0),
        lumina: None,
        resend_cue: false,
    };
    if let Some(m) = &p.mirror {
        if !m.read {
            pre.what = What::OtherMirror(m.erspan.map(|e| e.span_id()));
            return pre;
        }
        pre.source = Some(MirrorSource::of(m));
    }
    // A mirror's or a Lumina copy's switch time (none for a packet captured on the port).
    pre.stamp = Stamp::of_packet(&p);
    pre.lumina = p.lumina.map(|l| (l.seq, l.event));
    if p.error.is_some() && p.headers_complete() {
        // Cut by snaplen after the headers (a header-only capture): the event is whole. Only a
        // cut frame gets here — length fields are checked against the original length, so a
        // whole frame's error is never past its headers (codecs' packet_vectors
        // `headers_whole_with_an_error_means_cut_by_snaplen`; the fuzz targets assert it). A
        // mirroring switch's cut (ERSPAN T, `Packet::cut`) counts as the snaplen's.
        pre.cut = true;
    } else if let Some(error) = p.error {
        // A link type the decoder does not read: not malformed, unread (native InfiniBand).
        if let Err(ccreplay_codecs::capture::LinkError::Unsupported(link)) = rec.link_start() {
            pre.what = What::UnsupportedLink(link);
            return pre;
        }
        pre.what = What::Malformed {
            frame: rec.frame_number,
            error,
            roce: p.udp.is_some_and(|u| u.dst_port == cfg.udp_port),
            ours: ours(point, &p),
            cut: p.cut(rec.is_truncated()),
        };
        return pre;
    }
    if p.roce.is_none() {
        pre.what = match (p.pfc, p.udp) {
            (Some(_), _) => What::Skip(Skip::Pfc),
            (None, Some(u)) => What::OtherUdp(u.dst_port),
            (None, None) => What::Skip(Skip::NotRoce),
        };
        return pre;
    }
    if let Some(r) = &p.roce {
        // AETH syndrome bits 6..5: 01 RNR NAK, 11 NAK (docs/wire.md 3), read without
        // decoding the AETH of every ACK.
        pre.resend_cue = r.bth.opcode().is_read_request()
            || r.aeth
                .is_some_and(|a| matches!((a[0] >> 5) & 3, 0b01 | 0b11));
    }
    let seen = classify(point, &p);
    if seen.received() && icrc_fails(&p) {
        pre.what = What::BadIcrc {
            frame: rec.frame_number,
        };
        return pre;
    }
    if seen.received() && lost_on_the_way(&p) {
        pre.what = What::Skip(Skip::SwitchLost);
        return pre;
    }
    // A tunnelled packet's mark is what decapsulation leaves (RFC 6040; a dropped one reads
    // as Not-ECT: its receiver never sees it).
    let ecn = p.ecn().unwrap_or(0);
    // Not at a switch port, where copies are not looked for (`stream_events_jobs`).
    if let Seen::DataOut(_, r) | Seen::DataIn(_, r) | Seen::AckIn(_, r) | Seen::PortData(_, _, r) =
        seen
    {
        pre.path = PathKey::of(rec, &p, r);
    }
    if let Seen::DataOut(..) | Seen::DataIn(..) = seen {
        pre.dup = DupKey::of(rec, &p, pre.path.0);
    }
    let data = |local, remote, r: &Roce<'_>| What::Data {
        local,
        remote,
        qp: r.bth.dest_qp(),
    };
    (pre.what, pre.ev.kind) = match seen {
        Seen::DataOut(remote, r) => (
            data(None, remote, r),
            EventKind::TxData {
                psn: r.bth.psn(),
                bytes: r.payload_wire_len as u32,
                opcode: r.bth.opcode().0,
            },
        ),
        Seen::AckIn(remote, r) => (
            What::Ack {
                remote,
                qp: r.bth.dest_qp(),
            },
            if r.bth.opcode().is_cnp() {
                EventKind::RxCnp
            } else {
                let (nak, info) = ack_info(r);
                if nak {
                    EventKind::RxNak(info)
                } else {
                    EventKind::RxAck(info)
                }
            },
        ),
        Seen::DataIn(remote, r) => (
            data(None, remote, r),
            EventKind::RxData {
                psn: r.bth.psn(),
                bytes: r.payload_wire_len as u32,
                opcode: r.bth.opcode().0,
                ecn,
                send_ts_ns: match r.shim {
                    Shim::RccTimestamp(t) => Some(t),
                    _ => None,
                },
            },
        ),
        Seen::PortData(src, dst, r) => (
            data(Some(src), dst, r),
            // The queue length this port reported: its own INT record, the last one filled
            // when the packet left it (hpcc dialect; wire.md 5.3).
            EventKind::Dequeue {
                psn: r.bth.psn(),
                bytes: rec.orig_len,
                opcode: r.bth.opcode().0,
                ecn,
                qlen_bytes: match r.shim {
                    Shim::Int(s) => s
                        .n_hop()
                        .checked_sub(1)
                        .and_then(|i| s.hop(i as usize))
                        .map(|h| h.qlen_bytes()),
                    _ => None,
                },
            },
        ),
        Seen::Skip(Skip::OtherHost) => (
            What::OtherHost(
                p.roce
                    .filter(|r| r.is_flow_data())
                    .and(p.ip.map(|ip| ip.addrs.src())),
            ),
            EventKind::RxCnp,
        ),
        Seen::Skip(why) => (What::Skip(why), EventKind::RxCnp),
        Seen::NotRoce => (What::Skip(Skip::NotRoce), EventKind::RxCnp),
    };
    pre
}

/// The sequential half of pass 2: flow lookup, per-flow numbering, time clamping, counts.
struct Apply<'t> {
    table: &'t mut FlowTable,
    report: ExtractReport,
    unpaired: HashMap<(IpAddr, u32), u64>,
    senders: HashMap<IpAddr, u64>,
    ports: HashMap<u16, u64>,
    sessions: HashMap<Option<u16>, u64>,
    sources: Sources,
    /// `[mirror] clock = "switch"`.
    clock: Option<SwitchClock>,
    last_t: u64,
    /// Data frames closer than this to one they copy are counted (`ExtractReport::copies`):
    /// the base RTT; 0 (none) at a switch port.
    dup_window_ns: u64,
    /// Each flow's last data frames, by flow id.
    recent: Vec<Recent>,
    /// Resend cues so far (`Pre::resend_cue`): frames of different epochs are never copies.
    epoch: u64,
    /// Each flow direction's points of the path (path.rs).
    points: Points,
    /// Events waiting for their direction's point to be known, and every event after them
    /// (events go out in capture order).
    held: VecDeque<Held>,
}

/// What an event carries from its record to its use.
#[derive(Clone, Copy)]
struct Meta {
    flow: FlowId,
    /// Data (`tx_data`, `rx_data`, `dequeue`), not feedback.
    data: bool,
    frame: u64,
    /// The record's own time (the event's, before the switch's clock and the clamp).
    t_ns: u64,
    epoch: u64,
    dup: DupKey,
    source: Option<MirrorSource>,
    stamp: Stamp,
    switch_t: Option<u64>,
}

/// An event held back (`Fate::Hold`), or queued behind one.
struct Held {
    meta: Meta,
    /// Its TTL, to decide it when its direction is known.
    ttl: u8,
    /// Used, decided already (queued behind a held one).
    used: bool,
    ev: Event,
}

impl Meta {
    /// The event's flow direction in `Points`: 2 × flow, + 1 for ACK / NAK / CNP.
    fn dir(&self) -> usize {
        2 * self.flow as usize + usize::from(!self.data)
    }
}

/// Count `key` in a tally that keeps at most [`TALLY_KEYS`] keys.
fn tally<K: Eq + std::hash::Hash>(m: &mut HashMap<K, u64>, key: K) {
    let n = m.len();
    match m.get_mut(&key) {
        Some(c) => *c += 1,
        None if n < TALLY_KEYS => {
            m.insert(key, 1);
        }
        None => {}
    }
}

impl<'t> Apply<'t> {
    fn new(
        table: &'t mut FlowTable,
        mut report: ExtractReport,
        clock: MirrorClock,
        dup_window_ns: u64,
    ) -> Self {
        report.capture_error = None;
        report.flow_events = vec![0u64; table.flows.len()];
        Apply {
            table,
            report,
            unpaired: HashMap::default(),
            senders: HashMap::default(),
            ports: HashMap::default(),
            sessions: HashMap::default(),
            sources: Sources::default(),
            clock: (clock == MirrorClock::Switch).then(SwitchClock::default),
            last_t: 0,
            dup_window_ns,
            recent: Vec::new(),
            epoch: 0,
            points: Points::default(),
            held: VecDeque::new(),
        }
    }

    #[inline]
    fn apply(&mut self, pre: &mut Pre, sink: &mut impl FnMut(&mut Event)) {
        // Every stamped record moves its switch's clock, event or not (SwitchClock::time).
        let switch_t = match &mut self.clock {
            Some(c) => c.time(pre.ev.t_ns, &pre.stamp),
            None => None,
        };
        self.epoch += u64::from(pre.resend_cue);
        let report = &mut self.report;
        if let Some((seq, event)) = pre.lumina {
            report
                .lumina
                .get_or_insert_with(LuminaReport::default)
                .count(pre.frame, seq, event);
        }
        report.packets += 1;
        report.snaplen_cut += pre.cut as u64;
        let flow = match pre.what {
            What::Malformed {
                frame,
                ref error,
                roce,
                ours,
                cut,
            } => {
                report.malformed += 1;
                report.snaplen_short += cut as u64;
                report.skipped.add(Skip::Malformed);
                report.roce += roce as u64;
                report.damaged_in_traffic += ours as u64;
                if report.malformed_examples.len() < 5 {
                    report.malformed_examples.push((frame, error.to_string()));
                }
                return;
            }
            What::BadIcrc { frame } => {
                report.skip(Skip::BadIcrc);
                report.damaged_in_traffic += 1;
                if report.bad_icrc_examples.len() < 5 {
                    report.bad_icrc_examples.push(frame);
                }
                return;
            }
            What::OtherUdp(port) => {
                report.skip(Skip::OtherUdpPort);
                tally(&mut self.ports, port);
                return;
            }
            What::UnsupportedLink(link) => {
                report.skip(Skip::UnsupportedLink);
                ccreplay_codecs::capture::count_link(&mut report.unsupported_links, link, 1);
                return;
            }
            What::OtherHost(sender) => {
                report.skip(Skip::OtherHost);
                report.not_this_host += 1;
                if let Some(ip) = sender {
                    tally(&mut self.senders, ip);
                }
                return;
            }
            What::Skip(why) => {
                report.skip(why);
                return;
            }
            What::OtherMirror(session) => {
                report.skip(Skip::OtherMirrorSession);
                tally(&mut self.sessions, session);
                return;
            }
            What::Data { local, remote, qp } => match self.table.data_flow_mut(local, remote, qp) {
                Some(flow) => flow,
                None => {
                    report.skip(Skip::NoFlow);
                    return;
                }
            },
            What::Ack { remote, qp } => match self.table.ack_flow_mut(remote, qp) {
                Some(flow) => flow,
                None => {
                    report.skip(Skip::UnpairedAck);
                    // Two passes: pass 1 listed the unpaired directions already.
                    if self.table.grow.is_some() {
                        *self.unpaired.entry((remote, qp)).or_insert(0) += 1;
                    }
                    return;
                }
            },
        };
        let data = matches!(
            pre.ev.kind,
            EventKind::TxData { .. } | EventKind::RxData { .. } | EventKind::Dequeue { .. }
        );
        let meta = Meta {
            flow,
            data,
            frame: pre.frame,
            t_ns: pre.ev.t_ns,
            epoch: self.epoch,
            dup: pre.dup,
            source: pre.source,
            stamp: pre.stamp,
            switch_t,
        };
        // The same packet at another point of its path (path.rs): the host's copy is used.
        let (key, ttl) = pre.path;
        let way = match pre.ev.kind {
            EventKind::TxData { .. } => Way::Sent,
            EventKind::Dequeue { .. } => Way::AtPort,
            _ => Way::Received,
        };
        let frame = Frame {
            key,
            ttl,
            frame: pre.frame,
            t_ns: pre.ev.t_ns,
        };
        let fate = self.points.see(meta.dir(), frame, way);
        if fate == Fate::Use && self.held.is_empty() {
            self.emit(meta, &mut pre.ev, sink);
            return;
        }
        if let Fate::Skip { far_kept } = fate {
            self.skip_path_copy(far_kept);
        } else {
            self.held.push_back(Held {
                meta,
                ttl,
                used: fate == Fate::Use,
                ev: pre.ev,
            });
        }
        self.release(pre.ev.t_ns, sink);
    }

    /// A copy at the other point of its path, skipped.
    fn skip_path_copy(&mut self, far_kept: bool) {
        self.report.skip(Skip::PathCopy);
        self.report.path_far_kept += u64::from(far_kept);
    }

    /// The held events whose fate is known go out (or are skipped), in order; a direction
    /// whose first held frame waited [`HOLD_NS`] (at `now_ns`) is taken for one point.
    fn release(&mut self, now_ns: u64, sink: &mut impl FnMut(&mut Event)) {
        while let Some(h) = self.held.front() {
            let (dir, ttl) = (h.meta.dir(), h.ttl);
            let decided = if h.used {
                Some(true)
            } else {
                self.points.held_is_used(dir, ttl)
            };
            let used = match decided {
                Some(used) => used,
                None if now_ns.saturating_sub(h.meta.t_ns) >= HOLD_NS => {
                    self.points.settle(dir, ttl);
                    continue;
                }
                None => return,
            };
            let Some(mut h) = self.held.pop_front() else {
                return;
            };
            if used {
                self.emit(h.meta, &mut h.ev, sink);
            } else {
                self.skip_path_copy(false);
            }
        }
        if self.points.done_holding() && self.held.capacity() > 0 {
            // Nothing will be held again: the capture start's worth, freed.
            self.held = VecDeque::new();
        }
    }

    /// The end of the capture: every direction still unknown is one point.
    fn flush(&mut self, sink: &mut impl FnMut(&mut Event)) {
        self.release(u64::MAX, sink);
    }

    /// An event goes out: copies counted, mirror sources checked, timed by the switch's clock
    /// when asked, clamped, numbered in its flow.
    #[inline(always)]
    fn emit(&mut self, m: Meta, ev: &mut Event, sink: &mut impl FnMut(&mut Event)) {
        let report = &mut self.report;
        let flow = m.flow;
        if m.data && self.dup_window_ns > 0 {
            if self.recent.len() <= flow as usize {
                self.recent.resize(flow as usize + 1, Recent::default());
            }
            let w = self.dup_window_ns;
            let recent = &mut self.recent[flow as usize];
            if let Some(of) = recent.copy_of(m.dup, m.t_ns, m.epoch, w, m.frame) {
                report.copies += 1;
                report.first_copy.get_or_insert((m.frame, of));
            }
        }
        self.sources.check(flow, m.data, m.source, m.frame);
        if let Some(clock) = &mut self.clock {
            clock.count_event(&m.stamp, m.switch_t, m.frame);
            ev.t_ns = m.switch_t.unwrap_or(ev.t_ns);
        }
        // Model time never goes backwards (C-2, C-5): a capture whose clock steps back feeds
        // the event at the previous time, and says how often it did.
        if ev.t_ns < self.last_t {
            report.time_clamped += 1;
            report.time_back_max_ns = report.time_back_max_ns.max(self.last_t - ev.t_ns);
            ev.t_ns = self.last_t;
        }
        self.last_t = ev.t_ns;
        if report.flow_events.len() <= flow as usize {
            report.flow_events.resize(flow as usize + 1, 0);
        }
        let i = &mut report.flow_events[flow as usize];
        ev.flow = flow;
        ev.index = *i;
        *i += 1;
        report.events += 1;
        report.roce += 1;
        report.event_kinds.add(&ev.kind);
        sink(ev);
    }

    fn finish(self) -> ExtractReport {
        let mut report = self.report;
        let mut unpaired: Vec<_> = self
            .unpaired
            .into_iter()
            .map(|((ip, qp), n)| (ip, qp, n))
            .collect();
        unpaired.sort();
        report.unpaired_acks.extend(unpaired);
        report.other_data_senders = top(self.senders);
        report.other_udp_ports = top(self.ports);
        report.other_mirror_sessions = top(self.sessions);
        if self.sources.mirrored() {
            report.mirror_sources = self.sources.counts;
        }
        report.mirror_conflicts = self.sources.conflicts;
        report.mirror_conflict = self.sources.conflict;
        report.switch_clock = self.clock.map(|c| c.report);
        report.path_pair = self.points.first_pair;
        report.path_directions = self.points.two;
        report.ttl_flips = self.points.most_flips();
        report
    }
}

/// Pass 2: stream the events of a capture, in capture order, to `sink`. Returns the report.
/// The manifest says how to decode (`decode_config`), where the capture was taken and whose
/// clock times the events (`[mirror] clock`).
pub fn stream_events(
    capture: &Path,
    manifest: &Manifest,
    table: &mut FlowTable,
    report: ExtractReport,
    mut sink: impl FnMut(&Event),
) -> Result<ExtractReport, ExtractError> {
    stream_events_jobs(capture, manifest, table, report, 0, |e| sink(e))
}

/// [`stream_events`] with records decoded on `workers` threads (0: on the calling thread).
/// The same events in the same order: flows are looked up and numbered, and `sink` called, on
/// the calling thread, in capture order. `sink` may change the event it is given (a scratch
/// copy, built in place), so that passing it on needs no copy.
pub fn stream_events_jobs(
    capture: &Path,
    manifest: &Manifest,
    table: &mut FlowTable,
    report: ExtractReport,
    workers: usize,
    mut sink: impl FnMut(&mut Event),
) -> Result<ExtractReport, ExtractError> {
    let (cfg, point) = (&manifest.decode_config(), &manifest.capture_point);
    let clock = manifest.mirror.clock;
    let mut reader = open_capture(capture)?;
    let mut report = report;
    report.host = point.host();
    // At a switch port the NAKs that make a sender resend go the other way, not captured:
    // a resend there cannot be told from a copy.
    let dup_window_ns = match point {
        CapturePoint::Sender { .. } | CapturePoint::Receiver { .. } => manifest.network.base_rtt_ns,
        CapturePoint::SwitchPort { .. } => 0,
    };
    let mut a = Apply::new(table, report, clock, dup_window_ns);
    if workers == 0 {
        while let Some(rec) = reader.next_record() {
            match rec {
                Ok(rec) => a.apply(&mut pre_event(&rec, cfg, point), &mut sink),
                Err(e) => {
                    a.report.capture_error = Some(e.to_string());
                    break;
                }
            }
        }
        a.flush(&mut sink);
        return Ok(a.finish());
    }
    let done = crate::batches::par_batches(
        reader,
        workers,
        || (),
        |(), batch, out: &mut Vec<Pre>| {
            out.clear();
            out.extend(batch.records().map(|rec| pre_event(&rec, cfg, point)));
        },
        Vec::new,
        |out| {
            for pre in out.iter_mut() {
                a.apply(pre, &mut sink);
            }
            Ok::<(), std::convert::Infallible>(())
        },
    );
    let capture_error = match done {
        Ok((_, e)) => e,
        Err(never) => match never {},
    };
    a.flush(&mut sink);
    let mut report = a.finish();
    report.capture_error = capture_error;
    Ok(report)
}
