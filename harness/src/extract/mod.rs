//! From a capture to per-flow events (harness.md 1-2).
//!
//! Two streaming passes over the capture, so memory grows with the number of flows, never with
//! the file: the first pass finds the flows and pairs their two directions, the second turns
//! every packet of a paired flow into an [`Event`].
//!
//! A flow at a sender is (local IP, local QP, remote IP, remote QP): data packets carry the
//! remote QP, ACKs / NAKs / CNPs the local QP. The two directions are paired from the
//! manifest's `[[flows]]` when given, else by IP pair when exactly one QP goes each way, else by
//! PSN continuity (an ACK's PSN falls in the range of PSNs the candidate flow sent). What could
//! not be paired is reported, never dropped silently. At a receiver a flow is (local IP, local
//! QP, remote IP): data packets in.
//!
//! Role: `replay` (and through it `diff`, `check`, `bless`, the reports) reads captures here;
//! every record ends as an event or a counted skip ([`ExtractReport`], docs/verdicts.md). May
//! use: codecs (decoding), reference-cc's events, the manifest. `mirror.rs`: the mirror
//! source of each event of a capture a switch mirrored, and the check that each flow's
//! packets come from one.

// Flow lookups happen per packet: FxHash (rustc-hash) instead of SipHash, whose DoS resistance
// buys nothing for keys read from the user's own capture.
use rustc_hash::FxHashMap as HashMap;
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::{CaptureError, CaptureReader, Record};
use ccreplay_codecs::ib::{Opcode, Syndrome};
use ccreplay_codecs::mirror_clock::{Stamp, SwitchClock, SwitchClockReport};
use ccreplay_codecs::packet::{AckExt, Packet, Roce, Shim};
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::{Event, EventKind, FlowId};

use crate::manifest::{CapturePoint, FlowSpec, Manifest, MirrorClock};

mod mirror;
pub use mirror::{Conflict, MirrorSource, Sources};

/// One flow as the harness numbers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowInfo {
    /// Dense id, in order of first appearance.
    pub id: FlowId,
    /// The capture point's host.
    pub local_ip: IpAddr,
    /// Its QP (`None` at a sender whose ACK direction was never seen).
    pub local_qp: Option<u32>,
    /// The peer.
    pub remote_ip: IpAddr,
    /// The peer's QP (`None` at a receiver).
    pub remote_qp: Option<u32>,
    /// How the two directions were paired.
    pub paired_by: &'static str,
}

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
    /// A copy a switch mirrored in another ERSPAN session than the manifest's
    /// `[mirror] session` (docs/wire.md 2.1): not read.
    OtherMirrorSession,
    /// Decoding stopped before the headers congestion control reads.
    Malformed,
    /// RoCEv2 the capture point receives whose ICRC does not check: its NIC drops it, so no
    /// model sees it (wire.md 4).
    BadIcrc,
    /// RoCEv2 neither from nor to the capture point's host.
    OtherHost,
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
    pub const ALL: [Skip; 13] = [
        Skip::Pfc,
        Skip::OtherUdpPort,
        Skip::NotRoce,
        Skip::OtherMirrorSession,
        Skip::Malformed,
        Skip::BadIcrc,
        Skip::OtherHost,
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
            Skip::OtherMirrorSession => "other_mirror_session",
            Skip::Malformed => "malformed",
            Skip::BadIcrc => "bad_icrc",
            Skip::OtherHost => "other_host",
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
            Skip::OtherMirrorSession => "mirrored in another session than [mirror] session",
            Skip::Malformed => "malformed",
            Skip::BadIcrc => "bad ICRC",
            Skip::OtherHost => "of other hosts",
            Skip::Management => "management datagrams to QP1 (connection setup)",
            Skip::WrongDirection => "in a direction the capture point does not replay",
            Skip::ReceiverFeedback => "ACK/NAK/CNP sent by the receiver",
            Skip::NoCcEvent => "opcodes with no congestion-control event",
            Skip::UnpairedAck => "ACK/NAK/CNP of no flow",
            Skip::NoFlow => "data of no listed flow",
        }
    }

    /// True for the reasons that are RoCEv2 packets.
    pub fn is_roce(self) -> bool {
        !matches!(
            self,
            Skip::Pfc | Skip::OtherUdpPort | Skip::NotRoce | Skip::OtherMirrorSession
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
const TALLY_KEYS: usize = 64;

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
    /// ACK / NAK / CNP directions that could not be paired with a data direction, with their
    /// packet counts: (remote IP, local QP, packets).
    pub unpaired_acks: Vec<(IpAddr, u32, u64)>,
    /// Events per flow id.
    pub flow_events: Vec<u64>,
    /// Events whose timestamp went backwards in the capture and were fed at the previous time.
    pub time_clamped: u64,
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
    /// Data events identical to one of their flow's less than a base RTT before, with no
    /// NAK or READ request between (`DupKey`): the packet captured twice, or a sender that
    /// sent it twice (at a sender or a receiver; the verdict's error when they are many).
    pub copies: u64,
    /// The first of them and the frame it copies.
    pub first_copy: Option<(u64, u64)>,
}

impl ExtractReport {
    /// Count a skipped record.
    #[inline]
    fn skip(&mut self, why: Skip) {
        self.skipped.add(why);
        self.roce += why.is_roce() as u64;
    }

    /// (key, count) pairs of the accounting, in a stable order: what JSON, JUnit properties
    /// and reports carry. Zero counts of skip reasons are left out.
    pub fn accounting(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("frames", self.packets),
            ("roce", self.roce),
            ("events", self.events),
            ("skipped", self.skipped.total()),
        ];
        v.extend(self.skipped.nonzero().map(|(w, n)| (w.key(), n)));
        v
    }
}

/// Sorted (most first, then by key) and capped tally.
fn top<K: Copy + Ord + std::hash::Hash>(m: HashMap<K, u64>) -> Vec<(K, u64)> {
    let mut v: Vec<(K, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// Why events could not be extracted (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The capture could not be opened or read.
    #[error("{path}: {source}")]
    Capture {
        /// File.
        path: String,
        /// Why.
        source: CaptureError,
    },
}

/// The flows of a trace and the key lookups of the second pass.
#[derive(Clone, Debug, Default)]
pub struct FlowTable {
    /// Flows by id.
    pub flows: Vec<FlowInfo>,
    /// (remote IP, remote QP) of data packets → flow.
    by_data: HashMap<(IpAddr, u32), FlowId>,
    /// (remote IP, local QP) of ACKs / NAKs / CNPs → flow.
    by_ack: HashMap<(IpAddr, u32), FlowId>,
    /// Single-pass mode: flows are added as they appear (see [`FlowTable::single_pass`]).
    grow: Option<Growth>,
}

/// How a single-pass table grows: the capture point, and the manifest's pairing by key.
#[derive(Clone, Debug)]
struct Growth {
    point: CapturePoint,
    spec_by_data: HashMap<(IpAddr, u32), usize>,
    spec_by_ack: HashMap<(IpAddr, u32), usize>,
    specs: Vec<FlowSpec>,
    spec_flow: Vec<Option<FlowId>>,
}

impl FlowTable {
    /// The flow of a data packet to `remote` with DestQP `qp` (sender) or from `remote` to
    /// local QP `qp` (receiver).
    pub fn data_flow(&self, remote: IpAddr, qp: u32) -> Option<FlowId> {
        self.by_data.get(&(remote, qp)).copied()
    }

    /// The flow of an ACK / NAK / CNP from `remote` with DestQP `qp`.
    pub fn ack_flow(&self, remote: IpAddr, qp: u32) -> Option<FlowId> {
        self.by_ack.get(&(remote, qp)).copied()
    }

    /// A table that needs no first pass, when one exists: at a receiver or a switch port (no
    /// pairing to do), or at a sender whose manifest pairs flows explicitly (`[[flows]]` is the
    /// pairing; ACK directions it does not list are reported unpaired). Flows are numbered in
    /// order of their first packet, as [`build_flow_table`] numbers them.
    pub fn single_pass(manifest: &Manifest) -> Option<FlowTable> {
        let point = manifest.capture_point.clone();
        if matches!(point, CapturePoint::Sender { .. }) && manifest.flows.is_empty() {
            return None;
        }
        let mut g = Growth {
            point,
            spec_by_data: HashMap::default(),
            spec_by_ack: HashMap::default(),
            specs: manifest.flows.clone(),
            spec_flow: vec![None; manifest.flows.len()],
        };
        if matches!(g.point, CapturePoint::Sender { .. }) {
            for (i, f) in manifest.flows.iter().enumerate() {
                g.spec_by_data.insert((f.remote_ip, f.remote_qp), i);
                g.spec_by_ack.insert((f.remote_ip, f.local_qp), i);
            }
        }
        Some(FlowTable {
            grow: Some(g),
            ..FlowTable::default()
        })
    }

    /// Renumber flows by `first[id]` (the frame of their first packet), ties by old id.
    fn renumber(&mut self, first: &[u64]) {
        let mut order: Vec<FlowId> = (0..self.flows.len() as FlowId).collect();
        order.sort_by_key(|&id| (first.get(id as usize).copied().unwrap_or(u64::MAX), id));
        let mut new_of = vec![0 as FlowId; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_of[old as usize] = new as FlowId;
        }
        let mut flows: Vec<FlowInfo> = order
            .iter()
            .map(|&old| self.flows[old as usize].clone())
            .collect();
        for (i, f) in flows.iter_mut().enumerate() {
            f.id = i as FlowId;
        }
        self.flows = flows;
        for v in self.by_data.values_mut().chain(self.by_ack.values_mut()) {
            *v = new_of[*v as usize];
        }
    }

    fn add(&mut self, info: FlowInfo) -> FlowId {
        let id = self.flows.len() as FlowId;
        self.flows.push(FlowInfo { id, ..info });
        id
    }

    /// Data direction lookup, adding the flow in single-pass mode.
    fn data_flow_mut(&mut self, local: Option<IpAddr>, remote: IpAddr, qp: u32) -> Option<FlowId> {
        if let Some(f) = self.data_flow(remote, qp) {
            return Some(f);
        }
        let g = self.grow.as_ref()?;
        let spec = g.spec_by_data.get(&(remote, qp)).copied();
        let existing = spec.and_then(|i| g.spec_flow[i]);
        let host = g.point.host();
        let is_sender_side = !matches!(g.point, CapturePoint::Receiver { .. });
        let id = match existing {
            Some(id) => id,
            None => {
                let (local_qp, remote_qp) = if is_sender_side {
                    (None, Some(qp))
                } else {
                    (Some(qp), None)
                };
                let local_ip = host
                    .or(local)
                    .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
                let paired_by = if spec.is_some() {
                    "manifest"
                } else {
                    "data only"
                };
                let id = self.add(FlowInfo {
                    id: 0,
                    local_ip,
                    local_qp,
                    remote_ip: remote,
                    remote_qp,
                    paired_by,
                });
                if let Some(i) = spec {
                    let g = self.grow.as_mut()?;
                    g.spec_flow[i] = Some(id);
                    let lqp = g.specs[i].local_qp;
                    self.flows[id as usize].local_qp = Some(lqp);
                    self.by_ack.insert((remote, lqp), id);
                }
                id
            }
        };
        self.by_data.insert((remote, qp), id);
        Some(id)
    }

    /// ACK direction lookup, adding the flow in single-pass mode when the manifest pairs it.
    fn ack_flow_mut(&mut self, remote: IpAddr, qp: u32) -> Option<FlowId> {
        if let Some(f) = self.ack_flow(remote, qp) {
            return Some(f);
        }
        let g = self.grow.as_ref()?;
        let i = *g.spec_by_ack.get(&(remote, qp))?;
        let spec = g.specs[i].clone();
        // The ACK came first (a capture that starts mid-flow): the flow starts here.
        let id = self.add(FlowInfo {
            id: 0,
            local_ip: spec.local_ip,
            local_qp: Some(spec.local_qp),
            remote_ip: spec.remote_ip,
            remote_qp: Some(spec.remote_qp),
            paired_by: "manifest",
        });
        if let Some(g) = self.grow.as_mut() {
            g.spec_flow[i] = Some(id);
        }
        self.by_ack.insert((remote, qp), id);
        self.by_data.insert((spec.remote_ip, spec.remote_qp), id);
        Some(id)
    }
}

/// How a packet looks from the capture point.
enum Seen<'a> {
    /// Sender: data out (remote IP, DestQP = remote QP).
    DataOut(IpAddr, &'a Roce<'a>),
    /// Sender: ACK / NAK / CNP in (remote IP, DestQP = local QP).
    AckIn(IpAddr, &'a Roce<'a>),
    /// Receiver: data in (remote IP, DestQP = local QP).
    DataIn(IpAddr, &'a Roce<'a>),
    /// Switch port: data leaving the port (source IP, destination IP).
    PortData(IpAddr, IpAddr, &'a Roce<'a>),
    /// Not RoCEv2.
    NotRoce,
    /// Not a flow event here, and why.
    Skip(Skip),
}

impl Seen<'_> {
    /// Received by the capture point's NIC (the ones whose ICRC it checks).
    fn received(&self) -> bool {
        matches!(self, Seen::AckIn(..) | Seen::DataIn(..))
    }
}

fn classify<'a>(point: &CapturePoint, p: &'a Packet<'a>) -> Seen<'a> {
    let (Some(ip), Some(r)) = (&p.ip, &p.roce) else {
        return Seen::NotRoce;
    };
    let (src, dst) = (ip.addrs.src(), ip.addrs.dst());
    let op = r.bth.opcode();
    let feedback = op.is_ack() || op.is_cnp();
    // SEND / WRITE requests and READ responses: a READ flow's data leaves the responder on
    // its QP, the requester's CNPs go back to that QP (docs/verdicts.md "READ traffic").
    let data = r.is_flow_data();
    let Some(host) = point.host() else {
        // A switch port sees data of every flow that crosses it.
        return if data {
            Seen::PortData(src, dst, r)
        } else if r.bth.is_gsi() {
            Seen::Skip(Skip::Management)
        } else {
            Seen::Skip(Skip::NoCcEvent)
        };
    };
    if src != host && dst != host {
        return Seen::Skip(Skip::OtherHost);
    }
    if r.bth.is_gsi() {
        // rdma_cm's REQ / REP / RTU before a flow, DREQ / DREP after: a flow of their own
        // would renumber the real ones.
        return Seen::Skip(Skip::Management);
    }
    if !data && !feedback {
        return Seen::Skip(Skip::NoCcEvent);
    }
    match point {
        CapturePoint::Sender { .. } => {
            if src == host && data {
                Seen::DataOut(dst, r)
            } else if dst == host && feedback {
                Seen::AckIn(src, r)
            } else {
                Seen::Skip(Skip::WrongDirection)
            }
        }
        CapturePoint::Receiver { .. } | CapturePoint::SwitchPort { .. } => {
            if dst == host && data {
                Seen::DataIn(src, r)
            } else if src == host && feedback {
                Seen::Skip(Skip::ReceiverFeedback)
            } else {
                Seen::Skip(Skip::WrongDirection)
            }
        }
    }
}

/// First frame, ACK / NAK / CNP count and sampled PSNs (of its ACKs and NAKs, or of the READ
/// requests it carries) of an ACK direction.
type AckStats = (u64, u64, Vec<u32>);

/// Per-direction facts of the first pass.
#[derive(Default)]
struct DirStats {
    first_frame: u64,
    packets: u64,
    /// First PSN sent.
    psn_first: u32,
    /// How far (24-bit serial distance, C-2) the PSNs sent reach past the first.
    psn_span: u32,
    /// The sender's IP, at a switch port (where there is no host).
    source: Option<IpAddr>,
}

/// Pass 1: find the flows and pair their directions.
pub fn build_flow_table(
    capture: &Path,
    manifest: &Manifest,
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    build_flow_table_jobs(capture, manifest, 0)
}

/// What pass 1 needs of a record: its direction and PSN.
#[derive(Clone, Copy)]
enum Dir {
    /// A data packet to (or, at a receiver, from) `remote`; `source` at a switch port.
    Data {
        frame: u64,
        remote: IpAddr,
        qp: u32,
        psn: u32,
        source: Option<IpAddr>,
    },
    /// An ACK / NAK (`psn` set) or CNP from `remote`; or, `feedback` false, a READ request
    /// from `remote` to the responder's QP: no event, but its PSN is the first of the
    /// responses it asks for, so it pairs that QP's CNPs with the READ flow as an ACK would.
    Ack {
        frame: u64,
        remote: IpAddr,
        qp: u32,
        psn: Option<u32>,
        feedback: bool,
    },
    Skip,
}

fn pass1_dir(rec: &Record<'_>, cfg: &DecodeConfig, point: &CapturePoint) -> Dir {
    let p = Packet::from_record(rec, cfg);
    // The packets pass 2 skips pair nothing.
    if !p.headers_complete() {
        return Dir::Skip;
    }
    let seen = classify(point, &p);
    if seen.received() && icrc_fails(&p) {
        return Dir::Skip;
    }
    let source = match seen {
        Seen::PortData(src, _, _) => Some(src),
        _ => None,
    };
    match seen {
        Seen::DataOut(remote, r) | Seen::DataIn(remote, r) | Seen::PortData(_, remote, r) => {
            Dir::Data {
                frame: rec.frame_number,
                remote,
                qp: r.bth.dest_qp(),
                psn: r.bth.psn(),
                source,
            }
        }
        Seen::AckIn(remote, r) => Dir::Ack {
            frame: rec.frame_number,
            remote,
            qp: r.bth.dest_qp(),
            psn: (!r.bth.opcode().is_cnp()).then(|| r.bth.psn()),
            feedback: true,
        },
        Seen::Skip(Skip::NoCcEvent) => match (point, &p.ip, &p.roce) {
            (CapturePoint::Sender { host }, Some(ip), Some(r))
                if r.bth.opcode().is_read_request() && ip.addrs.dst() == *host =>
            {
                if icrc_fails(&p) {
                    return Dir::Skip;
                }
                Dir::Ack {
                    frame: rec.frame_number,
                    remote: ip.addrs.src(),
                    qp: r.bth.dest_qp(),
                    psn: Some(r.bth.psn()),
                    feedback: false,
                }
            }
            _ => Dir::Skip,
        },
        _ => Dir::Skip,
    }
}

/// [`build_flow_table`] with records decoded on `workers` threads (0: on the calling thread);
/// the same table.
pub fn build_flow_table_jobs(
    capture: &Path,
    manifest: &Manifest,
    workers: usize,
) -> Result<(FlowTable, ExtractReport), ExtractError> {
    let cfg = manifest.decode_config();
    let point = &manifest.capture_point;
    let mut reader = open_capture(capture)?;
    let mut data: HashMap<(IpAddr, u32), DirStats> = HashMap::default();
    let mut acks: HashMap<(IpAddr, u32), AckStats> = HashMap::default();
    let mut report = ExtractReport::default();
    let mut add = |dir: Dir| match dir {
        Dir::Data {
            frame,
            remote,
            qp,
            psn,
            source,
        } => {
            let s = data.entry((remote, qp)).or_insert_with(|| DirStats {
                first_frame: frame,
                psn_first: psn,
                psn_span: 0,
                source,
                ..Default::default()
            });
            s.packets += 1;
            // Serial arithmetic: the range survives the 24-bit PSN wrap.
            let d = psn.wrapping_sub(s.psn_first) & 0xFF_FFFF;
            if d < (1 << 23) {
                s.psn_span = s.psn_span.max(d);
            }
        }
        Dir::Ack {
            frame,
            remote,
            qp,
            psn,
            feedback,
        } => {
            let e = acks.entry((remote, qp)).or_insert((frame, 0, Vec::new()));
            e.1 += feedback as u64;
            // A few ACK PSNs are enough to recognise the flow they acknowledge.
            if let Some(psn) = psn
                && e.2.len() < 16
            {
                e.2.push(psn);
            }
        }
        Dir::Skip => {}
    };
    if workers == 0 {
        while let Some(rec) = reader.next_record() {
            match rec {
                Ok(rec) => add(pass1_dir(&rec, &cfg, point)),
                Err(e) => {
                    report.capture_error = Some(e.to_string());
                    break;
                }
            }
        }
    } else {
        let done = crate::batches::par_batches(
            reader,
            workers,
            || (),
            |(), batch, out: &mut Vec<Dir>| {
                out.clear();
                out.extend(batch.records().map(|rec| pass1_dir(&rec, &cfg, point)));
            },
            Vec::new,
            |out| {
                out.drain(..).for_each(&mut add);
                Ok::<(), std::convert::Infallible>(())
            },
        );
        report.capture_error = match done {
            Ok((_, e)) => e,
            Err(never) => match never {},
        };
    }

    // Flow ids in order of first appearance of their data direction.
    let mut data_keys: Vec<((IpAddr, u32), DirStats)> = data.into_iter().collect();
    data_keys.sort_by_key(|(_, s)| s.first_frame);
    let mut table = FlowTable::default();
    let host = point.host();
    for (id, ((remote, qp), stats)) in data_keys.iter().enumerate() {
        let id = id as FlowId;
        // At a switch port a flow is (source IP, destination IP, destination QP): "local" is
        // the sender, "remote" the receiver.
        let (local_qp, remote_qp) = match point {
            CapturePoint::Sender { .. } | CapturePoint::SwitchPort { .. } => (None, Some(*qp)),
            CapturePoint::Receiver { .. } => (Some(*qp), None),
        };
        let local_ip = host
            .or(stats.source)
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        table.flows.push(FlowInfo {
            id,
            local_ip,
            local_qp,
            remote_ip: *remote,
            remote_qp,
            paired_by: "data only",
        });
        table.by_data.insert((*remote, *qp), id);
    }
    if let CapturePoint::Sender { .. } = point {
        // First frame of every ACK direction, to number flows by their first packet.
        let ack_first: HashMap<(IpAddr, u32), u64> = acks.iter().map(|(k, v)| (*k, v.0)).collect();
        pair_acks(&mut table, &data_keys, acks, &manifest.flows, &mut report);
        let mut first: Vec<u64> = data_keys.iter().map(|(_, s)| s.first_frame).collect();
        first.resize(table.flows.len(), u64::MAX);
        for (key, flow) in &table.by_ack {
            if let Some(&f) = ack_first.get(key) {
                first[*flow as usize] = first[*flow as usize].min(f);
            }
        }
        table.renumber(&first);
    }
    Ok((table, report))
}

fn pair_acks(
    table: &mut FlowTable,
    data_keys: &[((IpAddr, u32), DirStats)],
    acks: HashMap<(IpAddr, u32), AckStats>,
    explicit: &[FlowSpec],
    report: &mut ExtractReport,
) {
    let mut ack_keys: Vec<((IpAddr, u32), AckStats)> = acks.into_iter().collect();
    ack_keys.sort_by_key(|(_, v)| v.0);
    let paired = |table: &mut FlowTable, flow: FlowId, key: (IpAddr, u32), how: &'static str| {
        table.by_ack.insert(key, flow);
        let f = &mut table.flows[flow as usize];
        f.local_qp = Some(key.1);
        f.paired_by = how;
    };
    // 1. The manifest. A listed flow whose data direction never shows (a capture that holds
    //    only its ACKs) is still a flow.
    for spec in explicit {
        let ack_key = (spec.remote_ip, spec.local_qp);
        match table.data_flow(spec.remote_ip, spec.remote_qp) {
            Some(flow) => paired(table, flow, ack_key, "manifest"),
            None if ack_keys.iter().any(|(k, _)| *k == ack_key) => {
                let id = table.add(FlowInfo {
                    id: 0,
                    local_ip: spec.local_ip,
                    local_qp: None,
                    remote_ip: spec.remote_ip,
                    remote_qp: Some(spec.remote_qp),
                    paired_by: "manifest",
                });
                table.by_data.insert((spec.remote_ip, spec.remote_qp), id);
                paired(table, id, ack_key, "manifest");
            }
            None => {}
        }
    }
    // 2. IP pair: exactly one data QP and one ACK QP for a remote IP.
    let mut data_by_ip: HashMap<IpAddr, Vec<FlowId>> = HashMap::default();
    for (i, ((ip, _), _)) in data_keys.iter().enumerate() {
        if table.flows[i].local_qp.is_none() {
            data_by_ip.entry(*ip).or_default().push(i as FlowId);
        }
    }
    let mut ack_by_ip: HashMap<IpAddr, Vec<usize>> = HashMap::default();
    for (i, (key, _)) in ack_keys.iter().enumerate() {
        if !table.by_ack.contains_key(key) {
            ack_by_ip.entry(key.0).or_default().push(i);
        }
    }
    for (ip, acks_here) in &ack_by_ip {
        if let (Some(flows), [a]) = (data_by_ip.get(ip), acks_here.as_slice())
            && let [f] = flows.as_slice()
        {
            paired(table, *f, ack_keys[*a].0, "ip pair");
        }
    }
    // 3. PSN continuity: each remaining ACK direction goes to the flow of the same remote IP
    //    whose sent PSN range holds most of its sampled ACK PSNs.
    for (key, (_, _, psns)) in &ack_keys {
        if table.by_ack.contains_key(key) {
            continue;
        }
        let best = data_keys
            .iter()
            .enumerate()
            .filter(|(i, ((ip, _), _))| *ip == key.0 && table.flows[*i].local_qp.is_none())
            .map(|(i, (_, s))| {
                let hits = psns
                    .iter()
                    .filter(|&&p| (p.wrapping_sub(s.psn_first) & 0xFF_FFFF) <= s.psn_span + 1)
                    .count();
                (hits, i)
            })
            .filter(|(hits, _)| *hits > 0)
            .max_by_key(|(hits, i)| (*hits, std::cmp::Reverse(*i)));
        if let Some((_, i)) = best {
            paired(table, i as FlowId, *key, "psn continuity");
        }
    }
    for (key, (_, packets, _)) in &ack_keys {
        // A direction of READ requests only pairs or not; it has no events to lose.
        if !table.by_ack.contains_key(key) && *packets > 0 {
            report.unpaired_acks.push((key.0, key.1, *packets));
        }
    }
}

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
    /// A NAK, an RNR NAK or a READ request, in either direction: what makes a sender resend
    /// (go-back-N resends frames it sent just before, so a resend can follow its original by
    /// less than a round trip; after one of these, no frame is taken for a copy of one before).
    resend_cue: bool,
}

/// A data frame's identity without hashing its bytes: PSN, opcode and ICRC (over the IP and
/// UDP headers' invariant fields, BTH and payload: wire.md 4), the IP header's varying fields
/// (IPv4: ID, flags, TTL, checksum — which covers the rest of the header; IPv6: traffic class,
/// flow label, length, hop limit) and the UDP source port. Two frames of one flow with the same
/// key are the same packet, or a resend of it — and a sender resends only when asked (a NAK,
/// an RNR NAK, a repeated READ request: `Pre::resend_cue`) or after its timeout, which no NIC
/// sets below its round trip. So one with no cue between and less than a base RTT later is
/// the packet captured twice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DupKey([u64; 3]);

impl DupKey {
    fn of(rec: &Record<'_>, p: &Packet<'_>, r: &Roce<'_>) -> DupKey {
        let icrc = r.icrc.map_or(0, u32::from_be_bytes);
        let a = u64::from(r.bth.psn()) | u64::from(r.bth.opcode().0) << 24 | u64::from(icrc) << 32;
        // IPv4: bytes 4..12 (ID, flags and fragment offset, TTL, protocol, checksum); IPv6:
        // bytes 0..8 (version, traffic class, flow label, payload length, next header, hop
        // limit).
        let b = p.ip.map_or(0, |ip| {
            let at = if ip.addrs.src().is_ipv4() { 4 } else { 0 };
            rec.data
                .get(ip.offset + at..ip.offset + at + 8)
                .map_or(0, |w| u64::from_be_bytes(w.try_into().unwrap_or([0; 8])))
        });
        // The frame's length is in the IP header (IPv4's checksum covers it).
        let c = p.udp.map_or(0, |u| u64::from(u.src_port));
        DupKey([a, b, c])
    }
}

/// The last data frames of a flow (`Apply::recent`): a copy of the same packet comes within a
/// few frames (two interfaces on one wire), or a queue's worth later (a mirror of two ports
/// of its path).
#[derive(Clone, Copy, Default)]
struct Recent {
    /// Each frame's first key word (PSN, opcode, ICRC), apart: a frame's is compared with the
    /// 16 into a bit mask, the rest of the key only on a match.
    first: [u64; RECENT],
    /// The other key words, time, the cue epoch (`Apply::epoch`) and frame number.
    rest: [(u64, u64, u64, u64, u64); RECENT],
    next: usize,
    /// The PSN after the highest one remembered (none before the first frame): a frame at or
    /// past it copies nothing — the usual case, answered without the scan.
    ahead: Option<u32>,
}

const RECENT: usize = 16;

impl Recent {
    /// The frame `key` copies, if it was seen in `epoch` less than `window_ns` from `t_ns`;
    /// remembers frame `frame` when not.
    #[inline(always)]
    fn copy_of(
        &mut self,
        key: DupKey,
        t_ns: u64,
        epoch: u64,
        window_ns: u64,
        frame: u64,
    ) -> Option<u64> {
        let [a, b, c] = key.0;
        let psn = (a & 0xFF_FFFF) as u32;
        // Serial arithmetic (C-2): at or up to half the PSN space past `ahead` is new.
        let new = self
            .ahead
            .is_none_or(|at| psn.wrapping_sub(at) & 0xFF_FFFF < 1 << 23);
        let mut hits = 0u32;
        if new {
            self.ahead = Some((psn + 1) & 0xFF_FFFF);
        } else {
            for (i, &x) in self.first.iter().enumerate() {
                hits |= u32::from(x == a) << i;
            }
        }
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let (rb, rc, t, e, of) = self.rest[i];
            if rb == b && rc == c && e == epoch && t.abs_diff(t_ns) < window_ns {
                return Some(of);
            }
        }
        self.first[self.next] = a;
        self.rest[self.next] = (b, c, t_ns, epoch, frame);
        self.next = (self.next + 1) % RECENT;
        None
    }
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

/// The ICRC fails (where the capture holds it whole). It is checked on the packets the
/// capture point receives — ACKs / NAKs / CNPs at a sender, data at a receiver — because the
/// NIC there drops a packet whose ICRC fails (wire.md 4), so no model may see it; what a host
/// or port transmits was sent whatever its ICRC, and checking its large payloads would cost a
/// read of every byte of the capture. A wrong dialect reads the shim as BTH and fails the
/// check of every received packet, which names the dialect as the likely cause.
#[inline]
fn icrc_fails(p: &Packet<'_>) -> bool {
    p.icrc_check()
        .is_some_and(|(computed, found)| computed != found)
}

/// From or to the capture point's host (every packet at a switch port).
fn ours(point: &CapturePoint, p: &Packet<'_>) -> bool {
    match (point.host(), &p.ip) {
        (None, _) => true,
        (Some(h), Some(ip)) => ip.addrs.src() == h || ip.addrs.dst() == h,
        (Some(_), None) => false,
    }
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
        resend_cue: false,
    };
    if let Some(m) = &p.mirror {
        if !m.read {
            pre.what = What::OtherMirror(m.erspan.map(|e| e.span_id()));
            return pre;
        }
        pre.source = Some(MirrorSource::of(m));
        pre.stamp = Stamp::of(Some(m));
    }
    if p.error.is_some() && p.headers_complete() {
        // Cut by snaplen after the headers (a header-only capture): the event is whole. Only a
        // cut frame gets here — length fields are checked against the original length, so a
        // whole frame's error is never past its headers (codecs' packet_vectors
        // `headers_whole_with_an_error_means_cut_by_snaplen`; the fuzz targets assert it). A
        // mirroring switch's cut (ERSPAN T, `Packet::cut`) counts as the snaplen's.
        pre.cut = true;
    } else if let Some(error) = p.error {
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
    // A tunnelled packet's mark is what decapsulation leaves (RFC 6040; a dropped one reads
    // as Not-ECT: its receiver never sees it).
    let ecn = p.ecn().unwrap_or(0);
    // Not at a switch port, where copies are not looked for (`stream_events_jobs`).
    if let Seen::DataOut(_, r) | Seen::DataIn(_, r) = seen {
        pre.dup = DupKey::of(rec, &p, r);
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
                Some(flow) => {
                    if self.dup_window_ns > 0 {
                        if self.recent.len() <= flow as usize {
                            self.recent.resize(flow as usize + 1, Recent::default());
                        }
                        let (t, w) = (pre.ev.t_ns, self.dup_window_ns);
                        let recent = &mut self.recent[flow as usize];
                        if let Some(of) = recent.copy_of(pre.dup, t, self.epoch, w, pre.frame) {
                            report.copies += 1;
                            report.first_copy.get_or_insert((pre.frame, of));
                        }
                    }
                    flow
                }
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
        // Model time never goes backwards (C-2, C-5): a capture whose clock steps back feeds
        // the event at the previous time, and says how often it did.
        let ev = &mut pre.ev;
        let data = matches!(
            ev.kind,
            EventKind::TxData { .. } | EventKind::RxData { .. } | EventKind::Dequeue { .. }
        );
        self.sources.check(flow, data, pre.source, pre.frame);
        if let Some(clock) = &mut self.clock {
            clock.count_event(&pre.stamp, switch_t, pre.frame);
            ev.t_ns = switch_t.unwrap_or(ev.t_ns);
        }
        if ev.t_ns < self.last_t {
            report.time_clamped += 1;
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
        report
    }
}

fn open_capture(
    capture: &Path,
) -> Result<CaptureReader<ccreplay_codecs::capture::StreamSource<std::fs::File>>, ExtractError> {
    CaptureReader::open(capture).map_err(|source| ExtractError::Capture {
        path: capture.display().to_string(),
        source,
    })
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
    let mut report = a.finish();
    report.capture_error = capture_error;
    Ok(report)
}
