//! HPCC / FNCC in-band network telemetry: the 8-byte hop record and the stack header
//! (wire.md 5.1, 5.2; HPCC paper section 4.1, Figure 7).
//!
//! Hop record, one big-endian u64:
//!
//! | bits   | field   | unit                                                       |
//! |--------|---------|------------------------------------------------------------|
//! | 63..60 | B       | line-rate code of the egress port ([`LineRate`])           |
//! | 59..36 | TS      | egress timestamp, ns, modulo 2^24                          |
//! | 35..16 | txBytes | bytes sent by the port, 128-byte units, modulo 2^20        |
//! | 15..0  | qLen    | egress queue, 80-byte units, saturating at 0xFFFF          |
//!
//! Stack header, 2 bytes: nHop (bits 15..12) and pathID (bits 11..0, XOR of 12-bit switch IDs).
//! The stack is *padded* to `max_hops` records (default 5: 2 + 40 = 42 bytes) unless the trace
//! says `grown` (2 + 8 × nHop bytes).

/// Width of the TS field in bits (wire.md 5.1).
pub const TS_BITS: u32 = 24;
/// Width of the txBytes field in bits (wire.md 5.1).
pub const TX_BYTES_BITS: u32 = 20;
/// txBytes counts in units of this many bytes.
pub const TX_BYTES_UNIT: u64 = 128;
/// qLen counts in units of this many bytes.
pub const QLEN_UNIT: u64 = 80;
/// Size of one hop record.
pub const HOP_LEN: usize = 8;
/// Size of the stack header (nHop + pathID).
pub const STACK_HEADER_LEN: usize = 2;
/// Largest nHop the 4-bit field can carry.
pub const NHOP_FIELD_MAX: u8 = 15;
/// Default number of records in a padded stack (HPCC paper 4.1: "at most 42 bytes").
pub const DEFAULT_MAX_HOPS: u8 = 5;

/// Line-rate code `B` of an INT hop (wire.md 5.1). Codes 8..15 are reserved: kept, reported,
/// and mapped to a rate only by configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct LineRate(pub u8);

impl LineRate {
    /// The rate in bits per second for codes 0..7, `None` for the reserved codes 8..15.
    pub const fn bps(self) -> Option<u64> {
        const G: u64 = 1_000_000_000;
        match self.0 {
            0 => Some(25 * G),
            1 => Some(50 * G),
            2 => Some(100 * G),
            3 => Some(200 * G),
            4 => Some(400 * G),
            5 => Some(800 * G),
            6 => Some(10 * G),
            7 => Some(40 * G),
            _ => None,
        }
    }

    /// The code for a rate in bits per second, if the rate has one.
    pub const fn from_bps(bps: u64) -> Option<Self> {
        let mut code = 0;
        while code < 8 {
            if let Some(r) = LineRate(code).bps()
                && r == bps
            {
                return Some(LineRate(code));
            }
            code += 1;
        }
        None
    }

    /// True for the reserved codes 8..15.
    pub const fn is_reserved(self) -> bool {
        self.0 >= 8
    }
}

/// One INT hop record, decoded into its fields (raw units, as on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntHop {
    /// `B`: line-rate code, 4 bits.
    pub b: u8,
    /// `TS`: egress timestamp in ns modulo 2^24.
    pub ts: u32,
    /// `txBytes`: bytes transmitted in 128-byte units modulo 2^20.
    pub tx_bytes: u32,
    /// `qLen`: egress queue length in 80-byte units.
    pub qlen: u16,
}

impl IntHop {
    /// Decode the big-endian u64 record.
    #[inline]
    pub const fn from_u64(v: u64) -> Self {
        IntHop {
            b: (v >> 60) as u8,
            ts: ((v >> 36) & 0xFF_FFFF) as u32,
            tx_bytes: ((v >> 16) & 0xF_FFFF) as u32,
            qlen: v as u16,
        }
    }

    /// Decode 8 bytes in network order.
    #[inline]
    pub const fn from_bytes(b: [u8; 8]) -> Self {
        Self::from_u64(u64::from_be_bytes(b))
    }

    /// Encode; fields wider than their bit width are masked (modulo semantics of wire.md 5.1).
    #[inline]
    pub const fn to_u64(self) -> u64 {
        ((self.b as u64 & 0xF) << 60)
            | ((self.ts as u64 & 0xFF_FFFF) << 36)
            | ((self.tx_bytes as u64 & 0xF_FFFF) << 16)
            | self.qlen as u64
    }

    /// Encode as 8 bytes in network order.
    #[inline]
    pub const fn to_bytes(self) -> [u8; 8] {
        self.to_u64().to_be_bytes()
    }

    /// The line-rate code.
    #[inline]
    pub const fn line_rate(self) -> LineRate {
        LineRate(self.b)
    }

    /// Queue length in bytes (`qLen × 80`).
    #[inline]
    pub const fn qlen_bytes(self) -> u64 {
        self.qlen as u64 * QLEN_UNIT
    }

    /// `TS` delta `self − prev` modulo 2^24, in ns (wire.md 5.1: never negative).
    #[inline]
    pub const fn ts_delta_ns(self, prev: IntHop) -> u64 {
        (self.ts.wrapping_sub(prev.ts) & 0xFF_FFFF) as u64
    }

    /// `txBytes` delta `self − prev` modulo 2^20, in bytes (units × 128).
    #[inline]
    pub const fn tx_bytes_delta(self, prev: IntHop) -> u64 {
        (self.tx_bytes.wrapping_sub(prev.tx_bytes) & 0xF_FFFF) as u64 * TX_BYTES_UNIT
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for IntHop {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(IntHop::from_u64(u.arbitrary()?))
    }
}

/// The INT stack header: nHop and pathID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntStackHeader {
    /// Number of hop records filled, 4 bits.
    pub n_hop: u8,
    /// XOR of the 12-bit switch IDs of the hops that filled a record.
    pub path_id: u16,
}

impl IntStackHeader {
    /// Decode the 2-byte header.
    #[inline]
    pub const fn from_u16(v: u16) -> Self {
        IntStackHeader {
            n_hop: (v >> 12) as u8,
            path_id: v & 0x0FFF,
        }
    }

    /// Encode; fields are masked to their widths.
    #[inline]
    pub const fn to_u16(self) -> u16 {
        ((self.n_hop as u16 & 0xF) << 12) | (self.path_id & 0x0FFF)
    }
}

/// An owned INT stack of at most 15 hops (the 4-bit nHop limit), without allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntStack {
    /// nHop and pathID.
    pub header: IntStackHeader,
    hops: [IntHop; NHOP_FIELD_MAX as usize],
}

impl IntStack {
    /// An empty stack as a sender writes it (nHop = 0, pathID = 0).
    pub const fn new() -> Self {
        IntStack {
            header: IntStackHeader {
                n_hop: 0,
                path_id: 0,
            },
            hops: [IntHop {
                b: 0,
                ts: 0,
                tx_bytes: 0,
                qlen: 0,
            }; NHOP_FIELD_MAX as usize],
        }
    }

    /// A stack from filled records and a pathID. `None` when more than 15 records are given.
    pub fn from_hops(path_id: u16, hops: &[IntHop]) -> Option<Self> {
        if hops.len() > NHOP_FIELD_MAX as usize {
            return None;
        }
        let mut s = IntStack::new();
        s.hops[..hops.len()].copy_from_slice(hops);
        s.header = IntStackHeader {
            n_hop: hops.len() as u8,
            path_id: path_id & 0x0FFF,
        };
        Some(s)
    }

    /// The filled records, in stack order (record 0 first).
    #[inline]
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.header.n_hop.min(NHOP_FIELD_MAX) as usize]
    }

    /// nHop.
    #[inline]
    pub const fn n_hop(&self) -> u8 {
        self.header.n_hop
    }

    /// pathID.
    #[inline]
    pub const fn path_id(&self) -> u16 {
        self.header.path_id
    }

    /// What a switch does (wire.md 5.2): append its record, increment nHop, XOR its 12-bit ID
    /// into pathID. Returns false (stack unchanged) when `max_hops` records are already filled.
    #[inline]
    pub fn push(&mut self, switch_id: u16, hop: IntHop, max_hops: u8) -> bool {
        let n = self.header.n_hop as usize;
        if n >= max_hops.min(NHOP_FIELD_MAX) as usize {
            return false;
        }
        self.hops[n] = hop;
        self.header.n_hop += 1;
        self.header.path_id ^= switch_id & 0x0FFF;
        true
    }
}

impl IntStack {
    /// Overwrite record `i` (< 15); nHop is not changed.
    #[inline]
    pub fn set_hop(&mut self, i: usize, hop: IntHop) {
        if let Some(h) = self.hops.get_mut(i) {
            *h = hop;
        }
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for IntStack {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let n = u.int_in_range(0..=NHOP_FIELD_MAX)?;
        let mut s = IntStack::new();
        for i in 0..n as usize {
            s.hops[i] = u.arbitrary()?;
        }
        s.header = IntStackHeader {
            n_hop: n,
            path_id: u.int_in_range(0..=0x0FFF)?,
        };
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wire.md 5.1's table of B: 0 25G, 1 50G, 2 100G, 3 200G, 4 400G, 5 800G, 6 10G, 7 40G,
    /// 8..15 reserved; each rate back to its code.
    #[test]
    fn line_rate_codes() {
        let g = 1_000_000_000u64;
        let table = [25, 50, 100, 200, 400, 800, 10, 40];
        for (code, gbps) in table.into_iter().enumerate() {
            let r = LineRate(code as u8);
            assert_eq!(r.bps(), Some(gbps * g), "code {code}");
            assert_eq!(LineRate::from_bps(gbps * g), Some(r));
            assert!(!r.is_reserved());
        }
        for code in 8..16 {
            assert_eq!(LineRate(code).bps(), None);
            assert!(LineRate(code).is_reserved());
        }
        assert_eq!(LineRate::from_bps(25 * g + 1), None);
    }

    /// A stack holds 15 records at most (4-bit nHop); pathID keeps 12 bits; a switch XORs
    /// the low 12 bits of its ID in (wire.md 5.2; a full stack: `stack_push_xors_path_id`).
    #[test]
    fn stacks_from_records_and_switches() {
        let hop = IntHop {
            b: 2,
            ts: 7,
            tx_bytes: 8,
            qlen: 9,
        };
        assert!(IntStack::from_hops(0, &[hop; 16]).is_none());
        let s = IntStack::from_hops(0xF123, &[hop; 15]).unwrap();
        assert_eq!((s.n_hop(), s.path_id(), s.hops().len()), (15, 0x123, 15));
        let mut s = IntStack::from_hops(0x0F0, &[hop]).unwrap();
        assert!(s.push(0x1ABC, hop, 5));
        // 0x0F0 ^ 0xABC = 0xA4C.
        assert_eq!((s.n_hop(), s.path_id()), (2, 0xA4C));
    }

    // Hand-computed from the wire.md 5.1 layout.
    #[test]
    fn hop_fields_from_literal() {
        // B=15, TS=0xFFFFFF, txBytes=0xFFFFF, qLen=0xFFFF: every bit set.
        assert_eq!(
            IntHop::from_u64(u64::MAX),
            IntHop {
                b: 15,
                ts: 0xFF_FFFF,
                tx_bytes: 0xF_FFFF,
                qlen: 0xFFFF
            }
        );
        // B=1 (50G), TS=1, txBytes=1, qLen=1 -> 0x1000_0010_0001_0001.
        let h = IntHop {
            b: 1,
            ts: 1,
            tx_bytes: 1,
            qlen: 1,
        };
        assert_eq!(h.to_u64(), 0x1000_0010_0001_0001);
        assert_eq!(
            h.to_bytes(),
            [0x10, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00, 0x01]
        );
        assert_eq!(h.line_rate().bps(), Some(50_000_000_000));
        assert_eq!(h.qlen_bytes(), 80);
    }

    #[test]
    fn modular_deltas() {
        // TS wraps: 0x000010 - 0xFFFFF0 mod 2^24 = 0x20 = 32 ns.
        let a = IntHop {
            ts: 0xFF_FFF0,
            ..Default::default()
        };
        let b = IntHop {
            ts: 0x00_0010,
            ..Default::default()
        };
        assert_eq!(b.ts_delta_ns(a), 32);
        // txBytes wraps: 3 - 0xFFFFE mod 2^20 = 5 units = 640 bytes.
        let a = IntHop {
            tx_bytes: 0xF_FFFE,
            ..Default::default()
        };
        let b = IntHop {
            tx_bytes: 3,
            ..Default::default()
        };
        assert_eq!(b.tx_bytes_delta(a), 640);
    }

    #[test]
    fn stack_push_xors_path_id() {
        let mut s = IntStack::new();
        assert!(s.push(0xABC, IntHop::default(), 2));
        assert!(s.push(0x123, IntHop::default(), 2));
        assert!(!s.push(0x001, IntHop::default(), 2)); // full at max_hops = 2
        assert_eq!(s.n_hop(), 2);
        assert_eq!(s.path_id(), 0xABC ^ 0x123); // 0xB9F
        assert_eq!(IntStackHeader::from_u16(0x2B9F), s.header);
    }
}
