//! Remote mirroring (wire.md 2.1): what a switch wraps around the copy of a packet it sends to
//! a collector elsewhere in the network — the usual way to capture RoCE traffic, which a NIC
//! moves without the host's kernel seeing it.
//!
//! Outer Ethernet / IPv4 or IPv6, then GRE (RFC 2784; the key and sequence number of RFC 2890),
//! then by GRE protocol type:
//!
//! | GRE protocol | what follows the GRE header                                           |
//! |--------------|-----------------------------------------------------------------------|
//! | 0x88BE, no S | ERSPAN type I: the mirrored Ethernet frame                            |
//! | 0x88BE, S    | ERSPAN type II: an 8-byte header, then the Ethernet frame             |
//! | 0x22EB       | ERSPAN type III: a 12-byte header (+ 8 when O), then the frame        |
//! | 0x6558       | transparent Ethernet bridging (gretap): the Ethernet frame            |
//!
//! ERSPAN II (draft-foschiano-erspan-03 4.1), bits from the most significant:
//!
//! | bytes | field                                                          |
//! |-------|----------------------------------------------------------------|
//! | 0-1   | Ver (4) = 1, VLAN (12)                                         |
//! | 2-3   | COS (3), En (2), T (1), Session ID (10)                        |
//! | 4-7   | Reserved (12), Index (20)                                      |
//!
//! ERSPAN III (4.2): bytes 0-3 as II with Ver = 2 and BSO in place of En, then
//!
//! | bytes | field                                                          |
//! |-------|----------------------------------------------------------------|
//! | 4-7   | Timestamp (32), in the unit Gra names                          |
//! | 8-9   | SGT (16)                                                       |
//! | 10-11 | P (1), FT (5), Hw ID (6), D (1), Gra (2), O (1)                |
//! | 12-19 | platform-specific subheader, when O = 1                        |
//!
//! FT 0 is an Ethernet frame, 2 an IP packet without one. T = 1 says the switch cut the
//! mirrored frame, so its own length fields may claim more than the record holds: it reads as
//! a record cut by snaplen (`truncated`), never as a lying length.
//!
//! The timestamp is the switch's clock at the copy ([`ErspanInfo::switch_time`]): Gra 0 counts
//! 100 µs, 1 counts 100 ns, 2 is IEEE 1588 nanoseconds (below 10^9), 3 a platform's own
//! unit. The subheader's last 32 bits (Platf ID 3 and 7: the timestamp's upper 32 bits; 5 and
//! 6: IEEE 1588 seconds — Wireshark's `erspan.pid3.timestamp`, `.pid5.timestamp`,
//! `.pid7.timestamp`) widen it; without them it wraps (2^32 units, or each second).

use nom::{IResult, Parser, number::complete::be_u16};

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::packet::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, EthInfo, IpInfo};

/// IP protocol number of GRE.
pub const IPPROTO_GRE: u8 = 47;
/// GRE protocol type of ERSPAN types I and II.
pub const GRE_PROTO_ERSPAN: u16 = 0x88BE;
/// GRE protocol type of ERSPAN type III.
pub const GRE_PROTO_ERSPAN3: u16 = 0x22EB;
/// GRE protocol type of transparent Ethernet bridging (gretap).
pub const GRE_PROTO_TEB: u16 = 0x6558;

/// GRE flag bits (RFC 2784, 2890), in the first 16-bit word.
const GRE_C: u16 = 0x8000;
const GRE_R: u16 = 0x4000;
const GRE_K: u16 = 0x2000;
const GRE_S: u16 = 0x1000;
/// Strict source route, recursion control, the enhanced GRE ack bit and reserved flags:
/// zero in RFC 2784 / 2890 GRE.
const GRE_RESERVED: u16 = 0x0FF8;
const GRE_VERSION: u16 = 0x0007;

/// Bytes of an ERSPAN II header and of an ERSPAN III header without its platform subheader.
pub const ERSPAN2_LEN: usize = 8;
/// See [`ERSPAN2_LEN`].
pub const ERSPAN3_LEN: usize = 12;
/// Bytes of ERSPAN III's platform-specific subheader (present when O = 1).
pub const ERSPAN3_PLATFORM_LEN: usize = 8;

/// Which mirror encapsulation a packet came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MirrorKind {
    /// GRE transparent Ethernet bridging (0x6558).
    Teb,
    /// ERSPAN type I (GRE 0x88BE without a sequence number).
    ErspanI,
    /// ERSPAN type II.
    ErspanII,
    /// ERSPAN type III.
    ErspanIII,
}

impl MirrorKind {
    /// Every kind.
    pub const ALL: [MirrorKind; 4] = [
        MirrorKind::ErspanI,
        MirrorKind::ErspanII,
        MirrorKind::ErspanIII,
        MirrorKind::Teb,
    ];

    /// The kind of a [`Self::name`] (a scenario's `mirror.kind`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Short name for reports (`erspan2`, …).
    pub const fn name(self) -> &'static str {
        match self {
            MirrorKind::Teb => "gretap",
            MirrorKind::ErspanI => "erspan1",
            MirrorKind::ErspanII => "erspan2",
            MirrorKind::ErspanIII => "erspan3",
        }
    }
}

/// A GRE header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GreInfo {
    /// Offset of the GRE header.
    pub offset: usize,
    /// Flags and version (the first 16 bits).
    pub flags_and_version: u16,
    /// Protocol type.
    pub proto: u16,
    /// Checksum, when C is set.
    pub checksum: Option<u16>,
    /// Key, when K is set.
    pub key: Option<u32>,
    /// Sequence number, when S is set.
    pub seq: Option<u32>,
}

impl GreInfo {
    /// Bytes of the header: 4, plus 4 for each of checksum, key and sequence number.
    pub fn header_len(&self) -> usize {
        4 + 4
            * (usize::from(self.checksum.is_some())
                + usize::from(self.key.is_some())
                + usize::from(self.seq.is_some()))
    }
}

/// An ERSPAN II or III header, kept as its bytes: the accessors name the fields (Wireshark's
/// `erspan.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErspanInfo {
    /// Offset of the header.
    pub offset: usize,
    /// Its first 12 bytes (II uses 8; the rest zero).
    pub bytes: [u8; 12],
    /// The platform-specific subheader of a type III header with O = 1.
    pub platform: Option<u64>,
}

impl ErspanInfo {
    fn word(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.bytes[i], self.bytes[i + 1]])
    }
    /// Ver: 1 for type II, 2 for type III.
    pub fn version(&self) -> u8 {
        self.bytes[0] >> 4
    }
    /// The mirrored frame's original VLAN.
    pub fn vlan(&self) -> u16 {
        self.word(0) & 0x0FFF
    }
    /// The mirrored frame's class of service (its priority: a tag the switch removed took its
    /// PCP with it).
    pub fn cos(&self) -> u8 {
        (self.bytes[2] >> 5) & 7
    }
    /// En (II: how the frame's VLAN was carried) or BSO (III: bad / short / oversized).
    pub fn en_bso(&self) -> u8 {
        (self.bytes[2] >> 3) & 3
    }
    /// T: the switch cut the mirrored frame.
    pub fn truncated(&self) -> bool {
        self.bytes[2] & 0x04 != 0
    }
    /// Session ID.
    pub fn span_id(&self) -> u16 {
        self.word(2) & 0x03FF
    }
    /// II: Index (the port and direction of the mirrored frame, platform-defined).
    pub fn index(&self) -> u32 {
        u32::from_be_bytes([0, self.bytes[5] & 0x0F, self.bytes[6], self.bytes[7]])
    }
    /// III: Timestamp, in the unit [`Self::gra`] names.
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
    }
    /// III: security group tag.
    pub fn sgt(&self) -> u16 {
        self.word(8)
    }
    /// III: P (the frame is the original Ethernet PDU, not an excerpt).
    pub fn p(&self) -> bool {
        self.word(10) & 0x8000 != 0
    }
    /// III: FT, the frame type: 0 Ethernet, 2 IP.
    pub fn ft(&self) -> u8 {
        ((self.word(10) >> 10) & 0x1F) as u8
    }
    /// III: Hw ID, the mirroring engine.
    pub fn hw_id(&self) -> u8 {
        ((self.word(10) >> 4) & 0x3F) as u8
    }
    /// III: D, false ingress, true egress.
    pub fn direction(&self) -> bool {
        self.word(10) & 0x0008 != 0
    }
    /// III: Gra, the timestamp's unit: 0 100 µs, 1 100 ns, 2 IEEE 1588 (ns), 3 user-defined.
    pub fn gra(&self) -> u8 {
        ((self.word(10) >> 1) & 3) as u8
    }
    /// III: O, a platform-specific subheader follows.
    pub fn o(&self) -> bool {
        self.word(10) & 0x0001 != 0
    }
    /// III: Platf ID, the platform-specific subheader's kind (its first 6 bits), when O = 1.
    pub fn platform_id(&self) -> Option<u8> {
        self.platform.map(|p| (p >> 58) as u8)
    }

    /// III: the switch's clock when it copied the frame (module doc): the timestamp in its
    /// unit, widened by the platform subheader when that carries the upper part, else with the
    /// period it wraps at. Type II headers carry no timestamp (`NoTimestamp`).
    pub fn switch_time(&self) -> Result<SwitchTime, SwitchTimeError> {
        if self.version() != 2 {
            return Err(SwitchTimeError::NoTimestamp);
        }
        let ts = u64::from(self.timestamp());
        // The subheader's last 32 bits, for the Platf IDs that put time there.
        let upper = |ids: &[u8]| {
            let id = self.platform_id()?;
            let low = self.platform? & 0xFFFF_FFFF;
            ids.contains(&id).then_some(low)
        };
        match self.gra() {
            g @ (0 | 1) => {
                let unit_ns = if g == 0 { 100_000 } else { 100 };
                // (`|` joins disjoint bits: `ts` < 2^32.)
                let wide = upper(&[3, 7]).and_then(|u| ((u << 32) | ts).checked_mul(unit_ns));
                Ok(match wide {
                    Some(ns) => SwitchTime {
                        ns,
                        unit_ns,
                        period_ns: None,
                    },
                    None => SwitchTime {
                        ns: ts * unit_ns,
                        unit_ns,
                        period_ns: Some(unit_ns << 32),
                    },
                })
            }
            2 => {
                if ts >= NS_PER_S {
                    return Err(SwitchTimeError::NanosecondsOutOfRange(ts as u32));
                }
                Ok(match upper(&[3, 5, 6, 7]) {
                    Some(s) => SwitchTime {
                        ns: s * NS_PER_S + ts,
                        unit_ns: 1,
                        period_ns: None,
                    },
                    None => SwitchTime {
                        ns: ts,
                        unit_ns: 1,
                        period_ns: Some(NS_PER_S),
                    },
                })
            }
            _ => Err(SwitchTimeError::PlatformUnit),
        }
    }
}

const NS_PER_S: u64 = 1_000_000_000;

/// ERSPAN III's timestamp as a time: the switch's clock when it copied the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchTime {
    /// The timestamp in nanoseconds (its count × its unit), from the switch's own origin.
    pub ns: u64,
    /// Its unit, ns: 100,000 (Gra 0), 100 (Gra 1) or 1 (Gra 2).
    pub unit_ns: u64,
    /// `ns` wraps to 0 every this many nanoseconds (`None`: the subheader widened it).
    pub period_ns: Option<u64>,
}

/// Why a mirrored frame's header gives no switch time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwitchTimeError {
    /// Only ERSPAN III carries a timestamp.
    #[error("no switch timestamp (only ERSPAN III carries one)")]
    NoTimestamp,
    /// Gra 3: the unit is the platform's own.
    #[error("Gra 3: the timestamp's unit is the platform's own")]
    PlatformUnit,
    /// Gra 2 (IEEE 1588) counts nanoseconds of a second.
    #[error("Gra 2 (IEEE 1588) with {0} ns, not below 10^9")]
    NanosecondsOutOfRange(u32),
}

/// The encapsulation a mirrored packet came in: the outer headers. The packet's own layers
/// (`Packet::eth`, `ip`, `udp`, `roce`) are those of the mirrored frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mirror {
    /// Which encapsulation.
    pub kind: MirrorKind,
    /// Outer Ethernet, when the link type has it.
    pub eth: Option<EthInfo>,
    /// Outer IP.
    pub ip: IpInfo,
    /// GRE.
    pub gre: GreInfo,
    /// ERSPAN II / III header.
    pub erspan: Option<ErspanInfo>,
    /// Offset of the mirrored frame.
    pub inner: usize,
    /// False when the frame was not read: its ERSPAN session is not the one the decoder was
    /// told to read (`DecodeConfig::mirror_session`).
    pub read: bool,
}

impl Mirror {
    /// True when the switch cut the mirrored frame (ERSPAN T).
    pub fn truncated(&self) -> bool {
        self.erspan.is_some_and(|e| e.truncated())
    }
}

/// Where the mirrored frame starts and what it begins with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inner {
    /// An Ethernet frame at this offset.
    Ethernet(usize),
    /// A network header at this offset, with this EtherType (ERSPAN III FT = 2).
    Network(usize, u16),
}

/// What [`parse`] read: the encapsulation (outer Ethernet and IP still to fill in), where the
/// frame starts, and a warning for reserved GRE flags that are set.
pub(crate) struct Parsed {
    pub kind: MirrorKind,
    pub gre: GreInfo,
    pub erspan: Option<ErspanInfo>,
    pub inner: Inner,
    pub warning: Option<DecodeError>,
}

fn gre_fixed(i: &[u8]) -> IResult<&[u8], (u16, u16)> {
    (be_u16, be_u16).parse(i)
}

/// The bytes of an IP payload: the record's (`data`) up to where the IP length ends it.
struct Payload<'d> {
    data: &'d [u8],
    end: usize,
}

impl<'d> Payload<'d> {
    /// `n` bytes at `at` for a `layer` header: `bad_length` past the IP payload, `truncated`
    /// past the record (a snaplen cut).
    fn take(&self, layer: Layer, at: usize, n: usize) -> Result<&'d [u8], DecodeError> {
        if at + n > self.end {
            return Err(DecodeError::new(
                layer,
                at,
                ErrorKind::BadLength {
                    field: "ip payload",
                    found: self.end.saturating_sub(at) as u64,
                    expected: "room for the GRE and ERSPAN headers",
                },
            ));
        }
        let got = self.data.get(at..).unwrap_or(&[]);
        got.get(..n)
            .ok_or_else(|| DecodeError::truncated(layer, at, n, got.len()))
    }
}

/// Read the GRE header (and ERSPAN header) at `off` of `data`, inside an IP payload that ends
/// at `end`. `Ok(None)`: GRE carrying something other than a mirrored frame (nothing more is
/// read). Bytes the IP payload holds but the record does not are `truncated`; a header longer
/// than the IP payload is `bad_length`.
pub(crate) fn parse(data: &[u8], off: usize, end: usize) -> Result<Option<Parsed>, DecodeError> {
    let pl = Payload { data, end };
    let (_, (fv, proto)) = gre_fixed(pl.take(Layer::Gre, off, 4)?)
        .map_err(|_| DecodeError::truncated(Layer::Gre, off, 4, 0))?;
    let unsupported = |layer, at, what, found: u16| {
        Err(DecodeError::new(
            layer,
            at,
            ErrorKind::Unsupported {
                what,
                found: u64::from(found),
            },
        ))
    };
    if fv & GRE_VERSION != 0 {
        // 1 is PPTP's enhanced GRE.
        return unsupported(Layer::Gre, off, "GRE version", fv & GRE_VERSION);
    }
    if fv & GRE_R != 0 {
        return unsupported(Layer::Gre, off, "GRE routing (RFC 1701)", fv);
    }
    let warning = (fv & GRE_RESERVED != 0).then(|| {
        DecodeError::new(
            Layer::Gre,
            off,
            ErrorKind::Reserved {
                field: "gre.flags.reserved",
                found: u64::from(fv & GRE_RESERVED),
            },
        )
    });
    let mut gre = GreInfo {
        offset: off,
        flags_and_version: fv,
        proto,
        checksum: None,
        key: None,
        seq: None,
    };
    let opt_len = 4
        * (usize::from(fv & GRE_C != 0)
            + usize::from(fv & GRE_K != 0)
            + usize::from(fv & GRE_S != 0));
    let mut words = pl.take(Layer::Gre, off, 4 + opt_len)?[4..]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    if fv & GRE_C != 0 {
        // Checksum (16) and reserved (16).
        gre.checksum = words.next().map(|w| (w >> 16) as u16);
    }
    if fv & GRE_K != 0 {
        gre.key = words.next();
    }
    if fv & GRE_S != 0 {
        gre.seq = words.next();
    }
    let after = off + gre.header_len();
    let (kind, erspan, inner) = match proto {
        GRE_PROTO_TEB => (MirrorKind::Teb, None, Inner::Ethernet(after)),
        GRE_PROTO_ERSPAN if gre.seq.is_none() => {
            (MirrorKind::ErspanI, None, Inner::Ethernet(after))
        }
        // The header's own version decides, as Wireshark reads it: a type III header in a
        // 0x88BE session (or II in 0x22EB) is a device's slip, its frame still readable.
        GRE_PROTO_ERSPAN | GRE_PROTO_ERSPAN3 => match pl.take(Layer::Erspan, after, 1)?[0] >> 4 {
            1 => {
                let e = erspan_header(pl.take(Layer::Erspan, after, ERSPAN2_LEN)?, after);
                (
                    MirrorKind::ErspanII,
                    Some(e),
                    Inner::Ethernet(after + ERSPAN2_LEN),
                )
            }
            2 => {
                let mut e = erspan_header(pl.take(Layer::Erspan, after, ERSPAN3_LEN)?, after);
                let mut at = after + ERSPAN3_LEN;
                if e.o() {
                    let sub = pl.take(Layer::Erspan, at, ERSPAN3_PLATFORM_LEN)?;
                    e.platform = sub.try_into().ok().map(u64::from_be_bytes);
                    at += ERSPAN3_PLATFORM_LEN;
                }
                let inner = match e.ft() {
                    0 => Inner::Ethernet(at),
                    2 => match pl.take(Layer::Erspan, at, 1)?[0] >> 4 {
                        4 => Inner::Network(at, ETHERTYPE_IPV4),
                        6 => Inner::Network(at, ETHERTYPE_IPV6),
                        v => return unsupported(Layer::Erspan, at, "IP version", u16::from(v)),
                    },
                    ft => {
                        return unsupported(
                            Layer::Erspan,
                            after,
                            "ERSPAN frame type",
                            u16::from(ft),
                        );
                    }
                };
                (MirrorKind::ErspanIII, Some(e), inner)
            }
            v => return unsupported(Layer::Erspan, after, "ERSPAN version", u16::from(v)),
        },
        _ => return Ok(None),
    };
    Ok(Some(Parsed {
        kind,
        gre,
        erspan,
        inner,
        warning,
    }))
}

fn erspan_header(b: &[u8], offset: usize) -> ErspanInfo {
    let mut bytes = [0u8; 12];
    let n = b.len().min(12);
    bytes[..n].copy_from_slice(&b[..n]);
    ErspanInfo {
        offset,
        bytes,
        platform: None,
    }
}

/// What a switch wraps a mirrored frame in, to write one (the other side of [`parse`]): outer
/// Ethernet / IPv4 (DF clear, ID 0) / GRE, and for ERSPAN II and III their header. Type I and
/// gretap carry no ERSPAN header, so their session, VLAN, CoS, index and timestamp are not
/// written; GRE carries the sequence number for II and III (it tells them from type I), the
/// key when one is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MirrorRepr {
    /// Which encapsulation.
    pub kind: MirrorKind,
    /// Outer Ethernet source (the switch) and destination (the collector's next hop).
    pub src_mac: [u8; 6],
    /// See `src_mac`.
    pub dst_mac: [u8; 6],
    /// Outer IPv4 source (the switch) and destination (the collector).
    pub src_ip: [u8; 4],
    /// See `src_ip`.
    pub dst_ip: [u8; 4],
    /// Outer TTL.
    pub ttl: u8,
    /// GRE key (K), if any.
    pub key: Option<u32>,
    /// GRE sequence number (written for II and III only).
    pub seq: u32,
    /// ERSPAN session ID (10 bits).
    pub session: u16,
    /// The frame's original VLAN (12 bits) and class of service (3 bits).
    pub vlan: u16,
    /// See `vlan`.
    pub cos: u8,
    /// T: the frame was cut.
    pub truncated: bool,
    /// ERSPAN II: Index (20 bits). ERSPAN III: Hw ID (6 bits) in the low bits.
    pub index: u32,
    /// ERSPAN III: Timestamp, in 100 ns (Gra = 1).
    pub timestamp: u32,
}

/// A frame too long for the outer IPv4 packet to carry (its total length is 16 bits): a
/// mirror's (`MirrorRepr::write`) or a tunnel's (`tunnel::TunnelRepr::write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a {len}-byte frame does not fit in an IPv4 packet with its encapsulation (GRE and ERSPAN, or a tunnel's UDP header)"
)]
pub struct FrameTooLarge {
    /// The frame's length.
    pub len: usize,
}

impl MirrorRepr {
    /// Append `frame` wrapped in this encapsulation to `out` (nothing when it is too long).
    pub fn write(&self, frame: &[u8], out: &mut Vec<u8>) -> Result<(), FrameTooLarge> {
        let mut gre = Vec::with_capacity(32);
        let seq = !matches!(self.kind, MirrorKind::ErspanI | MirrorKind::Teb);
        let proto = match self.kind {
            MirrorKind::Teb => GRE_PROTO_TEB,
            MirrorKind::ErspanI | MirrorKind::ErspanII => GRE_PROTO_ERSPAN,
            MirrorKind::ErspanIII => GRE_PROTO_ERSPAN3,
        };
        let flags = if self.key.is_some() { GRE_K } else { 0 } | if seq { GRE_S } else { 0 };
        gre.extend_from_slice(&flags.to_be_bytes());
        gre.extend_from_slice(&proto.to_be_bytes());
        if let Some(k) = self.key {
            gre.extend_from_slice(&k.to_be_bytes());
        }
        if seq {
            gre.extend_from_slice(&self.seq.to_be_bytes());
        }
        let word0 = |ver: u16| (ver << 12) | (self.vlan & 0x0FFF);
        let word1 = (u16::from(self.cos & 7) << 13)
            | (u16::from(self.truncated) << 10)
            | (self.session & 0x03FF);
        match self.kind {
            MirrorKind::ErspanII => {
                gre.extend_from_slice(&word0(1).to_be_bytes());
                // En 3: the frame keeps its own VLAN tag.
                gre.extend_from_slice(&(word1 | (3 << 11)).to_be_bytes());
                gre.extend_from_slice(&(self.index & 0x000F_FFFF).to_be_bytes());
            }
            MirrorKind::ErspanIII => {
                gre.extend_from_slice(&word0(2).to_be_bytes());
                gre.extend_from_slice(&word1.to_be_bytes());
                gre.extend_from_slice(&self.timestamp.to_be_bytes());
                gre.extend_from_slice(&0u16.to_be_bytes()); // SGT
                // P 1 (the whole frame), FT 0 (Ethernet), Hw ID, D 0, Gra 1 (100 ns), O 0.
                let w = 0x8000 | (((self.index & 0x3F) as u16) << 4) | (1 << 1);
                gre.extend_from_slice(&w.to_be_bytes());
            }
            MirrorKind::ErspanI | MirrorKind::Teb => {}
        }
        let outer = OuterIpv4 {
            src_mac: self.src_mac,
            dst_mac: self.dst_mac,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            ttl: self.ttl,
            ident: 0,
            ecn: 0,
            protocol: IPPROTO_GRE,
        };
        outer.write(gre.len() + frame.len(), frame.len(), out)?;
        out.extend_from_slice(&gre);
        out.extend_from_slice(frame);
        Ok(())
    }
}

/// The outer Ethernet and IPv4 headers an encapsulation writes (a mirror's, a tunnel's): no
/// DF, the checksum computed.
pub(crate) struct OuterIpv4 {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub ttl: u8,
    pub ident: u16,
    pub ecn: u8,
    pub protocol: u8,
}

impl OuterIpv4 {
    /// Append the headers of an IPv4 payload of `payload_len` bytes around a `frame_len`-byte
    /// frame (for the error).
    pub fn write(
        &self,
        payload_len: usize,
        frame_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), FrameTooLarge> {
        let too_large = FrameTooLarge { len: frame_len };
        let payload_len = u16::try_from(payload_len).map_err(|_| too_large)?;
        let mut ip = etherparse::Ipv4Header::new(
            payload_len,
            self.ttl,
            etherparse::IpNumber(self.protocol),
            self.src_ip,
            self.dst_ip,
        )
        .map_err(|_| too_large)?;
        ip.dont_fragment = false;
        ip.identification = self.ident;
        ip.ecn = etherparse::IpEcn::try_new(self.ecn & 3).unwrap_or(etherparse::IpEcn::ZERO);
        ip.header_checksum = ip.calc_header_checksum();
        out.extend_from_slice(&self.dst_mac);
        out.extend_from_slice(&self.src_mac);
        out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        out.extend_from_slice(&ip.to_bytes());
        Ok(())
    }
}
