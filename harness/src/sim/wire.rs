//! Frames of the simulated captures, written with the codecs' writers ([`FrameRepr::emit`] and
//! [`PfcRepr::emit_frame`]): real Ethernet / IPv4 / UDP headers, the dialect's shims, a valid
//! ICRC, and 802.1Qbb pause frames.
//!
//! Addresses (docs/sim.md "Addresses"): host number `i` (hosts in node order) is
//! `10.0.x.y` with `x.y` = `i + 1` in base 256 and MAC `02:00:0a:00:x:y`; node `n` sends PFC
//! frames from MAC `02:00:0b:00:` + `n` in base 256. Flow `f` uses sender QP `0x100001 + f`,
//! receiver QP `0x200001 + f` and UDP source port `49152 + f mod 16384` both ways.

use std::net::Ipv4Addr;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::frame::{AckExtRepr, FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode, RethRepr};
use ccreplay_codecs::pfc::PfcRepr;
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_codecs::shim::{IntConfig, RccExt};
use ccreplay_reference_cc::net::packet::{DATA_PRIORITY, has_reth};
use ccreplay_reference_cc::net::{NetConfig, NodeKind, Packet, PacketKind, frame_len};

use super::SimError;

/// RoCEv2 UDP destination port.
pub const ROCE_UDP_PORT: u16 = 4791;
/// First sender QP: flow `f` has `FIRST_SENDER_QP + f`.
pub const FIRST_SENDER_QP: u32 = 0x10_0001;
/// First receiver QP.
pub const FIRST_RECEIVER_QP: u32 = 0x20_0001;
/// UDP source port of flow 0.
pub const FIRST_UDP_PORT: u16 = 49152;
/// DSCP of data and ACKs (the usual RoCE class) and of CNPs (the usual CNP class).
const DSCP_DATA: u8 = 26;
const DSCP_CNP: u8 = 48;
/// RETH of the WRITEs: a fixed remote buffer per flow.
const VA_BASE: u64 = 0x7F00_0000_0000;
const R_KEY_BASE: u32 = 0x0000_1000;

/// The IPv4 address of host number `i`.
pub fn host_ip(i: u32) -> Ipv4Addr {
    let n = i + 1;
    Ipv4Addr::new(10, (n >> 16) as u8, (n >> 8) as u8, n as u8)
}

fn host_mac(i: u32) -> [u8; 6] {
    let n = i + 1;
    [0x02, 0x00, 0x0A, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

fn node_mac(n: u32) -> [u8; 6] {
    [0x02, 0x00, 0x0B, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// Per flow: (sender host number, receiver host number, message bytes).
#[derive(Clone, Debug)]
pub struct FlowAddrs {
    flows: Vec<(u32, u32, u64)>,
}

impl FlowAddrs {
    /// From the engine config.
    pub fn new(cfg: &NetConfig) -> Self {
        let host_no = host_numbers(cfg);
        FlowAddrs {
            flows: cfg
                .flows
                .iter()
                .map(|f| {
                    (
                        host_no[f.src as usize],
                        host_no[f.dst as usize],
                        f.size_bytes,
                    )
                })
                .collect(),
        }
    }

    /// Sender and receiver host numbers of flow `f`.
    pub fn hosts(&self, f: u32) -> (u32, u32) {
        self.flows.get(f as usize).map_or((0, 0), |x| (x.0, x.1))
    }
}

/// Host number of each node (hosts in node order; `u32::MAX` for switches).
pub fn host_numbers(cfg: &NetConfig) -> Vec<u32> {
    let mut k = 0;
    cfg.topology
        .nodes
        .iter()
        .map(|n| {
            if n.kind == NodeKind::Host {
                k += 1;
                k - 1
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// Builds frames into one reused buffer.
pub struct Framer {
    dialect: Dialect,
    int: IntConfig,
    frame: FrameRepr,
    buf: Vec<u8>,
    addrs: FlowAddrs,
}

impl Framer {
    /// A framer for the flows of `cfg`.
    pub fn new(cfg: &NetConfig) -> Self {
        Framer {
            dialect: cfg.cc.dialect(),
            int: IntConfig::default(),
            frame: FrameRepr {
                dst_mac: [0; 6],
                src_mac: [0; 6],
                vlans: [None, None],
                ip: IpRepr::V4 {
                    src: [0; 4],
                    dst: [0; 4],
                    dscp: DSCP_DATA,
                    ecn: 0,
                    ttl: 64,
                    identification: 0,
                    options: Vec::new(),
                },
                udp_src_port: FIRST_UDP_PORT,
                udp_dst_port: ROCE_UDP_PORT,
                roce: RoceRepr::for_opcode(BthRepr::default()),
            },
            buf: Vec::with_capacity(2048),
            addrs: FlowAddrs::new(cfg),
        }
    }

    /// Write the frame of `p` with INT stack `int` and return its bytes.
    pub fn frame(&mut self, p: &Packet, int: &IntStack) -> Result<&[u8], SimError> {
        if p.kind == PacketKind::Pfc {
            let mut quanta = [0u16; 8];
            quanta[DATA_PRIORITY] = p.pfc_quanta;
            let f = PfcRepr {
                class_enable: 1 << DATA_PRIORITY,
                quanta,
            }
            .emit_frame(node_mac(p.pfc_from));
            self.buf.clear();
            self.buf.extend_from_slice(&f);
            return Ok(&self.buf);
        }
        let (s, r) = self.addrs.hosts(p.flow);
        let from_sender = p.kind == PacketKind::Data;
        let (src, dst) = if from_sender { (s, r) } else { (r, s) };
        self.frame.src_mac = host_mac(src);
        self.frame.dst_mac = host_mac(dst);
        self.frame.ip = IpRepr::V4 {
            src: host_ip(src).octets(),
            dst: host_ip(dst).octets(),
            dscp: if p.kind == PacketKind::Cnp {
                DSCP_CNP
            } else {
                DSCP_DATA
            },
            ecn: p.ecn,
            ttl: 64,
            // A property of the packet, so both taps of a flow show the same value.
            identification: p.psn as u16,
            options: Vec::new(),
        };
        // Flows are told apart by QP (wire.md 3); the UDP source port is the flow's entropy,
        // the same in both directions.
        self.frame.udp_src_port = FIRST_UDP_PORT + (p.flow % 16384) as u16;
        let opcode = match p.kind {
            PacketKind::Data => Opcode(p.opcode),
            PacketKind::Ack | PacketKind::Nak => Opcode::RC_ACK,
            _ => Opcode::CNP,
        };
        let bth = BthRepr {
            opcode,
            pad_cnt: if from_sender {
                ((4 - p.payload % 4) % 4) as u8
            } else {
                0
            },
            becn: p.kind == PacketKind::Cnp,
            // wire.md 3: data carries the remote (receiver) QP; ACKs, NAKs and CNPs the
            // sender's.
            dest_qp: if from_sender {
                FIRST_RECEIVER_QP + p.flow
            } else {
                FIRST_SENDER_QP + p.flow
            },
            // One ACK per data packet: every data packet asks for it.
            ack_req: from_sender,
            psn: if p.kind == PacketKind::Cnp { 0 } else { p.psn },
            ..BthRepr::default()
        };
        let mut payload = std::mem::take(&mut self.frame.roce.payload);
        payload.clear();
        let mut roce = RoceRepr::for_opcode(bth);
        if from_sender {
            payload.resize(p.payload as usize, 0);
            if has_reth(p.opcode) {
                let (_, _, size) = self.addrs.flows[p.flow as usize];
                roce.reth = Some(RethRepr {
                    va: VA_BASE + (u64::from(p.flow) << 32),
                    r_key: R_KEY_BASE + p.flow,
                    dma_len: u32::try_from(size).unwrap_or(u32::MAX),
                });
            }
        }
        if matches!(p.kind, PacketKind::Ack | PacketKind::Nak) {
            roce.aeth = Some(AethRepr {
                syndrome: p.syndrome,
                msn: p.msn & 0xFF_FFFF,
            });
            roce.ack_ext = match self.dialect {
                Dialect::Fncc => AckExtRepr::Fncc {
                    n: p.ack_n,
                    int: *int,
                },
                Dialect::Rcc => AckExtRepr::Rcc(RccExt {
                    cwnd: p.ack_cwnd,
                    n: p.ack_n,
                    flags: p.ack_flags,
                    reserved: 0,
                }),
                Dialect::Roce | Dialect::Hpcc => AckExtRepr::None,
            };
        }
        roce.shim = match self.dialect {
            // wire.md 5.3: every packet carries the stack; a CNP an empty one.
            Dialect::Hpcc => ShimRepr::Int(if p.kind == PacketKind::Cnp {
                IntStack::new()
            } else {
                *int
            }),
            Dialect::Rcc => ShimRepr::RccTimestamp(p.ts_ns),
            Dialect::Roce | Dialect::Fncc => ShimRepr::None,
        };
        roce.payload = payload;
        self.frame.roce = roce;
        self.buf.clear();
        self.frame.emit(self.dialect, self.int, &mut self.buf)?;
        let expected = frame_len(self.dialect, p.kind, p.opcode, p.payload);
        if self.buf.len() != expected as usize || expected != p.wire_bytes {
            return Err(SimError::FrameLength {
                emitted: self.buf.len(),
                expected: p.wire_bytes,
            });
        }
        Ok(&self.buf)
    }
}
