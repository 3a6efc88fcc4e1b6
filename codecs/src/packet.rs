//! Whole-frame decoding: link, network, transport, shim, BTH and its extension headers, payload,
//! pad and ICRC (wire.md 1-7) into a zero-copy [`Packet`].
//!
//! Decoding never fails as a whole: a [`Packet`] holds every layer it understood (each with the
//! byte offset where its header starts) and, for a packet it could not finish, the typed
//! [`DecodeError`] of the layer that stopped it. Non-fatal findings (reserved values that are
//! set) are counted as warnings; the first one is kept. Nothing here allocates.

use etherparse::{
    Ethernet2HeaderSlice, IpNumber, Ipv4HeaderSlice, Ipv6ExtensionsSlice, Ipv6HeaderSlice,
    SingleVlanHeaderSlice, UdpHeaderSlice,
};

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::ib::ext::{
    self, AETH_LEN, ATOMIC_ACK_ETH_LEN, ATOMIC_ETH_LEN, DETH_LEN, IETH_LEN, IMM_DT_LEN, RDETH_LEN,
    RETH_LEN, view,
};
use crate::ib::icrc::{self, IpForIcrc};
use crate::ib::{
    AethRepr, AtomicEthRepr, BTH_LEN, Bth, CNP_RESERVED_LEN, DethRepr, ExtHeaders, ICRC_LEN,
    ROCEV2_UDP_PORT, RdethRepr, RethRepr,
};
use crate::mirror::{self, IPPROTO_GRE, Mirror};
use crate::pfc::{ETHERTYPE_MAC_CONTROL, PfcRepr};
use crate::shim::{
    Dialect, FnccExtView, IntConfig, IntStackView, RCC_EXT_LEN, RCC_SHIM_LEN, RccExt,
};
use crate::tunnel::{self, GENEVE_UDP_PORT, Tunnel, TunnelKind, VXLAN_UDP_PORT};

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
        let udp_hdr = self.data.get(udp.offset..udp.offset + 8)?;
        let end = udp.offset + udp.length as usize - ICRC_LEN;
        let payload = self.data.get(roce.offset..end)?;
        let ip_for = match ip.addrs {
            IpAddrs::V4 { .. } => IpForIcrc::V4(ip_hdr),
            IpAddrs::V6 { .. } => IpForIcrc::V6(ip_hdr),
        };
        let crc = icrc::compute(ip_for, udp_hdr, payload, roce.bth_offset - roce.offset);
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

    /// Everything from the network header on (`orig_len`: where the frame ends, an offset).
    /// `OUTER`: the frame as captured, which may be a mirror's encapsulation; a mirrored
    /// frame is decoded with `false` (one level only, and no recursion for the compiler to
    /// keep out of line on every packet's path).
    #[inline]
    fn decode_network<const OUTER: bool>(
        &mut self,
        orig_len: usize,
        net_off: usize,
        ether_type: u16,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        let data = self.data;
        match ether_type {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => {}
            ETHERTYPE_MAC_CONTROL => {
                let body = data.get(net_off..).unwrap_or(&[]);
                let (pfc, w) = PfcRepr::decode(body, net_off)?;
                self.pfc = Some(pfc);
                self.warn(w);
                return Ok(());
            }
            _ => return Ok(()), // not IP: nothing more to read
        }
        let ip = if ether_type == ETHERTYPE_IPV4 {
            decode_ipv4(data, net_off, orig_len)?
        } else {
            decode_ipv6(data, net_off, orig_len)?
        };
        self.ip = Some(ip);
        if OUTER && ip.protocol == IPPROTO_GRE {
            return self.decode_mirror(ip, cfg);
        }
        if ip.protocol != u8::from(IpNumber::UDP) {
            return Ok(());
        }
        let udp_off = ip.offset + ip.header_len;
        let udp_bytes = data.get(udp_off..).unwrap_or(&[]);
        let udp = UdpHeaderSlice::from_slice(udp_bytes)
            .map_err(|_| DecodeError::truncated(Layer::Udp, udp_off, 8, udp_bytes.len()))?;
        let length = udp.length();
        let udp_info = UdpInfo {
            offset: udp_off,
            src_port: udp.source_port(),
            dst_port: udp.destination_port(),
            length,
            checksum: udp.checksum(),
        };
        self.udp = Some(udp_info);
        let udp_end = udp_off + length as usize;
        if (length as usize) < 8 || udp_end > ip.end {
            return Err(DecodeError::new(
                Layer::Udp,
                udp_off,
                ErrorKind::BadLength {
                    field: "udp.length",
                    found: length as u64,
                    expected: "between 8 and the IP payload length",
                },
            ));
        }
        if udp_info.dst_port != cfg.udp_port {
            let kind = match udp_info.dst_port {
                0 => return Ok(()),
                p if p == cfg.vxlan_port => TunnelKind::Vxlan,
                p if p == cfg.geneve_port => TunnelKind::Geneve,
                _ => return Ok(()),
            };
            if self.tunnel.is_some() {
                return Ok(()); // one level only: a tunnel inside the tunnel is plain UDP
            }
            return self.decode_tunnel(kind, ip, udp_info, udp_end, cfg);
        }
        // The record may be cut by snaplen inside the UDP payload: read only what was captured.
        self.decode_roce(udp_off + 8, udp_end, cfg)
    }

    /// A GRE packet: when it carries a mirrored frame (mirror.rs), the outer headers move to
    /// `mirror` and the frame is decoded as the packet. One level only: GRE inside the
    /// mirrored frame is read as any other IP protocol.
    #[cold]
    fn decode_mirror(&mut self, ip: IpInfo, cfg: &DecodeConfig) -> Result<(), DecodeError> {
        let Some(m) = mirror::parse(self.data, ip.offset + ip.header_len, ip.end)? else {
            return Ok(()); // GRE carrying something else
        };
        self.warn(m.warning);
        let (inner, net) = match m.inner {
            mirror::Inner::Ethernet(at) => (at, None),
            mirror::Inner::Network(at, ether_type) => (at, Some(ether_type)),
        };
        let read = cfg
            .mirror_session
            .is_none_or(|s| m.erspan.is_some_and(|e| e.span_id() == s));
        let mirror = Mirror {
            kind: m.kind,
            eth: self.eth.take(),
            ip,
            gre: m.gre,
            erspan: m.erspan,
            inner,
            read,
        };
        self.mirror = Some(mirror);
        self.ip = None;
        if !read {
            return Ok(()); // another session's copy
        }
        // The frame ends with the outer IP payload, unless the switch cut it (ERSPAN T): then
        // its length fields may claim more, as in a record cut by snaplen.
        let orig_len = if mirror.truncated() {
            usize::MAX >> 2
        } else {
            ip.end
        };
        let (net_off, ether_type) = match net {
            Some(ether_type) => (inner, ether_type),
            None if inner + 14 > orig_len => {
                // The outer IP length leaves no room for the frame's Ethernet header: a lying
                // length (bytes after it in the record are not the frame's).
                return Err(DecodeError::new(
                    Layer::Ethernet,
                    inner,
                    ErrorKind::BadLength {
                        field: "ip payload",
                        found: (orig_len - inner) as u64,
                        expected: "room for the mirrored frame's Ethernet header",
                    },
                ));
            }
            None => self.decode_ethernet_header(inner)?,
        };
        self.decode_network::<false>(orig_len, net_off, ether_type, cfg)
    }

    /// A VXLAN or Geneve packet: its outer headers move to `tunnel` and the inner frame is
    /// decoded as the packet (wire.md 2.2). One level only.
    #[cold]
    fn decode_tunnel(
        &mut self,
        kind: TunnelKind,
        ip: IpInfo,
        udp: UdpInfo,
        udp_end: usize,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        let t = tunnel::parse(self.data, kind, udp.offset + 8, udp_end)?;
        self.warn(t.warning);
        let Some(inner) = t.inner else {
            return Ok(()); // Geneve carrying something else: the packet stays its UDP
        };
        let at = match inner {
            tunnel::Inner::Ethernet(at) | tunnel::Inner::Network(at, _) => at,
        };
        // The outer Ethernet header starts the frame, or a mirrored frame inside it.
        let eth_at = self.mirror.map_or(0, |m| m.inner);
        // Offsets fit u32: a record is at most a pcap's 2^32 - 1 bytes.
        self.tunnel = Some(Tunnel {
            kind,
            ecn: ip.ecn,
            udp_src_port: udp.src_port,
            eth_offset: self.eth.take().map(|_| eth_at as u32),
            ip_offset: ip.offset as u32,
            offset: (udp.offset + 8) as u32,
            flags: t.flags,
            protocol: t.protocol,
            vni: t.vni,
            options_len: t.options_len,
            inner: at as u32,
        });
        self.ip = None;
        self.udp = None;
        // The inner frame ends with the outer UDP payload.
        let (net_off, ether_type) = match inner {
            tunnel::Inner::Network(at, ether_type) => (at, ether_type),
            tunnel::Inner::Ethernet(at) => self.decode_ethernet_header(at)?,
        };
        self.decode_network::<false>(udp_end, net_off, ether_type, cfg)
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

    /// The Ethernet header (and VLAN tags) at offset `at`.
    fn decode_ethernet_header(&mut self, at: usize) -> Result<(usize, u16), DecodeError> {
        let data = self.data.get(at..).unwrap_or(&[]);
        let eth = Ethernet2HeaderSlice::from_slice(data)
            .map_err(|_| DecodeError::truncated(Layer::Ethernet, at, 14, data.len()))?;
        let mut info = EthInfo {
            dst: eth.destination(),
            src: eth.source(),
            vlans: [None, None],
            ether_type: eth.ether_type().0,
        };
        let mut off = 14;
        let mut ether_type = info.ether_type;
        let mut n = 0;
        while ether_type == ETHERTYPE_VLAN || ether_type == ETHERTYPE_QINQ {
            if n == 2 {
                self.eth = Some(info);
                return Err(DecodeError::new(
                    Layer::Vlan,
                    at + off,
                    ErrorKind::Unsupported {
                        what: "more than 2 VLAN tags",
                        found: 3,
                    },
                ));
            }
            let rest = &data[off..];
            let tag = SingleVlanHeaderSlice::from_slice(rest).map_err(|_| {
                self.eth = Some(info);
                DecodeError::truncated(Layer::Vlan, at + off, 4, rest.len())
            })?;
            info.vlans[n] = Some(VlanTag {
                offset: at + off,
                tpid: ether_type,
                pcp: u8::from(tag.priority_code_point()),
                dei: tag.drop_eligible_indicator(),
                vid: u16::from(tag.vlan_identifier()),
            });
            ether_type = tag.ether_type().0;
            off += 4;
            n += 1;
        }
        info.ether_type = ether_type;
        self.eth = Some(info);
        Ok((at + off, ether_type))
    }

    fn decode_roce(
        &mut self,
        start: usize,
        udp_end: usize,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        // Disjoint borrows: the RoCE view is built in place in `self.roce` (no copy of the large
        // struct on the hot path) while warnings are counted beside it.
        let Packet {
            data,
            roce: roce_slot,
            warning,
            warnings,
            ..
        } = self;
        let data: &'a [u8] = data;
        let mut warn = |w: Option<DecodeError>| {
            if let Some(w) = w {
                warning.get_or_insert(w);
                *warnings = warnings.saturating_add(1);
            }
        };
        if udp_end < start + ICRC_LEN {
            return Err(DecodeError::new(
                Layer::Icrc,
                start,
                ErrorKind::BadLength {
                    field: "udp.length",
                    found: (udp_end + 8 - start) as u64,
                    expected: ">= 8 + BTH + ICRC",
                },
            ));
        }
        // The ICRC is the last 4 bytes of the UDP payload (wire.md 1). A record cut by snaplen
        // keeps what was captured of the body and has no ICRC.
        let icrc_at = udp_end - ICRC_LEN;
        let captured_end = udp_end.min(data.len());
        let complete = captured_end == udp_end;
        let body = data.get(start..icrc_at.min(captured_end)).unwrap_or(&[]);
        let icrc = data.get(icrc_at..udp_end).map(|b| [b[0], b[1], b[2], b[3]]);
        let mut off = start;
        let mut rest = body;

        let shim = match cfg.dialect {
            Dialect::Hpcc => {
                let (s, w) = IntStackView::parse(rest, off, cfg.int)?;
                warn(w);
                rest = &rest[s.wire_len..];
                off += s.wire_len;
                Shim::Int(s)
            }
            Dialect::Rcc => {
                let ts = view::<RCC_SHIM_LEN>(rest, Layer::RccShim, off)?;
                rest = &rest[RCC_SHIM_LEN..];
                off += RCC_SHIM_LEN;
                Shim::RccTimestamp(u64::from_be_bytes(*ts))
            }
            Dialect::Roce | Dialect::Fncc => Shim::None,
        };
        let bth = Bth::new_checked(rest, off)?;
        let bth_offset = off;
        rest = &rest[BTH_LEN..];
        off += BTH_LEN;
        let warning = bth.reserved_warning(bth_offset);
        warn(warning);

        let roce = roce_slot.insert(Roce {
            offset: start,
            shim,
            bth_offset,
            bth,
            rdeth: None,
            deth: None,
            reth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack_eth: None,
            imm_dt: None,
            ieth: None,
            cnp_reserved: None,
            ack_ext: AckExt::None,
            payload: rest,
            payload_offset: off,
            payload_wire_len: 0,
            pad: &rest[..0],
            icrc,
            icrc_offset: icrc_at,
        });
        let opcode = bth.opcode();
        if !opcode.is_known() {
            // wire.md 2: reported; the rest of the packet is kept as an opaque payload.
            return Err(DecodeError::new(
                Layer::Bth,
                bth_offset,
                ErrorKind::UnknownOpcode(opcode.0),
            ));
        }
        let layout = opcode.ext_headers();
        // Each extension header in wire order; `take` advances `rest` and `off`.
        macro_rules! take {
            ($flag:expr, $len:expr, $layer:expr, $field:ident) => {
                if layout.has($flag) {
                    let v = view::<{ $len }>(rest, $layer, off);
                    let v = match v {
                        Ok(v) => v,
                        Err(e) => {
                            roce.payload = &rest[..0];
                            roce.payload_offset = off;
                            return Err(e);
                        }
                    };
                    roce.$field = Some(v);
                    rest = &rest[$len..];
                    off += $len;
                }
            };
        }
        take!(ExtHeaders::RDETH, RDETH_LEN, Layer::Rdeth, rdeth);
        take!(ExtHeaders::DETH, DETH_LEN, Layer::Deth, deth);
        take!(ExtHeaders::RETH, RETH_LEN, Layer::Reth, reth);
        take!(
            ExtHeaders::ATOMIC_ETH,
            ATOMIC_ETH_LEN,
            Layer::AtomicEth,
            atomic_eth
        );
        take!(ExtHeaders::AETH, AETH_LEN, Layer::Aeth, aeth);
        take!(
            ExtHeaders::ATOMIC_ACK_ETH,
            ATOMIC_ACK_ETH_LEN,
            Layer::AtomicAckEth,
            atomic_ack_eth
        );
        take!(ExtHeaders::IMM_DT, IMM_DT_LEN, Layer::ImmDt, imm_dt);
        take!(ExtHeaders::IETH, IETH_LEN, Layer::Ieth, ieth);
        take!(ExtHeaders::CNP, CNP_RESERVED_LEN, Layer::Cnp, cnp_reserved);
        if let Some(r) = roce.cnp_reserved
            && !crate::shim::all_zero(r)
        {
            warn(Some(DecodeError::new(
                Layer::Cnp,
                off - CNP_RESERVED_LEN,
                ErrorKind::Reserved {
                    field: "cnp.reserved",
                    found: 1,
                },
            )));
        }
        if opcode.is_ack() {
            match cfg.dialect {
                Dialect::Fncc => {
                    let at = off;
                    let ext = (|| {
                        let n = view::<2>(rest, Layer::FnccExt, at)?;
                        let (int, w) = IntStackView::parse(&rest[2..], at + 2, cfg.int)?;
                        Ok::<_, DecodeError>((u16::from_be_bytes(*n), int, w))
                    })();
                    match ext {
                        Ok((n, int, w)) => {
                            warn(w);
                            rest = &rest[2 + int.wire_len..];
                            off += 2 + int.wire_len;
                            roce.ack_ext = AckExt::Fncc(FnccExtView { n, int });
                        }
                        Err(e) => {
                            roce.payload = &rest[..0];
                            roce.payload_offset = off;
                            return Err(e);
                        }
                    }
                }
                Dialect::Rcc => match view::<RCC_EXT_LEN>(rest, Layer::RccExt, off) {
                    Ok(b) => {
                        let e = RccExt::from_bytes(b);
                        warn(e.reserved_warning(off));
                        rest = &rest[RCC_EXT_LEN..];
                        off += RCC_EXT_LEN;
                        roce.ack_ext = AckExt::Rcc(e);
                    }
                    Err(e) => {
                        roce.payload = &rest[..0];
                        roce.payload_offset = off;
                        return Err(e);
                    }
                },
                Dialect::Roce | Dialect::Hpcc => {}
            }
        }
        // Payload, then PadCnt pad bytes, then the ICRC.
        let pad = bth.pad_cnt() as usize;
        roce.payload = rest;
        roce.payload_offset = off;
        roce.payload_wire_len = icrc_at.saturating_sub(off).saturating_sub(pad);
        if captured_end < icrc_at {
            // Cut by snaplen inside the payload: the headers are whole, the rest is not.
            return Err(DecodeError::truncated(
                Layer::Payload,
                off,
                icrc_at - off,
                captured_end - off,
            ));
        }
        if rest.len() < pad {
            return Err(DecodeError::new(
                Layer::Payload,
                off,
                ErrorKind::BadLength {
                    field: "bth.padcnt",
                    found: pad as u64,
                    expected: "<= bytes between the headers and the ICRC",
                },
            ));
        }
        let (payload, pad_bytes) = rest.split_at(rest.len() - pad);
        roce.payload = payload;
        roce.pad = pad_bytes;
        if complete {
            Ok(())
        } else {
            // Cut by snaplen inside the ICRC.
            Err(DecodeError::truncated(
                Layer::Icrc,
                icrc_at,
                ICRC_LEN,
                captured_end - icrc_at,
            ))
        }
    }
}

#[inline]
fn decode_ipv4(data: &[u8], off: usize, orig_len: usize) -> Result<IpInfo, DecodeError> {
    let bytes = data.get(off..).unwrap_or(&[]);
    let h = Ipv4HeaderSlice::from_slice(bytes).map_err(|e| match e {
        etherparse::err::ipv4::HeaderSliceError::Len(l) => {
            DecodeError::truncated(Layer::Ipv4, off, l.required_len, l.len)
        }
        etherparse::err::ipv4::HeaderSliceError::Content(c) => match c {
            etherparse::err::ipv4::HeaderError::UnexpectedVersion { version_number } => {
                DecodeError::new(
                    Layer::Ipv4,
                    off,
                    ErrorKind::Unsupported {
                        what: "IP version",
                        found: version_number as u64,
                    },
                )
            }
            etherparse::err::ipv4::HeaderError::HeaderLengthSmallerThanHeader { ihl } => {
                DecodeError::new(
                    Layer::Ipv4,
                    off,
                    ErrorKind::BadLength {
                        field: "ipv4.ihl",
                        found: ihl as u64,
                        expected: ">= 5",
                    },
                )
            }
        },
    })?;
    let header_len = h.slice().len();
    let total = h.total_len() as usize;
    if total < header_len || off + total > orig_len {
        return Err(DecodeError::new(
            Layer::Ipv4,
            off,
            ErrorKind::BadLength {
                field: "ipv4.total_len",
                found: total as u64,
                expected: "between the header length and the frame length",
            },
        ));
    }
    if h.is_fragmenting_payload() {
        return Err(DecodeError::new(
            Layer::Ipv4,
            off,
            ErrorKind::Unsupported {
                what: "IPv4 fragment",
                found: h.fragments_offset().value() as u64,
            },
        ));
    }
    let tos = bytes[1];
    Ok(IpInfo {
        offset: off,
        header_len,
        addrs: IpAddrs::V4 {
            src: h.source(),
            dst: h.destination(),
        },
        dscp: tos >> 2,
        ecn: tos & 3,
        ttl: h.ttl(),
        protocol: h.protocol().0,
        end: off + total,
    })
}

fn decode_ipv6(data: &[u8], off: usize, orig_len: usize) -> Result<IpInfo, DecodeError> {
    let bytes = data.get(off..).unwrap_or(&[]);
    let h = Ipv6HeaderSlice::from_slice(bytes).map_err(|e| match e {
        etherparse::err::ipv6::HeaderSliceError::Len(l) => {
            DecodeError::truncated(Layer::Ipv6, off, l.required_len, l.len)
        }
        etherparse::err::ipv6::HeaderSliceError::Content(c) => match c {
            etherparse::err::ipv6::HeaderError::UnexpectedVersion { version_number } => {
                DecodeError::new(
                    Layer::Ipv6,
                    off,
                    ErrorKind::Unsupported {
                        what: "IP version",
                        found: version_number as u64,
                    },
                )
            }
        },
    })?;
    let end = off + 40 + h.payload_length() as usize;
    if end > orig_len {
        return Err(DecodeError::new(
            Layer::Ipv6,
            off,
            ErrorKind::BadLength {
                field: "ipv6.payload_len",
                found: h.payload_length() as u64,
                expected: "<= the frame length after the IPv6 header",
            },
        ));
    }
    let after = &bytes[40..];
    let (exts, next, _) =
        Ipv6ExtensionsSlice::from_slice(h.next_header(), after).map_err(|e| match e {
            etherparse::err::ipv6_exts::HeaderSliceError::Len(l) => {
                DecodeError::truncated(Layer::Ipv6Ext, off + 40, l.required_len, l.len)
            }
            etherparse::err::ipv6_exts::HeaderSliceError::Content(_) => DecodeError::new(
                Layer::Ipv6Ext,
                off + 40,
                ErrorKind::Unsupported {
                    what: "IPv6 extension header order",
                    found: 0,
                },
            ),
        })?;
    if exts.is_fragmenting_payload() {
        return Err(DecodeError::new(
            Layer::Ipv6Ext,
            off + 40,
            ErrorKind::Unsupported {
                what: "IPv6 fragment",
                found: 0,
            },
        ));
    }
    let tc = h.traffic_class();
    Ok(IpInfo {
        offset: off,
        header_len: 40 + exts.slice().len(),
        addrs: IpAddrs::V6 {
            src: h.source(),
            dst: h.destination(),
        },
        dscp: tc >> 2,
        ecn: tc & 3,
        ttl: h.hop_limit(),
        protocol: next.0,
        end,
    })
}
