//! One accessor per key of `inspect`'s JSON record (docs/inspect.md): [`Field::parse`] turns
//! a name into one, once per run; [`Field::get`] reads its value from the decoded packet, per
//! packet, without formatting anything or allocating. Each reads what `write_json` (in
//! `inspect/mod.rs`) writes under the same key, in the same cases; `fields::tests::
//! every_key_reads_what_the_json_record_holds` compares the two over every bundled capture.

use std::net::IpAddr;

use ccreplay_codecs::capture::Record;
use ccreplay_codecs::ib::{ExtHeaders, Syndrome};
use ccreplay_codecs::mirror::Mirror;
use ccreplay_codecs::packet::{
    AckExt, ETHERTYPE_QINQ, ETHERTYPE_VLAN, IpAddrs, IpInfo, Packet, Roce, Shim,
};
use ccreplay_codecs::shim::IntStackView;
use ccreplay_codecs::tunnel::{Tunnel, TunnelKind};
use ccreplay_codecs::{DecodeConfig, DecodeError, ErrorKind};

/// What one packet offers the accessors.
pub(crate) struct Cx<'p, 'a> {
    pub rec: &'p Record<'a>,
    pub p: &'p Packet<'a>,
    /// `(computed, found)`; only computed when a selected field needs it.
    pub icrc: Option<(u32, u32)>,
    pub cfg: &'p DecodeConfig,
    pub pfc_link_bps: u64,
}

/// A field's value in one packet, not yet formatted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Val<'p> {
    /// The packet has no such field.
    Absent,
    /// An integer (a flag is 0 or 1), shown as the field's `Display` says.
    U(u64),
    /// Seconds since the epoch with 9 decimals.
    Epoch(u64),
    Mac([u8; 6]),
    V4([u8; 4]),
    /// An IPv6 address, as `Ipv6Addr`'s `Display` writes it (RFC 5952).
    V6(IpAddr),
    Str(&'static str),
    /// Non-empty parts joined by a space (an opcode's name).
    Words([&'static str; 2]),
    /// A decode error or warning's message.
    Message(&'p DecodeError),
    /// Up to two occurrences (one per VLAN tag, outer first): values and how many.
    Tags([u64; 2], u8),
}

/// Part of an INT hop record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HopPart {
    B,
    Ts,
    TxBytes,
    Qlen,
}

/// Part of a VLAN tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TagPart {
    Tpid,
    Pcp,
    Vid,
}

/// Per-priority PFC fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PfcPart {
    Enabled,
    Quanta,
    Paused,
    PauseNs,
}

/// A mirrored packet's encapsulation (codecs mirror.rs), by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MirrorPart {
    Kind,
    EthSrc,
    EthDst,
    IpSrc,
    IpDst,
    GreProto,
    GreKey,
    GreSeq,
    OffsetGre,
    OffsetErspan,
    Version,
    Vlan,
    Cos,
    Encap,
    Bso,
    Truncated,
    SpanId,
    Index,
    Timestamp,
    Sgt,
    P,
    Ft,
    Hw,
    Direction,
    Gra,
    O,
    PlatId,
    OffsetMirror,
}

/// Part of a Lumina copy's switch fields (docs/wire.md 2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LuminaPart {
    Seq,
    SwitchNs,
    Event,
    CopySrcPort,
    CopyDstPort,
}

/// A tunnelled packet's outer headers (codecs tunnel.rs), by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelPart {
    Kind,
    EthSrc,
    EthDst,
    IpSrc,
    IpDst,
    IpEcn,
    UdpSrc,
    Offset,
    VxlanFlags,
    VxlanVni,
    GeneveFlags,
    GeneveProto,
    GeneveVni,
    GeneveOptionsLen,
    OffsetInner,
    DecapEcn,
}

/// Decode error or warning parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProblemPart {
    Layer,
    Offset,
    Reason,
    Message,
}

/// Every key of the JSON record (docs/inspect.md), by what it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// Not a key inspect writes: always empty.
    Unknown,
    FrameNumber,
    TimeEpoch,
    TsNs,
    FrameLen,
    CapLen,
    LinkType,
    InterfaceId,
    Truncated,
    Mirror(MirrorPart),
    Tunnel(TunnelPart),
    Lumina(LuminaPart),
    EthSrc,
    EthDst,
    EthType,
    /// `vlan.*` (802.1Q) or `ieee8021ad.*` (802.1ad): priority (true) or id of each tag with
    /// that TPID, outer first — one occurrence per tag, as tshark shows them (the JSON record
    /// holds the first).
    TagsOf(u16, bool),
    /// `vlan.etype`: per 802.1Q tag, the EtherType after it (the next tag's TPID or the
    /// payload's). Not in the JSON record, which has `ccreplay.vlan.etype` (the last).
    TagEtypes,
    VlanEtype,
    VlanCount,
    Tags(TagPart),
    RocePriority,
    Ip4Src,
    Ip4Dst,
    Ip4Dscp,
    Ip4Ecn,
    Ip4HdrLen,
    Ip4Ttl,
    Ip6Src,
    Ip6Dst,
    Ip6Dscp,
    Ip6Ecn,
    Ip6Hlim,
    Ip6HdrLen,
    Ip6ExtLen,
    Ip6Flow,
    OffsetIp,
    UdpSrc,
    UdpDst,
    UdpLen,
    OffsetUdp,
    IsRoce,
    IntNhop,
    IntPathId,
    Hop(u8, HopPart),
    OffsetInt,
    RccTs,
    OffsetRccShim,
    BthOpcode,
    BthSe,
    BthM,
    BthPadCnt,
    BthTver,
    BthPKey,
    BthFecn,
    BthBecn,
    BthResv6,
    BthDestQp,
    BthAckReq,
    BthResv7,
    BthPsn,
    OpcodeKnown,
    OpcodeName,
    OffsetBth,
    RdethEeCnxt,
    RdethReserved,
    DethQKey,
    DethReserved,
    DethSrcQp,
    /// RETH's VA, or AtomicETH's (Wireshark names both `infiniband.reth.va`).
    RethVa,
    RethRKey,
    RethDmaLen,
    AtomicVa,
    AtomicRKey,
    AtomicSwap,
    AtomicCompare,
    AethSyndrome,
    AethOpcode,
    AethKind,
    AethCredit,
    AethTimer,
    AethReservedValue,
    AethErrorCode,
    AethNak,
    AethMsn,
    AtomicAckOrig,
    ImmDt,
    Ieth,
    CnpReservedNonzero,
    /// Offset of the extension header with this `ExtHeaders` flag.
    OffsetExt(u16),
    FnccN,
    OffsetFnccExt,
    RccCwnd,
    RccN,
    RccFlags,
    RccReserved,
    OffsetRccExt,
    PayloadLen,
    OpaqueLen,
    OffsetPayload,
    OffsetIcrc,
    Icrc,
    IcrcValid,
    IcrcComputed,
    MaccOpcode,
    MaccEnbv,
    Pfc(u8, PfcPart),
    Error(ProblemPart),
    Warnings,
    Warning(ProblemPart),
}

/// Names with a fixed accessor (the indexed ones, hops and PFC priorities, are parsed).
pub(super) const NAMED: &[(&str, Field)] = {
    use Field::*;
    &[
        ("frame.number", FrameNumber),
        ("frame.time_epoch", TimeEpoch),
        ("ccreplay.ts_ns", TsNs),
        ("frame.len", FrameLen),
        ("frame.cap_len", CapLen),
        ("ccreplay.link_type", LinkType),
        ("ccreplay.interface_id", InterfaceId),
        ("ccreplay.truncated", Truncated),
        ("ccreplay.mirror", Mirror(MirrorPart::Kind)),
        ("ccreplay.mirror.eth.src", Mirror(MirrorPart::EthSrc)),
        ("ccreplay.mirror.eth.dst", Mirror(MirrorPart::EthDst)),
        ("ccreplay.mirror.ip.src", Mirror(MirrorPart::IpSrc)),
        ("ccreplay.mirror.ip.dst", Mirror(MirrorPart::IpDst)),
        ("gre.proto", Mirror(MirrorPart::GreProto)),
        ("ccreplay.offset.gre", Mirror(MirrorPart::OffsetGre)),
        ("gre.key", Mirror(MirrorPart::GreKey)),
        ("gre.sequence_number", Mirror(MirrorPart::GreSeq)),
        ("ccreplay.offset.erspan", Mirror(MirrorPart::OffsetErspan)),
        ("erspan.version", Mirror(MirrorPart::Version)),
        ("erspan.vlan", Mirror(MirrorPart::Vlan)),
        ("erspan.cos", Mirror(MirrorPart::Cos)),
        ("erspan.encap", Mirror(MirrorPart::Encap)),
        ("erspan.bso", Mirror(MirrorPart::Bso)),
        ("erspan.truncated", Mirror(MirrorPart::Truncated)),
        ("erspan.spanid", Mirror(MirrorPart::SpanId)),
        ("erspan.index", Mirror(MirrorPart::Index)),
        ("erspan.timestamp", Mirror(MirrorPart::Timestamp)),
        ("erspan.sgt", Mirror(MirrorPart::Sgt)),
        ("erspan.p", Mirror(MirrorPart::P)),
        ("erspan.ft", Mirror(MirrorPart::Ft)),
        ("erspan.hw", Mirror(MirrorPart::Hw)),
        ("erspan.direction", Mirror(MirrorPart::Direction)),
        ("erspan.gra", Mirror(MirrorPart::Gra)),
        ("erspan.o", Mirror(MirrorPart::O)),
        ("erspan.platid", Mirror(MirrorPart::PlatId)),
        ("ccreplay.offset.mirror", Mirror(MirrorPart::OffsetMirror)),
        ("ccreplay.lumina.seq", Lumina(LuminaPart::Seq)),
        ("ccreplay.lumina.switch_ns", Lumina(LuminaPart::SwitchNs)),
        ("ccreplay.lumina.event", Lumina(LuminaPart::Event)),
        (
            "ccreplay.lumina.udp.srcport",
            Lumina(LuminaPart::CopySrcPort),
        ),
        (
            "ccreplay.lumina.udp.dstport",
            Lumina(LuminaPart::CopyDstPort),
        ),
        ("ccreplay.tunnel", Tunnel(TunnelPart::Kind)),
        ("ccreplay.tunnel.eth.src", Tunnel(TunnelPart::EthSrc)),
        ("ccreplay.tunnel.eth.dst", Tunnel(TunnelPart::EthDst)),
        ("ccreplay.tunnel.ip.src", Tunnel(TunnelPart::IpSrc)),
        ("ccreplay.tunnel.ip.dst", Tunnel(TunnelPart::IpDst)),
        ("ccreplay.tunnel.ip.ecn", Tunnel(TunnelPart::IpEcn)),
        ("ccreplay.tunnel.udp.srcport", Tunnel(TunnelPart::UdpSrc)),
        ("ccreplay.offset.tunnel", Tunnel(TunnelPart::Offset)),
        ("vxlan.flags", Tunnel(TunnelPart::VxlanFlags)),
        ("vxlan.vni", Tunnel(TunnelPart::VxlanVni)),
        ("geneve.flags", Tunnel(TunnelPart::GeneveFlags)),
        ("geneve.proto_type", Tunnel(TunnelPart::GeneveProto)),
        ("geneve.vni", Tunnel(TunnelPart::GeneveVni)),
        (
            "ccreplay.geneve.options_len",
            Tunnel(TunnelPart::GeneveOptionsLen),
        ),
        ("ccreplay.offset.inner", Tunnel(TunnelPart::OffsetInner)),
        ("ccreplay.tunnel.decap_ecn", Tunnel(TunnelPart::DecapEcn)),
        ("eth.src", EthSrc),
        ("eth.dst", EthDst),
        ("eth.type", EthType),
        ("vlan.priority", TagsOf(ETHERTYPE_VLAN, true)),
        ("vlan.id", TagsOf(ETHERTYPE_VLAN, false)),
        ("ieee8021ad.priority", TagsOf(ETHERTYPE_QINQ, true)),
        ("ieee8021ad.id", TagsOf(ETHERTYPE_QINQ, false)),
        ("vlan.etype", TagEtypes),
        ("ccreplay.vlan.etype", VlanEtype),
        ("ccreplay.vlan.count", VlanCount),
        ("ccreplay.vlan.tpid", Tags(TagPart::Tpid)),
        ("ccreplay.vlan.pcp", Tags(TagPart::Pcp)),
        ("ccreplay.vlan.vid", Tags(TagPart::Vid)),
        ("ccreplay.roce.priority", RocePriority),
        ("ip.src", Ip4Src),
        ("ip.dst", Ip4Dst),
        ("ip.dsfield.dscp", Ip4Dscp),
        ("ip.dsfield.ecn", Ip4Ecn),
        ("ip.hdr_len", Ip4HdrLen),
        ("ip.ttl", Ip4Ttl),
        ("ipv6.src", Ip6Src),
        ("ipv6.dst", Ip6Dst),
        ("ipv6.tclass.dscp", Ip6Dscp),
        ("ipv6.tclass.ecn", Ip6Ecn),
        ("ipv6.hlim", Ip6Hlim),
        ("ccreplay.ip.hdr_len", Ip6HdrLen),
        ("ccreplay.ip.ext_len", Ip6ExtLen),
        ("ipv6.flow", Ip6Flow),
        ("ccreplay.offset.ip", OffsetIp),
        ("udp.srcport", UdpSrc),
        ("udp.dstport", UdpDst),
        ("udp.length", UdpLen),
        ("ccreplay.offset.udp", OffsetUdp),
        ("ccreplay.roce", IsRoce),
        ("ccreplay.int.nhop", IntNhop),
        ("ccreplay.int.path_id", IntPathId),
        ("ccreplay.offset.int", OffsetInt),
        ("ccreplay.rcc.ts", RccTs),
        ("ccreplay.offset.rcc_shim", OffsetRccShim),
        ("infiniband.bth.opcode", BthOpcode),
        ("infiniband.bth.se", BthSe),
        ("infiniband.bth.m", BthM),
        ("infiniband.bth.padcnt", BthPadCnt),
        ("infiniband.bth.tver", BthTver),
        ("infiniband.bth.p_key", BthPKey),
        ("ccreplay.bth.fecn", BthFecn),
        ("ccreplay.bth.becn", BthBecn),
        ("ccreplay.bth.resv6", BthResv6),
        ("infiniband.bth.destqp", BthDestQp),
        ("infiniband.bth.a", BthAckReq),
        ("infiniband.bth.reserved7", BthResv7),
        ("infiniband.bth.psn", BthPsn),
        ("ccreplay.opcode.known", OpcodeKnown),
        ("ccreplay.opcode.name", OpcodeName),
        ("ccreplay.offset.bth", OffsetBth),
        ("infiniband.rdeth.eecnxt", RdethEeCnxt),
        ("ccreplay.rdeth.reserved", RdethReserved),
        ("infiniband.deth.q_key", DethQKey),
        ("ccreplay.deth.reserved", DethReserved),
        ("infiniband.deth.srcqp", DethSrcQp),
        ("infiniband.reth.va", RethVa),
        ("infiniband.reth.r_key", RethRKey),
        ("infiniband.reth.dmalen", RethDmaLen),
        ("ccreplay.atomiceth.va", AtomicVa),
        ("ccreplay.atomiceth.r_key", AtomicRKey),
        ("infiniband.atomiceth.swapdt", AtomicSwap),
        ("infiniband.atomiceth.cmpdt", AtomicCompare),
        ("infiniband.aeth.syndrome", AethSyndrome),
        ("infiniband.aeth.syndrome.opcode", AethOpcode),
        ("ccreplay.aeth.kind", AethKind),
        ("infiniband.aeth.syndrome.credit_count", AethCredit),
        ("infiniband.aeth.syndrome.timer", AethTimer),
        ("infiniband.aeth.syndrome.reserved_value", AethReservedValue),
        ("infiniband.aeth.syndrome.error_code", AethErrorCode),
        ("ccreplay.aeth.nak", AethNak),
        ("infiniband.aeth.msn", AethMsn),
        ("infiniband.atomicacketh.origremdt", AtomicAckOrig),
        ("infiniband.immdt", ImmDt),
        ("infiniband.ieth", Ieth),
        ("ccreplay.cnp.reserved_nonzero", CnpReservedNonzero),
        ("ccreplay.offset.rdeth", OffsetExt(ExtHeaders::RDETH)),
        ("ccreplay.offset.deth", OffsetExt(ExtHeaders::DETH)),
        ("ccreplay.offset.reth", OffsetExt(ExtHeaders::RETH)),
        (
            "ccreplay.offset.atomiceth",
            OffsetExt(ExtHeaders::ATOMIC_ETH),
        ),
        ("ccreplay.offset.aeth", OffsetExt(ExtHeaders::AETH)),
        (
            "ccreplay.offset.atomicacketh",
            OffsetExt(ExtHeaders::ATOMIC_ACK_ETH),
        ),
        ("ccreplay.offset.immdt", OffsetExt(ExtHeaders::IMM_DT)),
        ("ccreplay.offset.ieth", OffsetExt(ExtHeaders::IETH)),
        ("ccreplay.offset.cnp", OffsetExt(ExtHeaders::CNP)),
        ("ccreplay.fncc.n", FnccN),
        ("ccreplay.offset.fncc_ext", OffsetFnccExt),
        ("ccreplay.rcc.cwnd", RccCwnd),
        ("ccreplay.rcc.n", RccN),
        ("ccreplay.rcc.flags", RccFlags),
        ("ccreplay.rcc.reserved", RccReserved),
        ("ccreplay.offset.rcc_ext", OffsetRccExt),
        ("ccreplay.payload.len", PayloadLen),
        ("ccreplay.opaque.len", OpaqueLen),
        ("ccreplay.offset.payload", OffsetPayload),
        ("ccreplay.offset.icrc", OffsetIcrc),
        ("infiniband.invariant.crc", Icrc),
        ("ccreplay.icrc.valid", IcrcValid),
        ("ccreplay.icrc.computed", IcrcComputed),
        ("macc.opcode", MaccOpcode),
        ("macc.cbfc.enbv", MaccEnbv),
        ("ccreplay.error.layer", Error(ProblemPart::Layer)),
        ("ccreplay.error.offset", Error(ProblemPart::Offset)),
        ("ccreplay.error.reason", Error(ProblemPart::Reason)),
        ("ccreplay.error.message", Error(ProblemPart::Message)),
        ("ccreplay.warnings", Warnings),
        ("ccreplay.warning.layer", Warning(ProblemPart::Layer)),
        ("ccreplay.warning.offset", Warning(ProblemPart::Offset)),
        ("ccreplay.warning.message", Warning(ProblemPart::Message)),
    ]
};

/// `n` in 0..`max` written without leading zeros, and what follows it.
fn index_then(s: &str, max: u8) -> Option<(u8, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, rest) = s.split_at(end);
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    let n: u8 = digits.parse().ok()?;
    (n < max).then_some((n, rest))
}

impl Field {
    /// The accessor of a key; [`Field::Unknown`] for a name inspect never writes.
    pub(crate) fn parse(name: &str) -> Field {
        if let Some((_, f)) = NAMED.iter().find(|(n, _)| *n == name) {
            return *f;
        }
        // ccreplay.int.hop0.b .. ccreplay.int.hop14.qlen: the 15 hops a stack may hold.
        if let Some((i, part)) = name
            .strip_prefix("ccreplay.int.hop")
            .and_then(|s| index_then(s, 15))
        {
            let part = match part {
                ".b" => HopPart::B,
                ".ts" => HopPart::Ts,
                ".tx_bytes" => HopPart::TxBytes,
                ".qlen" => HopPart::Qlen,
                _ => return Field::Unknown,
            };
            return Field::Hop(i, part);
        }
        // Per priority c0 .. c7 (802.1Qbb).
        for (prefix, part) in [
            ("macc.cbfc.enbv.c", PfcPart::Enabled),
            ("macc.cbfc.pause_time.c", PfcPart::Quanta),
            ("ccreplay.pfc.paused.c", PfcPart::Paused),
            ("ccreplay.pfc.pause_ns.c", PfcPart::PauseNs),
        ] {
            if let Some((i, "")) = name.strip_prefix(prefix).and_then(|s| index_then(s, 8)) {
                return Field::Pfc(i, part);
            }
        }
        Field::Unknown
    }

    /// True when the value needs the ICRC computed over the packet.
    pub(crate) fn needs_icrc(self) -> bool {
        matches!(self, Field::IcrcValid | Field::IcrcComputed)
    }

    /// The field's value in one packet.
    #[inline]
    pub(crate) fn get<'p>(self, cx: &Cx<'p, '_>) -> Val<'p> {
        use Field::*;
        use Val::{Absent, U};
        let (rec, p) = (cx.rec, cx.p);
        let flag = |b: bool| U(b as u64);
        match self {
            Unknown => Absent,
            FrameNumber => U(rec.frame_number),
            TimeEpoch => Val::Epoch(rec.ts_ns),
            TsNs => U(rec.ts_ns),
            FrameLen => U(rec.orig_len.into()),
            CapLen => U(rec.data.len() as u64),
            LinkType => U(rec.link.to_u32().into()),
            InterfaceId => U(rec.interface_id.into()),
            Truncated => flag(rec.is_truncated()),
            Mirror(part) => p.mirror.as_ref().map_or(Absent, |m| mirror(part, m)),
            Tunnel(part) => p.tunnel.as_ref().map_or(Absent, |t| tunnel(part, t, p)),
            Lumina(part) => p.lumina.as_ref().map_or(Absent, |l| match part {
                LuminaPart::Seq => U(l.seq),
                LuminaPart::SwitchNs => U(l.switch_ns),
                LuminaPart::Event => Val::Str(l.event.name()),
                LuminaPart::CopySrcPort => U(l.copy_src_port.into()),
                LuminaPart::CopyDstPort => U(l.copy_dst_port.into()),
            }),
            EthSrc | EthDst | EthType | TagsOf(..) | TagEtypes | VlanEtype | VlanCount
            | Tags(_) | RocePriority => eth(self, p),
            Ip4Src | Ip4Dst | Ip4Dscp | Ip4Ecn | Ip4HdrLen | Ip4Ttl | Ip6Src | Ip6Dst | Ip6Dscp
            | Ip6Ecn | Ip6Hlim | Ip6HdrLen | Ip6ExtLen | Ip6Flow | OffsetIp => ip(self, p),
            UdpSrc => p.udp.map_or(Absent, |u| U(u.src_port.into())),
            UdpDst => p.udp.map_or(Absent, |u| U(u.dst_port.into())),
            UdpLen => p.udp.map_or(Absent, |u| U(u.length.into())),
            OffsetUdp => p.udp.map_or(Absent, |u| U(u.offset as u64)),
            IsRoce => {
                flag(p.roce.is_some() || p.udp.is_some_and(|u| u.dst_port == cx.cfg.udp_port))
            }
            IntNhop | IntPathId | Hop(..) | OffsetInt => int(self, p),
            MaccOpcode | MaccEnbv | Pfc(..) => pfc(self, p, cx.pfc_link_bps),
            Error(part) => problem(part, p.error.as_ref()),
            Warnings => p.warning.map_or(Absent, |_| U(p.warnings.into())),
            Warning(part) => problem(part, p.warning.as_ref()),
            IcrcValid => cx.icrc.map_or(Absent, |(c, f)| flag(c == f)),
            IcrcComputed => cx.icrc.map_or(Absent, |(c, _)| U(c.into())),
            _ => roce(self, cx),
        }
    }
}

/// As `write_tunnel` writes them: VXLAN's fields only in VXLAN, Geneve's only in Geneve.
fn tunnel<'p>(part: TunnelPart, t: &Tunnel, p: &Packet<'_>) -> Val<'p> {
    use TunnelPart::*;
    use Val::{Absent, U};
    let addr = |a: IpAddr| match a {
        IpAddr::V4(v4) => Val::V4(v4.octets()),
        v6 => Val::V6(v6),
    };
    let vxlan = t.kind == TunnelKind::Vxlan;
    match part {
        Kind => Val::Str(t.kind.name()),
        EthSrc => t.macs(p.data).map_or(Absent, |(s, _)| Val::Mac(s)),
        EthDst => t.macs(p.data).map_or(Absent, |(_, d)| Val::Mac(d)),
        IpSrc => t.ip_addrs(p.data).map_or(Absent, |a| addr(a.src())),
        IpDst => t.ip_addrs(p.data).map_or(Absent, |a| addr(a.dst())),
        IpEcn => U(t.ecn.into()),
        UdpSrc => U(t.udp_src_port.into()),
        Offset => U(t.offset.into()),
        VxlanFlags if vxlan => U(t.flags.into()),
        VxlanVni if vxlan => U(t.vni.into()),
        GeneveFlags if !vxlan => U(t.flags.into()),
        GeneveProto if !vxlan => U(t.protocol.into()),
        GeneveVni if !vxlan => U(t.vni.into()),
        GeneveOptionsLen if !vxlan => U(t.options_len.into()),
        OffsetInner => U(t.inner.into()),
        DecapEcn => p.ecn().map_or(Absent, |e| U(e.into())),
        _ => Absent,
    }
}

/// As `write_mirror` writes them: ERSPAN II's En and Index, III's BSO and the rest, each only
/// in its own version.
fn mirror<'p>(part: MirrorPart, m: &Mirror) -> Val<'p> {
    use MirrorPart::*;
    use Val::{Absent, U};
    let flag = |b: bool| U(b as u64);
    let addr = |a: IpAddr| match a {
        IpAddr::V4(v4) => Val::V4(v4.octets()),
        v6 => Val::V6(v6),
    };
    match part {
        Kind => return Val::Str(m.kind.name()),
        EthSrc => return m.eth.map_or(Absent, |e| Val::Mac(e.src)),
        EthDst => return m.eth.map_or(Absent, |e| Val::Mac(e.dst)),
        IpSrc => return addr(m.ip.addrs.src()),
        IpDst => return addr(m.ip.addrs.dst()),
        GreProto => return U(m.gre.proto.into()),
        GreKey => return m.gre.key.map_or(Absent, |k| U(k.into())),
        GreSeq => return m.gre.seq.map_or(Absent, |q| U(q.into())),
        OffsetGre => return U(m.gre.offset as u64),
        OffsetMirror => return U(m.inner as u64),
        _ => {}
    }
    let Some(e) = &m.erspan else {
        return Absent;
    };
    let (v2, v3) = (e.version() == 1, e.version() == 2);
    match part {
        OffsetErspan => U(e.offset as u64),
        Version => U(e.version().into()),
        Vlan => U(e.vlan().into()),
        Cos => U(e.cos().into()),
        Encap if v2 => U(e.en_bso().into()),
        Bso if v3 => U(e.en_bso().into()),
        Truncated => flag(e.truncated()),
        SpanId => U(e.span_id().into()),
        Index if v2 => U(e.index().into()),
        Timestamp if v3 => U(e.timestamp().into()),
        Sgt if v3 => U(e.sgt().into()),
        P if v3 => flag(e.p()),
        Ft if v3 => U(e.ft().into()),
        Hw if v3 => U(e.hw_id().into()),
        Direction if v3 => flag(e.direction()),
        Gra if v3 => U(e.gra().into()),
        O if v3 => flag(e.o()),
        PlatId if v3 => e.platform_id().map_or(Absent, |x| U(x.into())),
        _ => Absent,
    }
}

fn eth<'p>(f: Field, p: &Packet<'_>) -> Val<'p> {
    use Field::*;
    use Val::{Absent, U};
    let Some(eth) = &p.eth else {
        return Absent;
    };
    let tags = || eth.vlans.iter().flatten();
    match f {
        EthSrc => Val::Mac(eth.src),
        EthDst => Val::Mac(eth.dst),
        // The Ethernet header's own field: the outer TPID when tagged.
        EthType => U(eth.vlans[0].map_or(eth.ether_type, |v| v.tpid).into()),
        // The rest only when tagged.
        _ if eth.vlans[0].is_none() => Absent,
        VlanEtype => U(eth.ether_type.into()),
        VlanCount => U(tags().count() as u64),
        TagsOf(..) | TagEtypes | Tags(_) => {
            let mut vals = [0u64; 2];
            let mut n = 0u8;
            for (i, v) in tags().enumerate() {
                vals[n as usize] = match f {
                    TagsOf(tpid, _) if v.tpid != tpid => continue,
                    TagEtypes if v.tpid != ETHERTYPE_VLAN => continue,
                    TagEtypes => eth.vlans[i + 1..]
                        .first()
                        .copied()
                        .flatten()
                        .map_or(eth.ether_type, |next| next.tpid)
                        .into(),
                    TagsOf(_, true) | Tags(TagPart::Pcp) => v.pcp.into(),
                    TagsOf(_, false) | Tags(TagPart::Vid) => v.vid.into(),
                    _ => v.tpid.into(),
                };
                n += 1;
            }
            if n == 0 {
                return Absent;
            }
            Val::Tags(vals, n)
        }
        RocePriority => eth.vlans[0].map_or(Absent, |v| U(v.pcp.into())),
        _ => Absent,
    }
}

fn ip<'p>(f: Field, p: &Packet<'_>) -> Val<'p> {
    use Field::*;
    use Val::{Absent, U};
    let Some(ip) = &p.ip else {
        return Absent;
    };
    let v4 = matches!(ip.addrs, IpAddrs::V4 { .. });
    match (f, ip.addrs) {
        (Ip4Src, IpAddrs::V4 { src, .. }) => Val::V4(src),
        (Ip4Dst, IpAddrs::V4 { dst, .. }) => Val::V4(dst),
        (Ip4Dscp, _) if v4 => U(ip.dscp.into()),
        (Ip4Ecn, _) if v4 => U(ip.ecn.into()),
        (Ip4HdrLen, _) if v4 => U(ip.header_len as u64),
        (Ip4Ttl, _) if v4 => U(ip.ttl.into()),
        (Ip6Src, IpAddrs::V6 { .. }) => Val::V6(ip.addrs.src()),
        (Ip6Dst, IpAddrs::V6 { .. }) => Val::V6(ip.addrs.dst()),
        (Ip6Dscp, _) if !v4 => U(ip.dscp.into()),
        (Ip6Ecn, _) if !v4 => U(ip.ecn.into()),
        (Ip6Hlim, _) if !v4 => U(ip.ttl.into()),
        (Ip6HdrLen, _) if !v4 => U(ip.header_len as u64),
        (Ip6ExtLen, _) if !v4 => U(ip.header_len.saturating_sub(40) as u64),
        (Ip6Flow, _) if !v4 => ipv6_flow(p, ip).map_or(Absent, |v| U(v.into())),
        (OffsetIp, _) => U(ip.offset as u64),
        _ => Absent,
    }
}

/// IPv6's flow label (as `write_json` reads it) (the 20 bits after the version and traffic class).
fn ipv6_flow(p: &Packet<'_>, ip: &IpInfo) -> Option<u32> {
    let b = p.data.get(ip.offset + 1..ip.offset + 4)?;
    Some(u32::from_be_bytes([0, b[0] & 0x0F, b[1], b[2]]))
}

/// N of an FNCC extension that could not be read whole: still worth showing — on an
/// ACKNOWLEDGE only (wire.md 4: the only opcode that carries it), and only from bytes before
/// the ICRC (never from Ethernet padding): the UDP payload's end by its length field, less the
/// 4-byte ICRC.
fn fncc_n_unparsed(p: &Packet<'_>, r: &Roce<'_>, cfg: &DecodeConfig) -> Option<u16> {
    if cfg.dialect != ccreplay_codecs::Dialect::Fncc || !r.bth.opcode().is_ack() {
        return None;
    }
    let aeth = r.header_offset(ExtHeaders::AETH)?;
    let transport_end = p
        .udp
        .map_or(0, |u| (u.offset + usize::from(u.length)).saturating_sub(4));
    if aeth + 6 > transport_end {
        return None;
    }
    let n = p.data.get(aeth + 4..aeth + 6)?;
    Some(u16::from_be_bytes([n[0], n[1]]))
}

/// The INT stack whose keys the record holds: the fncc ACK extension's, else the hpcc shim's
/// (a packet has one or the other), with the offset of its header.
fn stack<'a>(p: &Packet<'a>) -> Option<(IntStackView<'a>, usize)> {
    let r = p.roce.as_ref()?;
    match (r.shim, r.ack_ext) {
        (_, AckExt::Fncc(f)) => Some((f.int, fncc_ext_offset(r) + 2)),
        (Shim::Int(s), _) => Some((s, r.offset)),
        _ => None,
    }
}

/// Where the fncc extension starts: right after the AETH (0 when the opcode has none, as the
/// JSON record says).
fn fncc_ext_offset(r: &Roce<'_>) -> usize {
    r.header_offset(ExtHeaders::AETH).map_or(0, |a| a + 4)
}

fn int<'p>(f: Field, p: &Packet<'_>) -> Val<'p> {
    use Val::{Absent, U};
    let Some((s, at)) = stack(p) else {
        // nHop is known even when it is the reason the stack could not be read.
        if let (
            Field::IntNhop,
            Some(DecodeError {
                kind: ErrorKind::NHopTooLarge { n_hop, .. },
                ..
            }),
        ) = (f, p.error)
        {
            return U(n_hop.into());
        }
        return Absent;
    };
    match f {
        Field::IntNhop => U(s.n_hop().into()),
        Field::IntPathId => U(s.header.path_id.into()),
        Field::OffsetInt => U(at as u64),
        Field::Hop(i, part) => s.hop(i.into()).map_or(Absent, |h| {
            U(match part {
                HopPart::B => h.b.into(),
                HopPart::Ts => h.ts.into(),
                HopPart::TxBytes => h.tx_bytes.into(),
                HopPart::Qlen => h.qlen.into(),
            })
        }),
        _ => Absent,
    }
}

fn pfc<'p>(f: Field, p: &Packet<'_>, link_bps: u64) -> Val<'p> {
    use Val::{Absent, U};
    let Some(pfc) = &p.pfc else {
        return Absent;
    };
    match f {
        Field::MaccOpcode => U(ccreplay_codecs::pfc::PFC_OPCODE.into()),
        Field::MaccEnbv => U(pfc.class_enable.into()),
        Field::Pfc(i, part) => {
            let i = usize::from(i);
            U(match part {
                PfcPart::Enabled => (pfc.class_enable & (1 << i) != 0) as u64,
                PfcPart::Quanta => pfc.quanta[i].into(),
                PfcPart::Paused => pfc.paused(i) as u64,
                PfcPart::PauseNs => pfc.pause_ns(i, link_bps),
            })
        }
        _ => Absent,
    }
}

fn problem<'p>(part: ProblemPart, e: Option<&'p DecodeError>) -> Val<'p> {
    let Some(e) = e else {
        return Val::Absent;
    };
    match part {
        ProblemPart::Layer => Val::Str(e.layer.name()),
        ProblemPart::Offset => Val::U(e.offset as u64),
        ProblemPart::Reason => Val::Str(e.kind.reason()),
        ProblemPart::Message => Val::Message(e),
    }
}

/// The fields of the RoCEv2 layers: BTH, the extension headers, the ACK extensions, payload
/// and ICRC.
fn roce<'p>(f: Field, cx: &Cx<'p, '_>) -> Val<'p> {
    use Field::*;
    use Val::{Absent, U};
    let p = cx.p;
    let Some(r) = &p.roce else {
        return Absent;
    };
    let b = &r.bth;
    let opcode = b.opcode();
    let flag = |v: bool| U(v as u64);
    let some = |v: Option<u64>| v.map_or(Absent, U);
    match f {
        RccTs => match r.shim {
            Shim::RccTimestamp(t) => U(t),
            _ => Absent,
        },
        OffsetRccShim => match r.shim {
            Shim::RccTimestamp(_) => U(r.offset as u64),
            _ => Absent,
        },
        BthOpcode => U(opcode.0.into()),
        BthSe => flag(b.se()),
        BthM => flag(b.mig_req()),
        BthPadCnt => U(b.pad_cnt().into()),
        BthTver => U(b.tver().into()),
        BthPKey => U(b.p_key().into()),
        BthFecn => flag(b.fecn()),
        BthBecn => flag(b.becn()),
        BthResv6 => U(b.resv6().into()),
        BthDestQp => U(b.dest_qp().into()),
        BthAckReq => flag(b.ack_req()),
        BthResv7 => U(b.resv7().into()),
        BthPsn => U(b.psn().into()),
        OpcodeKnown => flag(opcode.is_known()),
        OpcodeName => Val::Words(super::super::opcode_words(opcode)),
        OffsetBth => U(r.bth_offset as u64),
        RdethEeCnxt => some(r.rdeth().map(|h| h.ee_context.into())),
        RdethReserved => some(r.rdeth().map(|h| h.reserved.into())),
        DethQKey => some(r.deth().map(|h| h.q_key.into())),
        DethReserved => some(r.deth().map(|h| h.reserved.into())),
        DethSrcQp => some(r.deth().map(|h| h.src_qp.into())),
        // AtomicETH's VA and R_Key go by RETH's names in Wireshark; an opcode has one or the
        // other.
        RethVa => some(
            r.reth()
                .map(|h| h.va)
                .or_else(|| r.atomic_eth().map(|h| h.va)),
        ),
        RethRKey => some(
            r.reth()
                .map(|h| h.r_key.into())
                .or_else(|| r.atomic_eth().map(|h| h.r_key.into())),
        ),
        RethDmaLen => some(r.reth().map(|h| h.dma_len.into())),
        AtomicVa => some(r.atomic_eth().map(|h| h.va)),
        AtomicRKey => some(r.atomic_eth().map(|h| h.r_key.into())),
        AtomicSwap => some(r.atomic_eth().map(|h| h.swap_add)),
        AtomicCompare => some(r.atomic_eth().map(|h| h.compare)),
        AethSyndrome | AethOpcode | AethKind | AethCredit | AethTimer | AethReservedValue
        | AethErrorCode | AethNak | AethMsn => {
            let Some(a) = r.aeth() else {
                return Absent;
            };
            match f {
                AethSyndrome => return U(a.syndrome.into()),
                AethOpcode => return U(((a.syndrome >> 5) & 3).into()),
                AethMsn => return U(a.msn.into()),
                _ => {}
            }
            // The rest depend on the syndrome's meaning.
            match (f, a.decoded()) {
                (AethKind, s) => Val::Str(s.kind_name()),
                (AethCredit, Syndrome::Ack { credit }) => U(credit.into()),
                (AethTimer, Syndrome::RnrNak { timer }) => U(timer.into()),
                (AethReservedValue, Syndrome::Reserved { value }) => U(value.into()),
                (AethErrorCode, Syndrome::Nak(_)) => U((a.syndrome & 0x1F).into()),
                (AethNak, Syndrome::Nak(code)) => Val::Str(code.name()),
                _ => Absent,
            }
        }
        AtomicAckOrig => some(r.atomic_ack_eth()),
        ImmDt => some(r.imm_dt().map(u64::from)),
        Ieth => some(r.ieth().map(u64::from)),
        CnpReservedNonzero => r
            .cnp_reserved
            .map_or(Absent, |c| flag(c.iter().any(|&b| b != 0))),
        OffsetExt(flag) => some(r.header_offset(flag).map(|a| a as u64)),
        FnccN => match r.ack_ext {
            AckExt::Fncc(e) => U(e.n.into()),
            AckExt::None => some(fncc_n_unparsed(p, r, cx.cfg).map(u64::from)),
            AckExt::Rcc(_) => Absent,
        },
        OffsetFnccExt => match r.ack_ext {
            AckExt::Fncc(_) => U(fncc_ext_offset(r) as u64),
            _ => Absent,
        },
        RccCwnd | RccN | RccFlags | RccReserved | OffsetRccExt => {
            let AckExt::Rcc(e) = r.ack_ext else {
                return Absent;
            };
            U(match f {
                RccCwnd => e.cwnd.into(),
                RccN => e.n.into(),
                RccFlags => e.flags.into(),
                RccReserved => e.reserved.into(),
                _ => r.header_offset(ExtHeaders::AETH).map_or(0, |a| a + 4) as u64,
            })
        }
        PayloadLen if opcode.is_known() => U(r.payload.len() as u64),
        OpaqueLen if !opcode.is_known() => U(r.payload.len() as u64),
        OffsetPayload => U(r.payload_offset as u64),
        OffsetIcrc => r.icrc_field().map_or(Absent, |_| U(r.icrc_offset as u64)),
        Icrc => some(r.icrc_field().map(u64::from)),
        _ => Absent,
    }
}
