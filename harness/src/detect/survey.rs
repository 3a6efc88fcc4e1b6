//! What a capture shows about where and how it was taken: the host at the tap and which way
//! its data goes, the flows (both directions paired by PSN), and the link rate, MTU and base
//! RTT as far as the packets tell them. `ccreplay init` writes a manifest from it; `inspect`
//! lists its flows.
//!
//! Every estimate says how it was made ([`Estimate::how`]), for the comment `init` writes
//! beside it.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::capture::{CaptureError, CaptureReader, TsGrain};
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock, SwitchClockReport};
use ccreplay_codecs::{DecodeConfig, Packet};

use super::link_rate::{self, LinkRuns, Recent};
use crate::path::{Fate, Frame, PathKey, PathPair, Points, Way};

/// One direction of RoCEv2 traffic: packets from `src` to `dst` with this DestQP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Direction {
    /// Source IP.
    pub src: IpAddr,
    /// Destination IP.
    pub dst: IpAddr,
    /// BTH DestQP.
    pub dest_qp: u32,
}

/// Packets of one direction, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionCounts {
    /// Frame number of its first packet (for ordering).
    pub first_frame: u64,
    /// Data packets: SEND / WRITE requests and READ responses.
    pub data: u64,
    /// ACK and NAK packets.
    pub acks: u64,
    /// CNPs.
    pub cnps: u64,
    /// READ requests (a READ flow's feedback direction: its requests, then its CNPs).
    pub read_requests: u64,
}

/// A flow as the capture shows it: its data direction and, when seen, the direction its
/// ACKs / NAKs / CNPs come back on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenFlow {
    /// The data direction (`dest_qp`: the receiver's QP).
    pub data: Direction,
    /// The feedback direction (`dest_qp`: the sender's QP), paired by PSN.
    pub feedback: Option<Direction>,
    /// Data packets.
    pub data_packets: u64,
    /// Feedback packets (ACK, NAK, CNP).
    pub feedback_packets: u64,
    /// READ requests on the feedback direction (what paired a READ flow).
    pub feedback_reads: u64,
}

/// A value read off the capture and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The value.
    pub value: u64,
    /// How it was made and how to correct it (one line).
    pub how: String,
    /// False when the capture could not tell and `value` is a default to replace.
    pub measured: bool,
}

/// What a capture shows.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// Frames read.
    pub frames: u64,
    /// RoCEv2 packets read cleanly.
    pub roce: u64,
    /// Every direction, with counts.
    pub directions: BTreeMap<Direction, DirectionCounts>,
    /// Packets (RoCEv2) each IP address is the source or destination of.
    pub ips: BTreeMap<IpAddr, u64>,
    /// Largest data payload, bytes.
    pub max_payload: u64,
    /// Largest payload of a data packet that does not end its message (FIRST, MIDDLE: a
    /// full path MTU, IBA 9.7.4), bytes; 0 when every message was one packet.
    pub max_full_payload: u64,
    /// The fastest runs of consecutive data frames per link (src for data leaving, dst for
    /// data arriving), for [`Survey::link_rate`].
    pub runs: BTreeMap<IpAddr, LinkRuns>,
    /// The unit of the times the estimates use, ns: the capture's timestamps' as they show
    /// it (`TsGrain`), or the switches' stamps' when their clock times the events.
    pub resolution_ns: u64,
    /// Per data sender: the smallest delay from its data packet to the ACK with its PSN, and
    /// how many pairs.
    pub min_rtt: BTreeMap<IpAddr, (u64, u64)>,
    /// READ responses among the data packets (no ACK answers them).
    pub read_responses: u64,
    /// UDP packets that are not RoCEv2, by destination port.
    pub other_udp: BTreeMap<u16, u64>,
    /// Records of link types ccreplay does not read (native InfiniBand, ...), by link type.
    pub unsupported_links: Vec<(u32, u64)>,
    /// (data direction, feedback direction) → packets paired by PSN.
    pairs: HashMap<(Direction, Direction), u64>,
    /// Feedback directions → ACKs of a PSN that two QPs to the same peer had sent, neither
    /// yet answered: they could answer either flow, and pair neither.
    pub ambiguous: BTreeMap<Direction, u64>,
    /// A framing error that ended the capture early.
    pub capture_error: Option<String>,
    /// RoCEv2 packets a switch mirrored with a timestamp that reads as a time (ERSPAN III,
    /// Gra 0-2), and the coarsest unit of those stamps, ns.
    pub stamped: u64,
    /// See `stamped`.
    pub stamp_unit_ns: u64,
    /// The switches' clocks against the capture's (`capture_minus_switch_ns`: how far the
    /// capture's times were from the stamps), whichever times the estimates use.
    pub switch_clock: SwitchClockReport,
    /// RoCEv2 packets that look like the copies in a Lumina dump as its dumper writes them
    /// (docs/wire.md 2.3): IPv4 with a TTL of 0 to 3 (the switch's event) and a source MAC
    /// that reads as the switch's sequence number (below 2^31).
    pub lumina_like: u64,
    /// RoCEv2 packets per ERSPAN session (`None`: captured on the port, or mirrored without a
    /// session: ERSPAN I, gretap).
    pub sessions: BTreeMap<Option<u16>, u64>,
    /// The same packet (addresses, DestQP, PSN, opcode) seen in two sessions — mirrored twice:
    /// (the session it was first seen in, the other) → packets, among the first
    /// [`MAX_IDENTITIES`] packets of the capture.
    pub copied: BTreeMap<(Option<u16>, Option<u16>), u64>,
    /// RoCEv2 packets seen again at another point of their path (a TTL lower by the routers
    /// between: crate::path), left out of every count and estimate but the base RTT's (which
    /// times the ACKs nearest the data's sender).
    pub path_copies: u64,
    /// The first of them.
    pub path_pair: Option<PathPair>,
    /// Per (data sender, peer): the lowest TTL of the peer's ACKs — the point nearest the
    /// sender when the capture holds two — and the smallest delay of those ACKs and how many;
    /// `min_rtt` is made from it at the end (peers at other distances have other TTLs).
    rtt_by_peer: BTreeMap<(IpAddr, IpAddr), (u8, u64, u64)>,
}

/// The data packet last sent with a PSN, as the ACKs of that PSN find it.
#[derive(Clone, Copy)]
struct Sent {
    /// Its DestQP.
    qp: u32,
    /// When, ns.
    ts: u64,
    /// Sent more than once (by its QP, or by another too).
    again: bool,
    /// Another QP to the same peer had sent the PSN too, not yet answered.
    shared: bool,
    /// An ACK of the PSN came back.
    acked: bool,
}

impl Sent {
    fn new(qp: u32, ts: u64) -> Self {
        Sent {
            qp,
            ts,
            again: false,
            shared: false,
            acked: false,
        }
    }

    /// The round trip an ACK of its PSN at `ts` times: none for a PSN sent twice (Karn's
    /// rule) or by two QPs, or an ACK stamped before it.
    fn rtt(&self, ts: u64) -> Option<u64> {
        (!self.again && !self.shared && ts >= self.ts).then(|| ts - self.ts)
    }
}

/// Packets remembered to find copies of them in another session.
pub const MAX_IDENTITIES: usize = 1 << 16;

/// Most data timestamps kept for RTT pairing; the map restarts when full (the smallest delay
/// is found among the pairs that fit).
const MAX_PENDING: usize = 1 << 20;

impl Survey {
    /// A data-to-ACK delay `d` of `sender`'s, its ACK from `peer` seen with `ttl`: of each
    /// peer's ACKs, those with the lowest TTL count (nearest the sender, when the capture holds
    /// a packet at two points of its path; with one point every ACK of a path has the same).
    fn rtt_sample(&mut self, sender: IpAddr, peer: IpAddr, d: u64, ttl: u8) {
        let m = self
            .rtt_by_peer
            .entry((sender, peer))
            .or_insert((ttl, d, 0));
        if ttl < m.0 {
            *m = (ttl, d, 0);
        }
        if ttl == m.0 {
            (m.1, m.2) = (m.1.min(d), m.2 + 1);
        }
    }

    /// The UDP port most non-RoCEv2 UDP packets go to, and how many (the lowest port of a
    /// tie).
    pub fn busiest_other_udp(&self) -> Option<(u16, u64)> {
        self.other_udp
            .iter()
            .max_by_key(|&(&port, &count)| (count, std::cmp::Reverse(port)))
            .map(|(&p, &c)| (p, c))
    }

    /// Read the whole capture with `cfg`; with `switch_clock`, times are the mirroring
    /// switches' (codecs `mirror_clock`, as `[mirror] clock = "switch"` gives them to the
    /// replay), else the capture's.
    pub fn read(
        path: &Path,
        cfg: &DecodeConfig,
        switch_clock: bool,
    ) -> Result<Survey, CaptureError> {
        let mut reader = CaptureReader::open(path)?;
        let mut s = Survey::default();
        let mut clock = SwitchClock::default();
        // (src, dst, psn) of a data packet → who sent it last and when.
        let mut sent: HashMap<(IpAddr, IpAddr, u32), Sent> = HashMap::new();
        // (requester, responder, psn) of a READ request → its DestQP (the responder's QP).
        let mut requested: HashMap<(IpAddr, IpAddr, u32), u32> = HashMap::new();
        // The latest data frames per (src, dst), for the link rate.
        let mut recent: HashMap<(IpAddr, IpAddr), Recent> = HashMap::new();
        let mut grain = TsGrain::default();
        // A packet's identity → the session it was first seen in.
        type Identity = (IpAddr, IpAddr, u32, u32, u8);
        let mut first_session: HashMap<Identity, Option<u16>> = HashMap::new();
        // Each direction's points of the path: a dense index for `Points`.
        let mut points = Points::default();
        let mut dir_index: HashMap<Direction, usize> = HashMap::new();
        while let Some(rec) = reader.next_record() {
            let rec = match rec {
                Ok(r) => r,
                Err(e) => {
                    s.capture_error = Some(e.to_string());
                    break;
                }
            };
            s.frames += 1;
            grain.add(rec.interface_id, rec.ts_ns);
            let p = Packet::from_record(&rec, cfg);
            let stamp = Stamp::of_packet(&p);
            let switch_ts = clock.time(rec.ts_ns, &stamp);
            let ts = match switch_ts {
                Some(t) if switch_clock => t,
                _ => rec.ts_ns,
            };
            let (Some(roce), Some(ip)) = (p.roce.as_ref(), p.ip.as_ref()) else {
                if let Some(u) = p.udp.filter(|u| u.dst_port != cfg.udp_port) {
                    *s.other_udp.entry(u.dst_port).or_default() += 1;
                }
                if p.error.is_some()
                    && let Err(ccreplay_codecs::capture::LinkError::Unsupported(l)) =
                        rec.link_start()
                {
                    ccreplay_codecs::capture::count_link(&mut s.unsupported_links, l, 1);
                }
                continue;
            };
            if !p.headers_complete() || p.icrc_check().is_some_and(|(c, f)| c != f) {
                continue;
            }
            let (src, dst) = (ip.addrs.src(), ip.addrs.dst());
            let op = roce.bth.opcode();
            let psn = roce.bth.psn();
            let dir = Direction {
                src,
                dst,
                dest_qp: roce.bth.dest_qp(),
            };
            // The same packet at another point of its path: each direction's copies nearest
            // its source are counted (the first seen); an ACK's others still time the RTT.
            let (key, ttl) = PathKey::of(&rec, &p, roce);
            let n = dir_index.len();
            let di = *dir_index.entry(dir).or_insert(n);
            let f = Frame {
                key,
                ttl,
                frame: rec.frame_number,
                t_ns: ts,
            };
            // Counted as their source sends them: the first copy, never held.
            let fate = points.see(di, f, Way::Sent);
            if let Fate::Skip { .. } = fate {
                s.path_copies += 1;
                if op.is_ack()
                    && let Some(d) = sent.get(&(dst, src, psn)).and_then(|e| e.rtt(ts))
                {
                    s.rtt_sample(dst, src, d, ttl);
                }
                continue;
            }
            s.roce += 1;
            if p.lumina.is_none()
                && ip.ttl <= 3
                && matches!(ip.addrs, ccreplay_codecs::packet::IpAddrs::V4 { .. })
                && p.eth
                    .is_some_and(|e| e.src[..2] == [0, 0] && e.src[2] < 0x80)
            {
                s.lumina_like += 1;
            }
            if let Stamp::Timed { time, .. } = stamp {
                s.stamped += 1;
                s.stamp_unit_ns = s.stamp_unit_ns.max(time.unit_ns);
            }
            let session = p
                .mirror
                .as_ref()
                .and_then(|m| m.erspan.map(|e| e.span_id()));
            *s.sessions.entry(session).or_default() += 1;
            let id = (src, dst, dir.dest_qp, psn, op.0);
            match first_session.get(&id) {
                Some(&first) if first != session => {
                    *s.copied.entry((first, session)).or_default() += 1;
                }
                Some(_) => {}
                None if first_session.len() < MAX_IDENTITIES => {
                    first_session.insert(id, session);
                }
                None => {}
            }
            *s.ips.entry(src).or_default() += 1;
            if dst != src {
                *s.ips.entry(dst).or_default() += 1;
            }
            let c = s.directions.entry(dir).or_insert(DirectionCounts {
                first_frame: rec.frame_number,
                ..Default::default()
            });
            if op.is_read_request() {
                c.read_requests += 1;
                if requested.len() >= MAX_PENDING {
                    requested.clear();
                }
                requested.insert((src, dst, psn), dir.dest_qp);
            } else if roce.is_flow_data() {
                c.data += 1;
                // A READ response answers the request of its PSN (the first response's PSN
                // is the request's): the request's direction is the flow's feedback
                // direction, where the requester's CNPs go. No RTT sample: at the responder
                // the two are a processing time apart, not a round trip.
                let read = op.is_read_response();
                s.read_responses += read as u64;
                if read && let Some(qp) = requested.remove(&(dst, src, psn)) {
                    let request = Direction {
                        src: dst,
                        dst: src,
                        dest_qp: qp,
                    };
                    *s.pairs.entry((dir, request)).or_default() += 1;
                }
                s.max_payload = s.max_payload.max(roce.payload_wire_len as u64);
                // Every packet of a message but its last carries a full MTU.
                let full = if read {
                    matches!(op.operation(), 0x0D | 0x0E)
                } else {
                    !op.ends_message()
                };
                if full {
                    s.max_full_payload = s.max_full_payload.max(roce.payload_wire_len as u64);
                }
                // A mirrored frame's own length, not the copy's with the encapsulation.
                let len = p.wire_len((rec.orig_len as usize).max(rec.data.len())) as u64;
                let ended = recent.entry((src, dst)).or_default().push(ts, len);
                // Per host link: a sender's data leaves on its link, a receiver's arrives.
                for host in [src, dst] {
                    let link = s.runs.entry(host).or_default();
                    for (k, run) in ended.iter().enumerate() {
                        if let Some(run) = run {
                            link.offer(k, *run, grain.ns());
                        }
                    }
                }
                if sent.len() >= MAX_PENDING {
                    sent.clear();
                }
                let qp = dir.dest_qp;
                let e = match sent.get(&(src, dst, psn)) {
                    None => Sent::new(qp, ts),
                    // Karn's rule: an ACK of a PSN sent twice may answer either copy, so a
                    // retransmitted PSN gives no RTT sample (go-back-N resends after losses).
                    Some(e) if e.qp == qp => Sent {
                        ts,
                        again: true,
                        acked: false,
                        ..*e
                    },
                    // Another QP's PSN, already answered: that flow is past it.
                    Some(e) if e.acked => Sent::new(qp, ts),
                    // Another QP to the same peer sent this PSN too, and no ACK has answered
                    // it (two flows from PSN 0, as simulators start): an ACK of it could
                    // answer either, so it pairs neither and times nothing.
                    Some(_) => Sent {
                        again: true,
                        shared: true,
                        ..Sent::new(qp, ts)
                    },
                };
                sent.insert((src, dst, psn), e);
            } else if op.is_ack() || op.is_cnp() {
                if op.is_ack() {
                    c.acks += 1;
                } else {
                    c.cnps += 1;
                }
                // The data this feedback answers: same PSN, the other way (CNPs carry no
                // data PSN and pair only through an ACK of the same direction).
                if op.is_ack()
                    && let Some(e) = sent.get_mut(&(dst, src, psn))
                {
                    e.acked = true;
                    if e.shared {
                        *s.ambiguous.entry(dir).or_default() += 1;
                        continue;
                    }
                    let data = Direction {
                        src: dst,
                        dst: src,
                        dest_qp: e.qp,
                    };
                    *s.pairs.entry((data, dir)).or_default() += 1;
                    if let Some(d) = e.rtt(ts) {
                        // The data's sender (the ACK's destination) timed it.
                        s.rtt_sample(dst, src, d, ttl);
                    }
                }
            }
        }
        s.switch_clock = clock.report;
        s.path_pair = points.first_pair;
        for (&(sender, _), &(_, d, n)) in &s.rtt_by_peer {
            let m = s.min_rtt.entry(sender).or_insert((d, 0));
            *m = (m.0.min(d), m.1 + n);
        }
        s.resolution_ns = if switch_clock && s.stamped > 0 {
            s.stamp_unit_ns.max(1)
        } else {
            grain.ns()
        };
        Ok(s)
    }

    /// The host at the tap: the one address every RoCEv2 packet is from or to (None at a
    /// switch port, where no address is on every packet).
    pub fn tap_host(&self) -> Option<IpAddr> {
        self.ips
            .iter()
            .filter(|&(_, &n)| n == self.roce && n > 0)
            .map(|(ip, _)| *ip)
            .max_by_key(|ip| {
                // Two addresses on every packet (one peer): the one that sends data.
                self.directions
                    .iter()
                    .filter(|(d, _)| d.src == *ip)
                    .map(|(_, c)| c.data)
                    .sum::<u64>()
            })
    }

    /// Data packets `host` sends and receives.
    pub fn data_of(&self, host: IpAddr) -> (u64, u64) {
        let mut out = (0, 0);
        for (d, c) in &self.directions {
            if d.src == host {
                out.0 += c.data;
            }
            if d.dst == host {
                out.1 += c.data;
            }
        }
        out
    }

    /// The flows: every direction that carries data, in order of first appearance, each with
    /// the feedback direction most of its PSNs were answered on.
    pub fn flows(&self) -> Vec<SeenFlow> {
        let mut data: Vec<(&Direction, &DirectionCounts)> =
            self.directions.iter().filter(|(_, c)| c.data > 0).collect();
        data.sort_by_key(|(_, c)| c.first_frame);
        data.into_iter()
            .map(|(d, c)| {
                let feedback = self
                    .pairs
                    .iter()
                    .filter(|((x, _), _)| x == d)
                    .max_by_key(|((_, f), n)| (**n, std::cmp::Reverse(*f)))
                    .map(|((_, f), _)| *f);
                let fb = feedback.and_then(|f| self.directions.get(&f));
                SeenFlow {
                    data: *d,
                    feedback,
                    data_packets: c.data,
                    feedback_packets: fb.map_or(0, |c| c.acks + c.cnps),
                    feedback_reads: fb.map_or(0, |c| c.read_requests),
                }
            })
            .collect()
    }

    /// The link rate of `host`, from the fastest runs of consecutive data frames on its link
    /// (`link_rate`): the nearest Ethernet rate within 15 %, when the timestamps' unit leaves
    /// one. `None` (no host at the tap): the link of the lowest address with two data frames.
    pub fn link_rate(&self, host: Option<IpAddr>) -> Estimate {
        let runs = match host {
            Some(h) => self.runs.get(&h),
            None => self.runs.values().next(),
        };
        link_rate::estimate(runs, self.resolution_ns)
    }

    /// The base RTT of `sender`'s flows, from the smallest delay from its data packet to the
    /// ACK with its PSN (`None`: not at a sender; a receiver's capture holds no round trip).
    pub fn base_rtt(&self, sender: Option<IpAddr>) -> Estimate {
        let at_sender = sender.is_some();
        match sender.and_then(|h| self.min_rtt.get(&h)).copied() {
            Some((d, n)) if d > 0 => Estimate {
                value: d,
                how: if self.resolution_ns > 1 {
                    format!(
                        "the smallest data-to-ACK delay of {n} ACKs (timestamps at the tap, to {} ns; set the device's configured T if it differs)",
                        self.resolution_ns
                    )
                } else {
                    format!(
                        "the smallest data-to-ACK delay of {n} ACKs (timestamps at the tap; set the device's configured T if it differs)"
                    )
                },
                measured: true,
            },
            _ => Estimate {
                value: 10_000,
                how: if at_sender && self.read_responses > 0 {
                    "no ACK answers a data packet's PSN (READ responses are acknowledged by none): 10 µs assumed; set your network's base RTT".into()
                } else if at_sender {
                    "no ACK answers a data packet's PSN: 10 µs assumed; set your network's base RTT"
                        .into()
                } else {
                    "a receiver's capture holds no round trip: 10 µs assumed; set your network's base RTT".into()
                },
                measured: false,
            },
        }
    }

    /// The MTU: the largest payload of a packet that does not end its message (a full
    /// MTU); without one, the smallest IB MTU that holds the largest payload, a guess.
    pub fn mtu(&self) -> Estimate {
        if self.max_full_payload > 0 {
            return Estimate {
                value: self.max_full_payload,
                how: "the largest data payload seen (a full packet of a multi-packet message)"
                    .into(),
                measured: true,
            };
        }
        if self.max_payload == 0 {
            return Estimate {
                value: 1024,
                how: "no data packet: 1024 B assumed; set your MTU".into(),
                measured: false,
            };
        }
        // IBA 9.7.4's MTUs run 256 to 4096 bytes; a RoCE link of 1,500-byte Ethernet frames
        // carries 1024, of jumbo frames 4096.
        let (mtu, why) = if self.max_payload <= 1024 {
            (1024, "RoCE's MTU on 1,500-byte Ethernet frames")
        } else {
            (4096, "the largest IB MTU")
        };
        Estimate {
            value: mtu.max(self.max_payload),
            how: format!(
                "every message is one packet (ONLY opcodes), so none shows the MTU: the largest payload, {} B, fits in it; {} B ({why}) assumed, set your MTU",
                self.max_payload,
                mtu.max(self.max_payload)
            ),
            measured: false,
        }
    }
}
