//! The link and network layers of a frame: Ethernet and its VLAN tags, IPv4 / IPv6, UDP,
//! and the encapsulations a capture may wrap RoCEv2 in (a switch's mirror, VXLAN, Geneve).

use etherparse::{
    Ethernet2HeaderSlice, IpNumber, Ipv4HeaderSlice, Ipv6ExtensionsSlice, Ipv6HeaderSlice,
    SingleVlanHeaderSlice, UdpHeaderSlice,
};

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::lumina::Lumina;
use crate::mirror::{self, IPPROTO_GRE, Mirror};
use crate::pfc::{ETHERTYPE_MAC_CONTROL, PfcRepr};
use crate::tunnel::{self, Tunnel, TunnelKind};

use super::{
    DecodeConfig, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_QINQ, ETHERTYPE_VLAN, EthInfo, IpAddrs,
    IpInfo, Packet, UdpInfo, VlanTag,
};

impl<'a> Packet<'a> {
    /// Everything from the network header on (`orig_len`: where the frame ends, an offset).
    /// `OUTER`: the frame as captured, which may be a mirror's encapsulation; a mirrored
    /// frame is decoded with `false` (one level only, and no recursion for the compiler to
    /// keep out of line on every packet's path).
    #[inline]
    pub(super) fn decode_network<const OUTER: bool>(
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
        if cfg.lumina_port != 0
            && udp_info.dst_port == cfg.lumina_port
            && self.mirror.is_none()
            && self.tunnel.is_none()
        {
            return self.decode_lumina(ip, udp_info, udp_end, cfg);
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

    /// A Lumina testbed's copy (lumina.rs): its switch timestamp, sequence number and event
    /// read off the rewritten fields, the packet's own UDP ports put back (a copy on the
    /// RoCEv2 port has them back already: Lumina's dumper wrote it), then the RoCEv2 packet it
    /// copies. A copy is an Ethernet frame with an IPv4 header whose TTL names an
    /// event; anything else sent to the port is an error.
    fn decode_lumina(
        &mut self,
        ip: IpInfo,
        udp: UdpInfo,
        udp_end: usize,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        let Some(eth) = self.eth else {
            return Err(DecodeError::new(
                Layer::Ethernet,
                0,
                ErrorKind::Unsupported {
                    what: "Lumina copy without an Ethernet header (its MACs carry the switch's timestamp and sequence)",
                    found: 0,
                },
            ));
        };
        if !matches!(ip.addrs, IpAddrs::V4 { .. }) {
            return Err(DecodeError::new(
                Layer::Ipv6,
                ip.offset,
                ErrorKind::Unsupported {
                    what: "Lumina copy over IPv6 (its IPv4 TTL carries the event)",
                    found: 6,
                },
            ));
        }
        // Lumina's dumper (roce-pkt-dump) puts the ports back before it writes its file: a
        // copy on the RoCEv2 port carries its own source port, and a real checksum.
        let dumped = udp.dst_port == cfg.udp_port;
        let own_src = if dumped { udp.src_port } else { udp.checksum };
        let ports = [udp.src_port, udp.dst_port, own_src];
        let Some(l) = Lumina::read(eth.dst, eth.src, ip.ttl, ports) else {
            return Err(DecodeError::new(
                Layer::Ipv4,
                ip.offset + 8,
                ErrorKind::Unsupported {
                    what: "Lumina event in the IPv4 TTL (0 none, 1 drop, 2 ECN, 3 bit error)",
                    found: u64::from(ip.ttl),
                },
            ));
        };
        self.lumina = Some(l);
        if !dumped {
            self.udp = Some(UdpInfo {
                src_port: l.udp_src_port,
                dst_port: cfg.udp_port,
                checksum: 0,
                ..udp
            });
        }
        self.decode_roce(udp.offset + 8, udp_end, cfg)
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

    /// The Ethernet header (and VLAN tags) at offset `at`.
    #[inline]
    pub(super) fn decode_ethernet_header(
        &mut self,
        at: usize,
    ) -> Result<(usize, u16), DecodeError> {
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
