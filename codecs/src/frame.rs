//! Owned frames for writing: Ethernet (0–2 VLAN tags) / IPv4 or IPv6 / UDP / shim / BTH /
//! extension headers / payload / pad / ICRC — the counterpart of [`crate::packet::Packet`].
//!
//! [`FrameRepr::emit`] computes every length, the IPv4 header checksum (etherparse), the ICRC
//! (wire.md 4) and, for IPv6, the UDP checksum (over the payload with its ICRC). Over IPv4 the
//! UDP checksum is written as 0, as RoCEv2 senders do.

use etherparse::{
    EtherType, Ethernet2Header, IpDscp, IpEcn, IpNumber, Ipv4Header, Ipv4Options, Ipv6FlowLabel,
    Ipv6Header, SingleVlanHeader, UdpHeader, VlanId, VlanPcp,
};

use crate::ib::icrc::{self, IpForIcrc};
use crate::ib::{
    AethRepr, AtomicEthRepr, BthRepr, CNP_RESERVED_LEN, DethRepr, ExtHeaders, ICRC_LEN, RdethRepr,
    RethRepr,
};
use crate::packet::{AckExt, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IpAddrs, Packet, Roce, Shim};
use crate::shim::int::IntStack;
use crate::shim::{Dialect, IntConfig, RccExt, emit_int_stack};

/// Why a frame could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// A header the opcode requires is missing, or one it does not carry is present.
    #[error("opcode 0x{opcode:02x}: {header} {problem}")]
    ExtHeaderMismatch {
        /// Opcode.
        opcode: u8,
        /// Header name.
        header: &'static str,
        /// `missing` or `not carried by this opcode`.
        problem: &'static str,
    },
    /// The shim or ACK extension does not match the dialect.
    #[error("{what} does not belong to dialect {dialect}")]
    DialectMismatch {
        /// What was given.
        what: &'static str,
        /// The dialect.
        dialect: Dialect,
    },
    /// A field value out of range for its header.
    #[error("{field} = {value} out of range ({limit})")]
    OutOfRange {
        /// Field.
        field: &'static str,
        /// Value.
        value: u64,
        /// The allowed range in words.
        limit: &'static str,
    },
}

/// A VLAN tag to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct VlanRepr {
    /// 0x8100 or 0x88A8.
    pub tpid: u16,
    /// Priority code point, 3 bits.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN ID, 12 bits.
    pub vid: u16,
}

/// The IP header to write.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum IpRepr {
    /// IPv4.
    V4 {
        /// Source.
        src: [u8; 4],
        /// Destination.
        dst: [u8; 4],
        /// DSCP, 6 bits.
        dscp: u8,
        /// ECN, 2 bits.
        ecn: u8,
        /// TTL.
        ttl: u8,
        /// Identification.
        identification: u16,
        /// Options (a multiple of 4 bytes, at most 40).
        options: Vec<u8>,
    },
    /// IPv6 (no extension headers).
    V6 {
        /// Source.
        src: [u8; 16],
        /// Destination.
        dst: [u8; 16],
        /// DSCP, 6 bits.
        dscp: u8,
        /// ECN, 2 bits.
        ecn: u8,
        /// Flow label, 20 bits.
        flow_label: u32,
        /// Hop limit.
        hop_limit: u8,
    },
}

/// The shim to write before BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ShimRepr {
    /// None (roce, fncc).
    None,
    /// hpcc INT stack.
    Int(IntStack),
    /// rcc transmit timestamp, ns.
    RccTimestamp(u64),
}

/// The dialect extension to write after an ACK's AETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AckExtRepr {
    /// None.
    None,
    /// fncc: N and the INT stack.
    Fncc {
        /// Receiver's flow count.
        n: u16,
        /// INT stack.
        int: IntStack,
    },
    /// rcc: cwnd, N, flags.
    Rcc(RccExt),
}

/// Everything inside the UDP payload, owned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RoceRepr {
    /// Shim before BTH.
    pub shim: ShimRepr,
    /// BTH. Its PadCnt decides how many zero pad bytes follow the payload.
    pub bth: BthRepr,
    /// RDETH.
    pub rdeth: Option<RdethRepr>,
    /// DETH.
    pub deth: Option<DethRepr>,
    /// RETH.
    pub reth: Option<RethRepr>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH.
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH original remote data.
    pub atomic_ack_eth: Option<u64>,
    /// Immediate data.
    pub imm_dt: Option<u32>,
    /// IETH R_Key.
    pub ieth: Option<u32>,
    /// CNP reserved bytes.
    pub cnp_reserved: Option<[u8; CNP_RESERVED_LEN]>,
    /// Dialect extension after the AETH.
    pub ack_ext: AckExtRepr,
    /// IB payload.
    pub payload: Vec<u8>,
}

impl RoceRepr {
    /// A packet of `bth.opcode` with every header the opcode needs set to zero (CNP: BECN set)
    /// and no payload; fill in what matters.
    pub fn for_opcode(bth: BthRepr) -> Self {
        let l = bth.opcode.ext_headers();
        RoceRepr {
            shim: ShimRepr::None,
            bth,
            rdeth: l.has(ExtHeaders::RDETH).then(RdethRepr::default),
            deth: l.has(ExtHeaders::DETH).then(DethRepr::default),
            reth: l.has(ExtHeaders::RETH).then(RethRepr::default),
            atomic_eth: l.has(ExtHeaders::ATOMIC_ETH).then(AtomicEthRepr::default),
            aeth: l.has(ExtHeaders::AETH).then(AethRepr::default),
            atomic_ack_eth: l.has(ExtHeaders::ATOMIC_ACK_ETH).then_some(0),
            imm_dt: l.has(ExtHeaders::IMM_DT).then_some(0),
            ieth: l.has(ExtHeaders::IETH).then_some(0),
            cnp_reserved: l.has(ExtHeaders::CNP).then_some([0; CNP_RESERVED_LEN]),
            ack_ext: AckExtRepr::None,
            payload: Vec::new(),
        }
    }

    /// Owned copy of a decoded RoCEv2 payload.
    pub fn from_view(r: &Roce<'_>) -> Self {
        RoceRepr {
            shim: match r.shim {
                Shim::None => ShimRepr::None,
                Shim::Int(s) => ShimRepr::Int(s.to_owned_stack()),
                Shim::RccTimestamp(t) => ShimRepr::RccTimestamp(t),
            },
            bth: r.bth.to_repr(),
            rdeth: r.rdeth(),
            deth: r.deth(),
            reth: r.reth(),
            atomic_eth: r.atomic_eth(),
            aeth: r.aeth(),
            atomic_ack_eth: r.atomic_ack_eth(),
            imm_dt: r.imm_dt(),
            ieth: r.ieth(),
            cnp_reserved: r.cnp_reserved.copied(),
            ack_ext: match r.ack_ext {
                AckExt::None => AckExtRepr::None,
                AckExt::Fncc(f) => AckExtRepr::Fncc {
                    n: f.n,
                    int: f.int.to_owned_stack(),
                },
                AckExt::Rcc(e) => AckExtRepr::Rcc(e),
            },
            payload: r.payload.to_vec(),
        }
    }

    /// Make the repr writable and its round trip exact: a known opcode (unknown ones become
    /// RC SEND_ONLY), exactly the extension headers the opcode carries (missing ones zero), the
    /// shim and ACK extension the dialect puts there, INT stacks within `max_hops`, and every
    /// field masked to its wire width. Used by the round-trip tests and the fuzz targets.
    pub fn conform(&mut self, dialect: Dialect, int: IntConfig) {
        if !self.bth.opcode.is_known() {
            self.bth.opcode = crate::ib::Opcode::RC_SEND_ONLY;
        }
        self.bth = self.bth.masked();
        let l = self.bth.opcode.ext_headers();
        fn keep<T: Default>(v: &mut Option<T>, wanted: bool) {
            if wanted {
                v.get_or_insert_with(T::default);
            } else {
                *v = None;
            }
        }
        keep(&mut self.rdeth, l.has(ExtHeaders::RDETH));
        keep(&mut self.deth, l.has(ExtHeaders::DETH));
        keep(&mut self.reth, l.has(ExtHeaders::RETH));
        keep(&mut self.atomic_eth, l.has(ExtHeaders::ATOMIC_ETH));
        keep(&mut self.aeth, l.has(ExtHeaders::AETH));
        keep(&mut self.atomic_ack_eth, l.has(ExtHeaders::ATOMIC_ACK_ETH));
        keep(&mut self.imm_dt, l.has(ExtHeaders::IMM_DT));
        keep(&mut self.ieth, l.has(ExtHeaders::IETH));
        keep(&mut self.cnp_reserved, l.has(ExtHeaders::CNP));
        if let Some(h) = &mut self.rdeth {
            h.ee_context &= 0xFF_FFFF;
        }
        if let Some(h) = &mut self.deth {
            h.src_qp &= 0xFF_FFFF;
        }
        if let Some(h) = &mut self.aeth {
            h.msn &= 0xFF_FFFF;
        }
        let clip = |s: &IntStack| {
            let n = s.n_hop().min(int.max_hops) as usize;
            IntStack::from_hops(s.path_id(), &s.hops()[..n]).unwrap_or_default()
        };
        self.shim = match (dialect, self.shim) {
            (Dialect::Hpcc, ShimRepr::Int(s)) => ShimRepr::Int(clip(&s)),
            (Dialect::Hpcc, _) => ShimRepr::Int(IntStack::new()),
            (Dialect::Rcc, ShimRepr::RccTimestamp(t)) => ShimRepr::RccTimestamp(t),
            (Dialect::Rcc, _) => ShimRepr::RccTimestamp(0),
            (Dialect::Roce | Dialect::Fncc, _) => ShimRepr::None,
        };
        self.ack_ext = match (dialect, self.bth.opcode.is_ack(), self.ack_ext) {
            (Dialect::Fncc, true, AckExtRepr::Fncc { n, int: s }) => {
                AckExtRepr::Fncc { n, int: clip(&s) }
            }
            (Dialect::Fncc, true, _) => AckExtRepr::Fncc {
                n: 0,
                int: IntStack::new(),
            },
            (Dialect::Rcc, true, AckExtRepr::Rcc(e)) => AckExtRepr::Rcc(e),
            (Dialect::Rcc, true, _) => AckExtRepr::Rcc(RccExt::default()),
            _ => AckExtRepr::None,
        };
        // A CNP has no payload: its 16 reserved bytes are the whole body.
        if self.bth.opcode.is_cnp() {
            self.payload.clear();
        }
    }

    /// Check that the headers present are exactly those the opcode carries and that the shim
    /// and ACK extension match the dialect.
    pub fn validate(&self, dialect: Dialect, int: IntConfig) -> Result<(), EmitError> {
        let op = self.bth.opcode;
        let l = op.ext_headers();
        let checks: [(&'static str, u16, bool); 9] = [
            ("RDETH", ExtHeaders::RDETH, self.rdeth.is_some()),
            ("DETH", ExtHeaders::DETH, self.deth.is_some()),
            ("RETH", ExtHeaders::RETH, self.reth.is_some()),
            (
                "AtomicETH",
                ExtHeaders::ATOMIC_ETH,
                self.atomic_eth.is_some(),
            ),
            ("AETH", ExtHeaders::AETH, self.aeth.is_some()),
            (
                "AtomicAckETH",
                ExtHeaders::ATOMIC_ACK_ETH,
                self.atomic_ack_eth.is_some(),
            ),
            ("ImmDt", ExtHeaders::IMM_DT, self.imm_dt.is_some()),
            ("IETH", ExtHeaders::IETH, self.ieth.is_some()),
            (
                "CNP reserved bytes",
                ExtHeaders::CNP,
                self.cnp_reserved.is_some(),
            ),
        ];
        for (header, flag, present) in checks {
            if l.has(flag) != present {
                let problem = if present {
                    "not carried by this opcode"
                } else {
                    "missing"
                };
                return Err(EmitError::ExtHeaderMismatch {
                    opcode: op.0,
                    header,
                    problem,
                });
            }
        }
        let shim_ok = matches!(
            (dialect, &self.shim),
            (Dialect::Roce | Dialect::Fncc, ShimRepr::None)
                | (Dialect::Hpcc, ShimRepr::Int(_))
                | (Dialect::Rcc, ShimRepr::RccTimestamp(_))
        );
        if !shim_ok {
            return Err(EmitError::DialectMismatch {
                what: "shim",
                dialect,
            });
        }
        let ack_ok = match (&self.ack_ext, op.is_ack()) {
            (AckExtRepr::None, false) => true,
            (AckExtRepr::None, true) => matches!(dialect, Dialect::Roce | Dialect::Hpcc),
            (AckExtRepr::Fncc { .. }, true) => dialect == Dialect::Fncc,
            (AckExtRepr::Rcc(_), true) => dialect == Dialect::Rcc,
            (_, false) => false,
        };
        if !ack_ok {
            return Err(EmitError::DialectMismatch {
                what: "ACK extension",
                dialect,
            });
        }
        for s in [self.int_stack(), self.fncc_int()].into_iter().flatten() {
            if s.n_hop() > int.max_hops {
                return Err(EmitError::OutOfRange {
                    field: "int.nhop",
                    value: s.n_hop() as u64,
                    limit: "<= max_hops",
                });
            }
        }
        Ok(())
    }

    fn int_stack(&self) -> Option<&IntStack> {
        match &self.shim {
            ShimRepr::Int(s) => Some(s),
            _ => None,
        }
    }

    fn fncc_int(&self) -> Option<&IntStack> {
        match &self.ack_ext {
            AckExtRepr::Fncc { int, .. } => Some(int),
            _ => None,
        }
    }

    /// Append the UDP payload without the ICRC; returns BTH's offset inside it.
    pub fn emit_body(&self, int: IntConfig, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        match &self.shim {
            ShimRepr::None => {}
            ShimRepr::Int(s) => emit_int_stack(s, int, out),
            ShimRepr::RccTimestamp(t) => out.extend_from_slice(&t.to_be_bytes()),
        }
        let bth_offset = out.len() - start;
        out.extend_from_slice(&self.bth.to_bytes());
        if let Some(h) = &self.rdeth {
            out.extend_from_slice(&h.to_bytes());
        }
        if let Some(h) = &self.deth {
            out.extend_from_slice(&h.to_bytes());
        }
        if let Some(h) = &self.reth {
            out.extend_from_slice(&h.to_bytes());
        }
        if let Some(h) = &self.atomic_eth {
            out.extend_from_slice(&h.to_bytes());
        }
        if let Some(h) = &self.aeth {
            out.extend_from_slice(&h.to_bytes());
        }
        if let Some(v) = self.atomic_ack_eth {
            out.extend_from_slice(&v.to_be_bytes());
        }
        if let Some(v) = self.imm_dt {
            out.extend_from_slice(&v.to_be_bytes());
        }
        if let Some(v) = self.ieth {
            out.extend_from_slice(&v.to_be_bytes());
        }
        if let Some(r) = &self.cnp_reserved {
            out.extend_from_slice(r);
        }
        match &self.ack_ext {
            AckExtRepr::None => {}
            AckExtRepr::Fncc { n, int: stack } => {
                out.extend_from_slice(&n.to_be_bytes());
                emit_int_stack(stack, int, out);
            }
            AckExtRepr::Rcc(e) => out.extend_from_slice(&e.to_bytes()),
        }
        out.extend_from_slice(&self.payload);
        out.resize(out.len() + (self.bth.pad_cnt & 3) as usize, 0);
        bth_offset
    }
}

/// A whole Ethernet frame to write.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FrameRepr {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Outer tag first; at most 2 (wire.md 1).
    pub vlans: [Option<VlanRepr>; 2],
    /// IP header.
    pub ip: IpRepr,
    /// UDP source port (flow entropy).
    pub udp_src_port: u16,
    /// UDP destination port (4791).
    pub udp_dst_port: u16,
    /// RoCEv2 payload.
    pub roce: RoceRepr,
}

impl FrameRepr {
    /// Owned copy of a decoded RoCEv2 frame (Ethernet, IP, UDP and RoCE must all be present).
    /// IPv6 extension headers are not kept.
    pub fn from_packet(p: &Packet<'_>) -> Option<Self> {
        let eth = p.eth?;
        let ip = p.ip?;
        let udp = p.udp?;
        let roce = p.roce.as_ref()?;
        let hdr = p.data.get(ip.offset..ip.offset + ip.header_len)?;
        let ip = match ip.addrs {
            IpAddrs::V4 { src, dst } => IpRepr::V4 {
                src,
                dst,
                dscp: ip.dscp,
                ecn: ip.ecn,
                ttl: ip.ttl,
                identification: u16::from_be_bytes([hdr[4], hdr[5]]),
                options: hdr[20..].to_vec(),
            },
            IpAddrs::V6 { src, dst } => IpRepr::V6 {
                src,
                dst,
                dscp: ip.dscp,
                ecn: ip.ecn,
                flow_label: u32::from_be_bytes([0, hdr[1] & 0x0F, hdr[2], hdr[3]]),
                hop_limit: ip.ttl,
            },
        };
        Some(FrameRepr {
            dst_mac: eth.dst,
            src_mac: eth.src,
            vlans: eth.vlans.map(|v| {
                v.map(|v| VlanRepr {
                    tpid: v.tpid,
                    pcp: v.pcp,
                    dei: v.dei,
                    vid: v.vid,
                })
            }),
            ip,
            udp_src_port: udp.src_port,
            udp_dst_port: udp.dst_port,
            roce: RoceRepr::from_view(roce),
        })
    }

    /// [`RoceRepr::conform`] plus what the frame needs: VLAN TPIDs 0x8100 / 0x88A8 with masked
    /// PCP and VID, tags packed outer-first, IPv4 options a multiple of 4 bytes up to 40, masked
    /// DSCP / ECN / flow label, and the RoCEv2 UDP port.
    pub fn conform(&mut self, dialect: Dialect, int: IntConfig, udp_port: u16) {
        self.roce.conform(dialect, int);
        let tags: Vec<VlanRepr> = self.vlans.iter().flatten().copied().collect();
        self.vlans = [None, None];
        for (i, mut t) in tags.into_iter().enumerate() {
            if t.tpid != crate::packet::ETHERTYPE_QINQ {
                t.tpid = crate::packet::ETHERTYPE_VLAN;
            }
            t.pcp &= 7;
            t.vid &= 0x0FFF;
            self.vlans[i] = Some(t);
        }
        match &mut self.ip {
            IpRepr::V4 {
                dscp, ecn, options, ..
            } => {
                *dscp &= 0x3F;
                *ecn &= 3;
                options.truncate(40);
                options.truncate(options.len() / 4 * 4);
            }
            IpRepr::V6 {
                dscp,
                ecn,
                flow_label,
                ..
            } => {
                *dscp &= 0x3F;
                *ecn &= 3;
                *flow_label &= 0xF_FFFF;
            }
        }
        self.udp_dst_port = udp_port;
        self.roce.payload.truncate(4096);
    }

    /// Append the frame to `out` (cleared first is up to the caller). Validates first; on error
    /// nothing is appended.
    pub fn emit(
        &self,
        dialect: Dialect,
        int: IntConfig,
        out: &mut Vec<u8>,
    ) -> Result<(), EmitError> {
        self.roce.validate(dialect, int)?;
        let mut body = Vec::with_capacity(128 + self.roce.payload.len());
        let bth_offset = self.roce.emit_body(int, &mut body);
        let udp_len = 8 + body.len() + ICRC_LEN;
        if udp_len > u16::MAX as usize - 60 {
            return Err(EmitError::OutOfRange {
                field: "udp.length",
                value: udp_len as u64,
                limit: "fits an IP packet",
            });
        }
        let start = out.len();
        let ether_type = match self.ip {
            IpRepr::V4 { .. } => ETHERTYPE_IPV4,
            IpRepr::V6 { .. } => ETHERTYPE_IPV6,
        };
        let tags: Vec<VlanRepr> = self.vlans.iter().flatten().copied().collect();
        let first_type = tags.first().map_or(ether_type, |t| t.tpid);
        let eth = Ethernet2Header {
            source: self.src_mac,
            destination: self.dst_mac,
            ether_type: EtherType(first_type),
        };
        out.extend_from_slice(&eth.to_bytes());
        for (i, t) in tags.iter().enumerate() {
            let next = tags.get(i + 1).map_or(ether_type, |n| n.tpid);
            let v = SingleVlanHeader {
                pcp: VlanPcp::try_new(t.pcp & 7).unwrap_or(VlanPcp::ZERO),
                drop_eligible_indicator: t.dei,
                vlan_id: VlanId::try_new(t.vid & 0x0FFF).unwrap_or(VlanId::ZERO),
                ether_type: EtherType(next),
            };
            out.extend_from_slice(&v.to_bytes());
        }
        let (udp_hdr, ip_bytes): ([u8; 8], Vec<u8>);
        let mut udp = UdpHeader {
            source_port: self.udp_src_port,
            destination_port: self.udp_dst_port,
            length: udp_len as u16,
            checksum: 0,
        };
        let crc;
        match &self.ip {
            IpRepr::V4 {
                src,
                dst,
                dscp,
                ecn,
                ttl,
                identification,
                options,
            } => {
                let options = Ipv4Options::try_from(options.as_slice()).map_err(|_| {
                    EmitError::OutOfRange {
                        field: "ipv4.options length",
                        value: options.len() as u64,
                        limit: "a multiple of 4, at most 40",
                    }
                })?;
                let mut h = Ipv4Header::new(udp_len as u16, *ttl, IpNumber::UDP, *src, *dst)
                    .map_err(|_| EmitError::OutOfRange {
                        field: "udp.length",
                        value: udp_len as u64,
                        limit: "fits an IPv4 packet",
                    })?;
                h.dscp = IpDscp::try_new(dscp & 0x3F).unwrap_or(IpDscp::ZERO);
                h.ecn = IpEcn::try_new(ecn & 3).unwrap_or(IpEcn::ZERO);
                h.identification = *identification;
                h.options = options;
                h.total_len = (h.header_len() + udp_len) as u16;
                h.header_checksum = h.calc_header_checksum();
                ip_bytes = h.to_bytes().to_vec();
                udp_hdr = udp.to_bytes();
                crc = icrc::compute(IpForIcrc::V4(&ip_bytes), &udp_hdr, &body, bth_offset);
            }
            IpRepr::V6 {
                src,
                dst,
                dscp,
                ecn,
                flow_label,
                hop_limit,
            } => {
                let h = Ipv6Header {
                    traffic_class: (dscp & 0x3F) << 2 | (ecn & 3),
                    flow_label: Ipv6FlowLabel::try_new(flow_label & 0xF_FFFF)
                        .unwrap_or(Ipv6FlowLabel::ZERO),
                    payload_length: udp_len as u16,
                    next_header: IpNumber::UDP,
                    hop_limit: *hop_limit,
                    source: *src,
                    destination: *dst,
                };
                ip_bytes = h.to_bytes().to_vec();
                // The ICRC masks the UDP checksum, so it can be computed first.
                crc = icrc::compute(IpForIcrc::V6(&ip_bytes), &udp.to_bytes(), &body, bth_offset);
                let mut full = body.clone();
                full.extend_from_slice(&icrc::to_wire(crc));
                udp.checksum = udp.calc_checksum_ipv6(&h, &full).unwrap_or(0);
                udp_hdr = udp.to_bytes();
            }
        }
        out.extend_from_slice(&ip_bytes);
        out.extend_from_slice(&udp_hdr);
        out.extend_from_slice(&body);
        out.extend_from_slice(&icrc::to_wire(crc));
        debug_assert!(out.len() > start);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
