//! IEEE 802.1Qbb priority flow control pause frames (wire.md 6).
//!
//! Ethernet destination 01:80:C2:00:00:01, EtherType 0x8808 (MAC control), then
//!
//! | bytes | field                                          |
//! |-------|------------------------------------------------|
//! | 0-1   | MAC control opcode 0x0101                      |
//! | 2-3   | class-enable vector (bit i = priority i)       |
//! | 4-19  | 8 pause times, u16 each, in quanta of 512 bits |
//!
//! padded to the 60-byte minimum frame. A time of 0 resumes the priority.

use nom::{IResult, Parser, number::complete::be_u16};

use crate::error::{DecodeError, ErrorKind, Layer};

/// EtherType of MAC control frames.
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// MAC control opcode of PFC.
pub const PFC_OPCODE: u16 = 0x0101;
/// The reserved multicast destination of pause frames.
pub const PFC_DEST_MAC: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01];
/// Bytes of the PFC body after the EtherType.
pub const PFC_BODY_LEN: usize = 20;
/// Minimum Ethernet frame without FCS.
pub const MIN_FRAME_LEN: usize = 60;
/// Bit times in one pause quantum.
pub const QUANTUM_BITS: u64 = 512;

/// A PFC frame body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PfcRepr {
    /// Class-enable vector; bits 8..15 are reserved.
    pub class_enable: u16,
    /// Pause time per priority, in quanta.
    pub quanta: [u16; 8],
}

impl PfcRepr {
    /// nom parser of the body (opcode checked by [`PfcRepr::decode`]).
    pub fn parse(i: &[u8]) -> IResult<&[u8], (u16, PfcRepr)> {
        let (i, (opcode, class_enable)) = (be_u16, be_u16).parse(i)?;
        let mut quanta = [0u16; 8];
        let mut i = i;
        for q in &mut quanta {
            let (rest, v) = be_u16(i)?;
            *q = v;
            i = rest;
        }
        Ok((
            i,
            (
                opcode,
                PfcRepr {
                    class_enable,
                    quanta,
                },
            ),
        ))
    }

    /// Decode the body that starts at `offset` of the frame; returns the frame and a warning
    /// when reserved class-enable bits are set.
    pub fn decode(body: &[u8], offset: usize) -> Result<(Self, Option<DecodeError>), DecodeError> {
        let (_, (opcode, repr)) = Self::parse(body)
            .map_err(|_| DecodeError::truncated(Layer::Pfc, offset, PFC_BODY_LEN, body.len()))?;
        if opcode != PFC_OPCODE {
            return Err(DecodeError::new(
                Layer::Pfc,
                offset,
                ErrorKind::Unsupported {
                    what: "MAC control opcode",
                    found: opcode as u64,
                },
            ));
        }
        let warning = (repr.class_enable & 0xFF00 != 0).then(|| {
            DecodeError::new(
                Layer::Pfc,
                offset + 2,
                ErrorKind::Reserved {
                    field: "pfc.class_enable",
                    found: repr.class_enable as u64,
                },
            )
        });
        Ok((repr, warning))
    }

    /// True when priority `p` (0..8) is paused: its enable bit is set and its time is non-zero.
    pub fn paused(&self, p: usize) -> bool {
        p < 8 && self.class_enable & (1 << p) != 0 && self.quanta[p] != 0
    }

    /// Pause time of priority `p` in ns at `link_bps`, floored (a quantum is 512 bit times).
    /// 0 when the priority is not enabled or the rate is 0.
    pub fn pause_ns(&self, p: usize, link_bps: u64) -> u64 {
        if p >= 8 || self.class_enable & (1 << p) == 0 || link_bps == 0 {
            return 0;
        }
        // 65535 × 512 × 1e9 < 2^64, so the product cannot overflow.
        self.quanta[p] as u64 * QUANTUM_BITS * 1_000_000_000 / link_bps
    }

    /// The whole 60-byte frame (no FCS) from `src_mac`.
    pub fn emit_frame(&self, src_mac: [u8; 6]) -> [u8; MIN_FRAME_LEN] {
        let mut f = [0u8; MIN_FRAME_LEN];
        f[..6].copy_from_slice(&PFC_DEST_MAC);
        f[6..12].copy_from_slice(&src_mac);
        f[12..14].copy_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
        f[14..16].copy_from_slice(&PFC_OPCODE.to_be_bytes());
        f[16..18].copy_from_slice(&self.class_enable.to_be_bytes());
        for (i, q) in self.quanta.iter().enumerate() {
            f[18 + 2 * i..20 + 2 * i].copy_from_slice(&q.to_be_bytes());
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_frame() {
        // Pause priority 3 for 0xFFFF quanta, resume priority 0: enable = 0b1001 = 0x0009.
        let repr = PfcRepr {
            class_enable: 0x0009,
            quanta: [0, 0, 0, 0xFFFF, 0, 0, 0, 0],
        };
        let f = repr.emit_frame([0x02, 0, 0, 0, 0, 1]);
        assert_eq!(&f[..6], &[0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
        assert_eq!(
            &f[12..20],
            &[0x88, 0x08, 0x01, 0x01, 0x00, 0x09, 0x00, 0x00]
        );
        assert_eq!(&f[24..26], &[0xFF, 0xFF]); // priority 3 at body offset 4 + 2×3 = 10 -> 24
        let (back, w) = PfcRepr::decode(&f[14..], 14).unwrap();
        assert_eq!((back, w), (repr, None));
        assert!(back.paused(3) && !back.paused(0) && !back.paused(1));
        // 65535 quanta × 512 bits / 100 Gbps = 33,553,920 bits / 1e11 bps = 335,539.2 ns -> 335,539.
        assert_eq!(back.pause_ns(3, 100_000_000_000), 335_539);
        // 25 Gbps: 33,553,920 / 25 = 1,342,156.8 -> 1,342,156 ns.
        assert_eq!(back.pause_ns(3, 25_000_000_000), 1_342_156);
        assert_eq!(back.pause_ns(1, 100_000_000_000), 0);
    }

    /// A priority pauses only when its enable bit is set, and only priorities 0..8 exist:
    /// priority 0 below has time but no enable bit (802.1Qbb: the time is ignored), bit 8 is
    /// reserved (a warning at the class-enable vector, body offset 2), and a rate of 0 gives
    /// no time rather than a division by zero.
    #[test]
    fn pause_needs_the_enable_bit_and_a_priority_below_8() {
        let repr = PfcRepr {
            class_enable: 0x0120,
            quanta: [7, 0, 0, 0, 0, 4660, 0, 0],
        };
        let f = repr.emit_frame([0x02, 0, 0, 0, 0, 1]);
        let (back, w) = PfcRepr::decode(&f[14..], 14).unwrap();
        assert_eq!(back, repr);
        let w = w.expect("reserved enable bit 8");
        assert_eq!((w.layer, w.offset), (Layer::Pfc, 16));
        assert_eq!(
            w.kind,
            ErrorKind::Reserved {
                field: "pfc.class_enable",
                found: 0x0120
            }
        );
        assert!(back.paused(5) && !back.paused(0) && !back.paused(8) && !back.paused(9));
        // 4660 quanta × 512 bits = 2,385,920 bits / 1e11 bps = 23,859.2 ns -> 23,859.
        assert_eq!(back.pause_ns(5, 100_000_000_000), 23_859);
        // Priority 0: 7 quanta (35.84 ns at 100 Gbps) but not enabled.
        assert_eq!(back.pause_ns(0, 100_000_000_000), 0);
        assert_eq!(back.pause_ns(8, 100_000_000_000), 0);
        assert_eq!(back.pause_ns(5, 0), 0);
    }

    #[test]
    fn other_mac_control_is_unsupported() {
        let mut f = PfcRepr::default().emit_frame([0; 6]);
        f[15] = 0x01; // opcode 0x0001: 802.3x PAUSE
        f[14] = 0x00;
        let e = PfcRepr::decode(&f[14..], 14).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Unsupported {
                what: "MAC control opcode",
                found: 1
            }
        );
        let e = PfcRepr::decode(&f[14..20], 14).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                needed: 20,
                available: 6
            }
        );
    }
}
