//! `mix.tr`'s records, one at a time, turned into what they mean: events of a flow's sender
//! (`tx_data`, `rx_ack` / `rx_nak`, `rx_cnp`) and receiver (`rx_data`), the switch-port
//! counters and queued ACKs HPCC's INT is rebuilt from, or a reason to ignore the record
//! ([`Outcome`]; the conventions are the module's documentation).

use std::collections::{HashSet, VecDeque};

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::{Event, EventKind};

use super::*;

/// The RDMA WRITE opcode of a data packet at byte `seq` with `payload` bytes of a message of
/// `size` bytes (ns-3 has no BTH: the position in the message decides).
fn write_opcode(seq: u64, payload: u64, size: u64) -> u8 {
    use ccreplay_codecs::ib::Opcode;
    match (seq == 0, seq + payload >= size) {
        (true, true) => Opcode::RC_WRITE_ONLY.0,
        (true, false) => Opcode::RC_WRITE_FIRST.0,
        (false, true) => Opcode::RC_WRITE_LAST.0,
        (false, false) => Opcode::RC_WRITE_MIDDLE.0,
    }
}

/// The 24-bit PSN of the packet at byte `seq` (one PSN per `mtu` bytes).
fn psn_of(seq: u64, mtu: u64) -> u32 {
    ((seq / mtu) & 0xFF_FFFF) as u32
}
/// AETH syndromes: ACK (credit field 0x1F), NAK PSN sequence error.
const SYNDROME_ACK: u8 = 0x1F;
const SYNDROME_NAK: u8 = 0x60;
/// `qbbHeader::FLAG_CNP` = bit 0 of the ACK's flags.
const FLAG_CNP: u16 = 1;
/// `IntHeader::maxHop`.
const MAX_HOPS: usize = 5;
/// ACKs waiting at most for their INT binding per flow; an ACK still waiting when the sender
/// receives one the receiver queued this many ACKs after it is taken as lost.
const ACK_QUEUE: usize = 4096;

/// Per-flow state of the conversion.
#[derive(Default)]
pub(super) struct FlowState {
    pub(super) sender_group: usize,
    pub(super) sender_local: u32,
    pub(super) sender_index: u64,
    pub(super) receiver_group: usize,
    pub(super) receiver_local: u32,
    pub(super) receiver_index: u64,
    /// HPCC: whether the trace list names the sender / the receiver (true when it is unknown):
    /// nothing is kept for an INT that no record of the other end will take.
    pub(super) tx_traced: bool,
    pub(super) rx_traced: bool,
    /// HPCC: INT of the last data packet the receiver got (None: not rebuilt).
    pub(super) last_int: Option<IntStack>,
    /// HPCC: ACKs / NAKs the receiver queued and the sender has not received yet, in the
    /// order queued.
    pub(super) acks: VecDeque<WaitingAck>,
    /// HPCC: ACKs / NAKs the receiver queued so far (numbers them).
    pub(super) acks_queued: u64,
}

/// An ACK / NAK the receiver queued, with the INT it carries, until the sender receives it.
#[derive(Clone, Copy)]
pub(super) struct WaitingAck {
    /// Its place among the flow's queued ACKs (0, 1, ...).
    nth: u64,
    nak: bool,
    /// ns-3's seq: the next byte expected.
    seq: u32,
    int: Option<IntStack>,
}

/// Hops stamped so far on one data packet: (switch node, hop), in the order it met them.
#[derive(Clone, Copy, Default)]
pub(super) struct Pending {
    n: usize,
    nodes: [u16; MAX_HOPS],
    hops: [IntHop; MAX_HOPS],
    /// Where the port of the last hop leads (None before the first hop): the next dequeue of
    /// the packet must be there, or a switch between was not traced.
    next: Option<u32>,
    /// A hop missing (the chain from the sender broken), more than [`MAX_HOPS`], or a port
    /// rate without an INT code: no INT for this packet.
    broken: bool,
}

/// A switch port's counters, to rebuild the INT it stamps.
#[derive(Clone, Copy, Default)]
pub(super) struct Port {
    tx_bytes: u64,
    class_bytes: [u64; 8],
}

/// INT line-rate code (wire.md 5.1; the same codes as ns-3's `IntHop::Set` for 25..400G).
fn rate_code(bps: u64) -> Option<u8> {
    Some(match bps {
        25_000_000_000 => 0,
        50_000_000_000 => 1,
        100_000_000_000 => 2,
        200_000_000_000 => 3,
        400_000_000_000 => 4,
        800_000_000_000 => 5,
        10_000_000_000 => 6,
        40_000_000_000 => 7,
        _ => return None,
    })
}

fn write_ev(g: &mut Group, buf: &mut Vec<u8>, ev: &Event) -> Result<(), ImportError> {
    buf.clear();
    protocol::write_event(buf, ev);
    g.events += 1;
    g.w.write_all(buf).map_err(|source| ImportError::Io {
        path: g.path.clone(),
        source,
    })
}

impl FlowState {
    /// The flow's next event in its sender's file, numbered there (`index`); its group.
    fn sender_event(&mut self, t_ns: u64, kind: EventKind) -> (usize, Event) {
        let index = self.sender_index;
        self.sender_index += 1;
        let flow = self.sender_local;
        (
            self.sender_group,
            Event {
                t_ns,
                flow,
                index,
                kind,
            },
        )
    }

    /// The flow's next event in its receiver's file; its group.
    fn receiver_event(&mut self, t_ns: u64, kind: EventKind) -> (usize, Event) {
        let index = self.receiver_index;
        self.receiver_index += 1;
        let flow = self.receiver_local;
        (
            self.receiver_group,
            Event {
                t_ns,
                flow,
                index,
                kind,
            },
        )
    }
}

/// One event into its group's file, counted in the run's summary.
fn emit(
    groups: &mut [Group],
    buf: &mut Vec<u8>,
    summary: &mut Summary,
    (group, ev): (usize, Event),
) -> Result<(), ImportError> {
    summary.events += 1;
    write_ev(&mut groups[group], buf, &ev)
}

/// What one record came to.
pub(super) enum Outcome {
    Events,
    Int,
    Ignored(IgnoreReason),
}

/// A packet of no flow: between the hosts of a flow (its ports are wrong: remembered for the
/// error about that flow) or other traffic. `sender` / `receiver` / `ports` in the data
/// direction.
fn no_flow(
    pairs: &HashSet<(u32, u32)>,
    miss: &mut HashMap<(u32, u32), PortMiss>,
    sender: u32,
    receiver: u32,
    ports: (u16, Option<u16>),
) -> Outcome {
    if pairs.contains(&(sender, receiver)) {
        miss.entry((sender, receiver))
            .or_insert(PortMiss {
                records: 0,
                first: ports,
            })
            .records += 1;
        Outcome::Ignored(IgnoreReason::UnknownPorts)
    } else {
        Outcome::Ignored(IgnoreReason::OtherTraffic)
    }
}

/// The conversion of one import's records: what the flows, the switch ports and the data
/// packets in flight hold so far, and the events files the events go to.
pub(super) struct Convert<'a> {
    pub(super) topo: &'a Topology,
    pub(super) flows: &'a [Flow],
    pub(super) setting: &'a SimSetting,
    pub(super) hpcc: bool,
    pub(super) mtu: u64,
    pub(super) int_multi: u64,
    /// (sender IP, receiver IP, sport, dport) of each flow.
    pub(super) flow_of: HashMap<(u32, u32, u16, u16), usize>,
    /// A CNP names its flow by source port only (`fid`): (sender IP, receiver IP, sport).
    pub(super) cnp_flow: HashMap<(u32, u32, u16), usize>,
    /// (sender IP, receiver IP) of every flow: a packet between them with ports of no flow
    /// points at a flow file that is not the simulator's.
    pub(super) flow_pairs: HashSet<(u32, u32)>,
    pub(super) states: Vec<FlowState>,
    pub(super) groups: Vec<Group>,
    pub(super) ports: HashMap<(u16, u8), Port>,
    /// INT hops stamped so far, per (flow, data packet seq).
    pub(super) pending: HashMap<(usize, u32), Pending>,
    pub(super) port_miss: HashMap<(u32, u32), PortMiss>,
    /// One event's line, reused.
    pub(super) buf: Vec<u8>,
}

impl Convert<'_> {
    /// What one record comes to; its events are written to their groups' files.
    pub(super) fn record(
        &mut self,
        rec: &Record,
        summary: &mut Summary,
    ) -> Result<Outcome, ImportError> {
        let Convert {
            topo,
            flows,
            setting,
            hpcc,
            mtu,
            int_multi,
            flow_of,
            cnp_flow,
            flow_pairs,
            states,
            groups,
            ports,
            pending,
            port_miss,
            buf,
        } = self;
        let (topo, flows, setting) = (*topo, *flows, *setting);
        let (hpcc, mtu, int_multi) = (*hpcc, *mtu, *int_multi);
        let data_flow = || {
            flow_of
                .get(&(rec.sip, rec.dip, rec.sport, rec.dport))
                .copied()
        };
        let ack_flow = || {
            flow_of
                .get(&(rec.dip, rec.sip, rec.dport, rec.sport))
                .copied()
        };
        // A data (`ack` false) or ACK / NAK record of no flow: counted by (sender, receiver).
        let mut unmatched = |ack: bool| {
            if ack {
                no_flow(
                    flow_pairs,
                    port_miss,
                    rec.dip,
                    rec.sip,
                    (rec.dport, Some(rec.sport)),
                )
            } else {
                no_flow(
                    flow_pairs,
                    port_miss,
                    rec.sip,
                    rec.dip,
                    (rec.sport, Some(rec.dport)),
                )
            }
        };
        let node = rec.node as u32;
        let outcome = if node >= topo.nodes || topo.is_switch[node as usize] != (rec.node_type == 1)
        {
            Outcome::Ignored(IgnoreReason::UnknownNode)
        } else if rec.node_type == 1 {
            // A switch: only HPCC needs its ports (the INT they stamp).
            if !hpcc {
                Outcome::Ignored(IgnoreReason::SwitchDcqcn)
            } else {
                let port = ports.entry((rec.node, rec.intf)).or_default();
                let q = rec.qidx as usize;
                match rec.event {
                    EV_ENQU => {
                        if q < 8 {
                            port.class_bytes[q] = rec.qlen as u64 + rec.size as u64;
                        }
                        Outcome::Int
                    }
                    EV_DEQU => {
                        if q < 8 {
                            port.class_bytes[q] = rec.qlen as u64;
                        }
                        if rec.l3 == 0x11
                            && let Some(fi) = data_flow()
                            && states[fi].rx_traced
                        {
                            let total: u64 = if q < 8 {
                                port.class_bytes.iter().sum()
                            } else {
                                rec.qlen as u64
                            };
                            let b = setting
                                .port_speed
                                .get(&(rec.node, rec.intf))
                                .copied()
                                .and_then(rate_code);
                            let hop = IntHop {
                                b: b.unwrap_or(0),
                                ts: (rec.time & 0xFF_FFFF) as u32,
                                tx_bytes: ((port.tx_bytes / int_multi.saturating_mul(128))
                                    & 0xF_FFFF) as u32,
                                qlen: (total / int_multi.saturating_mul(80)).min(0xFFFF) as u16,
                            };
                            // The packet's hops are its dequeue records, whatever path the
                            // topology gave before a LINK_DOWN; each must be where the port of
                            // the one before leads, the first beside the sender.
                            let p = pending.entry((fi, rec.seq)).or_default();
                            let first = topo.linked(flows[fi].src, node);
                            if p.next != Some(node) && first && p.next.is_some() {
                                // The same bytes leaving the first switch again: a
                                // retransmission starts over.
                                *p = Pending::default();
                            }
                            if p.next.map_or(!first, |x| x != node) {
                                p.broken = true;
                            }
                            if b.is_none() || p.n == MAX_HOPS {
                                p.broken = true;
                            } else {
                                p.nodes[p.n] = rec.node;
                                p.hops[p.n] = hop;
                                p.n += 1;
                            }
                            p.next = topo.peer(node, rec.intf);
                            p.broken |= p.next.is_none();
                        }
                        port.tx_bytes += rec.size as u64;
                        Outcome::Int
                    }
                    _ => Outcome::Ignored(IgnoreReason::SwitchRecvDrop),
                }
            }
        } else {
            // A host.
            let me = node_ip(node);
            match (rec.event, rec.l3) {
                (_, 0xFE) => Outcome::Ignored(IgnoreReason::Pfc),
                (_, l3) if !matches!(l3, 0x11 | 0xFC | 0xFD | 0xFF) => {
                    Outcome::Ignored(IgnoreReason::OtherProtocol)
                }
                (EV_DROP, _) => Outcome::Ignored(IgnoreReason::HostDrop),
                (EV_DEQU, 0x11) if rec.sip == me => match data_flow() {
                    None => unmatched(false),
                    Some(fi) => {
                        let f = &flows[fi];
                        let st = &mut states[fi];
                        let opcode = write_opcode(rec.seq as u64, rec.payload as u64, f.size_bytes);
                        let ev = st.sender_event(
                            rec.time,
                            EventKind::TxData {
                                psn: psn_of(rec.seq as u64, mtu),
                                bytes: rec.payload as u32,
                                opcode,
                            },
                        );
                        emit(groups, buf, summary, ev)?;
                        Outcome::Events
                    }
                },
                (EV_RECV, 0x11) if rec.dip == me => match data_flow() {
                    None => unmatched(false),
                    Some(fi) => {
                        let f = &flows[fi];
                        let st = &mut states[fi];
                        if hpcc {
                            // Complete when the last hop's port leads here (no hop: the
                            // hosts are linked directly).
                            let p = pending.remove(&(fi, rec.seq)).unwrap_or_default();
                            let complete =
                                !p.broken && p.next.map_or(topo.linked(f.src, node), |x| x == node);
                            st.last_int = complete
                                .then(|| {
                                    let path_id =
                                        p.nodes[..p.n].iter().fold(0u16, |x, &n| x ^ (n & 0x0FFF));
                                    IntStack::from_hops(path_id, &p.hops[..p.n])
                                })
                                .flatten();
                        }
                        let opcode = write_opcode(rec.seq as u64, rec.payload as u64, f.size_bytes);
                        let ev = st.receiver_event(
                            rec.time,
                            EventKind::RxData {
                                psn: psn_of(rec.seq as u64, mtu),
                                bytes: rec.payload as u32,
                                opcode,
                                ecn: rec.ecn & 3,
                                send_ts_ns: None,
                            },
                        );
                        emit(groups, buf, summary, ev)?;
                        Outcome::Events
                    }
                },
                // Data entering a host's queue: the sender's event is the dequeue.
                (EV_ENQU, 0x11) if rec.sip == me => Outcome::Ignored(IgnoreReason::HostQueue),
                (EV_ENQU, 0xFC | 0xFD) if rec.sip == me && hpcc => match ack_flow() {
                    // The receiver queues the ACK it just built from the data packet it got.
                    None => unmatched(true),
                    Some(fi) => {
                        let st = &mut states[fi];
                        if st.tx_traced {
                            if st.acks.len() == ACK_QUEUE {
                                st.acks.pop_front();
                            }
                            st.acks.push_back(WaitingAck {
                                nth: st.acks_queued,
                                nak: rec.l3 == 0xFD,
                                seq: rec.seq,
                                int: st.last_int,
                            });
                            st.acks_queued += 1;
                        }
                        Outcome::Int
                    }
                },
                // ACK / NAK / CNP entering (DCQCN) or leaving the receiver's queue.
                (EV_ENQU | EV_DEQU, 0xFC | 0xFD | 0xFF) if rec.sip == me => {
                    Outcome::Ignored(IgnoreReason::HostQueue)
                }
                (EV_RECV, 0xFC | 0xFD) if rec.dip == me => match ack_flow() {
                    None => unmatched(true),
                    Some(fi) => {
                        let nak = rec.l3 == 0xFD;
                        let st = &mut states[fi];
                        let int = if hpcc {
                            // The first waiting ACK with this seq; those before it stay: lost
                            // or late (overtaken after a reroute), they are not consumed.
                            let at = st
                                .acks
                                .iter()
                                .position(|a| a.nak == nak && a.seq == rec.seq);
                            let int = match at.and_then(|j| st.acks.remove(j)) {
                                Some(a) => {
                                    // Overtaken by ACK_QUEUE later ACKs: taken as lost.
                                    while st
                                        .acks
                                        .front()
                                        .is_some_and(|w| w.nth + ACK_QUEUE as u64 <= a.nth)
                                    {
                                        st.acks.pop_front();
                                    }
                                    a.int
                                }
                                None => None,
                            };
                            if int.is_some() {
                                summary.acks_with_int += 1;
                            } else {
                                summary.acks_without_int += 1;
                                groups[st.sender_group].acks_without_int += 1;
                            }
                            int
                        } else {
                            None
                        };
                        let e = rec.seq as u64;
                        let psn = if nak {
                            e / mtu
                        } else {
                            // ACK of next-expected byte E: the last PSN received, ceil(E / mtu) − 1.
                            e.div_ceil(mtu).wrapping_sub(1)
                        };
                        let info = AckInfo {
                            psn: (psn & 0xFF_FFFF) as u32,
                            syndrome: if nak { SYNDROME_NAK } else { SYNDROME_ACK },
                            int,
                            n: None,
                            cwnd: None,
                            rcc_flags: None,
                            ts_ns: None,
                        };
                        let ev = st.sender_event(
                            rec.time,
                            if nak {
                                EventKind::RxNak(info)
                            } else {
                                EventKind::RxAck(info)
                            },
                        );
                        emit(groups, buf, summary, ev)?;
                        if !hpcc && rec.flags & FLAG_CNP != 0 {
                            // DCQCN (rdma-hw.cc ReceiveAck): the ACK's CNP flag, after the ACK.
                            let ev = st.sender_event(rec.time, EventKind::RxCnp);
                            emit(groups, buf, summary, ev)?;
                        }
                        Outcome::Events
                    }
                },
                // ns-3's HPCC ignores CNP packets (`ReceiveCnp` only initialises a rate).
                (EV_RECV, 0xFF) if rec.dip == me && hpcc => Outcome::Ignored(IgnoreReason::CnpHpcc),
                (EV_RECV, 0xFF) if rec.dip == me => {
                    // A CNP packet: fid is the flow's source port.
                    match cnp_flow.get(&(rec.dip, rec.sip, rec.sport)).copied() {
                        None => no_flow(flow_pairs, port_miss, rec.dip, rec.sip, (rec.sport, None)),
                        Some(fi) => {
                            let st = &mut states[fi];
                            let ev = st.sender_event(rec.time, EventKind::RxCnp);
                            emit(groups, buf, summary, ev)?;
                            Outcome::Events
                        }
                    }
                }
                _ => Outcome::Ignored(IgnoreReason::NotOwn),
            }
        };
        Ok(outcome)
    }
}
