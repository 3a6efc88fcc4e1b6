//! Frames of the synthesized traces, written with the codecs' [`FrameRepr::emit`] (real
//! Ethernet / IPv4 / UDP headers, the dialect's shims, a valid ICRC).

use ccreplay_codecs::Dialect;
use ccreplay_codecs::frame::{AckExtRepr, FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode, RethRepr};
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_codecs::shim::{IntConfig, RccExt};

use super::{FIRST_RECEIVER_QP, FIRST_SENDER_QP, FIRST_UDP_PORT, RECEIVER_IP, SENDER_IP};

/// RoCEv2 UDP destination port.
pub(crate) const ROCE_UDP_PORT: u16 = 4791;
/// RC RDMA WRITE opcodes.
pub(crate) const WRITE_FIRST: u8 = Opcode::RC_WRITE_FIRST.0;
pub(crate) const WRITE_MIDDLE: u8 = Opcode::RC_WRITE_MIDDLE.0;
pub(crate) const WRITE_LAST: u8 = Opcode::RC_WRITE_LAST.0;
pub(crate) const WRITE_ONLY: u8 = Opcode::RC_WRITE_ONLY.0;
/// AETH syndrome of an ACK: bits 6..5 = 00, credit count 0x1F ("invalid": end-to-end credits
/// are not used).
pub(crate) const SYNDROME_ACK: u8 = 0x1F;
/// AETH syndrome of a NAK, PSN sequence error (bits 6..5 = 11, code 0).
pub(crate) const SYNDROME_NAK_PSN: u8 = 0x60;
/// ECN codepoints.
pub(crate) const ECN_ECT0: u8 = 2;
/// DSCP of data and ACKs (the usual RoCE class) and of CNPs (the usual CNP class).
const DSCP_DATA: u8 = 26;
const DSCP_CNP: u8 = 48;
const SENDER_MAC: [u8; 6] = [0x02, 0x00, 0x0A, 0x00, 0x00, 0x01];
const RECEIVER_MAC: [u8; 6] = [0x02, 0x00, 0x0A, 0x00, 0x00, 0x02];
/// RETH of the WRITEs: a fixed remote buffer per flow.
const VA_BASE: u64 = 0x7F00_0000_0000;
const R_KEY_BASE: u32 = 0x0000_1000;

/// Ethernet II + IPv4 (no options) + UDP.
const ETH_IP_UDP: u32 = 14 + 20 + 8;
const BTH: u32 = 12;
const RETH: u32 = 16;
const AETH: u32 = 4;
const ICRC: u32 = 4;
const CNP_RESERVED: u32 = 16;
/// The padded INT stack of 5 records (wire.md 5.2).
const INT_STACK: u32 = 2 + 8 * 5;
const RCC_SHIM: u32 = 8;
const RCC_EXT: u32 = 8;
const FNCC_N: u32 = 2;

/// Packet kinds of the simulated transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An RDMA WRITE packet, sender to receiver.
    Data,
    /// ACKNOWLEDGE with an ACK syndrome.
    Ack,
    /// ACKNOWLEDGE with a NAK syndrome.
    Nak,
    /// CNP.
    Cnp,
}

/// Whether a WRITE opcode carries a RETH.
pub(crate) fn has_reth(opcode: u8) -> bool {
    opcode == WRITE_FIRST || opcode == WRITE_ONLY
}

/// Frame length in bytes (as captured: no preamble, IFG or FCS) — what the simulator
/// serialises; [`Framer::frame`] checks the codecs write exactly this many.
pub(crate) fn frame_len(dialect: Dialect, kind: Kind, opcode: u8, payload: u32) -> u32 {
    let shim = match dialect {
        Dialect::Hpcc => INT_STACK,
        Dialect::Rcc => RCC_SHIM,
        Dialect::Roce | Dialect::Fncc => 0,
    };
    let body = match kind {
        Kind::Data => {
            let pad = (4 - payload % 4) % 4;
            (if has_reth(opcode) { RETH } else { 0 }) + payload + pad
        }
        Kind::Ack | Kind::Nak => {
            AETH + match dialect {
                Dialect::Fncc => FNCC_N + INT_STACK,
                Dialect::Rcc => RCC_EXT,
                Dialect::Roce | Dialect::Hpcc => 0,
            }
        }
        Kind::Cnp => CNP_RESERVED,
    };
    ETH_IP_UDP + shim + BTH + body + ICRC
}

/// The header fields of one packet that vary.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    pub kind: Kind,
    pub flow: u32,
    pub psn: u32,
    pub opcode: u8,
    pub payload: u32,
    pub message_bytes: u64,
    pub ecn: u8,
    /// hpcc: the stack before BTH; fncc: the ACK's stack.
    pub int: IntStack,
    /// rcc: the shim's transmit timestamp, ns.
    pub ts_ns: u64,
    pub syndrome: u8,
    pub msn: u32,
    pub ack_n: u16,
    pub ack_cwnd: u32,
    pub ack_flags: u8,
}

/// Builds frames into one reused buffer.
pub(crate) struct Framer {
    dialect: Dialect,
    int: IntConfig,
    frame: FrameRepr,
    buf: Vec<u8>,
    /// IPv4 identification counters of the sender and of the receiver.
    ip_id: [u16; 2],
}

impl Framer {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Framer {
            dialect,
            int: IntConfig::default(),
            frame: FrameRepr {
                dst_mac: RECEIVER_MAC,
                src_mac: SENDER_MAC,
                vlans: [None, None],
                ip: IpRepr::V4 {
                    src: SENDER_IP.octets(),
                    dst: RECEIVER_IP.octets(),
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
            ip_id: [0; 2],
        }
    }

    /// Write the frame of `f` and return its bytes.
    pub(crate) fn frame(&mut self, f: &Fields) -> Result<&[u8], super::SynthError> {
        let from_sender = f.kind == Kind::Data;
        let (src, dst, src_mac, dst_mac) = if from_sender {
            (SENDER_IP, RECEIVER_IP, SENDER_MAC, RECEIVER_MAC)
        } else {
            (RECEIVER_IP, SENDER_IP, RECEIVER_MAC, SENDER_MAC)
        };
        let id = &mut self.ip_id[usize::from(!from_sender)];
        let identification = *id;
        *id = id.wrapping_add(1);
        self.frame.src_mac = src_mac;
        self.frame.dst_mac = dst_mac;
        self.frame.ip = IpRepr::V4 {
            src: src.octets(),
            dst: dst.octets(),
            dscp: if f.kind == Kind::Cnp {
                DSCP_CNP
            } else {
                DSCP_DATA
            },
            ecn: f.ecn,
            ttl: 64,
            identification,
            options: Vec::new(),
        };
        // Flows are told apart by QP (wire.md 3); the UDP source port is the flow's entropy,
        // the same in both directions.
        self.frame.udp_src_port = FIRST_UDP_PORT + f.flow as u16;
        let opcode = match f.kind {
            Kind::Data => Opcode(f.opcode),
            Kind::Ack | Kind::Nak => Opcode::RC_ACK,
            Kind::Cnp => Opcode::CNP,
        };
        let bth = BthRepr {
            opcode,
            pad_cnt: if f.kind == Kind::Data {
                ((4 - f.payload % 4) % 4) as u8
            } else {
                0
            },
            becn: f.kind == Kind::Cnp,
            // wire.md 3: data carries the remote (receiver) QP; ACKs, NAKs and CNPs the
            // sender's.
            dest_qp: if from_sender {
                FIRST_RECEIVER_QP + f.flow
            } else {
                FIRST_SENDER_QP + f.flow
            },
            // One ACK per data packet: every data packet asks for it.
            ack_req: from_sender,
            psn: if f.kind == Kind::Cnp { 0 } else { f.psn },
            ..BthRepr::default()
        };
        let mut payload = std::mem::take(&mut self.frame.roce.payload);
        payload.clear();
        let mut roce = RoceRepr::for_opcode(bth);
        if f.kind == Kind::Data {
            payload.resize(f.payload as usize, 0);
            if has_reth(f.opcode) {
                roce.reth = Some(RethRepr {
                    va: VA_BASE + (u64::from(f.flow) << 32),
                    r_key: R_KEY_BASE + f.flow,
                    dma_len: u32::try_from(f.message_bytes).unwrap_or(u32::MAX),
                });
            }
        }
        if matches!(f.kind, Kind::Ack | Kind::Nak) {
            roce.aeth = Some(AethRepr {
                syndrome: f.syndrome,
                msn: f.msn & 0xFF_FFFF,
            });
            roce.ack_ext = match self.dialect {
                Dialect::Fncc => AckExtRepr::Fncc {
                    n: f.ack_n,
                    int: f.int,
                },
                Dialect::Rcc => AckExtRepr::Rcc(RccExt {
                    cwnd: f.ack_cwnd,
                    n: f.ack_n,
                    flags: f.ack_flags,
                    reserved: 0,
                }),
                Dialect::Roce | Dialect::Hpcc => AckExtRepr::None,
            };
        }
        roce.shim = match self.dialect {
            // wire.md 5.3: every packet carries the stack; a CNP an empty one.
            Dialect::Hpcc => ShimRepr::Int(if f.kind == Kind::Cnp {
                IntStack::new()
            } else {
                f.int
            }),
            Dialect::Rcc => ShimRepr::RccTimestamp(f.ts_ns),
            Dialect::Roce | Dialect::Fncc => ShimRepr::None,
        };
        roce.payload = payload;
        self.frame.roce = roce;
        self.buf.clear();
        self.frame.emit(self.dialect, self.int, &mut self.buf)?;
        let expected = frame_len(self.dialect, f.kind, f.opcode, f.payload);
        if self.buf.len() != expected as usize {
            return Err(super::SynthError::FrameLength {
                emitted: self.buf.len(),
                expected,
            });
        }
        Ok(&self.buf)
    }
}
