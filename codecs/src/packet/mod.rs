//! Whole-frame decoding: link, network, transport, shim, BTH and its extension headers, payload,
//! pad and ICRC (wire.md 1-7) into a zero-copy [`Packet`].
//!
//! Decoding never fails as a whole: a [`Packet`] holds every layer it understood (each with the
//! byte offset where its header starts) and, for a packet it could not finish, the typed
//! [`DecodeError`] of the layer that stopped it. Non-fatal findings (reserved values that are
//! set) are counted as warnings; the first one is kept. Nothing here allocates.
//!
//! This file holds the decoded layers and the entry points (`decode`, `from_record`);
//! `network.rs` reads the link and network layers and what may wrap RoCEv2 (mirrors,
//! VXLAN, Geneve); `roce.rs` reads BTH and everything after it.

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::ib::ext::{
    self, AETH_LEN, ATOMIC_ACK_ETH_LEN, ATOMIC_ETH_LEN, DETH_LEN, IETH_LEN, IMM_DT_LEN, RDETH_LEN,
    RETH_LEN,
};
use crate::ib::icrc::{self, IpForIcrc};
use crate::ib::{
    AethRepr, AtomicEthRepr, BTH_LEN, Bth, CNP_RESERVED_LEN, DethRepr, ExtHeaders, ICRC_LEN,
    ROCEV2_UDP_PORT, RdethRepr, RethRepr,
};
use crate::lumina::Lumina;
use crate::mirror::Mirror;
use crate::pfc::PfcRepr;
use crate::shim::{Dialect, FnccExtView, IntConfig, IntStackView, RccExt};
use crate::tunnel::{self, GENEVE_UDP_PORT, Tunnel, VXLAN_UDP_PORT};

mod network;
mod roce;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// EtherType of an 802.1Q customer VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of an 802.1ad service VLAN tag.
pub const ETHERTYPE_QINQ: u16 = 0x88A8;

/// How to decode the packets of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DecodeConfig {
    /// Which shims the packets carry.
    pub dialect: Dialect,
    /// INT stack layout and max_hops (hpcc, fncc).
    pub int: IntConfig,
    /// UDP destination port that marks RoCEv2 (4791).
    pub udp_port: u16,
    /// The ERSPAN session whose mirrored frames are read (`None`: every mirrored frame). A
    /// frame of another session — or one with no session, ERSPAN I and gretap — is left
    /// unread ([`Mirror::read`] false): a capture that holds copies of the same traffic from
    /// several mirror sessions is read once (docs/wire.md 2.1).
    pub mirror_session: Option<u16>,
    /// UDP destination port of VXLAN (4789; 0: not read), whose inner frame is decoded as
    /// the packet (docs/wire.md 2.2).
    pub vxlan_port: u16,
    /// UDP destination port of Geneve (6081; 0: not read).
    pub geneve_port: u16,
    /// UDP destination port of a Lumina testbed's mirrored copies (lumina.rs; 0: not read):
    /// a copy to it is read as the RoCEv2 packet it copies.
    pub lumina_port: u16,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        DecodeConfig {
            dialect: Dialect::Roce,
            int: IntConfig::default(),
            udp_port: ROCEV2_UDP_PORT,
            mirror_session: None,
            vxlan_port: VXLAN_UDP_PORT,
            geneve_port: GENEVE_UDP_PORT,
            lumina_port: 0,
        }
    }
}

impl DecodeConfig {
    /// The default configuration for a dialect.
    pub fn for_dialect(dialect: Dialect) -> Self {
        DecodeConfig {
            dialect,
            ..Default::default()
        }
    }
}

/// One VLAN tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// Offset of the tag's 4 bytes (TCI and the next EtherType).
    pub offset: usize,
    /// The EtherType that announced the tag (0x8100 or 0x88A8).
    pub tpid: u16,
    /// Priority code point (the outer tag's PCP is the RoCE priority).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN ID.
    pub vid: u16,
}

/// Ethernet II header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EthInfo {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// Tags in wire order (outer first).
    pub vlans: [Option<VlanTag>; 2],
    /// EtherType after the tags.
    pub ether_type: u16,
}

impl EthInfo {
    /// PCP of the outer VLAN tag, the RoCE priority (wire.md 1).
    pub fn priority(&self) -> Option<u8> {
        self.vlans[0].map(|v| v.pcp)
    }
}

/// IP source and destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpAddrs {
    /// IPv4.
    V4 {
        /// Source.
        src: [u8; 4],
        /// Destination.
        dst: [u8; 4],
    },
    /// IPv6.
    V6 {
        /// Source.
        src: [u8; 16],
        /// Destination.
        dst: [u8; 16],
    },
}

impl IpAddrs {
    /// Source as a std address.
    pub fn src(&self) -> std::net::IpAddr {
        match *self {
            IpAddrs::V4 { src, .. } => src.into(),
            IpAddrs::V6 { src, .. } => src.into(),
        }
    }
    /// Destination as a std address.
    pub fn dst(&self) -> std::net::IpAddr {
        match *self {
            IpAddrs::V4 { dst, .. } => dst.into(),
            IpAddrs::V6 { dst, .. } => dst.into(),
        }
    }
}

/// IP header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpInfo {
    /// Offset of the IP header.
    pub offset: usize,
    /// Bytes of the IP header, IPv4 options and IPv6 extension headers included.
    pub header_len: usize,
    /// Addresses.
    pub addrs: IpAddrs,
    /// DSCP (top 6 bits of TOS / traffic class).
    pub dscp: u8,
    /// ECN (low 2 bits): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
    /// TTL / hop limit.
    pub ttl: u8,
    /// The transport protocol number after the extension headers.
    pub protocol: u8,
    /// Offset one past the IP payload, from the length field (may exceed the captured bytes
    /// when the record was cut by snaplen).
    pub end: usize,
}

/// UDP header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpInfo {
    /// Offset of the UDP header.
    pub offset: usize,
    /// Source port (flow entropy for RoCEv2).
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length field (header included).
    pub length: u16,
    /// Checksum field.
    pub checksum: u16,
}

/// The shim between UDP and BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shim<'a> {
    /// No shim (roce, fncc).
    None,
    /// hpcc: the INT stack.
    Int(IntStackView<'a>),
    /// rcc: the sender's (or, on ACKs, the receiver's) transmit timestamp in ns.
    RccTimestamp(u64),
}

/// The dialect extension after the AETH of ACKNOWLEDGE packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckExt<'a> {
    /// None.
    None,
    /// fncc: N and the ACK-carried INT.
    Fncc(FnccExtView<'a>),
    /// rcc: cwnd, N and flags.
    Rcc(RccExt),
}

/// The RoCEv2 part of a packet: everything inside the UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roce<'a> {
    /// Offset of the UDP payload.
    pub offset: usize,
    /// The shim before BTH.
    pub shim: Shim<'a>,
    /// Offset of BTH.
    pub bth_offset: usize,
    /// Base transport header.
    pub bth: Bth<'a>,
    /// RDETH bytes.
    pub rdeth: Option<&'a [u8; RDETH_LEN]>,
    /// DETH bytes.
    pub deth: Option<&'a [u8; DETH_LEN]>,
    /// RETH bytes.
    pub reth: Option<&'a [u8; RETH_LEN]>,
    /// AtomicETH bytes.
    pub atomic_eth: Option<&'a [u8; ATOMIC_ETH_LEN]>,
    /// AETH bytes.
    pub aeth: Option<&'a [u8; AETH_LEN]>,
    /// AtomicAckETH bytes.
    pub atomic_ack_eth: Option<&'a [u8; ATOMIC_ACK_ETH_LEN]>,
    /// ImmDt bytes.
    pub imm_dt: Option<&'a [u8; IMM_DT_LEN]>,
    /// IETH bytes.
    pub ieth: Option<&'a [u8; IETH_LEN]>,
    /// CNP reserved bytes.
    pub cnp_reserved: Option<&'a [u8; CNP_RESERVED_LEN]>,
    /// Dialect extension after the AETH.
    pub ack_ext: AckExt<'a>,
    /// IB payload (pad excluded). For an unknown opcode: every byte after BTH, kept opaque.
    pub payload: &'a [u8],
    /// Offset of the payload (where decoding stopped, for a packet cut inside its headers).
    pub payload_offset: usize,
    /// Payload bytes the packet had on the wire, from its length fields (pad excluded): the
    /// same as `payload.len()` for a whole packet, more when the record was cut by snaplen.
    pub payload_wire_len: usize,
    /// Pad bytes (PadCnt of them).
    pub pad: &'a [u8],
    /// The 4 ICRC bytes as on the wire; `None` when the record was cut before them.
    pub icrc: Option<[u8; 4]>,
    /// Offset of the ICRC: the last 4 bytes the UDP length covers (wire.md 1), wherever
    /// decoding stopped before them.
    pub icrc_offset: usize,
}

impl<'a> Roce<'a> {
    /// A packet of a flow's data, which a QP's rate limiter paces: SEND / WRITE requests and
    /// READ responses ([`crate::ib::Opcode::is_flow_data`]) that are not management
    /// datagrams to QP1 (the connection manager's, [`crate::ib::GSI_QP`]).
    #[inline]
    pub fn is_flow_data(&self) -> bool {
        self.bth.opcode().is_flow_data() && !self.bth.is_gsi()
    }

    /// RETH fields.
    pub fn reth(&self) -> Option<RethRepr> {
        self.reth.map(RethRepr::from_view)
    }
    /// DETH fields.
    pub fn deth(&self) -> Option<DethRepr> {
        self.deth.map(DethRepr::from_view)
    }
    /// RDETH fields.
    pub fn rdeth(&self) -> Option<RdethRepr> {
        self.rdeth.map(RdethRepr::from_view)
    }
    /// AtomicETH fields.
    pub fn atomic_eth(&self) -> Option<AtomicEthRepr> {
        self.atomic_eth.map(AtomicEthRepr::from_view)
    }
    /// AETH fields.
    pub fn aeth(&self) -> Option<AethRepr> {
        self.aeth.map(AethRepr::from_view)
    }
    /// AtomicAckETH original remote data.
    pub fn atomic_ack_eth(&self) -> Option<u64> {
        self.atomic_ack_eth.map(ext::read_u64)
    }
    /// Immediate data.
    pub fn imm_dt(&self) -> Option<u32> {
        self.imm_dt.map(ext::read_u32)
    }
    /// IETH R_Key.
    pub fn ieth(&self) -> Option<u32> {
        self.ieth.map(ext::read_u32)
    }
    /// Offset in the frame of the extension header `flag` (an [`ExtHeaders`] bit), when the
    /// opcode carries it; headers follow BTH in wire order.
    pub fn header_offset(&self, flag: u16) -> Option<usize> {
        const ORDER: [(u16, usize); 9] = [
            (ExtHeaders::RDETH, RDETH_LEN),
            (ExtHeaders::DETH, DETH_LEN),
            (ExtHeaders::RETH, RETH_LEN),
            (ExtHeaders::ATOMIC_ETH, ATOMIC_ETH_LEN),
            (ExtHeaders::AETH, AETH_LEN),
            (ExtHeaders::ATOMIC_ACK_ETH, ATOMIC_ACK_ETH_LEN),
            (ExtHeaders::IMM_DT, IMM_DT_LEN),
            (ExtHeaders::IETH, IETH_LEN),
            (ExtHeaders::CNP, CNP_RESERVED_LEN),
        ];
        let layout = self.bth.opcode().ext_headers();
        if !layout.has(flag) {
            return None;
        }
        let mut at = self.bth_offset + BTH_LEN;
        for (f, len) in ORDER {
            if f == flag {
                return Some(at);
            }
            if layout.has(f) {
                at += len;
            }
        }
        None
    }

    /// The INT stack a packet carries: before BTH (hpcc) or in the ACK extension (fncc).
    pub fn int_stack(&self) -> Option<IntStackView<'a>> {
        match (self.shim, self.ack_ext) {
            (Shim::Int(s), _) => Some(s),
            (_, AckExt::Fncc(f)) => Some(f.int),
            _ => None,
        }
    }
    /// The ICRC as Wireshark shows `infiniband.invariant.crc` (wire bytes read big-endian).
    pub fn icrc_field(&self) -> Option<u32> {
        self.icrc.map(u32::from_be_bytes)
    }
}

/// One decoded frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The captured bytes.
    pub data: &'a [u8],
    /// Ethernet, when the link type has it.
    pub eth: Option<EthInfo>,
    /// IPv4 or IPv6.
    pub ip: Option<IpInfo>,
    /// UDP.
    pub udp: Option<UdpInfo>,
    /// Everything inside a RoCEv2 UDP payload.
    pub roce: Option<Roce<'a>>,
    /// A PFC pause frame.
    pub pfc: Option<PfcRepr>,
    /// The encapsulation of a mirrored packet (ERSPAN, gretap: mirror.rs); the layers above
    /// are then the mirrored frame's.
    pub mirror: Option<Mirror>,
    /// The overlay tunnel the packet travels in (VXLAN, Geneve: tunnel.rs); the layers above
    /// are then the inner frame's.
    pub tunnel: Option<Tunnel>,
    /// A Lumina testbed's copy (lumina.rs): its switch timestamp, sequence number and event.
    /// `udp` is then the packet's own UDP header (source port put back, destination 4791);
    /// `eth` and `ip` are the copy's (MACs and TTL rewritten).
    pub lumina: Option<Lumina>,
    /// Why decoding stopped early, if it did.
    pub error: Option<DecodeError>,
    /// The first non-fatal finding (reserved value set).
    pub warning: Option<DecodeError>,
    /// How many non-fatal findings there were.
    pub warnings: u8,
}

/// What starts the captured bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkStart {
    /// An Ethernet II header.
    Ethernet,
    /// A network-layer header at `offset` with this EtherType (after a Linux cooked header, or
    /// raw IP where the EtherType comes from the version nibble).
    Network {
        /// Where the network header starts.
        offset: usize,
        /// Its EtherType.
        ether_type: u16,
    },
}

impl<'a> Packet<'a> {
    fn empty(data: &'a [u8]) -> Self {
        Packet {
            data,
            eth: None,
            ip: None,
            udp: None,
            roce: None,
            pfc: None,
            mirror: None,
            tunnel: None,
            lumina: None,
            error: None,
            warning: None,
            warnings: 0,
        }
    }

    /// A packet whose link layer could not be read at all (e.g. a cooked header cut short).
    pub fn failed(data: &'a [u8], error: DecodeError) -> Self {
        Packet {
            error: Some(error),
            ..Packet::empty(data)
        }
    }

    #[inline]
    fn warn(&mut self, w: Option<DecodeError>) {
        if let Some(w) = w {
            self.warning.get_or_insert(w);
            self.warnings = self.warnings.saturating_add(1);
        }
    }

    /// True when decoding stopped at an error.
    pub fn is_malformed(&self) -> bool {
        self.error.is_some()
    }

    /// True when every header was read and only the payload, pad or ICRC was cut by snaplen
    /// (header-only captures): what congestion control needs is all there.
    pub fn headers_complete(&self) -> bool {
        match &self.error {
            None => true,
            Some(e) => {
                matches!(e.kind, ErrorKind::Truncated { .. })
                    && matches!(e.layer, Layer::Payload | Layer::Icrc)
                    && self.roce.is_some()
            }
        }
    }

    /// True when the frame is shorter than it was on the wire: its record was cut by the
    /// capture's snaplen (`record_cut`), or the switch that mirrored it cut the copy (ERSPAN
    /// T). A decoding error after whole headers ([`Self::headers_complete`]) means one of
    /// the two: length fields are checked against the frame's original length.
    pub fn cut(&self, record_cut: bool) -> bool {
        record_cut || self.mirror.is_some_and(|m| m.truncated())
    }

    /// The frame's length on the wire where it was seen, from its record's original length
    /// `orig_len`: that length itself, or for a mirrored copy the mirrored frame's (the
    /// encapsulation around it is the collector's path, not the port's) — from its own IP
    /// length when the switch cut the copy.
    pub fn wire_len(&self, orig_len: usize) -> usize {
        match (&self.mirror, &self.ip) {
            (None, _) => orig_len,
            (Some(m), Some(ip)) if m.truncated() => ip.end.saturating_sub(m.inner),
            (Some(m), _) => orig_len.saturating_sub(m.inner),
        }
    }

    /// Recompute the ICRC and compare it with the one in the packet: `Some((computed, found))`,
    /// both as the big-endian read of the wire bytes; `None` when the packet carries no complete
    /// RoCEv2 payload (not RoCE, or cut before the ICRC).
    pub fn icrc_check(&self) -> Option<(u32, u32)> {
        let roce = self.roce.as_ref()?;
        let found = roce.icrc_field()?;
        let ip = self.ip.as_ref()?;
        let udp = self.udp.as_ref()?;
        let ip_hdr = self.data.get(ip.offset..ip.offset + ip.header_len)?;
        let mut udp_hdr = [0u8; 8];
        udp_hdr.copy_from_slice(self.data.get(udp.offset..udp.offset + 8)?);
        if self.lumina.is_some() {
            // The packet's own ports (lumina.rs): the ICRC covers them.
            udp_hdr[..2].copy_from_slice(&udp.src_port.to_be_bytes());
            udp_hdr[2..4].copy_from_slice(&udp.dst_port.to_be_bytes());
        }
        let end = udp.offset + udp.length as usize - ICRC_LEN;
        let payload = self.data.get(roce.offset..end)?;
        let ip_for = match ip.addrs {
            IpAddrs::V4 { .. } => IpForIcrc::V4(ip_hdr),
            IpAddrs::V6 { .. } => IpForIcrc::V6(ip_hdr),
        };
        let crc = icrc::compute(ip_for, &udp_hdr, payload, roce.bth_offset - roce.offset);
        Some((icrc::wire_value(crc), found))
    }

    /// Decode one frame. `orig_len` is the frame's length on the wire (≥ `data.len()` when the
    /// record was cut by snaplen); it tells a cut record from a lying length field.
    #[inline]
    pub fn decode(data: &'a [u8], orig_len: usize, start: LinkStart, cfg: &DecodeConfig) -> Self {
        let mut p = Packet::empty(data);
        if let Err(e) = p.decode_inner(orig_len.max(data.len()), start, cfg) {
            p.error = Some(e);
        }
        p
    }

    /// Decode a capture record: its link type says where the decoder starts, and its original
    /// length tells a snaplen cut from a lying length field.
    #[inline]
    pub fn from_record(rec: &crate::capture::Record<'a>, cfg: &DecodeConfig) -> Self {
        use crate::capture::LinkError;
        // One `Packet` built in place and returned (a `match` of two constructors made the
        // caller copy the large struct once more per packet).
        let mut p = Packet::empty(rec.data);
        let orig_len = (rec.orig_len as usize).max(rec.data.len());
        let start = match rec.link_start() {
            Ok(start) => start,
            Err(e) => {
                p.error = Some(match e {
                    LinkError::Truncated {
                        needed, available, ..
                    } => DecodeError::truncated(Layer::LinuxSll, 0, needed, available),
                    LinkError::Unsupported(code) => DecodeError::new(
                        Layer::Frame,
                        0,
                        ErrorKind::Unsupported {
                            what: "link type",
                            found: code as u64,
                        },
                    ),
                    LinkError::UnknownIpVersion(v) => DecodeError::new(
                        Layer::Frame,
                        0,
                        ErrorKind::Unsupported {
                            what: "IP version",
                            found: v as u64,
                        },
                    ),
                });
                return p;
            }
        };
        if let Err(e) = p.decode_inner(orig_len, start, cfg) {
            p.error = Some(e);
        }
        p
    }

    /// Decode an Ethernet frame captured whole.
    pub fn decode_ethernet(data: &'a [u8], cfg: &DecodeConfig) -> Self {
        Self::decode(data, data.len(), LinkStart::Ethernet, cfg)
    }

    #[inline]
    fn decode_inner(
        &mut self,
        orig_len: usize,
        start: LinkStart,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        let (net_off, ether_type) = match start {
            LinkStart::Ethernet => self.decode_ethernet_header(0)?,
            LinkStart::Network { offset, ether_type } => (offset, ether_type),
        };
        self.decode_network::<true>(orig_len, net_off, ether_type, cfg)
    }

    /// The ECN codepoint the packet's receiver acts on: the IP header's, or for a tunnelled
    /// packet what decapsulation leaves on the inner header (RFC 6040 4.2: an outer CE on an
    /// ECN-capable inner packet is CE; [`tunnel::decap_ecn`]). `None` without IP, and for the
    /// one combination the decapsulator drops (outer CE, inner Not-ECT).
    #[inline]
    pub fn ecn(&self) -> Option<u8> {
        let ip = self.ip.as_ref()?;
        match &self.tunnel {
            None => Some(ip.ecn),
            Some(t) => tunnel::decap_ecn(t.ecn, ip.ecn),
        }
    }
}
