//! `--format json`: one JSON Lines record per packet (Wireshark's field names where it has
//! the field, `ccreplay.` names for the rest: docs/inspect.md), then the summary object.

use ccreplay_codecs::capture::Record;
use ccreplay_codecs::ib::ExtHeaders;
use ccreplay_codecs::mirror::Mirror;
use ccreplay_codecs::packet::{AckExt, ETHERTYPE_QINQ, ETHERTYPE_VLAN, IpAddrs, Packet, Shim};
use ccreplay_codecs::shim::IntStackView;
use ccreplay_codecs::shim::int::IntHop;
use ccreplay_codecs::tunnel::{Tunnel, TunnelKind};
use ccreplay_codecs::{DecodeConfig, DecodeError, ErrorKind};

use super::Summary;
use crate::jsonl::{Key, LineBuf, Obj, Rec};
use crate::key;

/// The words of an opcode's name, as its `Display` writes them, without formatting machinery.
pub(super) fn opcode_words(op: ccreplay_codecs::ib::Opcode) -> [&'static str; 2] {
    if op.is_cnp() {
        ["CNP", ""]
    } else if op.is_known() {
        [op.transport().name(), op.name()]
    } else {
        ["UNKNOWN", ""]
    }
}

const HOP_KEYS: [[Key; 4]; 15] = {
    macro_rules! hop {
        ($i:literal) => {
            [
                Key::new(concat!("ccreplay.int.hop", $i, ".b")),
                Key::new(concat!("ccreplay.int.hop", $i, ".ts")),
                Key::new(concat!("ccreplay.int.hop", $i, ".tx_bytes")),
                Key::new(concat!("ccreplay.int.hop", $i, ".qlen")),
            ]
        };
    }
    [
        hop!(0),
        hop!(1),
        hop!(2),
        hop!(3),
        hop!(4),
        hop!(5),
        hop!(6),
        hop!(7),
        hop!(8),
        hop!(9),
        hop!(10),
        hop!(11),
        hop!(12),
        hop!(13),
        hop!(14),
    ]
};

/// Offsets of the extension headers that matter for reading a capture by hand.
const OFFSET_KEYS: [(u16, Key); 9] = [
    (ExtHeaders::RDETH, Key::new("ccreplay.offset.rdeth")),
    (ExtHeaders::DETH, Key::new("ccreplay.offset.deth")),
    (ExtHeaders::RETH, Key::new("ccreplay.offset.reth")),
    (
        ExtHeaders::ATOMIC_ETH,
        Key::new("ccreplay.offset.atomiceth"),
    ),
    (ExtHeaders::AETH, Key::new("ccreplay.offset.aeth")),
    (
        ExtHeaders::ATOMIC_ACK_ETH,
        Key::new("ccreplay.offset.atomicacketh"),
    ),
    (ExtHeaders::IMM_DT, Key::new("ccreplay.offset.immdt")),
    (ExtHeaders::IETH, Key::new("ccreplay.offset.ieth")),
    (ExtHeaders::CNP, Key::new("ccreplay.offset.cnp")),
];

const PFC_KEYS: [[Key; 4]; 8] = {
    macro_rules! c {
        ($i:literal) => {
            [
                Key::new(concat!("macc.cbfc.enbv.c", $i)),
                Key::new(concat!("macc.cbfc.pause_time.c", $i)),
                Key::new(concat!("ccreplay.pfc.paused.c", $i)),
                Key::new(concat!("ccreplay.pfc.pause_ns.c", $i)),
            ]
        };
    }
    [c!(0), c!(1), c!(2), c!(3), c!(4), c!(5), c!(6), c!(7)]
};

fn write_int(o: &mut Rec<'_>, s: &IntStackView<'_>, offset: usize) {
    o.u(key!("ccreplay.int.nhop"), s.n_hop())
        .u(key!("ccreplay.int.path_id"), s.header.path_id);
    for (
        k,
        IntHop {
            b,
            ts,
            tx_bytes,
            qlen,
        },
    ) in HOP_KEYS.iter().zip(s.hops())
    {
        o.u(&k[0], b).u(&k[1], ts).u(&k[2], tx_bytes).u(&k[3], qlen);
    }
    o.u(key!("ccreplay.offset.int"), offset as u64);
}

/// A tunnelled packet's outer headers (codecs tunnel.rs) under `ccreplay.tunnel.*` (Wireshark's
/// `eth.*`, `ip.*` and `udp.*` are the inner frame's here), VXLAN and Geneve under Wireshark's
/// names, and the ECN decapsulation leaves (RFC 6040; absent when it drops the packet).
fn write_tunnel(o: &mut Rec<'_>, t: &Tunnel, p: &Packet<'_>) {
    o.s(key!("ccreplay.tunnel"), t.kind.name());
    if let Some((src, dst)) = t.macs(p.data) {
        o.mac(key!("ccreplay.tunnel.eth.src"), src)
            .mac(key!("ccreplay.tunnel.eth.dst"), dst);
    }
    match t.ip_addrs(p.data) {
        Some(IpAddrs::V4 { src, dst }) => {
            o.ipv4(key!("ccreplay.tunnel.ip.src"), src)
                .ipv4(key!("ccreplay.tunnel.ip.dst"), dst);
        }
        Some(a @ IpAddrs::V6 { .. }) => {
            o.display(key!("ccreplay.tunnel.ip.src"), a.src())
                .display(key!("ccreplay.tunnel.ip.dst"), a.dst());
        }
        None => {}
    }
    o.u(key!("ccreplay.tunnel.ip.ecn"), t.ecn)
        .u(key!("ccreplay.tunnel.udp.srcport"), t.udp_src_port)
        .u(key!("ccreplay.offset.tunnel"), t.offset);
    match t.kind {
        TunnelKind::Vxlan => {
            o.u(key!("vxlan.flags"), t.flags)
                .u(key!("vxlan.vni"), t.vni);
        }
        TunnelKind::Geneve => {
            o.u(key!("geneve.flags"), t.flags)
                .u(key!("geneve.proto_type"), t.protocol)
                .u(key!("geneve.vni"), t.vni)
                .u(key!("ccreplay.geneve.options_len"), t.options_len);
        }
    }
    o.u(key!("ccreplay.offset.inner"), t.inner);
    if let Some(ecn) = p.ecn() {
        o.u(key!("ccreplay.tunnel.decap_ecn"), ecn);
    }
}

/// A mirrored packet's encapsulation (codecs mirror.rs): the outer addresses under
/// `ccreplay.mirror.*` (Wireshark's `eth.*` and `ip.*` are the mirrored frame's here), GRE and
/// ERSPAN under Wireshark's names.
fn write_mirror(o: &mut Rec<'_>, m: &Mirror) {
    o.s(key!("ccreplay.mirror"), m.kind.name());
    if let Some(eth) = &m.eth {
        o.mac(key!("ccreplay.mirror.eth.src"), eth.src)
            .mac(key!("ccreplay.mirror.eth.dst"), eth.dst);
    }
    match m.ip.addrs {
        IpAddrs::V4 { src, dst } => {
            o.ipv4(key!("ccreplay.mirror.ip.src"), src)
                .ipv4(key!("ccreplay.mirror.ip.dst"), dst);
        }
        IpAddrs::V6 { .. } => {
            o.display(key!("ccreplay.mirror.ip.src"), m.ip.addrs.src())
                .display(key!("ccreplay.mirror.ip.dst"), m.ip.addrs.dst());
        }
    }
    o.u(key!("gre.proto"), m.gre.proto)
        .u(key!("ccreplay.offset.gre"), m.gre.offset as u64);
    if let Some(k) = m.gre.key {
        o.u(key!("gre.key"), k);
    }
    if let Some(q) = m.gre.seq {
        o.u(key!("gre.sequence_number"), q);
    }
    if let Some(e) = &m.erspan {
        o.u(key!("ccreplay.offset.erspan"), e.offset as u64)
            .u(key!("erspan.version"), e.version())
            .u(key!("erspan.vlan"), e.vlan())
            .u(key!("erspan.cos"), e.cos());
        if e.version() == 1 {
            o.u(key!("erspan.encap"), e.en_bso());
        } else {
            o.u(key!("erspan.bso"), e.en_bso());
        }
        o.flag(key!("erspan.truncated"), e.truncated())
            .u(key!("erspan.spanid"), e.span_id());
        if e.version() == 1 {
            o.u(key!("erspan.index"), e.index());
        } else {
            o.u(key!("erspan.timestamp"), e.timestamp())
                .u(key!("erspan.sgt"), e.sgt())
                .flag(key!("erspan.p"), e.p())
                .u(key!("erspan.ft"), e.ft())
                .u(key!("erspan.hw"), e.hw_id())
                .flag(key!("erspan.direction"), e.direction())
                .u(key!("erspan.gra"), e.gra())
                .flag(key!("erspan.o"), e.o());
            if let Some(id) = e.platform_id() {
                o.u(key!("erspan.platid"), id);
            }
        }
    }
    o.u(key!("ccreplay.offset.mirror"), m.inner as u64);
}

/// One JSON record (a line, compact: no spaces) for a decoded packet.
pub fn write_json(
    buf: &mut LineBuf,
    rec: &Record<'_>,
    p: &Packet<'_>,
    icrc: Option<(u32, u32)>,
    cfg: &DecodeConfig,
    pfc_link_bps: u64,
) {
    let (udp_port, dialect) = (cfg.udp_port, cfg.dialect);
    let mut o = buf.rec();
    o.u(key!("frame.number"), rec.frame_number)
        .epoch(key!("frame.time_epoch"), rec.ts_ns)
        .u(key!("ccreplay.ts_ns"), rec.ts_ns)
        .u(key!("frame.len"), rec.orig_len)
        .u(key!("frame.cap_len"), rec.data.len() as u64)
        .u(key!("ccreplay.link_type"), rec.link.to_u32())
        .u(key!("ccreplay.interface_id"), rec.interface_id)
        .flag(key!("ccreplay.truncated"), rec.is_truncated());
    if let Some(m) = &p.mirror {
        write_mirror(&mut o, m);
    }
    if let Some(t) = &p.tunnel {
        write_tunnel(&mut o, t, p);
    }
    if let Some(l) = &p.lumina {
        // docs/wire.md 2.3: what the switch wrote into the copy.
        o.u(key!("ccreplay.lumina.seq"), l.seq)
            .u(key!("ccreplay.lumina.switch_ns"), l.switch_ns)
            .s(key!("ccreplay.lumina.event"), l.event.name())
            .u(
                key!("ccreplay.lumina.udp.srcport"),
                u64::from(l.copy_src_port),
            )
            .u(
                key!("ccreplay.lumina.udp.dstport"),
                u64::from(l.copy_dst_port),
            );
    }
    if let Some(eth) = &p.eth {
        o.mac(key!("eth.src"), eth.src)
            .mac(key!("eth.dst"), eth.dst);
        // Wireshark's eth.type is the Ethernet header's own field: the outer TPID when tagged.
        let tags = eth.vlans.iter().flatten().count();
        o.u(
            key!("eth.type"),
            eth.vlans[0].map_or(eth.ether_type, |v| v.tpid),
        );
        if let Some(outer) = eth.vlans[0] {
            // Wireshark names 802.1Q tags vlan.* and 802.1ad S-tags ieee8021ad.*; each name
            // gets the first tag of its kind.
            if let Some(q) = eth
                .vlans
                .iter()
                .flatten()
                .find(|v| v.tpid == ETHERTYPE_VLAN)
            {
                o.u(key!("vlan.priority"), q.pcp).u(key!("vlan.id"), q.vid);
            }
            if let Some(ad) = eth
                .vlans
                .iter()
                .flatten()
                .find(|v| v.tpid == ETHERTYPE_QINQ)
            {
                o.u(key!("ieee8021ad.priority"), ad.pcp)
                    .u(key!("ieee8021ad.id"), ad.vid);
            }
            let tags_iter = || eth.vlans.iter().flatten();
            o.u(key!("ccreplay.vlan.etype"), eth.ether_type)
                .u(key!("ccreplay.vlan.count"), tags as u64)
                .u_array(
                    key!("ccreplay.vlan.tpid"),
                    tags_iter().map(|v| v.tpid as u64),
                )
                .u_array(key!("ccreplay.vlan.pcp"), tags_iter().map(|v| v.pcp as u64))
                .u_array(key!("ccreplay.vlan.vid"), tags_iter().map(|v| v.vid as u64))
                .u(key!("ccreplay.roce.priority"), outer.pcp);
        }
    }
    if let Some(ip) = &p.ip {
        match ip.addrs {
            IpAddrs::V4 { src, dst } => {
                o.ipv4(key!("ip.src"), src)
                    .ipv4(key!("ip.dst"), dst)
                    .u(key!("ip.dsfield.dscp"), ip.dscp)
                    .u(key!("ip.dsfield.ecn"), ip.ecn)
                    .u(key!("ip.hdr_len"), ip.header_len as u64)
                    .u(key!("ip.ttl"), ip.ttl);
            }
            IpAddrs::V6 { .. } => {
                o.display(key!("ipv6.src"), ip.addrs.src())
                    .display(key!("ipv6.dst"), ip.addrs.dst())
                    .u(key!("ipv6.tclass.dscp"), ip.dscp)
                    .u(key!("ipv6.tclass.ecn"), ip.ecn)
                    .u(key!("ipv6.hlim"), ip.ttl)
                    .u(key!("ccreplay.ip.hdr_len"), ip.header_len as u64)
                    .u(
                        key!("ccreplay.ip.ext_len"),
                        ip.header_len.saturating_sub(40) as u64,
                    );
                if let Some(b) = p.data.get(ip.offset + 1..ip.offset + 4) {
                    o.u(
                        key!("ipv6.flow"),
                        u32::from_be_bytes([0, b[0] & 0x0F, b[1], b[2]]),
                    );
                }
            }
        }
        o.u(key!("ccreplay.offset.ip"), ip.offset as u64);
    }
    if let Some(udp) = &p.udp {
        o.u(key!("udp.srcport"), udp.src_port)
            .u(key!("udp.dstport"), udp.dst_port)
            .u(key!("udp.length"), udp.length)
            .u(key!("ccreplay.offset.udp"), udp.offset as u64);
    }
    let is_roce = p.udp.is_some_and(|u| u.dst_port == udp_port);
    o.flag(key!("ccreplay.roce"), p.roce.is_some() || is_roce);
    // nHop is known even when it is the reason the stack could not be read.
    if let Some(DecodeError {
        kind: ErrorKind::NHopTooLarge { n_hop, .. },
        ..
    }) = p.error
    {
        o.u(key!("ccreplay.int.nhop"), n_hop);
    }
    if let Some(r) = &p.roce {
        match r.shim {
            Shim::Int(s) => write_int(&mut o, &s, r.offset),
            Shim::RccTimestamp(t) => {
                o.u(key!("ccreplay.rcc.ts"), t)
                    .u(key!("ccreplay.offset.rcc_shim"), r.offset as u64);
            }
            Shim::None => {}
        }
        let b = &r.bth;
        let opcode = b.opcode();
        o.u(key!("infiniband.bth.opcode"), opcode.0)
            .flag(key!("infiniband.bth.se"), b.se())
            .flag(key!("infiniband.bth.m"), b.mig_req())
            .u(key!("infiniband.bth.padcnt"), b.pad_cnt())
            .u(key!("infiniband.bth.tver"), b.tver())
            .u(key!("infiniband.bth.p_key"), b.p_key())
            .flag(key!("ccreplay.bth.fecn"), b.fecn())
            .flag(key!("ccreplay.bth.becn"), b.becn())
            .u(key!("ccreplay.bth.resv6"), b.resv6())
            .u(key!("infiniband.bth.destqp"), b.dest_qp())
            .flag(key!("infiniband.bth.a"), b.ack_req())
            .u(key!("infiniband.bth.reserved7"), b.resv7())
            .u(key!("infiniband.bth.psn"), b.psn())
            .flag(key!("ccreplay.opcode.known"), opcode.is_known())
            .words(key!("ccreplay.opcode.name"), &opcode_words(opcode))
            .u(key!("ccreplay.offset.bth"), r.bth_offset as u64);
        if let Some(h) = r.rdeth() {
            o.u(key!("infiniband.rdeth.eecnxt"), h.ee_context)
                .u(key!("ccreplay.rdeth.reserved"), h.reserved);
        }
        if let Some(h) = r.deth() {
            o.u(key!("infiniband.deth.q_key"), h.q_key)
                .u(key!("ccreplay.deth.reserved"), h.reserved)
                .u(key!("infiniband.deth.srcqp"), h.src_qp);
        }
        if let Some(h) = r.reth() {
            o.u(key!("infiniband.reth.va"), h.va)
                .u(key!("infiniband.reth.r_key"), h.r_key)
                .u(key!("infiniband.reth.dmalen"), h.dma_len);
        }
        if let Some(h) = r.atomic_eth() {
            // Wireshark names AtomicETH's VA and R_Key with RETH's fields; the ccreplay.
            // names are kept as aliases (docs/inspect.md).
            o.u(key!("infiniband.reth.va"), h.va)
                .u(key!("infiniband.reth.r_key"), h.r_key)
                .u(key!("ccreplay.atomiceth.va"), h.va)
                .u(key!("ccreplay.atomiceth.r_key"), h.r_key)
                .u(key!("infiniband.atomiceth.swapdt"), h.swap_add)
                .u(key!("infiniband.atomiceth.cmpdt"), h.compare);
        }
        if let Some(a) = r.aeth() {
            use ccreplay_codecs::ib::Syndrome;
            o.u(key!("infiniband.aeth.syndrome"), a.syndrome)
                .u(
                    key!("infiniband.aeth.syndrome.opcode"),
                    (a.syndrome >> 5) & 3,
                )
                .s(key!("ccreplay.aeth.kind"), a.decoded().kind_name());
            match a.decoded() {
                Syndrome::Ack { credit } => {
                    o.u(key!("infiniband.aeth.syndrome.credit_count"), credit)
                }
                Syndrome::RnrNak { timer } => o.u(key!("infiniband.aeth.syndrome.timer"), timer),
                Syndrome::Reserved { value } => {
                    o.u(key!("infiniband.aeth.syndrome.reserved_value"), value)
                }
                Syndrome::Nak(code) => o
                    .u(
                        key!("infiniband.aeth.syndrome.error_code"),
                        a.syndrome & 0x1F,
                    )
                    .s(key!("ccreplay.aeth.nak"), code.name()),
            };
            o.u(key!("infiniband.aeth.msn"), a.msn);
        }
        if let Some(v) = r.atomic_ack_eth() {
            o.u(key!("infiniband.atomicacketh.origremdt"), v);
        }
        if let Some(v) = r.imm_dt() {
            o.u(key!("infiniband.immdt"), v);
        }
        if let Some(v) = r.ieth() {
            o.u(key!("infiniband.ieth"), v);
        }
        if let Some(c) = r.cnp_reserved {
            o.flag(
                key!("ccreplay.cnp.reserved_nonzero"),
                c.iter().any(|&b| b != 0),
            );
        }
        // Extension headers follow BTH in wire order: one walk gives every offset.
        let layout = opcode.ext_headers();
        let mut at = r.bth_offset + ccreplay_codecs::ib::BTH_LEN;
        let mut aeth_at = None;
        for (flag, key) in &OFFSET_KEYS {
            if layout.has(*flag) {
                o.u(key, at as u64);
                if *flag == ExtHeaders::AETH {
                    aeth_at = Some(at);
                }
                at += ext_len(*flag);
            }
        }
        match r.ack_ext {
            AckExt::Fncc(f) => {
                // N (2 bytes) then the stack, right after the AETH.
                let at = aeth_at.map_or(0, |a| a + 4);
                o.u(key!("ccreplay.fncc.n"), f.n)
                    .u(key!("ccreplay.offset.fncc_ext"), at as u64);
                write_int(&mut o, &f.int, at + 2);
            }
            AckExt::Rcc(e) => {
                let at = aeth_at.map_or(0, |a| a + 4);
                o.u(key!("ccreplay.rcc.cwnd"), e.cwnd)
                    .u(key!("ccreplay.rcc.n"), e.n)
                    .u(key!("ccreplay.rcc.flags"), e.flags)
                    .u(key!("ccreplay.rcc.reserved"), e.reserved)
                    .u(key!("ccreplay.offset.rcc_ext"), at as u64);
            }
            AckExt::None => {
                // An FNCC extension that could not be read whole: N is still worth showing —
                // on an ACKNOWLEDGE only (wire.md 4: the only opcode that carries it), and only
                // from bytes before the ICRC (never from Ethernet padding): the UDP payload's
                // end by its length field, less the 4-byte ICRC.
                let transport_end = p
                    .udp
                    .map_or(0, |u| (u.offset + usize::from(u.length)).saturating_sub(4));
                if let (Some(aeth), ccreplay_codecs::Dialect::Fncc) = (aeth_at, dialect)
                    && opcode.is_ack()
                    && aeth + 6 <= transport_end
                    && let Some(n) = p.data.get(aeth + 4..aeth + 6)
                {
                    o.u(key!("ccreplay.fncc.n"), u16::from_be_bytes([n[0], n[1]]));
                }
            }
        }
        let payload_at = r.payload_offset;
        let len_key = if opcode.is_known() {
            key!("ccreplay.payload.len")
        } else {
            key!("ccreplay.opaque.len")
        };
        o.u(len_key, r.payload.len() as u64)
            .u(key!("ccreplay.offset.payload"), payload_at as u64);
        if let Some(crc) = r.icrc_field() {
            // From the UDP length, not from where decoding stopped: an extension that failed
            // to parse leaves the payload empty, but the ICRC is still the last 4 bytes.
            o.u(key!("ccreplay.offset.icrc"), r.icrc_offset as u64)
                .u(key!("infiniband.invariant.crc"), crc);
        }
        if let Some((computed, found)) = icrc {
            o.flag(key!("ccreplay.icrc.valid"), computed == found)
                .u(key!("ccreplay.icrc.computed"), computed);
        }
    }
    if let Some(pfc) = &p.pfc {
        o.u(key!("macc.opcode"), ccreplay_codecs::pfc::PFC_OPCODE)
            .u(key!("macc.cbfc.enbv"), pfc.class_enable);
        for (i, k) in PFC_KEYS.iter().enumerate() {
            o.flag(&k[0], pfc.class_enable & (1 << i) != 0)
                .u(&k[1], pfc.quanta[i])
                .flag(&k[2], pfc.paused(i))
                .u(&k[3], pfc.pause_ns(i, pfc_link_bps));
        }
    }
    if let Some(e) = &p.error {
        o.s(key!("ccreplay.error.layer"), e.layer.name())
            .u(key!("ccreplay.error.offset"), e.offset as u64)
            .s(key!("ccreplay.error.reason"), e.kind.reason())
            .display(key!("ccreplay.error.message"), e);
    }
    if let Some(w) = &p.warning {
        o.u(key!("ccreplay.warnings"), p.warnings)
            .s(key!("ccreplay.warning.layer"), w.layer.name())
            .u(key!("ccreplay.warning.offset"), w.offset as u64)
            .display(key!("ccreplay.warning.message"), w);
    }
    o.end();
}

/// Bytes of the extension header `flag` (wire.md 3).
const fn ext_len(flag: u16) -> usize {
    use ccreplay_codecs::ib::CNP_RESERVED_LEN;
    use ccreplay_codecs::ib::ext::{
        AETH_LEN, ATOMIC_ACK_ETH_LEN, ATOMIC_ETH_LEN, DETH_LEN, IETH_LEN, IMM_DT_LEN, RDETH_LEN,
        RETH_LEN,
    };
    match flag {
        ExtHeaders::RDETH => RDETH_LEN,
        ExtHeaders::DETH => DETH_LEN,
        ExtHeaders::RETH => RETH_LEN,
        ExtHeaders::ATOMIC_ETH => ATOMIC_ETH_LEN,
        ExtHeaders::AETH => AETH_LEN,
        ExtHeaders::ATOMIC_ACK_ETH => ATOMIC_ACK_ETH_LEN,
        ExtHeaders::IMM_DT => IMM_DT_LEN,
        ExtHeaders::IETH => IETH_LEN,
        ExtHeaders::CNP => CNP_RESERVED_LEN,
        _ => 0,
    }
}

pub(super) fn write_json_summary(buf: &mut Vec<u8>, s: &Summary) {
    let mut by_op = Vec::new();
    {
        let mut o = Obj::new(&mut by_op);
        for (op, n) in &s.by_opcode {
            o.u(OPCODE_KEYS[*op as usize], *n);
        }
        o.end();
    }
    by_op.pop(); // the newline
    let mut links = Vec::new();
    {
        let mut o = Obj::new(&mut links);
        for (link, n) in &s.unsupported_link_types {
            o.u(&link.to_string(), *n);
        }
        o.end();
    }
    links.pop(); // the newline
    let mut o = Obj::new(buf);
    o.s("ccreplay.record", "summary")
        .u("packets", s.packets)
        .u("malformed", s.malformed)
        .u("unsupported_link", s.unsupported_link)
        .raw("unsupported_link_types", &links)
        .u("cut_by_snaplen", s.cut_by_snaplen)
        .u("with_warnings", s.warnings)
        .u("flows", s.flows)
        .u("pfc", s.pfc)
        .u("icrc_bad", s.icrc_bad)
        .u("other", s.other)
        .raw("by_opcode", &by_op);
    let mut list = Vec::new();
    list.push(b'[');
    for (i, f) in s.flow_list.iter().enumerate() {
        if i > 0 {
            list.push(b',');
        }
        let mut one = Vec::new();
        let mut o = Obj::new(&mut one);
        o.s("src", &f.src.to_string())
            .s("dst", &f.dst.to_string())
            .u("dest_qp", f.dest_qp)
            .u("first_frame", f.counts.first_frame)
            .u("packets", f.counts.packets)
            .u("data", f.counts.data)
            .u("acks", f.counts.acks)
            .u("cnps", f.counts.cnps)
            .u("read_requests", f.counts.read_requests);
        o.end();
        one.pop(); // the newline
        list.extend(one);
    }
    list.push(b']');
    o.raw("flow_list", &list);
    if let Some(e) = &s.capture_error {
        o.s("capture_error", e);
    }
    o.end();
}

/// `"0x00"` .. `"0xff"`, the keys of the by-opcode summary.
static OPCODE_KEYS: [&str; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    const BYTES: [[u8; 4]; 256] = {
        let mut t = [[0u8; 4]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [b'0', b'x', HEX[i >> 4], HEX[i & 15]];
            i += 1;
        }
        t
    };
    let mut t = [""; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match core::str::from_utf8(&BYTES[i]) {
            Ok(s) => s,
            Err(_) => "",
        };
        i += 1;
    }
    t
};
