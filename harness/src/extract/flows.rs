//! Pass 1: the flows of a capture and the pairing of their two directions (by the manifest,
//! by IP pair, by PSN continuity), or a table that grows in pass 2 when no pairing is needed.

// Flow lookups happen per packet: FxHash (rustc-hash) instead of SipHash, whose DoS resistance
// buys nothing for keys read from the user's own capture.
use rustc_hash::FxHashMap as HashMap;
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::Record;
use ccreplay_codecs::packet::Packet;
use ccreplay_reference_cc::FlowId;

use super::classify::{Seen, classify, icrc_fails, lost_on_the_way};
use super::open_capture;
use super::{ExtractError, ExtractReport, FlowInfo, Skip};
use crate::manifest::{CapturePoint, FlowSpec, Manifest};

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
    pub(super) grow: Option<Growth>,
}

/// How a single-pass table grows: the capture point, and the manifest's pairing by key.
#[derive(Clone, Debug)]
pub(super) struct Growth {
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
    pub(super) fn data_flow_mut(
        &mut self,
        local: Option<IpAddr>,
        remote: IpAddr,
        qp: u32,
    ) -> Option<FlowId> {
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
    pub(super) fn ack_flow_mut(&mut self, remote: IpAddr, qp: u32) -> Option<FlowId> {
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

/// First frame, ACK / NAK / CNP count and sampled PSNs (of its ACKs and NAKs, or of the READ
/// requests it carries) of an ACK direction.
type AckStats = (u64, u64, Vec<u32>);

/// Per-direction facts of the first pass.
struct DirStats {
    first_frame: u64,
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
    // As pass 2 skips them: a packet its NIC dropped (bad ICRC) or never got (a Lumina
    // switch's drop or bit error).
    if seen.received() && (icrc_fails(&p) || lost_on_the_way(&p)) {
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
            });
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
    //    whose sent PSN range holds most of its sampled ACK PSNs. Two flows whose ranges
    //    overlap (both from PSN 0, as simulators start) can tie: a flow whose data began only
    //    after the direction's first ACK cannot be the one it answers; a flow another
    //    direction took uniquely is out of the running (rounds until nothing changes); what
    //    still ties is ambiguous, left unpaired and reported with its candidates — a guess
    //    would feed one flow's model another flow's ACKs.
    let mut open: Vec<usize> = (0..ack_keys.len())
        .filter(|&a| !table.by_ack.contains_key(&ack_keys[a].0))
        .collect();
    let mut tied: Vec<(usize, Vec<usize>)> = Vec::new();
    loop {
        tied.clear();
        let before = open.len();
        open.retain(|&a| {
            let (key, (ack_first, _, psns)) = &ack_keys[a];
            let mut best: Vec<usize> = Vec::new();
            let mut most = 0;
            for (i, ((ip, _), s)) in data_keys.iter().enumerate() {
                if ip != &key.0 || table.flows[i].local_qp.is_some() {
                    continue;
                }
                let hits = psns
                    .iter()
                    .filter(|&&p| (p.wrapping_sub(s.psn_first) & 0xFF_FFFF) <= s.psn_span + 1)
                    .count();
                if hits > 0 && hits >= most {
                    if hits > most {
                        best.clear();
                        most = hits;
                    }
                    best.push(i);
                }
            }
            if best.len() > 1
                && best
                    .iter()
                    .any(|&i| data_keys[i].1.first_frame < *ack_first)
            {
                best.retain(|&i| data_keys[i].1.first_frame < *ack_first);
            }
            match best.as_slice() {
                [] => false, // unpaired, reported below
                [i] => {
                    paired(table, *i as FlowId, *key, "psn continuity");
                    false
                }
                _ => {
                    tied.push((a, best));
                    true
                }
            }
        });
        if open.len() == before {
            break;
        }
    }
    for (a, candidates) in tied {
        let (key, (_, packets, _)) = &ack_keys[a];
        let qps = candidates.iter().map(|&i| data_keys[i].0.1).collect();
        report.ambiguous_acks.push((key.0, key.1, *packets, qps));
    }
    for (key, (_, packets, _)) in &ack_keys {
        // A direction of READ requests only pairs or not; it has no events to lose.
        if !table.by_ack.contains_key(key)
            && *packets > 0
            && !report.ambiguous_acks.iter().any(|a| (a.0, a.1) == *key)
        {
            report.unpaired_acks.push((key.0, key.1, *packets));
        }
    }
}
