//! Overlay tunnels (wire.md 2.2): RoCEv2 carried inside VXLAN or Geneve, as a cloud's or a
//! DPU's overlay sends it — the NIC encapsulates each packet, the underlay switches forward
//! (and ECN-mark) the outer headers, the far NIC takes them off.
//!
//! Outer Ethernet / IPv4 or IPv6 / UDP to the tunnel's port, then by port:
//!
//! VXLAN (RFC 7348 5), UDP 4789, 8 bytes, then the inner Ethernet frame:
//!
//! | bytes | field                                                    |
//! |-------|----------------------------------------------------------|
//! | 0     | flags: R R R R I R R R (I = 0x08: the VNI is valid)      |
//! | 1-3   | reserved                                                 |
//! | 4-6   | VNI (24)                                                 |
//! | 7     | reserved                                                 |
//!
//! Geneve (RFC 8926 3.4), UDP 6081, 8 bytes + options, then by protocol type:
//!
//! | bytes | field                                                    |
//! |-------|----------------------------------------------------------|
//! | 0     | Ver (2) = 0, Opt Len (6): options in 4-byte words         |
//! | 1     | O (1), C (1), reserved (6)                               |
//! | 2-3   | Protocol Type: 0x6558 an Ethernet frame, 0x0800 / 0x86DD IP |
//! | 4-6   | VNI (24)                                                 |
//! | 7     | reserved                                                 |
//!
//! The congestion mark a receiver acts on is the one the decapsulating NIC leaves on the
//! inner header: RFC 6040 4.2 combines the outer ECN with the inner ([`decap_ecn`]) — an
//! underlay switch marks only the outer header.

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::mirror::{FrameTooLarge, OuterIpv4};
use crate::packet::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, IpAddrs};

/// IP protocol number of UDP.
const IPPROTO_UDP: u8 = 17;
/// IANA's UDP port of VXLAN (RFC 7348 5).
pub const VXLAN_UDP_PORT: u16 = 4789;
/// IANA's UDP port of Geneve (RFC 8926 3.3).
pub const GENEVE_UDP_PORT: u16 = 6081;
/// The VXLAN I flag: the VNI is valid.
const VXLAN_I: u8 = 0x08;
/// Geneve protocol type of an Ethernet frame (transparent Ethernet bridging).
pub const GENEVE_PROTO_ETHERNET: u16 = 0x6558;
/// Bytes of either tunnel's base header.
pub const TUNNEL_HEADER_LEN: usize = 8;

/// Which overlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    /// VXLAN (RFC 7348).
    Vxlan,
    /// Geneve (RFC 8926).
    Geneve,
}

impl TunnelKind {
    /// The name inspect shows (`ccreplay.tunnel`).
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Geneve => "geneve",
        }
    }
}

/// The tunnel a packet travels in: the outer headers, kept small (the packet's own layers —
/// `Packet::eth`, `ip`, `udp`, `roce` — are those of the inner frame, and every decode
/// carries this struct's room): the outer ECN and UDP source port as read, the outer
/// addresses read again from the frame when asked ([`Tunnel::ip_addrs`], [`Tunnel::macs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tunnel {
    /// Which overlay.
    pub kind: TunnelKind,
    /// The outer IP header's ECN: what the underlay's switches mark.
    pub ecn: u8,
    /// The outer UDP source port (the encapsulator's flow hash).
    pub udp_src_port: u16,
    /// Offset of the outer Ethernet header, when the link type has one.
    pub eth_offset: Option<u32>,
    /// Offset of the outer IP header.
    pub ip_offset: u32,
    /// Offset of the VXLAN / Geneve header.
    pub offset: u32,
    /// The flags as Wireshark shows them: VXLAN's first 16 bits (`vxlan.flags`, 0x0800 with
    /// I set), Geneve's second byte (`geneve.flags`: O 0x80, C 0x40).
    pub flags: u16,
    /// Geneve's protocol type; 0x6558 for VXLAN (it always carries Ethernet).
    pub protocol: u16,
    /// Virtual network identifier (24 bits).
    pub vni: u32,
    /// Geneve options' bytes (Opt Len × 4); 0 for VXLAN.
    pub options_len: u16,
    /// Offset of the inner frame.
    pub inner: u32,
}

impl Tunnel {
    /// The outer IP addresses, read from the frame `data` the tunnel was decoded from.
    pub fn ip_addrs(&self, data: &[u8]) -> Option<IpAddrs> {
        let at = self.ip_offset as usize;
        let h = data.get(at..)?;
        match h.first()? >> 4 {
            4 => {
                let a: [u8; 8] = h.get(12..20)?.try_into().ok()?;
                Some(IpAddrs::V4 {
                    src: [a[0], a[1], a[2], a[3]],
                    dst: [a[4], a[5], a[6], a[7]],
                })
            }
            6 => Some(IpAddrs::V6 {
                src: h.get(8..24)?.try_into().ok()?,
                dst: h.get(24..40)?.try_into().ok()?,
            }),
            _ => None,
        }
    }

    /// The outer Ethernet (source, destination) MACs, read from `data`.
    pub fn macs(&self, data: &[u8]) -> Option<([u8; 6], [u8; 6])> {
        let at = self.eth_offset? as usize;
        let h = data.get(at..at + 12)?;
        Some((h[6..12].try_into().ok()?, h[..6].try_into().ok()?))
    }
}

/// Where the inner frame starts and what it begins with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inner {
    /// An Ethernet frame at this offset.
    Ethernet(usize),
    /// A network header at this offset, with this EtherType (Geneve carrying IP).
    Network(usize, u16),
}

/// What [`parse`] read: the tunnel header's fields, where the inner frame starts, and a
/// warning for a VXLAN header without its I flag.
pub(crate) struct Parsed {
    pub flags: u16,
    pub protocol: u16,
    pub vni: u32,
    pub options_len: u16,
    pub inner: Option<Inner>,
    pub warning: Option<DecodeError>,
}

/// Read the tunnel header at `at` (the UDP payload), which ends at `end` (the UDP length's
/// end). `Ok(Parsed { inner: None, .. })`: a Geneve packet carrying something other than
/// Ethernet or IP, left undecoded.
pub(crate) fn parse(
    data: &[u8],
    kind: TunnelKind,
    at: usize,
    end: usize,
) -> Result<Parsed, DecodeError> {
    let layer = match kind {
        TunnelKind::Vxlan => Layer::Vxlan,
        TunnelKind::Geneve => Layer::Geneve,
    };
    let avail = data.len().min(end).saturating_sub(at);
    let h = data
        .get(at..at + TUNNEL_HEADER_LEN)
        .filter(|_| at + TUNNEL_HEADER_LEN <= end)
        .ok_or_else(|| DecodeError::truncated(layer, at, TUNNEL_HEADER_LEN, avail))?;
    let vni = u32::from_be_bytes([0, h[4], h[5], h[6]]);
    match kind {
        TunnelKind::Vxlan => {
            // RFC 7348 5: I MUST be 1; receivers ignore the reserved bits. A clear I is
            // reported (the VNI is not valid), and the frame read anyway.
            let warning = (h[0] & VXLAN_I == 0).then(|| {
                DecodeError::new(
                    layer,
                    at,
                    ErrorKind::Reserved {
                        field: "vxlan.flags (I clear)",
                        found: u64::from(h[0]),
                    },
                )
            });
            Ok(Parsed {
                flags: u16::from_be_bytes([h[0], h[1]]),
                protocol: GENEVE_PROTO_ETHERNET,
                vni,
                options_len: 0,
                inner: Some(Inner::Ethernet(at + TUNNEL_HEADER_LEN)),
                warning,
            })
        }
        TunnelKind::Geneve => {
            let version = h[0] >> 6;
            if version != 0 {
                // RFC 8926 3.4: a packet of an unknown version MUST be dropped.
                return Err(DecodeError::new(
                    layer,
                    at,
                    ErrorKind::Unsupported {
                        what: "Geneve version",
                        found: u64::from(version),
                    },
                ));
            }
            let options_len = u16::from(h[0] & 0x3F) * 4;
            let protocol = u16::from_be_bytes([h[2], h[3]]);
            let inner_at = at + TUNNEL_HEADER_LEN + usize::from(options_len);
            if inner_at > end {
                return Err(DecodeError::new(
                    layer,
                    at,
                    ErrorKind::BadLength {
                        field: "geneve.opt_len",
                        found: (options_len / 4) as u64,
                        expected: "options within the UDP payload",
                    },
                ));
            }
            if inner_at > data.len() {
                return Err(DecodeError::truncated(
                    layer,
                    at,
                    TUNNEL_HEADER_LEN + usize::from(options_len),
                    avail,
                ));
            }
            let inner = match protocol {
                GENEVE_PROTO_ETHERNET => Some(Inner::Ethernet(inner_at)),
                ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some(Inner::Network(inner_at, protocol)),
                _ => None,
            };
            Ok(Parsed {
                flags: u16::from(h[1]),
                protocol,
                vni,
                options_len,
                inner,
                warning: None,
            })
        }
    }
}

/// A frame to wrap as a tunnel endpoint sends it (`TunnelRepr::write`): outer Ethernet /
/// IPv4 / UDP / VXLAN, or Geneve without options carrying Ethernet. The outer UDP checksum is
/// 0, as RFC 7348 5 says a VXLAN endpoint should send it (RFC 8926 3.3 allows it over IPv4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelRepr {
    /// Which overlay.
    pub kind: TunnelKind,
    /// Outer Ethernet source and destination.
    pub src_mac: [u8; 6],
    /// See `src_mac`.
    pub dst_mac: [u8; 6],
    /// Outer IPv4 source and destination (the tunnel endpoints).
    pub src_ip: [u8; 4],
    /// See `src_ip`.
    pub dst_ip: [u8; 4],
    /// Outer TTL and identification.
    pub ttl: u8,
    /// See `ttl`.
    pub ident: u16,
    /// Outer UDP source port (the encapsulator's flow hash).
    pub udp_src_port: u16,
    /// Virtual network identifier (24 bits).
    pub vni: u32,
    /// Outer ECN; `None` copies the inner IP header's (RFC 6040 3.1, normal mode: the
    /// underlay may then mark it), Not-ECT when the frame is not IP.
    pub ecn: Option<u8>,
}

impl TunnelRepr {
    /// Append the wrapped `frame` (an Ethernet frame) to `out`.
    pub fn write(&self, frame: &[u8], out: &mut Vec<u8>) -> Result<(), FrameTooLarge> {
        let port = match self.kind {
            TunnelKind::Vxlan => VXLAN_UDP_PORT,
            TunnelKind::Geneve => GENEVE_UDP_PORT,
        };
        let udp_len = 8 + TUNNEL_HEADER_LEN + frame.len();
        let outer = OuterIpv4 {
            src_mac: self.src_mac,
            dst_mac: self.dst_mac,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            ttl: self.ttl,
            ident: self.ident,
            ecn: self.ecn.unwrap_or_else(|| inner_ecn(frame).unwrap_or(0)),
            protocol: IPPROTO_UDP,
        };
        outer.write(udp_len, frame.len(), out)?;
        // Fits 16 bits: the IPv4 header took it with 20 bytes more.
        let udp_len = udp_len as u16;
        out.extend_from_slice(&self.udp_src_port.to_be_bytes());
        out.extend_from_slice(&port.to_be_bytes());
        out.extend_from_slice(&udp_len.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        let vni = (self.vni & 0xFF_FFFF) << 8;
        match self.kind {
            TunnelKind::Vxlan => out.extend_from_slice(&[VXLAN_I, 0, 0, 0]),
            TunnelKind::Geneve => {
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(&GENEVE_PROTO_ETHERNET.to_be_bytes());
            }
        }
        out.extend_from_slice(&vni.to_be_bytes());
        out.extend_from_slice(frame);
        Ok(())
    }
}

/// The ECN of an Ethernet frame's IP header (after up to two VLAN tags), if it has one.
fn inner_ecn(frame: &[u8]) -> Option<u8> {
    let mut at = 12;
    loop {
        let et = u16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?);
        match et {
            0x8100 | 0x88A8 => at += 4,
            ETHERTYPE_IPV4 => return Some(frame.get(at + 3)? & 3),
            ETHERTYPE_IPV6 => {
                let tc = u16::from_be_bytes(frame.get(at + 2..at + 4)?.try_into().ok()?);
                return Some(((tc >> 4) & 3) as u8);
            }
            _ => return None,
        }
        if at > 20 {
            return None;
        }
    }
}

/// RFC 6040 4.2, the ECN a decapsulator leaves on the inner header, from the outer and the
/// inner codepoints (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE); `None`: it drops the packet (an
/// outer CE on a Not-ECT inner packet, whose sender cannot be told).
///
/// | inner \ outer | Not-ECT | ECT(0) | ECT(1) | CE   |
/// |---------------|---------|--------|--------|------|
/// | Not-ECT       | Not-ECT | Not-ECT| Not-ECT| drop |
/// | ECT(0)        | ECT(0)  | ECT(0) | ECT(1) | CE   |
/// | ECT(1)        | ECT(1)  | ECT(1) | ECT(1) | CE   |
/// | CE            | CE      | CE     | CE     | CE   |
pub fn decap_ecn(outer: u8, inner: u8) -> Option<u8> {
    const NOT_ECT: u8 = 0;
    const ECT1: u8 = 1;
    const ECT0: u8 = 2;
    const CE: u8 = 3;
    let (outer, inner) = (outer & 3, inner & 3);
    Some(match (inner, outer) {
        (NOT_ECT, CE) => return None,
        (NOT_ECT, _) => NOT_ECT,
        (CE, _) | (_, CE) => CE,
        (ECT0, ECT1) => ECT1,
        (i, _) => i,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6040 Figure 4, row by row (inner), column by column (outer: Not-ECT, ECT(0),
    /// ECT(1), CE); `None` is "(drop)".
    #[test]
    fn decapsulation_follows_rfc_6040_figure_4() {
        let not = 0;
        let (ect1, ect0, ce) = (1, 2, 3);
        let table = [
            (not, [Some(not), Some(not), Some(not), None]),
            (ect0, [Some(ect0), Some(ect0), Some(ect1), Some(ce)]),
            (ect1, [Some(ect1), Some(ect1), Some(ect1), Some(ce)]),
            (ce, [Some(ce), Some(ce), Some(ce), Some(ce)]),
        ];
        for (inner, row) in table {
            for (outer, want) in [not, ect0, ect1, ce].into_iter().zip(row) {
                assert_eq!(decap_ecn(outer, inner), want, "inner {inner} outer {outer}");
            }
        }
    }

    #[test]
    fn vxlan_header() {
        // flags 0x08, VNI 0x123456.
        let b = [0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0, 0xAA];
        let p = parse(&b, TunnelKind::Vxlan, 0, b.len()).unwrap();
        assert_eq!(
            (p.flags, p.vni, p.inner),
            (0x0800, 0x12_3456, Some(Inner::Ethernet(8)))
        );
        assert!(p.warning.is_none());
        // I clear: read, and reported.
        let b = [0x00, 0, 0, 0, 0, 0, 7, 0];
        let p = parse(&b, TunnelKind::Vxlan, 0, 8).unwrap();
        assert_eq!(p.vni, 7);
        let w = p.warning.unwrap();
        assert_eq!((w.layer, w.offset), (Layer::Vxlan, 0));
        // Seven bytes: truncated at the header's start.
        let e = parse(&b[..7], TunnelKind::Vxlan, 0, 8).err().unwrap();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 8,
                available: 7
            }
        );
        // A UDP length that leaves 6 bytes: the header does not fit it.
        let e = parse(&b, TunnelKind::Vxlan, 0, 6).err().unwrap();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 8,
                available: 6
            }
        );
    }

    #[test]
    fn geneve_header() {
        // Opt Len 2 (8 bytes of options), C set, Ethernet, VNI 0x00ABCD, at 4.
        let mut b = vec![0xFF; 4];
        b.extend([0x02, 0x40, 0x65, 0x58, 0x00, 0xAB, 0xCD, 0x00]);
        b.extend([0; 8]);
        let p = parse(&b, TunnelKind::Geneve, 4, b.len() + 14).unwrap();
        assert_eq!(
            (p.flags, p.vni, p.options_len, p.inner),
            (0x40, 0xABCD, 8, Some(Inner::Ethernet(20)))
        );
        // IPv6 directly.
        b[6..8].copy_from_slice(&[0x86, 0xDD]);
        let p = parse(&b, TunnelKind::Geneve, 4, b.len()).unwrap();
        assert_eq!(p.inner, Some(Inner::Network(20, ETHERTYPE_IPV6)));
        // Another protocol: not read further.
        b[6..8].copy_from_slice(&[0x89, 0x47]);
        assert_eq!(
            parse(&b, TunnelKind::Geneve, 4, b.len()).unwrap().inner,
            None
        );
        // Options past the UDP payload's end (20 - 4 = 16 bytes, 8 + 8 needed at 19).
        let e = parse(&b, TunnelKind::Geneve, 4, 19).err().unwrap();
        assert!(matches!(
            e.kind,
            ErrorKind::BadLength {
                field: "geneve.opt_len",
                found: 2,
                ..
            }
        ));
        // Options cut by snaplen: 12 of their 16 bytes captured.
        let e = parse(&b[..16], TunnelKind::Geneve, 4, 40).err().unwrap();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 16,
                available: 12
            }
        );
        // Version 1.
        b[4] = 0x40;
        let e = parse(&b, TunnelKind::Geneve, 4, b.len()).err().unwrap();
        assert_eq!(
            e.kind,
            ErrorKind::Unsupported {
                what: "Geneve version",
                found: 1
            }
        );
    }
}
