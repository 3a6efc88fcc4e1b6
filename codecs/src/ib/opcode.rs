//! BTH OpCode: transport (bits 7..5) and operation (bits 4..0), and which extension headers
//! each opcode carries (wire.md 2; IBA vol. 1 ch. 9.2, table 38; RoCEv2 annex A17 for CNP).

use core::fmt;

/// Transport service of an opcode (bits 7..5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable Connected (000).
    Rc,
    /// Unreliable Connected (001).
    Uc,
    /// Reliable Datagram (010).
    Rd,
    /// Unreliable Datagram (011).
    Ud,
    /// Congestion Notification Packet (100).
    Cnp,
    /// Reserved (101) or manufacturer specific (110, 111).
    Other(u8),
}

impl Transport {
    /// Short name (`RC`, `UC`, `RD`, `UD`, `CNP`, `X5`..`X7`).
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Other(5) => "X5",
            Transport::Other(6) => "X6",
            Transport::Other(_) => "X7",
        }
    }
}

/// The extension headers an opcode carries, as a bit set in wire order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtHeaders(u16);

impl ExtHeaders {
    /// RD only: EE-context.
    pub const RDETH: u16 = 1 << 0;
    /// RD and UD: Q_Key and source QP.
    pub const DETH: u16 = 1 << 1;
    /// WRITE_FIRST, WRITE_ONLY(_IMM), READ_REQUEST.
    pub const RETH: u16 = 1 << 2;
    /// CMP_SWAP, FETCH_ADD.
    pub const ATOMIC_ETH: u16 = 1 << 3;
    /// ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, READ_RESP_FIRST/LAST/ONLY.
    pub const AETH: u16 = 1 << 4;
    /// ATOMIC_ACKNOWLEDGE, after AETH.
    pub const ATOMIC_ACK_ETH: u16 = 1 << 5;
    /// The *_IMM opcodes.
    pub const IMM_DT: u16 = 1 << 6;
    /// SEND_LAST_INV, SEND_ONLY_INV.
    pub const IETH: u16 = 1 << 7;
    /// CNP: 16 reserved bytes instead of a payload.
    pub const CNP: u16 = 1 << 8;
    /// The opcode is one wire.md lists.
    pub const KNOWN: u16 = 1 << 15;

    /// True when the bit set contains `flag`.
    #[inline]
    pub const fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }

    /// Total length in bytes of the extension headers present (CNP's reserved bytes included).
    pub const fn len(self) -> usize {
        let mut n = 0;
        if self.has(Self::RDETH) {
            n += 4;
        }
        if self.has(Self::DETH) {
            n += 8;
        }
        if self.has(Self::RETH) {
            n += 16;
        }
        if self.has(Self::ATOMIC_ETH) {
            n += 28;
        }
        if self.has(Self::AETH) {
            n += 4;
        }
        if self.has(Self::ATOMIC_ACK_ETH) {
            n += 8;
        }
        if self.has(Self::IMM_DT) {
            n += 4;
        }
        if self.has(Self::IETH) {
            n += 4;
        }
        if self.has(Self::CNP) {
            n += 16;
        }
        n
    }

    /// True when no extension header is present.
    pub const fn is_empty(self) -> bool {
        self.0 & !Self::KNOWN == 0
    }
}

/// Extension headers of the RC/UC/RD operation codes 0x00..0x17 (bits 4..0), before the
/// transport adds RDETH / DETH. 0x15 and 0x18..0x1F are not in wire.md's list.
const fn operation_ext(op: u8) -> Option<u16> {
    use ExtHeaders as E;
    Some(match op {
        0x00..=0x02 | 0x04 => 0,             // SEND_FIRST/MIDDLE/LAST/ONLY
        0x03 | 0x05 => E::IMM_DT,            // SEND_LAST_IMM, SEND_ONLY_IMM
        0x06 | 0x0A => E::RETH,              // WRITE_FIRST, WRITE_ONLY
        0x07 | 0x08 => 0,                    // WRITE_MIDDLE, WRITE_LAST
        0x09 => E::IMM_DT,                   // WRITE_LAST_IMM
        0x0B => E::RETH | E::IMM_DT,         // WRITE_ONLY_IMM: ImmDt after RETH
        0x0C => E::RETH,                     // READ_REQUEST
        0x0D | 0x0F | 0x10 => E::AETH,       // READ_RESP_FIRST/LAST/ONLY
        0x0E => 0,                           // READ_RESP_MIDDLE
        0x11 => E::AETH,                     // ACKNOWLEDGE
        0x12 => E::AETH | E::ATOMIC_ACK_ETH, // ATOMIC_ACKNOWLEDGE
        0x13 | 0x14 => E::ATOMIC_ETH,        // CMP_SWAP, FETCH_ADD
        0x16 | 0x17 => E::IETH,              // SEND_LAST_INV, SEND_ONLY_INV
        _ => return None,
    })
}

const fn layout_of(code: u8) -> u16 {
    let op = code & 0x1F;
    let known = match code >> 5 {
        0 => operation_ext(op),
        // UC: the SEND and WRITE subset (0x00..0x0B).
        1 if op <= 0x0B => operation_ext(op),
        // RD: the RC set, after RDETH; requests also carry DETH, responses (READ_RESP_*,
        // ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE: 0x0D..0x12) do not (IBA 9.2, table 38; Wireshark).
        2 => match operation_ext(op) {
            Some(e) if matches!(op, 0x0D..=0x12) => Some(e | ExtHeaders::RDETH),
            Some(e) => Some(e | ExtHeaders::RDETH | ExtHeaders::DETH),
            None => None,
        },
        // UD: SEND_ONLY and SEND_ONLY_IMM only, after DETH.
        3 if op == 0x04 || op == 0x05 => match operation_ext(op) {
            Some(e) => Some(e | ExtHeaders::DETH),
            None => None,
        },
        4 if op == 0x01 => Some(ExtHeaders::CNP),
        _ => None,
    };
    match known {
        Some(e) => e | ExtHeaders::KNOWN,
        None => 0,
    }
}

// A `static`, not a `const`: a `const` array indexed at run time may be materialised on the
// stack where it is used — a 512-byte copy per call (callgrind: +9 M instructions on a
// 200,000-packet replay once `is_flow_data` asked it twice per packet).
static LAYOUT: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = layout_of(i as u8);
        i += 1;
    }
    t
};

/// Operation names, indexed by bits 4..0 (wire.md 2).
const OP_NAMES: [&str; 32] = [
    "SEND_FIRST",
    "SEND_MIDDLE",
    "SEND_LAST",
    "SEND_LAST_IMM",
    "SEND_ONLY",
    "SEND_ONLY_IMM",
    "WRITE_FIRST",
    "WRITE_MIDDLE",
    "WRITE_LAST",
    "WRITE_LAST_IMM",
    "WRITE_ONLY",
    "WRITE_ONLY_IMM",
    "READ_REQUEST",
    "READ_RESP_FIRST",
    "READ_RESP_MIDDLE",
    "READ_RESP_LAST",
    "READ_RESP_ONLY",
    "ACKNOWLEDGE",
    "ATOMIC_ACKNOWLEDGE",
    "CMP_SWAP",
    "FETCH_ADD",
    "RESERVED_15",
    "SEND_LAST_INV",
    "SEND_ONLY_INV",
    "RESERVED_18",
    "RESERVED_19",
    "RESERVED_1A",
    "RESERVED_1B",
    "RESERVED_1C",
    "RESERVED_1D",
    "RESERVED_1E",
    "RESERVED_1F",
];

/// A BTH opcode. Every byte value is representable; [`Opcode::is_known`] says whether wire.md
/// lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Opcode(pub u8);

impl Opcode {
    /// RC SEND_FIRST.
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC SEND_MIDDLE.
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC SEND_LAST.
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC SEND_ONLY.
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC WRITE_FIRST.
    pub const RC_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC WRITE_MIDDLE.
    pub const RC_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC WRITE_LAST.
    pub const RC_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC WRITE_ONLY.
    pub const RC_WRITE_ONLY: Opcode = Opcode(0x0A);
    /// RC ACKNOWLEDGE.
    pub const RC_ACK: Opcode = Opcode(0x11);
    /// UD SEND_ONLY.
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// RoCEv2 CNP.
    pub const CNP: Opcode = Opcode(0x81);

    /// Transport bits 7..5.
    #[inline]
    pub const fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            t => Transport::Other(t),
        }
    }

    /// Operation bits 4..0.
    #[inline]
    pub const fn operation(self) -> u8 {
        self.0 & 0x1F
    }

    /// The extension headers this opcode carries (empty and not known for unknown opcodes).
    #[inline]
    pub const fn ext_headers(self) -> ExtHeaders {
        ExtHeaders(LAYOUT[self.0 as usize])
    }

    /// True when wire.md 2 lists the opcode.
    #[inline]
    pub const fn is_known(self) -> bool {
        self.ext_headers().has(ExtHeaders::KNOWN)
    }

    /// True for the CNP opcode 0x81.
    #[inline]
    pub const fn is_cnp(self) -> bool {
        self.0 == 0x81
    }

    /// True for ACKNOWLEDGE (RC or RD).
    #[inline]
    pub const fn is_ack(self) -> bool {
        self.is_known() && self.operation() == 0x11
    }

    /// True for ATOMIC_ACKNOWLEDGE (RC or RD).
    #[inline]
    pub const fn is_atomic_ack(self) -> bool {
        self.is_known() && self.operation() == 0x12
    }

    /// True for a request that carries data from a sender's send queue (SEND / WRITE, any
    /// position; the operations 0x00..0x0B and the INV sends).
    #[inline]
    pub const fn is_data(self) -> bool {
        self.is_known() && !self.is_cnp() && matches!(self.operation(), 0x00..=0x0B | 0x16 | 0x17)
    }

    /// True for an RDMA READ request (RC or RD, operation 0x0C).
    #[inline]
    pub const fn is_read_request(self) -> bool {
        self.is_known() && !self.is_cnp() && self.operation() == 0x0C
    }

    /// True for an RDMA READ response (RC or RD, READ_RESP_FIRST / MIDDLE / LAST / ONLY,
    /// operations 0x0D..0x10): data the responder sends, on the responder's QP.
    #[inline]
    pub const fn is_read_response(self) -> bool {
        self.is_known() && !self.is_cnp() && matches!(self.operation(), 0x0D..=0x10)
    }

    /// True for the data a QP's rate limiter paces and ECN marks: SEND / WRITE requests
    /// ([`Self::is_data`]) and READ responses, which the responder's QP sends as a writer's
    /// QP sends its WRITEs — and which a DCQCN reaction point paces alike (the CNP goes to
    /// the QP that sent the marked packet: the responder's).
    #[inline]
    pub const fn is_flow_data(self) -> bool {
        self.is_data() || self.is_read_response()
    }

    /// True when the packet opens a message: *_FIRST or *_ONLY (RCC-3).
    #[inline]
    pub const fn starts_message(self) -> bool {
        self.is_data()
            && matches!(
                self.operation(),
                0x00 | 0x04 | 0x05 | 0x06 | 0x0A | 0x0B | 0x17
            )
    }

    /// True when the packet closes a message: *_LAST or *_ONLY (RCC-3).
    #[inline]
    pub const fn ends_message(self) -> bool {
        self.is_data()
            && matches!(
                self.operation(),
                0x02 | 0x03 | 0x04 | 0x05 | 0x08 | 0x09 | 0x0A | 0x0B | 0x16 | 0x17
            )
    }

    /// Human name such as `RC SEND_FIRST`, `CNP`, or `UNKNOWN` for unlisted opcodes.
    pub const fn name(self) -> &'static str {
        if self.is_cnp() {
            return "CNP";
        }
        if !self.is_known() {
            return "UNKNOWN";
        }
        OP_NAMES[self.operation() as usize]
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_cnp() {
            f.write_str("CNP")
        } else if self.is_known() {
            write!(f, "{} {}", self.transport().name(), self.name())
        } else {
            write!(f, "UNKNOWN(0x{:02x})", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// ATOMIC_ACKNOWLEDGE is operation 0x12 of RC (0x12) and RD (0x52); UC has none (0x32).
    #[test]
    fn atomic_acknowledge() {
        let yes = |op: u8| Opcode(op).is_atomic_ack();
        assert!(yes(0x12) && yes(0x52));
        assert!(!yes(0x11) && !yes(0x32) && !yes(0x13));
    }

    /// Bytes of extension headers after BTH, summed by hand from the IBTA header lengths
    /// (RDETH 4, DETH 8, RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4, IETH 4; a CNP's
    /// 16 reserved bytes): every header kind counted at least once.
    #[rstest]
    #[case(0x01, 0)] // RC SEND_MIDDLE
    #[case(0x09, 4)] // RC RDMA WRITE_LAST_WITH_IMM: ImmDt
    #[case(0x0B, 20)] // RC RDMA WRITE_ONLY_WITH_IMM: RETH + ImmDt
    #[case(0x11, 4)] // RC ACKNOWLEDGE: AETH
    #[case(0x12, 12)] // RC ATOMIC_ACKNOWLEDGE: AETH + AtomicAckETH
    #[case(0x13, 28)] // RC CMP_SWAP: AtomicETH
    #[case(0x16, 4)] // RC SEND_LAST_WITH_INVALIDATE: IETH
    #[case(0x44, 12)] // RD SEND_ONLY: RDETH + DETH
    #[case(0x53, 40)] // RD CMP_SWAP: RDETH + DETH + AtomicETH
    #[case(0x65, 12)] // UD SEND_ONLY_WITH_IMM: DETH + ImmDt
    #[case(0x81, 16)] // CNP
    fn extension_header_bytes(#[case] op: u8, #[case] len: usize) {
        assert!(Opcode(op).is_known(), "opcode 0x{op:02x}");
        let h = Opcode(op).ext_headers();
        assert_eq!(h.len(), len, "opcode 0x{op:02x}");
        assert_eq!(h.is_empty(), len == 0, "opcode 0x{op:02x}");
    }

    // Expected layouts read off wire.md section 2, one row per opcode family.
    #[rstest]
    #[case(0x00, true, 0)]
    #[case(0x03, true, ExtHeaders::IMM_DT)]
    #[case(0x06, true, ExtHeaders::RETH)]
    #[case(0x0B, true, ExtHeaders::RETH | ExtHeaders::IMM_DT)]
    #[case(0x0C, true, ExtHeaders::RETH)]
    #[case(0x0D, true, ExtHeaders::AETH)]
    #[case(0x0E, true, 0)]
    #[case(0x11, true, ExtHeaders::AETH)]
    #[case(0x12, true, ExtHeaders::AETH | ExtHeaders::ATOMIC_ACK_ETH)]
    #[case(0x13, true, ExtHeaders::ATOMIC_ETH)]
    #[case(0x15, false, 0)]
    #[case(0x17, true, ExtHeaders::IETH)]
    #[case(0x18, false, 0)]
    #[case(0x20, true, 0)] // UC SEND_FIRST
    #[case(0x2A, true, ExtHeaders::RETH)] // UC WRITE_ONLY
    #[case(0x2C, false, 0)] // UC has no READ_REQUEST
    #[case(0x51, true, ExtHeaders::RDETH | ExtHeaders::AETH)] // RD ACK: a response, no DETH
    #[case(0x40, true, ExtHeaders::RDETH | ExtHeaders::DETH)] // RD SEND_FIRST: a request
    #[case(0x4E, true, ExtHeaders::RDETH)] // RD READ_RESP_MIDDLE
    #[case(0x64, true, ExtHeaders::DETH)]
    #[case(0x65, true, ExtHeaders::DETH | ExtHeaders::IMM_DT)]
    #[case(0x60, false, 0)] // UD SEND_FIRST does not exist
    #[case(0x81, true, ExtHeaders::CNP)]
    #[case(0x80, false, 0)]
    #[case(0xC0, false, 0)]
    #[case(0xFF, false, 0)]
    fn layout_per_opcode(#[case] code: u8, #[case] known: bool, #[case] ext: u16) {
        let op = Opcode(code);
        assert_eq!(op.is_known(), known, "0x{code:02x}");
        assert_eq!(op.ext_headers().0 & !ExtHeaders::KNOWN, ext, "0x{code:02x}");
    }

    #[test]
    fn extension_lengths_add_up() {
        // RD ATOMIC_ACKNOWLEDGE: RDETH 4 + AETH 4 + AtomicAckETH 8 = 16.
        assert_eq!(Opcode(0x52).ext_headers().len(), 16);
        // RD FETCH_ADD: RDETH 4 + DETH 8 + AtomicETH 28 = 40.
        assert_eq!(Opcode(0x54).ext_headers().len(), 40);
        // RC WRITE_ONLY_IMM: RETH 16 + ImmDt 4 = 20.
        assert_eq!(Opcode(0x0B).ext_headers().len(), 20);
        // CNP: 16 reserved bytes.
        assert_eq!(Opcode::CNP.ext_headers().len(), 16);
    }

    #[test]
    fn message_boundaries() {
        assert!(Opcode(0x00).starts_message() && !Opcode(0x00).ends_message());
        assert!(!Opcode(0x01).starts_message() && !Opcode(0x01).ends_message());
        assert!(Opcode(0x02).ends_message() && !Opcode(0x02).starts_message());
        assert!(Opcode(0x04).starts_message() && Opcode(0x04).ends_message());
        assert!(Opcode(0x64).starts_message() && Opcode(0x64).ends_message());
        assert!(!Opcode(0x11).is_data());
        assert_eq!(Opcode(0x2A).to_string(), "UC WRITE_ONLY");
        assert_eq!(Opcode(0x1F).to_string(), "UNKNOWN(0x1f)");
    }

    /// The READ opcodes of IBA vol. 1 table 38 (wire.md 2): RC 0x0C request, 0x0D..0x10
    /// responses; RD the same operations at 0x4C..0x50; UC and UD have no READ (0x2C..0x30,
    /// 0x6C..0x70 are reserved), nor does the CNP.
    #[rstest]
    #[case(0x0C, true, false)]
    #[case(0x0D, false, true)]
    #[case(0x0E, false, true)]
    #[case(0x0F, false, true)]
    #[case(0x10, false, true)]
    #[case(0x4C, true, false)]
    #[case(0x4D, false, true)]
    #[case(0x50, false, true)]
    #[case(0x11, false, false)] // ACKNOWLEDGE
    #[case(0x12, false, false)] // ATOMIC_ACKNOWLEDGE
    #[case(0x2C, false, false)] // UC: reserved
    #[case(0x2D, false, false)]
    #[case(0x6D, false, false)] // UD: reserved
    #[case(0x81, false, false)] // CNP
    fn read_opcodes(#[case] op: u8, #[case] request: bool, #[case] response: bool) {
        let o = Opcode(op);
        assert_eq!(o.is_read_request(), request, "{o}");
        assert_eq!(o.is_read_response(), response, "{o}");
        // Responses are flow data, requests are not; neither is a SEND / WRITE.
        assert_eq!(o.is_flow_data(), response, "{o}");
        assert!(!o.is_data(), "{o}");
    }

    #[test]
    fn sends_and_writes_are_flow_data() {
        for op in [
            0x00, 0x04, 0x06, 0x07, 0x0A, 0x0B, 0x16, 0x17, 0x24, 0x46, 0x64,
        ] {
            assert!(Opcode(op).is_flow_data(), "{}", Opcode(op));
        }
    }
}
