//! BTH extension headers (wire.md 2; IBA vol. 1 9.3): RDETH, DETH, RETH, AtomicETH, AETH,
//! AtomicAckETH, ImmDt, IETH. Each is a fixed-size big-endian record; each has a zero-copy view
//! (`*View`, a borrowed array) and an owned repr with a nom `parse` and `to_bytes`.

use nom::{
    IResult, Parser,
    number::complete::{be_u8, be_u24, be_u32, be_u64},
};

use crate::error::{DecodeError, Layer};

#[inline]
fn be24(b: &[u8]) -> u32 {
    (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32
}
#[inline]
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
#[inline]
fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}
#[inline]
fn u24_bytes(v: u32) -> [u8; 3] {
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// View the first `N` bytes of `data` as a header of `layer`, or a truncation error.
#[inline]
pub(crate) fn view<const N: usize>(
    data: &[u8],
    layer: Layer,
    offset: usize,
) -> Result<&[u8; N], DecodeError> {
    data.first_chunk::<N>()
        .ok_or(DecodeError::truncated(layer, offset, N, data.len()))
}

// ---------------------------------------------------------------------------------------------
/// RDETH length.
pub const RDETH_LEN: usize = 4;

/// RDETH (RD only): reserved 8, EE-Context 24.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RdethRepr {
    /// Reserved byte (reported when non-zero).
    pub reserved: u8,
    /// EE-Context, 24 bits.
    pub ee_context: u32,
}

impl RdethRepr {
    /// Read from a view.
    pub fn from_view(b: &[u8; RDETH_LEN]) -> Self {
        RdethRepr {
            reserved: b[0],
            ee_context: be24(&b[1..]),
        }
    }
    /// nom parser.
    pub fn parse(i: &[u8]) -> IResult<&[u8], Self> {
        let (i, (reserved, ee_context)) = (be_u8, be_u24).parse(i)?;
        Ok((
            i,
            RdethRepr {
                reserved,
                ee_context,
            },
        ))
    }
    /// Wire bytes.
    pub fn to_bytes(&self) -> [u8; RDETH_LEN] {
        let e = u24_bytes(self.ee_context);
        [self.reserved, e[0], e[1], e[2]]
    }
}

// ---------------------------------------------------------------------------------------------
/// DETH length.
pub const DETH_LEN: usize = 8;

/// DETH (RD, UD): Q_Key 32, reserved 8, SrcQP 24.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DethRepr {
    /// Q_Key.
    pub q_key: u32,
    /// Reserved byte.
    pub reserved: u8,
    /// Source QP, 24 bits.
    pub src_qp: u32,
}

impl DethRepr {
    /// Read from a view.
    pub fn from_view(b: &[u8; DETH_LEN]) -> Self {
        DethRepr {
            q_key: be32(b),
            reserved: b[4],
            src_qp: be24(&b[5..]),
        }
    }
    /// nom parser.
    pub fn parse(i: &[u8]) -> IResult<&[u8], Self> {
        let (i, (q_key, reserved, src_qp)) = (be_u32, be_u8, be_u24).parse(i)?;
        Ok((
            i,
            DethRepr {
                q_key,
                reserved,
                src_qp,
            },
        ))
    }
    /// Wire bytes.
    pub fn to_bytes(&self) -> [u8; DETH_LEN] {
        let q = self.q_key.to_be_bytes();
        let s = u24_bytes(self.src_qp);
        [q[0], q[1], q[2], q[3], self.reserved, s[0], s[1], s[2]]
    }
}

// ---------------------------------------------------------------------------------------------
/// RETH length.
pub const RETH_LEN: usize = 16;

/// RETH: VA 64, R_Key 32, DMA length 32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RethRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub r_key: u32,
    /// DMA length in bytes.
    pub dma_len: u32,
}

impl RethRepr {
    /// Read from a view.
    pub fn from_view(b: &[u8; RETH_LEN]) -> Self {
        RethRepr {
            va: be64(b),
            r_key: be32(&b[8..]),
            dma_len: be32(&b[12..]),
        }
    }
    /// nom parser.
    pub fn parse(i: &[u8]) -> IResult<&[u8], Self> {
        let (i, (va, r_key, dma_len)) = (be_u64, be_u32, be_u32).parse(i)?;
        Ok((i, RethRepr { va, r_key, dma_len }))
    }
    /// Wire bytes.
    pub fn to_bytes(&self) -> [u8; RETH_LEN] {
        let mut b = [0u8; RETH_LEN];
        b[..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.r_key.to_be_bytes());
        b[12..].copy_from_slice(&self.dma_len.to_be_bytes());
        b
    }
}

// ---------------------------------------------------------------------------------------------
/// AtomicETH length.
pub const ATOMIC_ETH_LEN: usize = 28;

/// AtomicETH: VA 64, R_Key 32, Swap/Add 64, Compare 64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AtomicEthRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub r_key: u32,
    /// Swap (CMP_SWAP) or add (FETCH_ADD) data.
    pub swap_add: u64,
    /// Compare data.
    pub compare: u64,
}

impl AtomicEthRepr {
    /// Read from a view.
    pub fn from_view(b: &[u8; ATOMIC_ETH_LEN]) -> Self {
        AtomicEthRepr {
            va: be64(b),
            r_key: be32(&b[8..]),
            swap_add: be64(&b[12..]),
            compare: be64(&b[20..]),
        }
    }
    /// nom parser.
    pub fn parse(i: &[u8]) -> IResult<&[u8], Self> {
        let (i, (va, r_key, swap_add, compare)) = (be_u64, be_u32, be_u64, be_u64).parse(i)?;
        Ok((
            i,
            AtomicEthRepr {
                va,
                r_key,
                swap_add,
                compare,
            },
        ))
    }
    /// Wire bytes.
    pub fn to_bytes(&self) -> [u8; ATOMIC_ETH_LEN] {
        let mut b = [0u8; ATOMIC_ETH_LEN];
        b[..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.r_key.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..].copy_from_slice(&self.compare.to_be_bytes());
        b
    }
}

// ---------------------------------------------------------------------------------------------
/// AETH length.
pub const AETH_LEN: usize = 4;

/// NAK codes (AETH syndrome bits 4..0 when bits 6..5 = 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// 0: PSN sequence error.
    PsnSequenceError,
    /// 1: invalid request.
    InvalidRequest,
    /// 2: remote access error.
    RemoteAccessError,
    /// 3: remote operational error.
    RemoteOperationalError,
    /// 4: invalid RD request.
    InvalidRdRequest,
    /// 5..31: reserved.
    Reserved(u8),
}

impl NakCode {
    /// Name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "psn_sequence_error",
            NakCode::InvalidRequest => "invalid_request",
            NakCode::RemoteAccessError => "remote_access_error",
            NakCode::RemoteOperationalError => "remote_operational_error",
            NakCode::InvalidRdRequest => "invalid_rd_request",
            NakCode::Reserved(_) => "reserved",
        }
    }
}

/// The meaning of an AETH syndrome (bits 6..5 select, bits 4..0 qualify; bit 7 reserved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// 00: ACK with a credit count (0x1F = invalid credit).
    Ack {
        /// Credit count code.
        credit: u8,
    },
    /// 01: RNR NAK with a timer code.
    RnrNak {
        /// RNR timer code.
        timer: u8,
    },
    /// 10: reserved.
    Reserved {
        /// Bits 4..0.
        value: u8,
    },
    /// 11: NAK with a code.
    Nak(NakCode),
}

impl Syndrome {
    /// Decode a syndrome byte.
    pub const fn from_byte(s: u8) -> Self {
        let low = s & 0x1F;
        match (s >> 5) & 3 {
            0 => Syndrome::Ack { credit: low },
            1 => Syndrome::RnrNak { timer: low },
            2 => Syndrome::Reserved { value: low },
            _ => Syndrome::Nak(match low {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                c => NakCode::Reserved(c),
            }),
        }
    }

    /// `ack`, `rnr_nak`, `reserved` or `nak`.
    pub const fn kind_name(self) -> &'static str {
        match self {
            Syndrome::Ack { .. } => "ack",
            Syndrome::RnrNak { .. } => "rnr_nak",
            Syndrome::Reserved { .. } => "reserved",
            Syndrome::Nak(_) => "nak",
        }
    }

    /// True for NAK and RNR NAK.
    pub const fn is_nak(self) -> bool {
        matches!(self, Syndrome::Nak(_) | Syndrome::RnrNak { .. })
    }
}

/// AETH: Syndrome 8, MSN 24.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AethRepr {
    /// Raw syndrome byte.
    pub syndrome: u8,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

impl AethRepr {
    /// Read from a view.
    pub fn from_view(b: &[u8; AETH_LEN]) -> Self {
        AethRepr {
            syndrome: b[0],
            msn: be24(&b[1..]),
        }
    }
    /// nom parser.
    pub fn parse(i: &[u8]) -> IResult<&[u8], Self> {
        let (i, (syndrome, msn)) = (be_u8, be_u24).parse(i)?;
        Ok((i, AethRepr { syndrome, msn }))
    }
    /// Wire bytes.
    pub fn to_bytes(&self) -> [u8; AETH_LEN] {
        let m = u24_bytes(self.msn);
        [self.syndrome, m[0], m[1], m[2]]
    }
    /// Decoded syndrome.
    pub const fn decoded(&self) -> Syndrome {
        Syndrome::from_byte(self.syndrome)
    }
}

// ---------------------------------------------------------------------------------------------
/// AtomicAckETH length.
pub const ATOMIC_ACK_ETH_LEN: usize = 8;
/// ImmDt length.
pub const IMM_DT_LEN: usize = 4;
/// IETH length.
pub const IETH_LEN: usize = 4;

/// Read a big-endian u64 view (AtomicAckETH original remote data).
#[inline]
pub fn read_u64(b: &[u8; 8]) -> u64 {
    u64::from_be_bytes(*b)
}

/// Read a big-endian u32 view (ImmDt, IETH R_Key).
#[inline]
pub fn read_u32(b: &[u8; 4]) -> u32 {
    u32::from_be_bytes(*b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The syndrome byte by the IBTA's table (bits 6..5 select, 4..0 qualify) and the names
    /// docs/inspect.md gives (`ccreplay.aeth.kind`, `ccreplay.aeth.nak`).
    #[rstest]
    #[case(0x1F, "ack", false, None)]
    #[case(0x2A, "rnr_nak", true, None)]
    #[case(0x45, "reserved", false, None)]
    #[case(0x60, "nak", true, Some("psn_sequence_error"))]
    #[case(0x61, "nak", true, Some("invalid_request"))]
    #[case(0x62, "nak", true, Some("remote_access_error"))]
    #[case(0x63, "nak", true, Some("remote_operational_error"))]
    #[case(0x64, "nak", true, Some("invalid_rd_request"))]
    #[case(0x7F, "nak", true, Some("reserved"))]
    fn syndrome_names(
        #[case] byte: u8,
        #[case] kind: &str,
        #[case] nak: bool,
        #[case] code: Option<&str>,
    ) {
        let s = Syndrome::from_byte(byte);
        assert_eq!((s.kind_name(), s.is_nak()), (kind, nak));
        let name = match s {
            Syndrome::Nak(c) => Some(c.name()),
            _ => None,
        };
        assert_eq!(name, code);
    }

    /// Big-endian reads of ImmDt / IETH and AtomicAckETH.
    #[test]
    fn big_endian_words() {
        assert_eq!(read_u32(&[0x12, 0x34, 0x56, 0x78]), 0x1234_5678);
        assert_eq!(read_u64(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506_0708);
    }

    /// RDETH: reserved byte, then the 24-bit EE context (0x123456).
    #[test]
    fn rdeth_bytes() {
        let r = RdethRepr {
            reserved: 0,
            ee_context: 0x12_3456,
        };
        assert_eq!(r.to_bytes(), [0, 0x12, 0x34, 0x56]);
        assert_eq!(RdethRepr::from_view(&r.to_bytes()), r);
    }

    #[test]
    fn reth_literal() {
        // VA 0x0102030405060708, R_Key 0xDEADBEEF, DMA length 4096 = 0x00001000.
        let b: [u8; 16] = [
            1, 2, 3, 4, 5, 6, 7, 8, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0x10, 0,
        ];
        let r = RethRepr::from_view(&b);
        assert_eq!(
            r,
            RethRepr {
                va: 0x0102_0304_0506_0708,
                r_key: 0xDEAD_BEEF,
                dma_len: 4096
            }
        );
        assert_eq!(r.to_bytes(), b);
        assert_eq!(RethRepr::parse(&b).unwrap().1, r);
    }

    #[test]
    fn deth_rdeth_atomic_literals() {
        // DETH: Q_Key 0x80010000, reserved 0, SrcQP 0x000101.
        let d = [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01];
        let r = DethRepr::from_view(&d);
        assert_eq!((r.q_key, r.reserved, r.src_qp), (0x8001_0000, 0, 0x101));
        assert_eq!(r.to_bytes(), d);
        // RDETH: reserved 0, EE-Context 0xABCDEF.
        let e = [0x00, 0xAB, 0xCD, 0xEF];
        assert_eq!(RdethRepr::from_view(&e).ee_context, 0xAB_CDEF);
        // AtomicETH: VA 1, R_Key 2, Swap/Add 3, Compare 4.
        let mut a = [0u8; 28];
        a[7] = 1;
        a[11] = 2;
        a[19] = 3;
        a[27] = 4;
        let r = AtomicEthRepr::from_view(&a);
        assert_eq!((r.va, r.r_key, r.swap_add, r.compare), (1, 2, 3, 4));
        assert_eq!(r.to_bytes(), a);
    }

    // Syndromes by hand from wire.md 2: bits 6..5 select, bits 4..0 qualify.
    #[rstest]
    #[case(0x00, Syndrome::Ack { credit: 0 })]
    #[case(0x1F, Syndrome::Ack { credit: 0x1F })] // invalid credit
    #[case(0x2E, Syndrome::RnrNak { timer: 0x0E })] // 0b001_01110
    #[case(0x41, Syndrome::Reserved { value: 1 })] // 0b010_00001
    #[case(0x60, Syndrome::Nak(NakCode::PsnSequenceError))]
    #[case(0x61, Syndrome::Nak(NakCode::InvalidRequest))]
    #[case(0x62, Syndrome::Nak(NakCode::RemoteAccessError))]
    #[case(0x63, Syndrome::Nak(NakCode::RemoteOperationalError))]
    #[case(0x64, Syndrome::Nak(NakCode::InvalidRdRequest))]
    #[case(0x65, Syndrome::Nak(NakCode::Reserved(5)))]
    #[case(0x80, Syndrome::Ack { credit: 0 })] // bit 7 reserved, ignored by the decoding
    fn syndromes(#[case] byte: u8, #[case] expect: Syndrome) {
        assert_eq!(Syndrome::from_byte(byte), expect);
        let a = AethRepr::from_view(&[byte, 0x00, 0x01, 0x02]);
        assert_eq!(a.msn, 0x102);
        assert_eq!(a.to_bytes(), [byte, 0x00, 0x01, 0x02]);
    }

    #[test]
    fn short_view_is_typed() {
        let e = view::<16>(&[0u8; 10], Layer::Reth, 54).unwrap_err();
        assert_eq!(e, DecodeError::truncated(Layer::Reth, 54, 16, 10));
    }
}
