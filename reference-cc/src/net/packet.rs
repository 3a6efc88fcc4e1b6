//! Packets in flight and their length on the wire.
//!
//! The engine carries the header fields that vary ([`Packet`]); a tap turns them into real
//! frames with the codecs' writers. [`frame_len`] is the length those writers produce (as
//! captured: no preamble, IFG or FCS), which is what the engine serialises.

use ccreplay_codecs::Dialect;

/// RC RDMA WRITE opcodes (IBTA Table 38).
pub const WRITE_FIRST: u8 = 0x06;
/// RDMA WRITE Middle.
pub const WRITE_MIDDLE: u8 = 0x07;
/// RDMA WRITE Last.
pub const WRITE_LAST: u8 = 0x08;
/// RDMA WRITE Only.
pub const WRITE_ONLY: u8 = 0x0A;
/// AETH syndrome of an ACK: credit count 0x1F ("invalid": end-to-end credits are not used).
pub const SYNDROME_ACK: u8 = 0x1F;
/// AETH syndrome of a NAK, PSN sequence error.
pub const SYNDROME_NAK_PSN: u8 = 0x60;
/// ECN codepoint ECT(0).
pub const ECN_ECT0: u8 = 2;
/// ECN codepoint CE.
pub const ECN_CE: u8 = 3;
/// The PFC priority data travels in (802.1Qbb); ACKs, NAKs and CNPs are never paused.
pub const DATA_PRIORITY: usize = 3;

/// Ethernet II + IPv4 (no options) + UDP.
const ETH_IP_UDP: u32 = 14 + 20 + 8;
const BTH: u32 = 12;
const RETH: u32 = 16;
const AETH: u32 = 4;
const ICRC: u32 = 4;
const CNP_RESERVED: u32 = 16;
/// The padded INT stack of 5 records (wire.md 5.2).
const INT_STACK: u32 = 2 + 8 * 5;
const RCC_SHIM: u32 = 8;
const RCC_EXT: u32 = 8;
const FNCC_N: u32 = 2;
/// A PFC frame: the 60-byte Ethernet minimum (wire.md 6).
pub const PFC_FRAME_LEN: u32 = 60;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// An RDMA WRITE packet, sender to receiver.
    Data,
    /// ACKNOWLEDGE with an ACK syndrome, receiver to sender.
    Ack,
    /// ACKNOWLEDGE with a NAK syndrome (PSN sequence error).
    Nak,
    /// Congestion notification packet, receiver to sender.
    Cnp,
    /// An 802.1Qbb pause frame for [`DATA_PRIORITY`], hop by hop.
    Pfc,
}

/// Whether a WRITE opcode carries a RETH.
pub const fn has_reth(opcode: u8) -> bool {
    opcode == WRITE_FIRST || opcode == WRITE_ONLY
}

/// Frame length in bytes as captured (no preamble, IFG or FCS) of a packet of `kind`.
pub fn frame_len(dialect: Dialect, kind: PacketKind, opcode: u8, payload: u32) -> u32 {
    if kind == PacketKind::Pfc {
        return PFC_FRAME_LEN;
    }
    let shim = match dialect {
        Dialect::Hpcc => INT_STACK,
        Dialect::Rcc => RCC_SHIM,
        Dialect::Roce | Dialect::Fncc => 0,
    };
    let body = match kind {
        PacketKind::Data => {
            let pad = (4 - payload % 4) % 4;
            (if has_reth(opcode) { RETH } else { 0 }) + payload + pad
        }
        PacketKind::Ack | PacketKind::Nak => {
            AETH + match dialect {
                Dialect::Fncc => FNCC_N + INT_STACK,
                Dialect::Rcc => RCC_EXT,
                Dialect::Roce | Dialect::Hpcc => 0,
            }
        }
        PacketKind::Cnp | PacketKind::Pfc => CNP_RESERVED,
    };
    ETH_IP_UDP + shim + BTH + body + ICRC
}

/// The fields of one packet that vary (the rest is fixed by the flow: addresses, QPs, ports).
///
/// The INT stack (HPCC: before BTH, in data and echoed in ACKs; FNCC: in the ACK) travels
/// beside it: the engine keeps one stack per slab slot only for the dialects that carry one,
/// so the packet its hot paths copy and cache is 64 bytes, one cache line, rather than 248
/// (docs/performance.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// What it is.
    pub kind: PacketKind,
    /// Scenario flow id (index in [`super::NetConfig::flows`]); 0 for PFC.
    pub flow: u32,
    /// 24-bit PSN (data: its own; ACK: the PSN acknowledged; NAK: the PSN expected).
    pub psn: u32,
    /// BTH opcode of data.
    pub opcode: u8,
    /// IB payload bytes of data.
    pub payload: u32,
    /// IP ECN codepoint.
    pub ecn: u8,
    /// RCC: the shim's transmit timestamp, absolute ns.
    pub ts_ns: u64,
    /// AETH syndrome.
    pub syndrome: u8,
    /// AETH MSN.
    pub msn: u32,
    /// FNCC / RCC: N in the ACK.
    pub ack_n: u16,
    /// RCC: cwnd in the ACK.
    pub ack_cwnd: u32,
    /// RCC: flags in the ACK.
    pub ack_flags: u8,
    /// PFC: pause time of [`DATA_PRIORITY`] in quanta (0 = resume).
    pub pfc_quanta: u16,
    /// PFC: the node that sent the frame (its MAC is the frame's source).
    pub pfc_from: u32,
    /// Frame bytes on the wire.
    pub wire_bytes: u32,
    /// The switch ingress port the packet is buffered against (PFC accounting).
    pub(crate) ingress: u16,
    /// The host it travels to (data: the flow's receiver; ACK, NAK, CNP: its sender) and the
    /// flow's ECMP hash: a switch routes the packet from these alone, without reading the
    /// flow's state (a cache miss per hop on a network of many flows).
    pub(crate) route_host: u32,
    pub(crate) flow_hash: u64,
    /// HPCC / FNCC: nHop and pathID of the packet's INT stack, whose records the engine keeps
    /// beside the packet (engine/mod.rs `IntSlot`): a switch appends a record by writing it
    /// there, without reading the slot first (the k = 8 tree's packets are mostly out of
    /// cache by the time they leave a queue).
    pub(crate) int_n: u8,
    pub(crate) int_path: u16,
}

impl Packet {
    /// An empty packet of `kind` for `flow`.
    pub(crate) fn new(kind: PacketKind, flow: u32) -> Self {
        Packet {
            kind,
            flow,
            psn: 0,
            opcode: 0,
            payload: 0,
            ecn: 0,
            ts_ns: 0,
            syndrome: 0,
            msn: 0,
            ack_n: 0,
            ack_cwnd: 0,
            ack_flags: 0,
            pfc_quanta: 0,
            pfc_from: 0,
            wire_bytes: 0,
            ingress: 0,
            route_host: 0,
            flow_hash: 0,
            int_n: 0,
            int_path: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 47 bytes of fields, the route (4 + 8) and the INT header (1 + 2) beside them: 62,
    /// padded to 8-byte alignment 64 —
    /// one cache line, which a growing packet would leave (the slab is read at every hop).
    #[test]
    fn a_packet_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 64);
    }
}
