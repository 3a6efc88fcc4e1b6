//! Where a packet sits in its message, from the BTH opcode (RCC-3; seed 002 §III-D).
//!
//! The BTH opcode's top 3 bits are the transport (RC 000, UC 001, RD 010, UD 011, CNP 100,
//! XRC 101; 110 and 111 are manufacturer-specific) and its low 5 bits the operation
//! (InfiniBand Architecture Specification, vol. 1, §9.2 Table 39). Message positions are read
//! from the operation bits of every data-carrying transport:
//!
//! | op | operation | position |
//! |----|-----------|----------|
//! | 0x00 / 0x06 / 0x0D | SEND / RDMA WRITE / RDMA READ response First | First |
//! | 0x01 / 0x07 / 0x0E | ... Middle | Middle |
//! | 0x02, 0x03, 0x16 / 0x08, 0x09 / 0x0F | SEND Last (+Imm, +Inv) / WRITE Last (+Imm) / READ response Last | Last |
//! | 0x04, 0x05, 0x17 / 0x0A, 0x0B / 0x10 | SEND Only (+Imm, +Inv) / WRITE Only (+Imm) / READ response Only | Only |
//!
//! READ responses carry the data of a READ towards its requester, so a receiver counts them as
//! messages too ("similarly, we can also count the number of messages generated in other RDMA
//! operations", §III-D). Everything else (READ requests, ACKs, atomics, CNPs, vendor opcodes)
//! is [`MessagePosition::Other`].

/// A packet's place in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessagePosition {
    /// First packet of a multi-packet message.
    First,
    /// Middle packet.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// A single-packet message.
    Only,
    /// Not a message data packet.
    Other,
}

/// Classify a BTH opcode (see the module table).
pub const fn message_position(opcode: u8) -> MessagePosition {
    let transport = opcode >> 5;
    // RC, UC, RD, UD and XRC carry messages; CNP (4) and vendor classes (6, 7) do not.
    if transport == 4 || transport > 5 {
        return MessagePosition::Other;
    }
    match opcode & 0x1F {
        0x00 | 0x06 | 0x0D => MessagePosition::First,
        0x01 | 0x07 | 0x0E => MessagePosition::Middle,
        0x02 | 0x03 | 0x08 | 0x09 | 0x0F | 0x16 => MessagePosition::Last,
        0x04 | 0x05 | 0x0A | 0x0B | 0x10 | 0x17 => MessagePosition::Only,
        _ => MessagePosition::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::MessagePosition::*;
    use super::*;

    #[test]
    fn ibta_opcodes() {
        // RC (IBTA vol. 1 Table 39): SEND First 0x00 .. SEND Only w/ Inv 0x17.
        let rc = [
            (0x00, First),
            (0x01, Middle),
            (0x02, Last),
            (0x03, Last),
            (0x04, Only),
            (0x05, Only),
            (0x06, First),
            (0x07, Middle),
            (0x08, Last),
            (0x09, Last),
            (0x0A, Only),
            (0x0B, Only),
            (0x0C, Other), // RDMA READ Request
            (0x0D, First),
            (0x0E, Middle),
            (0x0F, Last),
            (0x10, Only),
            (0x11, Other), // Acknowledge
            (0x12, Other), // ATOMIC Acknowledge
            (0x13, Other), // CmpSwap
            (0x14, Other), // FetchAdd
            (0x16, Last),  // SEND Last with Invalidate
            (0x17, Only),  // SEND Only with Invalidate
        ];
        for (op, pos) in rc {
            assert_eq!(message_position(op), pos, "opcode {op:#04x}");
        }
        assert_eq!(message_position(0x2A), Only); // UC RDMA WRITE Only
        assert_eq!(message_position(0x64), Only); // UD SEND Only
        assert_eq!(message_position(0xA6), First); // XRC RDMA WRITE First
        assert_eq!(message_position(0x81), Other); // CNP
        assert_eq!(message_position(0xC0), Other); // manufacturer-specific
        assert_eq!(message_position(0xFF), Other);
    }
}
