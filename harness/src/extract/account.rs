//! What became of every record: events by kind, records skipped by reason (issue 14.1,
//! docs/verdicts.md), and the diagnostics a verdict prints.

use rustc_hash::FxHashMap as HashMap;
use std::net::IpAddr;

use ccreplay_codecs::ib::Opcode;
use ccreplay_codecs::lumina::{Lumina, LuminaEvent, SEQ_MAX};
use ccreplay_codecs::mirror_clock::SwitchClockReport;
use ccreplay_reference_cc::EventKind;

use super::{Conflict, MirrorSource, PathPair};
use crate::path::TtlFlips;

/// Why a record did not become an event: the reasons partition the records that are not
/// events, so `packets == events + skipped.total()` (issue 14.1). Text names in [`Skip::text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// A PFC pause frame (MAC control).
    Pfc,
    /// UDP to a port other than the manifest's RoCEv2 port.
    OtherUdpPort,
    /// Neither RoCEv2 nor PFC (ARP, TCP, LLDP, ...).
    NotRoce,
    /// A record of a link type ccreplay does not read (native InfiniBand, ...): nothing in it
    /// was decoded, and nothing is wrong with it.
    UnsupportedLink,
    /// A copy a switch mirrored in another ERSPAN session than the manifest's
    /// `[mirror] session` (docs/wire.md 2.1): not read.
    OtherMirrorSession,
    /// Decoding stopped before the headers congestion control reads.
    Malformed,
    /// RoCEv2 the capture point receives whose ICRC does not check: its NIC drops it, so no
    /// model sees it (wire.md 4).
    BadIcrc,
    /// RoCEv2 the capture point receives that a Lumina switch dropped or corrupted on the way
    /// (docs/wire.md 2.3): its NIC never got it whole, so no model sees it.
    SwitchLost,
    /// RoCEv2 neither from nor to the capture point's host.
    OtherHost,
    /// The same packet seen again at another point of its path (a TTL lower by the routers
    /// between: docs/verdicts.md "Packets seen at two points of their path"): the copy at the
    /// host is used, this one not.
    PathCopy,
    /// Management datagrams to QP1 (codecs `GSI_QP`): the connection manager setting an RC
    /// connection up or tearing it down — UD sends, but no flow's data.
    Management,
    /// RoCEv2 of the host in a direction the capture point does not replay (at a sender: data
    /// to it, or ACK / NAK / CNP from it; at a receiver: data from it).
    WrongDirection,
    /// ACK / NAK / CNP a receiver sends: its output, not an input.
    ReceiverFeedback,
    /// Opcodes that are no congestion-control event (READ requests, atomics,
    /// anything but data at a switch port).
    NoCcEvent,
    /// ACK / NAK / CNP whose direction pairs with no data flow.
    UnpairedAck,
    /// Data of no flow (a sender's manifest that lists flows without this one).
    NoFlow,
}

impl Skip {
    /// Every reason, in report order.
    pub const ALL: [Skip; 16] = [
        Skip::Pfc,
        Skip::OtherUdpPort,
        Skip::NotRoce,
        Skip::UnsupportedLink,
        Skip::OtherMirrorSession,
        Skip::Malformed,
        Skip::BadIcrc,
        Skip::SwitchLost,
        Skip::OtherHost,
        Skip::PathCopy,
        Skip::Management,
        Skip::WrongDirection,
        Skip::ReceiverFeedback,
        Skip::NoCcEvent,
        Skip::UnpairedAck,
        Skip::NoFlow,
    ];

    /// The key in JSON, JUnit properties and reports.
    pub fn key(self) -> &'static str {
        match self {
            Skip::Pfc => "pfc",
            Skip::OtherUdpPort => "other_udp_port",
            Skip::NotRoce => "not_roce",
            Skip::UnsupportedLink => "unsupported_link",
            Skip::OtherMirrorSession => "other_mirror_session",
            Skip::Malformed => "malformed",
            Skip::BadIcrc => "bad_icrc",
            Skip::SwitchLost => "switch_lost",
            Skip::OtherHost => "other_host",
            Skip::PathCopy => "path_copy",
            Skip::Management => "management",
            Skip::WrongDirection => "wrong_direction",
            Skip::ReceiverFeedback => "receiver_feedback",
            Skip::NoCcEvent => "no_cc_event",
            Skip::UnpairedAck => "unpaired_ack",
            Skip::NoFlow => "no_flow",
        }
    }

    /// Words for a sentence ("12 PFC pause frames").
    pub fn text(self) -> &'static str {
        match self {
            Skip::Pfc => "PFC pause frames",
            Skip::OtherUdpPort => "UDP to another port",
            Skip::NotRoce => "not RoCEv2",
            Skip::UnsupportedLink => "of a link type ccreplay does not read",
            Skip::OtherMirrorSession => "mirrored in another session than [mirror] session",
            Skip::Malformed => "malformed",
            Skip::BadIcrc => "bad ICRC",
            Skip::SwitchLost => "dropped or corrupted by the switch on the way (Lumina events)",
            Skip::OtherHost => "of other hosts",
            Skip::PathCopy => "seen again at another point of their path (the host's copies used)",
            Skip::Management => "management datagrams to QP1 (connection setup)",
            Skip::WrongDirection => "in a direction the capture point does not replay",
            Skip::ReceiverFeedback => "ACK/NAK/CNP sent by the receiver",
            Skip::NoCcEvent => "opcodes with no congestion-control event",
            Skip::UnpairedAck => "ACK/NAK/CNP of no flow",
            Skip::NoFlow => "data of no listed flow",
        }
    }

    /// Words for a sentence with `count` of them: [`Skip::text`], in the singular for one
    /// ("1 PFC pause frame", "2 PFC pause frames").
    pub fn text_n(self, count: u64) -> &'static str {
        match (self, count) {
            (Skip::Pfc, 1) => "PFC pause frame",
            (Skip::PathCopy, 1) => "seen again at another point of its path (the host's copy used)",
            (Skip::Management, 1) => "management datagram to QP1 (connection setup)",
            (Skip::NoCcEvent, 1) => "opcode with no congestion-control event",
            _ => self.text(),
        }
    }

    /// True for the reasons that are RoCEv2 packets.
    pub fn is_roce(self) -> bool {
        !matches!(
            self,
            Skip::Pfc
                | Skip::OtherUdpPort
                | Skip::NotRoce
                | Skip::UnsupportedLink
                | Skip::OtherMirrorSession
        )
    }
}

/// Records skipped, per [`Skip`] reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped([u64; Skip::ALL.len()]);

impl Skipped {
    /// Records skipped for `why`.
    pub fn get(&self, why: Skip) -> u64 {
        self.0[why as usize]
    }

    /// Count one more.
    #[inline]
    pub fn add(&mut self, why: Skip) {
        self.0[why as usize] += 1;
    }

    /// Count `n` more (events files: bad lines are `Malformed`).
    pub fn add_n(&mut self, why: Skip, n: u64) {
        self.0[why as usize] += n;
    }

    /// All skipped records.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The reasons with a count, in report order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Skip, u64)> + '_ {
        Skip::ALL
            .iter()
            .map(|&w| (w, self.get(w)))
            .filter(|&(_, n)| n > 0)
    }
}

/// Events made, per kind (harness.md 2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// `tx_data`.
    pub tx_data: u64,
    /// `rx_ack`.
    pub rx_ack: u64,
    /// `rx_nak`.
    pub rx_nak: u64,
    /// `rx_cnp`.
    pub rx_cnp: u64,
    /// `rx_data`.
    pub rx_data: u64,
    /// `enqueue` and `dequeue`.
    pub switch: u64,
    /// Of the data events (`tx_data`, `rx_data`, `dequeue`), those of READ responses: data
    /// no ACK answers (docs/verdicts.md "READ traffic"). Not a kind of its own.
    pub read_responses: u64,
}

impl EventCounts {
    /// Count an event of this kind.
    #[inline]
    pub fn add(&mut self, kind: &EventKind) {
        match kind {
            EventKind::TxData { .. } => self.tx_data += 1,
            EventKind::RxAck(_) => self.rx_ack += 1,
            EventKind::RxNak(_) => self.rx_nak += 1,
            EventKind::RxCnp => self.rx_cnp += 1,
            EventKind::RxData { .. } => self.rx_data += 1,
            EventKind::Dequeue { .. } => self.switch += 1,
        }
        if let EventKind::TxData { opcode, .. }
        | EventKind::RxData { opcode, .. }
        | EventKind::Dequeue { opcode, .. } = kind
        {
            self.read_responses += Opcode(*opcode).is_read_response() as u64;
        }
    }

    /// (protocol name, count) of every kind with a count.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        [
            ("tx_data", self.tx_data),
            ("rx_ack", self.rx_ack),
            ("rx_nak", self.rx_nak),
            ("rx_cnp", self.rx_cnp),
            ("rx_data", self.rx_data),
            ("dequeue", self.switch),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect()
    }
}

/// How many distinct values the diagnostic tallies keep (UDP ports, other hosts).
pub(super) const TALLY_KEYS: usize = 64;

/// What the extraction did with every record: events made, and records skipped by reason
/// (issue 14.1). `packets == events + skipped.total()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtractReport {
    /// The records are lines of an events file, not frames of a capture.
    pub events_file: bool,
    /// The capture point's host (none at a switch port or in an events file).
    pub host: Option<IpAddr>,
    /// Records read (lines, for an events file).
    pub packets: u64,
    /// RoCEv2 packets among them (UDP to the manifest's port, decoded or not).
    pub roce: u64,
    /// Events produced.
    pub events: u64,
    /// Events by kind.
    pub event_kinds: EventCounts,
    /// Records skipped, by reason.
    pub skipped: Skipped,
    /// Malformed records (decode error); the same as `skipped.get(Skip::Malformed)`.
    pub malformed: u64,
    /// Frame numbers and messages of the first malformed packets.
    pub malformed_examples: Vec<(u64, String)>,
    /// Frame numbers of the first packets with a bad ICRC.
    pub bad_icrc_examples: Vec<u64>,
    /// Malformed or bad-ICRC packets from or to the capture point's host (at a switch port:
    /// every one): damage inside the replayed traffic, a warning on every run and an error
    /// with `--strict`.
    pub damaged_in_traffic: u64,
    /// Packets cut by snaplen after their headers: replayed (their payload length comes from
    /// the length fields).
    pub snaplen_cut: u64,
    /// Malformed packets the snapshot length cut before the headers congestion control reads
    /// (counted among `malformed`).
    pub snaplen_short: u64,
    /// RoCEv2 packets neither from nor to the capture point's host; the same as
    /// `skipped.get(Skip::OtherHost)`.
    pub not_this_host: u64,
    /// Senders of data among those packets, with their packet counts, most first (at most
    /// 64 kept): where the host may be.
    pub other_data_senders: Vec<(IpAddr, u64)>,
    /// UDP destination ports of UDP packets not to the RoCEv2 port, most first (at most 64
    /// kept).
    pub other_udp_ports: Vec<(u16, u64)>,
    /// Records of link types ccreplay does not read, per link type, in order of link type.
    pub unsupported_links: Vec<(u32, u64)>,
    /// ACK / NAK / CNP directions that could not be paired with a data direction, with their
    /// packet counts: (remote IP, local QP, packets).
    pub unpaired_acks: Vec<(IpAddr, u32, u64)>,
    /// ACK / NAK / CNP directions left unpaired because PSN continuity could not choose
    /// between flows whose PSN ranges overlap: (remote IP, local QP, packets, the candidate
    /// flows' remote QPs). Not in `unpaired_acks`.
    pub ambiguous_acks: Vec<(IpAddr, u32, u64, Vec<u32>)>,
    /// Events per flow id.
    pub flow_events: Vec<u64>,
    /// Events whose timestamp went backwards in the capture and were fed at the previous time.
    pub time_clamped: u64,
    /// The largest of those steps back, ns.
    pub time_back_max_ns: u64,
    /// The capture ended with a framing error.
    pub capture_error: Option<String>,
    /// Events per mirror source (`None`: not mirrored), when any event was mirrored
    /// (docs/wire.md 2.1); empty otherwise.
    pub mirror_sources: Vec<(Option<MirrorSource>, u64)>,
    /// Events of a flow and direction from another source than its first: the same traffic
    /// mirrored twice (the verdict's error, docs/verdicts.md).
    pub mirror_conflicts: u64,
    /// The first of them.
    pub mirror_conflict: Option<Conflict>,
    /// ERSPAN sessions of the copies skipped as `other_mirror_session` (`None`: ERSPAN I or
    /// gretap, which name none), most first.
    pub other_mirror_sessions: Vec<(Option<u16>, u64)>,
    /// With `[mirror] clock = "switch"`: how the events were timed.
    pub switch_clock: Option<SwitchClockReport>,
    /// A Lumina dump's own accounting (docs/wire.md 2.3), when the capture holds its copies.
    pub lumina: Option<LuminaReport>,
    /// Data events identical to one of their flow's less than a base RTT before, with no
    /// NAK or READ request between (`DupKey`): the packet captured twice, or a sender that
    /// sent it twice (at a sender or a receiver; the verdict's error when they are many).
    pub copies: u64,
    /// The first of them and the frame it copies.
    pub first_copy: Option<(u64, u64)>,
    /// The first packet found at two points of its path (docs/verdicts.md "Packets seen at
    /// two points of their path"); the copies not at the host are `skipped` as `path_copy`.
    pub path_pair: Option<PathPair>,
    /// Flow directions found at two points.
    pub path_directions: u64,
    /// Of the `path_copy` skips, the host's own copies of packets whose far copy came first
    /// and was used before the two points were known (their direction's first frames, or
    /// clocks that disagree).
    pub path_far_kept: u64,
    /// The flow direction taken for one point whose TTL changed most often after (its
    /// `dir` is 2 × flow, + 1 for ACK / NAK / CNP): two points whose copies were too far apart
    /// to be matched, or a path that keeps changing.
    pub ttl_flips: Option<TtlFlips>,
}

impl ExtractReport {
    /// Count a skipped record.
    #[inline]
    pub(super) fn skip(&mut self, why: Skip) {
        self.skipped.add(why);
        self.roce += why.is_roce() as u64;
    }
}

/// Sorted (most first, then by key) and capped tally.
pub(super) fn top<K: Copy + Ord + std::hash::Hash>(m: HashMap<K, u64>) -> Vec<(K, u64)> {
    let mut v: Vec<(K, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// What a Lumina dump says of itself (docs/wire.md 2.3): its copies, the events the switch
/// injected, and the switch's sequence numbers, which tell a capture that lost copies or holds
/// them out of the switch's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LuminaReport {
    /// Copies read.
    pub copies: u64,
    /// Copies by event: none, drop, ECN, bit error.
    pub events: [u64; 4],
    /// Sequence numbers missing between consecutive copies: packets the switch mirrored that
    /// the capture does not hold (the verdict's error).
    pub missing: u64,
    /// The first gap: the frame after it and the first sequence number missing.
    pub first_gap: Option<(u64, u64)>,
    /// Copies whose sequence number is not after the one before: the capture is not in the
    /// switch's order (the verdict's error).
    pub out_of_order: u64,
    /// The first of them: its frame, its sequence number and the one before it.
    pub first_out_of_order: Option<(u64, u64, u64)>,
    /// The next sequence number the switch gives (after the last copy in order).
    pub(super) next: Option<u64>,
}

impl LuminaReport {
    /// Account the copy at `frame` with sequence number `seq` and event `event`.
    pub(super) fn count(&mut self, frame: u64, seq: u64, event: LuminaEvent) {
        self.copies += 1;
        self.events[event as usize] += 1;
        let Some(next) = self.next else {
            self.next = Some(Lumina::next_seq(seq));
            return;
        };
        // How far `seq` is past the expected one, in the counter's cycle 1..=SEQ_MAX.
        let ahead = (seq + SEQ_MAX - next) % SEQ_MAX;
        if seq == 0 || seq > SEQ_MAX || ahead >= SEQ_MAX / 2 {
            // Behind (or no number the switch writes): out of order; the expectation stays.
            self.out_of_order += 1;
            let before = if next == 1 { SEQ_MAX } else { next - 1 };
            self.first_out_of_order.get_or_insert((frame, seq, before));
            return;
        }
        if ahead > 0 {
            self.missing += ahead;
            self.first_gap.get_or_insert((frame, next));
        }
        self.next = Some(Lumina::next_seq(seq));
    }
}
