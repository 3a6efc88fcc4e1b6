//! Congestion-control shims: the "dialect" of a trace (wire.md 5).
//!
//! A trace has exactly one dialect, named in its manifest or on the command line, so no byte
//! ever needs guessing:
//!
//! | dialect | between UDP and BTH              | after AETH on ACKNOWLEDGE packets          |
//! |---------|----------------------------------|--------------------------------------------|
//! | `roce`  | nothing                          | nothing                                    |
//! | `hpcc`  | INT stack (every RoCEv2 packet)  | nothing (the stack before BTH is the echo) |
//! | `fncc`  | nothing                          | N (u16) + INT stack                        |
//! | `rcc`   | transmit timestamp, u64 ns       | cwnd u32, N u16, flags u8, reserved u8     |
//!
//! "ACK and NAK packets" of wire.md 5.4/5.5 are the ACKNOWLEDGE opcodes (RC 0x11, RD 0x51), whose
//! AETH syndrome says ACK, RNR NAK or NAK. ATOMIC_ACKNOWLEDGE and read responses carry an AETH
//! but no dialect extension: this is the project's reading, stated in docs/wire.md.

pub mod int;

use core::fmt;
use core::str::FromStr;

use crate::error::{DecodeError, ErrorKind, Layer};
use int::{DEFAULT_MAX_HOPS, HOP_LEN, IntHop, IntStack, IntStackHeader, STACK_HEADER_LEN};

/// The dialect of a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Dialect {
    /// Plain RoCEv2 (DCQCN traces).
    #[default]
    Roce,
    /// HPCC: INT stack before BTH on every packet.
    Hpcc,
    /// FNCC: N and an INT stack after the AETH of ACKs.
    Fncc,
    /// RCC: timestamp before BTH; cwnd/N/flags after the AETH of ACKs.
    Rcc,
}

impl Dialect {
    /// All dialects, in documentation order.
    pub const ALL: [Dialect; 4] = [Dialect::Roce, Dialect::Hpcc, Dialect::Fncc, Dialect::Rcc];

    /// The name used in manifests and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Roce => "roce",
            Dialect::Hpcc => "hpcc",
            Dialect::Fncc => "fncc",
            Dialect::Rcc => "rcc",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown dialect `{s}` (expected roce, hpcc, fncc or rcc)"))
    }
}

/// How an INT stack is laid out on the wire (wire.md 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum IntLayout {
    /// Always `max_hops` records; records past nHop are zero (the default).
    Padded,
    /// Exactly nHop records (captures whose switches insert).
    Grown,
}

/// INT stack configuration of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct IntConfig {
    /// Padded or grown.
    pub layout: IntLayout,
    /// Most records a stack may hold (default 5); nHop above it is a parse error.
    pub max_hops: u8,
}

impl Default for IntConfig {
    fn default() -> Self {
        IntConfig {
            layout: IntLayout::Padded,
            max_hops: DEFAULT_MAX_HOPS,
        }
    }
}

impl IntConfig {
    /// Bytes the stack occupies for a given nHop.
    #[inline]
    pub const fn stack_len(&self, n_hop: u8) -> usize {
        let records = match self.layout {
            IntLayout::Padded => self.max_hops,
            IntLayout::Grown => n_hop,
        };
        STACK_HEADER_LEN + HOP_LEN * records as usize
    }
}

/// Zero-copy view of an INT stack: its header and its filled records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntStackView<'a> {
    /// nHop and pathID.
    pub header: IntStackHeader,
    /// The filled records, 8 bytes each (`nHop × 8` bytes).
    pub records: &'a [u8],
    /// Total bytes the stack occupies on the wire (padding included).
    pub wire_len: usize,
}

impl<'a> IntStackView<'a> {
    /// Parse a stack at the front of `data` (`offset` locates it in the frame for errors).
    /// Returns the view and a warning when a padding record past nHop is not zero.
    pub fn parse(
        data: &'a [u8],
        offset: usize,
        cfg: IntConfig,
    ) -> Result<(Self, Option<DecodeError>), DecodeError> {
        let Some(&[h0, h1]) = data.first_chunk::<2>() else {
            return Err(DecodeError::truncated(
                Layer::IntStack,
                offset,
                2,
                data.len(),
            ));
        };
        let header = IntStackHeader::from_u16(u16::from_be_bytes([h0, h1]));
        if header.n_hop > cfg.max_hops {
            return Err(DecodeError::new(
                Layer::IntStack,
                offset,
                ErrorKind::NHopTooLarge {
                    n_hop: header.n_hop,
                    max_hops: cfg.max_hops,
                },
            ));
        }
        let wire_len = cfg.stack_len(header.n_hop);
        if data.len() < wire_len {
            return Err(DecodeError::truncated(
                Layer::IntStack,
                offset,
                wire_len,
                data.len(),
            ));
        }
        let filled_end = STACK_HEADER_LEN + HOP_LEN * header.n_hop as usize;
        let records = &data[STACK_HEADER_LEN..filled_end];
        let warning = (!all_zero(&data[filled_end..wire_len])).then(|| {
            DecodeError::new(
                Layer::IntStack,
                offset + filled_end,
                ErrorKind::Reserved {
                    field: "int.padding",
                    found: 1,
                },
            )
        });
        Ok((
            IntStackView {
                header,
                records,
                wire_len,
            },
            warning,
        ))
    }

    /// nHop.
    #[inline]
    pub fn n_hop(&self) -> u8 {
        self.header.n_hop
    }

    /// Record `i` (0-based), if filled.
    #[inline]
    pub fn hop(&self, i: usize) -> Option<IntHop> {
        let b = self.records.get(i * HOP_LEN..(i + 1) * HOP_LEN)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(IntHop::from_bytes(a))
    }

    /// The filled records in stack order.
    pub fn hops(&self) -> impl ExactSizeIterator<Item = IntHop> + 'a {
        self.records.chunks_exact(HOP_LEN).map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            IntHop::from_bytes(a)
        })
    }

    /// Owned copy.
    pub fn to_owned_stack(&self) -> IntStack {
        let mut s = IntStack::new();
        s.header = self.header;
        for (i, h) in self.hops().enumerate() {
            s.set_hop(i, h);
        }
        s
    }
}

/// True when every byte is zero; compares 8 bytes at a time (padding records are whole u64s).
#[inline]
pub(crate) fn all_zero(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(8);
    let words = chunks
        .by_ref()
        .all(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) == 0);
    words && chunks.remainder().iter().all(|&x| x == 0)
}

/// Write `stack` in the configured layout. Records past `max_hops` are not written: a caller
/// must not build such a stack ([`IntStack::push`] refuses to).
pub fn emit_int_stack(stack: &IntStack, cfg: IntConfig, out: &mut Vec<u8>) {
    let n = stack.n_hop().min(cfg.max_hops);
    let header = IntStackHeader {
        n_hop: n,
        path_id: stack.path_id(),
    };
    out.extend_from_slice(&header.to_u16().to_be_bytes());
    for h in &stack.hops()[..n as usize] {
        out.extend_from_slice(&h.to_bytes());
    }
    if cfg.layout == IntLayout::Padded {
        out.resize(out.len() + HOP_LEN * (cfg.max_hops - n) as usize, 0);
    }
}

/// FNCC ACK extension (wire.md 5.4): N then an INT stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FnccExtView<'a> {
    /// Receiver's count of concurrent flows (0 = unknown).
    pub n: u16,
    /// INT filled by switches on the way back; record 0 = the data path's last hop.
    pub int: IntStackView<'a>,
}

/// RCC ACK extension (wire.md 5.5), 8 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RccExt {
    /// Window assigned by the receiver, bytes.
    pub cwnd: u32,
    /// Active messages at the receiver.
    pub n: u16,
    /// Bit 0 PID mode, bit 1 in-network congestion; others reserved.
    pub flags: u8,
    /// Reserved byte.
    pub reserved: u8,
}

/// RCC ACK extension length.
pub const RCC_EXT_LEN: usize = 8;
/// RCC timestamp shim length.
pub const RCC_SHIM_LEN: usize = 8;
/// RCC flag: the flow is in PID mode.
pub const RCC_FLAG_PID: u8 = 0x01;
/// RCC flag: in-network congestion detected.
pub const RCC_FLAG_IN_NETWORK: u8 = 0x02;

impl RccExt {
    /// Decode the 8 bytes.
    pub fn from_bytes(b: &[u8; RCC_EXT_LEN]) -> Self {
        RccExt {
            cwnd: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            n: u16::from_be_bytes([b[4], b[5]]),
            flags: b[6],
            reserved: b[7],
        }
    }

    /// The 8 wire bytes.
    pub fn to_bytes(&self) -> [u8; RCC_EXT_LEN] {
        let c = self.cwnd.to_be_bytes();
        let n = self.n.to_be_bytes();
        [
            c[0],
            c[1],
            c[2],
            c[3],
            n[0],
            n[1],
            self.flags,
            self.reserved,
        ]
    }

    /// A warning when reserved flag bits or the reserved byte are set.
    pub fn reserved_warning(&self, offset: usize) -> Option<DecodeError> {
        let (field, found) = if self.flags & !0x03 != 0 {
            ("rcc.flags", self.flags as u64)
        } else if self.reserved != 0 {
            ("rcc.reserved", self.reserved as u64)
        } else {
            return None;
        };
        Some(DecodeError::new(
            Layer::RccExt,
            offset,
            ErrorKind::Reserved { field, found },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One filled record in a padded stack of 5: header nHop 1, pathID 0x0A5 -> 0x10A5; the record
    // B = 2 (100G), TS = 0xABCDEF, txBytes = 0x12345, qLen = 0x0040:
    //   (2 << 60) | (0xABCDEF << 36) | (0x12345 << 16) | 0x40 = 0x2ABCDEF123450040.
    fn padded_one_hop() -> Vec<u8> {
        let mut v = vec![0x10, 0xA5];
        v.extend_from_slice(&[0x2A, 0xBC, 0xDE, 0xF1, 0x23, 0x45, 0x00, 0x40]);
        v.resize(42, 0);
        v
    }

    #[test]
    fn padded_stack_literal() {
        let bytes = padded_one_hop();
        let (s, w) = IntStackView::parse(&bytes, 42, IntConfig::default()).unwrap();
        assert_eq!(w, None);
        assert_eq!(s.wire_len, 42);
        assert_eq!(
            s.header,
            IntStackHeader {
                n_hop: 1,
                path_id: 0x0A5
            }
        );
        assert_eq!(
            s.hop(0),
            Some(IntHop {
                b: 2,
                ts: 0xAB_CDEF,
                tx_bytes: 0x1_2345,
                qlen: 0x40
            })
        );
        assert_eq!(s.hop(1), None);
        let mut out = Vec::new();
        emit_int_stack(&s.to_owned_stack(), IntConfig::default(), &mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn grown_stack_takes_only_filled_records() {
        let bytes = padded_one_hop();
        let cfg = IntConfig {
            layout: IntLayout::Grown,
            max_hops: 5,
        };
        let (s, _) = IntStackView::parse(&bytes, 0, cfg).unwrap();
        assert_eq!(s.wire_len, 10); // 2 + 8 × 1
    }

    #[test]
    fn nhop_above_max_is_an_error() {
        let mut bytes = padded_one_hop();
        bytes[0] = 0x60; // nHop 6
        let e = IntStackView::parse(&bytes, 42, IntConfig::default()).unwrap_err();
        assert_eq!(e.layer, Layer::IntStack);
        assert_eq!(e.offset, 42);
        assert_eq!(
            e.kind,
            ErrorKind::NHopTooLarge {
                n_hop: 6,
                max_hops: 5
            }
        );
    }

    #[test]
    fn short_stack_is_truncated_and_padding_is_checked() {
        let bytes = padded_one_hop();
        let e = IntStackView::parse(&bytes[..30], 0, IntConfig::default()).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 42,
                available: 30
            }
        );
        let mut dirty = bytes.clone();
        dirty[41] = 1;
        let (_, w) = IntStackView::parse(&dirty, 100, IntConfig::default()).unwrap();
        assert_eq!(w.unwrap().offset, 110); // 100 + 2 + 8: where the padding starts
    }

    /// nHop may equal the most records a stack holds: five records in a padded stack of five.
    #[test]
    fn nhop_at_max_is_a_full_stack() {
        let mut bytes = padded_one_hop();
        bytes[0] = 0x50; // nHop 5
        let (s, w) = IntStackView::parse(&bytes, 0, IntConfig::default()).unwrap();
        assert_eq!((s.header.n_hop, w), (5, None));
        assert_eq!(s.hop(4), Some(IntHop::default()));
    }

    /// Whole 8-byte words and the bytes after the last one (11 bytes: one word, 3 more).
    #[test]
    fn all_zero_reads_every_byte() {
        assert!(all_zero(&[0; 11]) && all_zero(&[]));
        for i in 0..11 {
            let mut b = [0u8; 11];
            b[i] = 1;
            assert!(!all_zero(&b), "byte {i}");
        }
    }

    /// The names of manifests and the command line, both ways; anything else is refused.
    #[test]
    fn dialect_names() {
        for (d, name) in Dialect::ALL
            .into_iter()
            .zip(["roce", "hpcc", "fncc", "rcc"])
        {
            assert_eq!(d.to_string(), name);
            assert_eq!(name.parse::<Dialect>(), Ok(d));
        }
        let e = "hpcc2".parse::<Dialect>().unwrap_err();
        assert_eq!(
            e,
            "unknown dialect `hpcc2` (expected roce, hpcc, fncc or rcc)"
        );
    }

    #[test]
    fn rcc_ext_literal() {
        // cwnd 150000 = 0x000249F0, N 4, flags PID|in-network = 0x03, reserved 0.
        let b = [0x00, 0x02, 0x49, 0xF0, 0x00, 0x04, 0x03, 0x00];
        let e = RccExt::from_bytes(&b);
        assert_eq!(
            e,
            RccExt {
                cwnd: 150_000,
                n: 4,
                flags: 3,
                reserved: 0
            }
        );
        assert_eq!(e.to_bytes(), b);
        assert_eq!(e.reserved_warning(0), None);
        assert!(RccExt { flags: 0x80, ..e }.reserved_warning(0).is_some());
    }
}
