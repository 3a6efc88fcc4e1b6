//! A capture made from an events file, for tools that want packets: each event becomes the
//! RoCEv2 frame the harness's extraction turns back into that event (docs/import.md), written
//! with the codecs' [`FrameRepr::emit`] and [`PcapWriter`]. Only sender and receiver capture
//! points; the caller decides whether the events hold enough to make the frames faithful.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::{FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode, RethRepr};
use ccreplay_codecs::shim::IntConfig;
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::EventKind;

use super::ImportError;
use crate::manifest::{CapturePoint, FlowSpec};
use crate::protocol;

/// RoCEv2's UDP port.
const ROCE_UDP_PORT: u16 = 4791;
/// IP ECN of data leaving a sender: ECT(0).
const ECT0: u8 = 2;

/// One flow of the capture: its pairing and the facts frames need.
#[derive(Clone, Debug)]
pub struct PcapFlow {
    /// IPs and QPs, as the manifest's `[[flows]]` entry (capture point's side first).
    pub spec: FlowSpec,
    /// UDP source port.
    pub udp_src_port: u16,
    /// Message bytes (the RETH's DMA length).
    pub message_bytes: u64,
}

fn v4(ip: IpAddr) -> [u8; 4] {
    match ip {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(_) => [0; 4],
    }
}

fn mac(ip: [u8; 4]) -> [u8; 6] {
    [0x02, 0x00, ip[0], ip[1], ip[2], ip[3]]
}

/// Write `events` (an events file of this capture point) as a pcap at `out`. Returns the
/// number of frames.
pub fn write_pcap(
    events: &Path,
    out: &Path,
    dialect: Dialect,
    point: &CapturePoint,
    flows: &[PcapFlow],
) -> Result<u64, ImportError> {
    let (n, pending) = stage_pcap(events, out, dialect, point, flows)?;
    pending.commit().map_err(|source| ImportError::Io {
        path: out.into(),
        source,
    })?;
    Ok(n)
}

/// [`write_pcap`] without the last step: the pcap is complete in its temporary file, and the
/// returned guard renames it onto `out` (`commit`) or removes it (dropped), so a caller can
/// commit several files together.
pub fn stage_pcap(
    events: &Path,
    out: &Path,
    dialect: Dialect,
    point: &CapturePoint,
    flows: &[PcapFlow],
) -> Result<(u64, crate::outfile::Pending), ImportError> {
    let io = |path: &Path, source: std::io::Error| ImportError::Io {
        path: path.into(),
        source,
    };
    let bad = |message: String| ImportError::Unsupported(format!("{}: {message}", out.display()));
    let f = File::open(events).map_err(|e| io(events, e))?;
    // Written beside `out` and renamed once complete: a failed import leaves no half a pcap.
    let (file, pending) = crate::outfile::Pending::create(out).map_err(|e| io(out, e))?;
    let mut w = PcapWriter::new(std::io::BufWriter::new(file)).map_err(|e| bad(e.to_string()))?;
    let int_cfg = IntConfig::default();
    let mut line = String::new();
    let mut r = BufReader::new(f);
    let mut buf = Vec::with_capacity(2048);
    let mut n = 0u64;
    let mut ip_id = 0u16;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(|e| io(events, e))? == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let ev = serde_json::from_str::<serde_json::Value>(&line)
            .map_err(|e| e.to_string())
            .and_then(|v| protocol::parse_event(&v).map_err(|e| e.to_string()))
            .map_err(|e| bad(format!("{}: {e}", events.display())))?;
        if let EventKind::TxData { bytes, .. } | EventKind::RxData { bytes, .. } = ev.kind
            && bytes > 65_535
        {
            return Err(bad(format!(
                "an event at t = {} ns carries {bytes} bytes: more than an IP packet holds",
                ev.t_ns
            )));
        }
        let Some(fl) = flows.get(ev.flow as usize) else {
            return Err(bad(format!("event of flow {} beyond [[flows]]", ev.flow)));
        };
        let (local, remote) = (v4(fl.spec.local_ip), v4(fl.spec.remote_ip));
        // A WRITE data packet to `dest_qp` (RETH on the opcodes that carry one: the message).
        let data = |opcode: u8, psn: u32, bytes: u32, dest_qp: u32| {
            let bth = BthRepr {
                opcode: Opcode(opcode),
                pad_cnt: ((4 - bytes % 4) % 4) as u8,
                dest_qp,
                ack_req: true,
                psn,
                ..BthRepr::default()
            };
            let mut roce = RoceRepr::for_opcode(bth);
            if roce.reth.is_some() {
                roce.reth = Some(RethRepr {
                    va: 0,
                    r_key: 0,
                    dma_len: u32::try_from(fl.message_bytes).unwrap_or(u32::MAX),
                });
            }
            roce.payload = vec![0; bytes as usize];
            roce
        };
        // Which way the packet went, its IP ECN and its RoCE part.
        let (from_local, ecn, mut roce) = match (&ev.kind, point) {
            (EventKind::TxData { psn, bytes, opcode }, CapturePoint::Sender { .. }) => {
                (true, ECT0, data(*opcode, *psn, *bytes, fl.spec.remote_qp))
            }
            (
                EventKind::RxData {
                    psn,
                    bytes,
                    opcode,
                    ecn,
                    ..
                },
                CapturePoint::Receiver { .. },
            ) => (false, *ecn, data(*opcode, *psn, *bytes, fl.spec.local_qp)),
            (EventKind::RxAck(a) | EventKind::RxNak(a), CapturePoint::Sender { .. }) => {
                let bth = BthRepr {
                    opcode: Opcode::RC_ACK,
                    dest_qp: fl.spec.local_qp,
                    psn: a.psn,
                    ..BthRepr::default()
                };
                let mut roce = RoceRepr::for_opcode(bth);
                roce.aeth = Some(AethRepr {
                    syndrome: a.syndrome,
                    msn: 0,
                });
                if dialect == Dialect::Hpcc {
                    roce.shim = ShimRepr::Int(a.int.unwrap_or_else(IntStack::new));
                }
                (false, 0, roce)
            }
            (EventKind::RxCnp, CapturePoint::Sender { .. }) => {
                let bth = BthRepr {
                    opcode: Opcode::CNP,
                    becn: true,
                    dest_qp: fl.spec.local_qp,
                    ..BthRepr::default()
                };
                (false, 0, RoceRepr::for_opcode(bth))
            }
            (k, p) => {
                return Err(bad(format!(
                    "a `{}` event has no frame at a {} capture point",
                    k.name(),
                    p.kind()
                )));
            }
        };
        if dialect == Dialect::Hpcc && matches!(roce.shim, ShimRepr::None) {
            // wire.md 5.3: every packet of an hpcc trace carries a stack (empty if nothing).
            roce.shim = ShimRepr::Int(IntStack::new());
        }
        let (src, dst) = if from_local {
            (local, remote)
        } else {
            (remote, local)
        };
        ip_id = ip_id.wrapping_add(1);
        let frame = FrameRepr {
            dst_mac: mac(dst),
            src_mac: mac(src),
            vlans: [None, None],
            ip: IpRepr::V4 {
                src,
                dst,
                dscp: 26,
                ecn,
                ttl: 64,
                identification: ip_id,
                options: Vec::new(),
            },
            udp_src_port: fl.udp_src_port,
            udp_dst_port: ROCE_UDP_PORT,
            roce,
        };
        buf.clear();
        frame
            .emit(dialect, int_cfg, &mut buf)
            .map_err(|e| bad(format!("event at t = {} ns: {e}", ev.t_ns)))?;
        w.write(ev.t_ns, &buf).map_err(|e| bad(e.to_string()))?;
        n += 1;
    }
    w.flush().map_err(|e| bad(e.to_string()))?;
    Ok((n, pending))
}
