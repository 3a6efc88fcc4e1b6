//! What became of every record of `mix.tr`, and why a flow of the flow file got no events
//! (issue 18: an importer that loses nothing). Every record is counted once: it made events,
//! it rebuilt HPCC INT, or it was ignored for one of the [`IgnoreReason`]s — and the import
//! prints the counts by reason. A flow without events is an error naming the flow and the
//! likeliest cause ([`no_events_cause`]).

use std::collections::HashMap;
use std::path::Path;

use super::{Flow, node_ip};

/// Why a record of `mix.tr` made no event and rebuilt no INT (docs/import.md "Records the
/// importer ignores"). The order is the order of the summary line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IgnoreReason {
    /// A data / ACK / NAK / CNP packet between two hosts that no flow of the flow file joins
    /// (in that direction): other traffic.
    OtherTraffic,
    /// A data / ACK / NAK / CNP packet between the hosts of a flow, whose UDP ports match none
    /// of their flows: the flow file is not the one the simulator ran (or its ports were
    /// numbered another way).
    UnknownPorts,
    /// A switch record of a DCQCN run: switch-port events are not written.
    SwitchDcqcn,
    /// A switch's receive or drop record (HPCC rebuilds INT from enqueues and dequeues only).
    SwitchRecvDrop,
    /// A host's NIC queue record that is no event: an ACK / NAK / CNP entering (DCQCN) or
    /// leaving the receiver's queue, a data packet entering a queue (the sender's event is the
    /// dequeue).
    HostQueue,
    /// A packet dropped at a host.
    HostDrop,
    /// A PFC pause / resume frame (l3Prot 0xFE).
    Pfc,
    /// A CNP packet received in an HPCC run (`rdma-hw.cc` `ReceiveCnp` ignores it there).
    CnpHpcc,
    /// An L3 protocol the RDMA NICs do not use (not 0x11, 0xFC, 0xFD, 0xFE, 0xFF).
    OtherProtocol,
    /// A host record of a packet the host neither sent nor received (hosts do not forward).
    NotOwn,
    /// A record of a node the topology does not have, or of a host the topology calls a
    /// switch (or the reverse): `mix.tr` and the topology are not of one run.
    UnknownNode,
}

impl IgnoreReason {
    /// Every reason, in summary order.
    pub const ALL: [IgnoreReason; 11] = [
        IgnoreReason::OtherTraffic,
        IgnoreReason::UnknownPorts,
        IgnoreReason::SwitchDcqcn,
        IgnoreReason::SwitchRecvDrop,
        IgnoreReason::HostQueue,
        IgnoreReason::HostDrop,
        IgnoreReason::Pfc,
        IgnoreReason::CnpHpcc,
        IgnoreReason::OtherProtocol,
        IgnoreReason::NotOwn,
        IgnoreReason::UnknownNode,
    ];

    /// The words of the summary line (`N <label>`), as docs/import.md lists them.
    pub fn label(self) -> &'static str {
        match self {
            IgnoreReason::OtherTraffic => "other traffic (no flow between its hosts)",
            IgnoreReason::UnknownPorts => "packets between a flow's hosts with ports of no flow",
            IgnoreReason::SwitchDcqcn => "switch records (DCQCN writes no switch events)",
            IgnoreReason::SwitchRecvDrop => "switch receive/drop records",
            IgnoreReason::HostQueue => "host queue records (no event)",
            IgnoreReason::HostDrop => "host drop records",
            IgnoreReason::Pfc => "PFC frames",
            IgnoreReason::CnpHpcc => "CNP packets (HPCC ignores them)",
            IgnoreReason::OtherProtocol => "records of other protocols",
            IgnoreReason::NotOwn => "host records of packets neither from nor to it",
            IgnoreReason::UnknownNode => "records of nodes not in the topology",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// Records counted by what became of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordAccount {
    /// Records that made events (an ACK with the CNP flag makes two, in DCQCN).
    pub made_events: u64,
    /// HPCC: records used to rebuild INT only (switch enqueues and dequeues, the receiver's
    /// ACK enqueues).
    pub rebuilt_int: u64,
    ignored: [u64; IgnoreReason::ALL.len()],
}

impl RecordAccount {
    /// Count one ignored record.
    pub fn ignore(&mut self, why: IgnoreReason) {
        self.ignored[why.slot()] += 1;
    }

    /// Records ignored for `why`.
    pub fn ignored(&self, why: IgnoreReason) -> u64 {
        self.ignored[why.slot()]
    }

    /// Records ignored, all reasons.
    pub fn ignored_total(&self) -> u64 {
        self.ignored.iter().sum()
    }

    /// The reasons with a count, in summary order.
    pub fn ignored_by_reason(&self) -> Vec<(IgnoreReason, u64)> {
        IgnoreReason::ALL
            .iter()
            .map(|&r| (r, self.ignored(r)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// `N ignored (a reason, b reason)`, or `0 ignored`.
    pub fn ignored_text(&self) -> String {
        let list = self.ignored_by_reason();
        if list.is_empty() {
            return "0 ignored".into();
        }
        let parts: Vec<String> = list
            .iter()
            .map(|(r, n)| format!("{n} {}", r.label()))
            .collect();
        format!("{} ignored: {}", self.ignored_total(), parts.join(", "))
    }
}

/// Records between the two hosts of some flow (sender IP, receiver IP) whose ports matched no
/// flow: how many, and the first one's ports in the data direction (source, destination; a
/// CNP names the source port only).
#[derive(Clone, Copy, Debug, Default)]
pub struct PortMiss {
    /// Records.
    pub records: u64,
    /// The first record's (source port, destination port), seen from the data's sender.
    pub first: (u16, Option<u16>),
}

/// What the cause of a flow's missing events is judged from.
pub struct Evidence<'a> {
    /// `SIMULATOR_STOP_TIME`, s (third.cc's default 3.01 when the config has none).
    pub stop_s: f64,
    /// The traced hosts, when the trace list could be read.
    pub traced: Option<&'a [u32]>,
    /// Records of packets between a flow's hosts with ports of no flow, by (sender IP,
    /// receiver IP).
    pub port_miss: &'a HashMap<(u32, u32), PortMiss>,
    /// Time of the last record, ns.
    pub last_record_ns: u64,
    /// `mix.tr`.
    pub mix: &'a Path,
    /// The trace list's path, for the message.
    pub trace_file: Option<&'a Path>,
}

/// Why flow `f` has no event at all, the likeliest cause first.
pub fn no_events_cause(f: &Flow, e: &Evidence) -> String {
    if f.start_s >= e.stop_s {
        return format!(
            "it starts at {} s, not before SIMULATOR_STOP_TIME {} s: the simulator never started \
             it",
            f.start_s, e.stop_s
        );
    }
    if let Some(tr) = e.traced
        && !tr.contains(&f.src)
        && !tr.contains(&f.dst)
    {
        return format!(
            "neither host {} nor host {} is in the trace list{}: the simulator recorded none of \
             its packets",
            f.src,
            f.dst,
            e.trace_file
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default()
        );
    }
    if let Some(m) = e.port_miss.get(&(node_ip(f.src), node_ip(f.dst))) {
        return format!(
            "{} holds {} record{} of packets between its hosts with ports of no flow (the first: \
             source port {}{}): the flow file is not the one the simulator ran (it numbers \
             source ports per host pair, in file order)",
            e.mix.display(),
            m.records,
            if m.records == 1 { "" } else { "s" },
            m.first.0,
            m.first
                .1
                .map(|d| format!(", destination port {d}"))
                .unwrap_or_default()
        );
    }
    let start_ns = (f.start_s * 1e9).clamp(0.0, u64::MAX as f64) as u64;
    if e.last_record_ns < start_ns {
        return format!(
            "{} ends at {} ns, before the flow starts: the run stopped, or the file was cut, \
             before it",
            e.mix.display(),
            e.last_record_ns
        );
    }
    format!(
        "{} holds no record of it, though it has records up to {} ns: the flow file, the trace \
         list and the trace are not of one run",
        e.mix.display(),
        e.last_record_ns
    )
}

/// `flow I (line L): host S -> host D, source port P, destination port Q, N bytes, starts T s`.
pub fn describe(i: usize, f: &Flow) -> String {
    format!(
        "flow {i} (line {}): host {} -> host {}, source port {}, destination port {}, {} bytes, \
         starts {} s",
        f.line, f.src, f.dst, f.sport, f.dport, f.size_bytes, f.start_s
    )
}
