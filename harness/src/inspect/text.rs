//! `--format text`: one readable line per packet, then the summary table.

use std::io::Write;

use ccreplay_codecs::capture::Record;
use ccreplay_codecs::packet::{AckExt, Packet, Shim};
use ccreplay_codecs::tunnel::TunnelKind;

use super::Summary;
use crate::jsonl::LineBuf;

pub(super) fn write_text(
    buf: &mut LineBuf,
    rec: &Record<'_>,
    p: &Packet<'_>,
    icrc: Option<(u32, u32)>,
) {
    let secs = rec.ts_ns / 1_000_000_000;
    let ns = rec.ts_ns % 1_000_000_000;
    let _ = write!(buf, "{:>7} {secs}.{ns:09} ", rec.frame_number);
    if let Some(ip) = &p.ip {
        let _ = write!(buf, "{} -> {} ", ip.addrs.src(), ip.addrs.dst());
        if ip.ecn == 3 {
            buf.extend(b"[CE] ");
        }
    }
    if let Some(r) = &p.roce {
        let b = &r.bth;
        let _ = write!(
            buf,
            "{} qp=0x{:06x} psn={}",
            b.opcode(),
            b.dest_qp(),
            b.psn()
        );
        if b.becn() {
            buf.extend(b" BECN");
        }
        if let Some(a) = r.aeth() {
            let _ = write!(buf, " {} msn={}", a.decoded().kind_name(), a.msn);
        }
        if let Some(s) = r.int_stack() {
            let _ = write!(
                buf,
                " int[nhop={} path=0x{:03x}",
                s.n_hop(),
                s.header.path_id
            );
            for h in s.hops() {
                let _ = write!(buf, " q={}B", h.qlen_bytes());
            }
            buf.extend(b"]");
        }
        match r.ack_ext {
            AckExt::Fncc(f) => {
                let _ = write!(buf, " N={}", f.n);
            }
            AckExt::Rcc(e) => {
                let _ = write!(buf, " cwnd={} N={} flags=0x{:02x}", e.cwnd, e.n, e.flags);
            }
            AckExt::None => {}
        }
        if let Shim::RccTimestamp(t) = r.shim {
            let _ = write!(buf, " ts={t}");
        }
        if !r.payload.is_empty() {
            let _ = write!(buf, " len={}", r.payload.len());
        }
        if let Some((c, f)) = icrc
            && c != f
        {
            let _ = write!(buf, " ICRC BAD (0x{f:08x}, expected 0x{c:08x})");
        }
    } else if let Some(pfc) = &p.pfc {
        let _ = write!(
            buf,
            "PFC enable=0x{:02x} quanta={:?}",
            pfc.class_enable, pfc.quanta
        );
    } else if p.ip.is_none() && p.error.is_none() {
        buf.extend(b"(not IP)");
    }
    if let Some(t) = &p.tunnel {
        let kind = match t.kind {
            TunnelKind::Vxlan => "VXLAN",
            TunnelKind::Geneve => "Geneve",
        };
        let _ = match t.ip_addrs(p.data) {
            Some(a) => write!(buf, "  [in {kind} {} {} -> {}]", t.vni, a.src(), a.dst()),
            None => write!(buf, "  [in {kind} {}]", t.vni),
        };
    }
    if let Some(m) = &p.mirror {
        let _ = write!(
            buf,
            "  [mirrored by {}]",
            crate::extract::MirrorSource::of(m)
        );
    }
    if let Some(l) = &p.lumina {
        let _ = write!(
            buf,
            "  [Lumina copy {} at {} ns, event {}]",
            l.seq,
            l.switch_ns,
            l.event.name()
        );
    }
    if let Some(e) = &p.error {
        let _ = write!(buf, "  !! {e}");
    }
    if let Some(w) = &p.warning {
        let _ = write!(buf, "  (warning: {w})");
    }
    buf.extend(b"\n");
}

pub(super) fn write_text_summary(buf: &mut Vec<u8>, s: &Summary) {
    let _ = writeln!(
        buf,
        "\n{} packets: {} RoCEv2 in {} flows, {} PFC, {} other; {} malformed, {} cut by the capture's snaplen after their headers, {} with warnings, {} bad ICRC",
        s.packets,
        s.by_opcode.iter().map(|(_, n)| n).sum::<u64>(),
        s.flows,
        s.pfc,
        s.other,
        s.malformed,
        s.cut_by_snaplen,
        s.warnings,
        s.icrc_bad
    );
    if s.unsupported_link > 0 {
        let _ = writeln!(
            buf,
            "{} of a link type ccreplay does not read ({}): not decoded — not malformed",
            s.unsupported_link,
            ccreplay_codecs::capture::describe_links(&s.unsupported_link_types)
        );
    }
    for (op, n) in &s.by_opcode {
        let _ = writeln!(
            buf,
            "  0x{op:02x} {:<24} {n}",
            ccreplay_codecs::ib::Opcode(*op).to_string()
        );
    }
    const SHOWN: usize = 40;
    if !s.flow_list.is_empty() {
        let _ = writeln!(buf, "flows (source -> destination, DestQP: packets):");
    }
    for f in s.flow_list.iter().take(SHOWN) {
        let c = &f.counts;
        let mut kinds = Vec::new();
        let reads = c.read_requests;
        let reads_what = if reads == 1 {
            "READ request"
        } else {
            "READ requests"
        };
        for (n, what) in [
            (c.data, "data"),
            (c.acks, "ACK/NAK"),
            (c.cnps, "CNP"),
            (reads, reads_what),
        ] {
            if n > 0 {
                kinds.push(format!("{n} {what}"));
            }
        }
        let other = c.packets - c.data - c.acks - c.cnps - reads;
        if other > 0 {
            kinds.push(format!("{other} other"));
        }
        let _ = writeln!(
            buf,
            "  {} -> {} QP 0x{:06x}: {} ({}), from frame {}",
            f.src,
            f.dst,
            f.dest_qp,
            c.packets,
            kinds.join(", "),
            c.first_frame
        );
    }
    if s.flow_list.len() > SHOWN {
        let _ = writeln!(
            buf,
            "  ... {} more (--format json lists all, in the summary's flow_list)",
            s.flow_list.len() - SHOWN
        );
    }
    if let Some(e) = &s.capture_error {
        let _ = writeln!(buf, "capture ended early: {e}");
    }
}
