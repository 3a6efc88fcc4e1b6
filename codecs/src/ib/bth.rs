//! InfiniBand Base Transport Header, 12 bytes (wire.md 2; IBA vol. 1 9.2).
//!
//! | byte | bits            | field                          |
//! |------|-----------------|--------------------------------|
//! | 0    | 7..0            | OpCode                         |
//! | 1    | 7 / 6 / 5..4 / 3..0 | SE / M (MigReq) / PadCnt / TVer |
//! | 2-3  |                 | P_Key                          |
//! | 4    | 7 / 6 / 5..0    | FECN / BECN / Resv6            |
//! | 5-7  |                 | DestQP (24)                    |
//! | 8    | 7 / 6..0        | AckReq / Resv7                 |
//! | 9-11 |                 | PSN (24)                       |

use nom::{
    IResult, Parser,
    number::complete::{be_u8, be_u16, be_u24},
};

use super::opcode::Opcode;
use crate::error::{DecodeError, ErrorKind, Layer};

/// Byte ranges of the BTH fields.
mod field {
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const P_KEY: core::ops::Range<usize> = 2..4;
    pub const ECN_BITS: usize = 4;
    pub const DEST_QP: core::ops::Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8;
    pub const PSN: core::ops::Range<usize> = 9..12;
}

/// BTH length in bytes.
pub const BTH_LEN: usize = 12;

/// QP1, the General Services Interface: the QP of management datagrams (MADs) — on RoCE, the
/// connection manager's REQ / REP / RTU / DREQ / DREP that set an RC connection up and tear it
/// down (`rdma_cm`), as UD SEND_ONLY with a DETH (IBA vol. 1 12, 13.5.1; QP0, the subnet
/// manager's, does not exist on RoCE).
pub const GSI_QP: u32 = 1;

#[inline]
fn be24(b: &[u8]) -> u32 {
    (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32
}

/// Zero-copy BTH view over exactly [`BTH_LEN`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth<'a>(&'a [u8; BTH_LEN]);

impl<'a> Bth<'a> {
    /// View the first 12 bytes of `data`; `offset` is only used for the error.
    #[inline]
    pub fn new_checked(data: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        match data.first_chunk::<BTH_LEN>() {
            Some(b) => Ok(Bth(b)),
            None => Err(DecodeError::truncated(
                Layer::Bth,
                offset,
                BTH_LEN,
                data.len(),
            )),
        }
    }

    /// The 12 bytes.
    pub fn as_bytes(&self) -> &'a [u8; BTH_LEN] {
        self.0
    }
    /// OpCode.
    #[inline]
    pub fn opcode(&self) -> Opcode {
        Opcode(self.0[field::OPCODE])
    }
    /// SE, solicited event.
    #[inline]
    pub fn se(&self) -> bool {
        self.0[field::FLAGS] & 0x80 != 0
    }
    /// M, migration request.
    #[inline]
    pub fn mig_req(&self) -> bool {
        self.0[field::FLAGS] & 0x40 != 0
    }
    /// PadCnt: pad bytes (0..3) before the ICRC.
    #[inline]
    pub fn pad_cnt(&self) -> u8 {
        (self.0[field::FLAGS] >> 4) & 0x3
    }
    /// TVer, transport header version.
    #[inline]
    pub fn tver(&self) -> u8 {
        self.0[field::FLAGS] & 0x0F
    }
    /// P_Key.
    #[inline]
    pub fn p_key(&self) -> u16 {
        u16::from_be_bytes([self.0[field::P_KEY.start], self.0[field::P_KEY.start + 1]])
    }
    /// FECN.
    #[inline]
    pub fn fecn(&self) -> bool {
        self.0[field::ECN_BITS] & 0x80 != 0
    }
    /// BECN (set on CNPs).
    #[inline]
    pub fn becn(&self) -> bool {
        self.0[field::ECN_BITS] & 0x40 != 0
    }
    /// Resv6 (reported when non-zero).
    #[inline]
    pub fn resv6(&self) -> u8 {
        self.0[field::ECN_BITS] & 0x3F
    }
    /// DestQP, 24 bits.
    #[inline]
    pub fn dest_qp(&self) -> u32 {
        be24(&self.0[field::DEST_QP])
    }
    /// To QP1, the General Services Interface ([`GSI_QP`]): a management datagram.
    #[inline]
    pub fn is_gsi(&self) -> bool {
        self.dest_qp() == GSI_QP
    }
    /// AckReq.
    #[inline]
    pub fn ack_req(&self) -> bool {
        self.0[field::ACK_REQ] & 0x80 != 0
    }
    /// Resv7 (reported when non-zero).
    #[inline]
    pub fn resv7(&self) -> u8 {
        self.0[field::ACK_REQ] & 0x7F
    }
    /// PSN, 24 bits.
    #[inline]
    pub fn psn(&self) -> u32 {
        be24(&self.0[field::PSN])
    }

    /// The first reserved field that is not zero, as a warning (wire.md: reported, not rejected).
    pub fn reserved_warning(&self, offset: usize) -> Option<DecodeError> {
        let (field, found) = if self.resv6() != 0 {
            ("bth.resv6", self.resv6())
        } else if self.resv7() != 0 {
            ("bth.resv7", self.resv7())
        } else {
            return None;
        };
        Some(DecodeError::new(
            Layer::Bth,
            offset,
            ErrorKind::Reserved {
                field,
                found: found as u64,
            },
        ))
    }

    /// Owned copy of the fields.
    pub fn to_repr(&self) -> BthRepr {
        BthRepr {
            opcode: self.opcode(),
            se: self.se(),
            mig_req: self.mig_req(),
            pad_cnt: self.pad_cnt(),
            tver: self.tver(),
            p_key: self.p_key(),
            fecn: self.fecn(),
            becn: self.becn(),
            resv6: self.resv6(),
            dest_qp: self.dest_qp(),
            ack_req: self.ack_req(),
            resv7: self.resv7(),
            psn: self.psn(),
        }
    }
}

/// Owned BTH, for writing. Fields wider than their bit width are masked on emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct BthRepr {
    /// OpCode.
    pub opcode: Opcode,
    /// SE.
    pub se: bool,
    /// M (MigReq).
    pub mig_req: bool,
    /// PadCnt, 2 bits.
    pub pad_cnt: u8,
    /// TVer, 4 bits.
    pub tver: u8,
    /// P_Key.
    pub p_key: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN.
    pub becn: bool,
    /// Resv6, 6 bits.
    pub resv6: u8,
    /// DestQP, 24 bits.
    pub dest_qp: u32,
    /// AckReq.
    pub ack_req: bool,
    /// Resv7, 7 bits.
    pub resv7: u8,
    /// PSN, 24 bits.
    pub psn: u32,
}

impl Default for BthRepr {
    /// An RC SEND_ONLY with the default partition key 0xFFFF.
    fn default() -> Self {
        BthRepr {
            opcode: Opcode::RC_SEND_ONLY,
            se: false,
            mig_req: false,
            pad_cnt: 0,
            tver: 0,
            p_key: 0xFFFF,
            fecn: false,
            becn: false,
            resv6: 0,
            dest_qp: 0,
            ack_req: false,
            resv7: 0,
            psn: 0,
        }
    }
}

impl BthRepr {
    /// nom parser for the 12 bytes.
    pub fn parse(input: &[u8]) -> IResult<&[u8], BthRepr> {
        let (rest, (opcode, flags, p_key, ecn, dest_qp, ack, psn)) =
            (be_u8, be_u8, be_u16, be_u8, be_u24, be_u8, be_u24).parse(input)?;
        Ok((
            rest,
            BthRepr {
                opcode: Opcode(opcode),
                se: flags & 0x80 != 0,
                mig_req: flags & 0x40 != 0,
                pad_cnt: (flags >> 4) & 3,
                tver: flags & 0xF,
                p_key,
                fecn: ecn & 0x80 != 0,
                becn: ecn & 0x40 != 0,
                resv6: ecn & 0x3F,
                dest_qp,
                ack_req: ack & 0x80 != 0,
                resv7: ack & 0x7F,
                psn,
            },
        ))
    }

    /// The 12 wire bytes.
    pub fn to_bytes(&self) -> [u8; BTH_LEN] {
        let mut b = [0u8; BTH_LEN];
        b[field::OPCODE] = self.opcode.0;
        b[field::FLAGS] = (self.se as u8) << 7
            | (self.mig_req as u8) << 6
            | (self.pad_cnt & 3) << 4
            | (self.tver & 0xF);
        b[field::P_KEY].copy_from_slice(&self.p_key.to_be_bytes());
        b[field::ECN_BITS] = (self.fecn as u8) << 7 | (self.becn as u8) << 6 | (self.resv6 & 0x3F);
        b[field::DEST_QP].copy_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        b[field::ACK_REQ] = (self.ack_req as u8) << 7 | (self.resv7 & 0x7F);
        b[field::PSN].copy_from_slice(&self.psn.to_be_bytes()[1..]);
        b
    }

    /// The same header with every field masked to its wire width (what a parse of
    /// [`BthRepr::to_bytes`] gives back).
    pub fn masked(mut self) -> Self {
        self.pad_cnt &= 3;
        self.tver &= 0xF;
        self.resv6 &= 0x3F;
        self.dest_qp &= 0xFF_FFFF;
        self.resv7 &= 0x7F;
        self.psn &= 0xFF_FFFF;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Hand-assembled from the wire.md table: opcode 0x0A (RC WRITE_ONLY); byte 1 = SE 1, M 0,
    // PadCnt 2, TVer 0 -> 1_0_10_0000 = 0xA0; P_Key 0xFFFF; byte 4 = FECN 0, BECN 1, Resv6 0 -> 0x40;
    // DestQP 0x0012AB; byte 8 = AckReq 1 -> 0x80; PSN 0xFFFFFE.
    const BYTES: [u8; 12] = [
        0x0A, 0xA0, 0xFF, 0xFF, 0x40, 0x00, 0x12, 0xAB, 0x80, 0xFF, 0xFF, 0xFE,
    ];

    /// QP1 only: the DestQP's 24 bits, not its low byte (0x000101 is an ordinary QP).
    #[test]
    fn the_gsi_qp_is_qp1() {
        for (qp, gsi) in [
            (1u32, true),
            (0, false),
            (2, false),
            (0x101, false),
            (0x01_0001, false),
        ] {
            let mut b = BYTES;
            b[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
            assert_eq!(Bth::new_checked(&b, 0).unwrap().is_gsi(), gsi, "QP {qp:#x}");
        }
    }

    #[test]
    fn deconstruct() {
        let b = Bth::new_checked(&BYTES, 0).unwrap();
        assert_eq!(b.opcode(), Opcode(0x0A));
        assert!(b.se());
        assert!(!b.mig_req());
        assert_eq!(b.pad_cnt(), 2);
        assert_eq!(b.tver(), 0);
        assert_eq!(b.p_key(), 0xFFFF);
        assert!(!b.fecn());
        assert!(b.becn());
        assert_eq!(b.resv6(), 0);
        assert_eq!(b.dest_qp(), 0x12AB);
        assert!(b.ack_req());
        assert_eq!(b.resv7(), 0);
        assert_eq!(b.psn(), 0xFF_FFFE);
        assert_eq!(b.reserved_warning(0), None);
    }

    #[test]
    fn construct_and_parse_agree() {
        let repr = Bth::new_checked(&BYTES, 0).unwrap().to_repr();
        assert_eq!(repr.to_bytes(), BYTES);
        assert_eq!(BthRepr::parse(&BYTES).unwrap(), (&[][..], repr));
    }

    /// The other value of every flag bit by hand: byte 1 = SE 0, M 1, PadCnt 1, TVer 5 =
    /// 0x55; byte 4 = FECN 1, BECN 0, Resv6 0x15 = 0x95; byte 8 = AckReq 0, Resv7 0x33.
    #[test]
    fn the_nom_parser_reads_each_bit() {
        let b = [0x11, 0x55, 0x12, 0x34, 0x95, 0, 0, 1, 0x33, 0, 0, 2];
        let (_, r) = BthRepr::parse(&b).unwrap();
        assert_eq!((r.se, r.mig_req, r.pad_cnt, r.tver), (false, true, 1, 5));
        assert_eq!((r.fecn, r.becn, r.resv6), (true, false, 0x15));
        assert_eq!((r.ack_req, r.resv7, r.dest_qp, r.psn), (false, 0x33, 1, 2));
        assert_eq!(r.to_bytes(), b);
    }

    /// `masked` keeps each field's wire width: PadCnt 2 bits, TVer 4, Resv6 6, DestQP and PSN
    /// 24, Resv7 7 (values one bit too wide each).
    #[test]
    fn masked_keeps_the_wire_widths() {
        let wide = BthRepr {
            opcode: Opcode(0x0A),
            se: true,
            mig_req: false,
            pad_cnt: 0x7,
            tver: 0x1F,
            p_key: 0xFFFF,
            fecn: false,
            becn: true,
            resv6: 0x7F,
            dest_qp: 0x1FF_FFFF,
            ack_req: true,
            resv7: 0xFF,
            psn: 0x1FF_FFFF,
        };
        let m = wide.masked();
        assert_eq!((m.pad_cnt, m.tver, m.resv6), (3, 0xF, 0x3F));
        assert_eq!((m.dest_qp, m.resv7, m.psn), (0xFF_FFFF, 0x7F, 0xFF_FFFF));
        assert_eq!(
            (m.opcode, m.se, m.p_key, m.becn, m.ack_req),
            (Opcode(0x0A), true, 0xFFFF, true, true)
        );
    }

    #[test]
    fn reserved_bits_are_reported() {
        let mut bytes = BYTES;
        bytes[8] = 0x81; // AckReq + Resv7 = 1
        let w = Bth::new_checked(&bytes, 42)
            .unwrap()
            .reserved_warning(42)
            .unwrap();
        assert_eq!(w.layer, Layer::Bth);
        assert_eq!(w.offset, 42);
        assert_eq!(
            w.kind,
            ErrorKind::Reserved {
                field: "bth.resv7",
                found: 1
            }
        );
    }

    #[test]
    fn truncated_is_typed() {
        let e = Bth::new_checked(&BYTES[..7], 50).unwrap_err();
        assert_eq!(e, DecodeError::truncated(Layer::Bth, 50, 12, 7));
    }
}
