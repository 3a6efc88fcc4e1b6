//! Lumina's mirrored copies (wire.md 2.3): the capture a Lumina testbed makes of two RDMA NICs
//! talking through a Tofino switch (Yu et al., "Understanding the Micro-Behaviors of Hardware
//! Offloaded Network Stacks with Lumina", SIGCOMM 2023).
//!
//! The switch forwards every RoCEv2 packet between the two hosts, injects the events the test
//! asks for on chosen packets, and mirrors each packet as it leaves its ingress pipeline to the
//! dump servers. It rewrites the copy in place — no encapsulation:
//!
//! | field of the copy | holds                                                            |
//! |-------------------|------------------------------------------------------------------|
//! | destination MAC   | the switch's ingress timestamp, ns (48 bits, wraps)              |
//! | source MAC        | the switch's sequence number of RoCEv2 packets (1 to 2^31 − 1, then 1 again) |
//! | IPv4 TTL          | the event injected: 0 none, 1 drop, 2 ECN mark, 3 bit error      |
//! | UDP source port   | random (spreads the copies over the dump servers' queues)        |
//! | UDP destination port | the port the testbed configures (the dumpers must not see RoCEv2) |
//! | UDP checksum      | the packet's own UDP source port                                 |
//!
//! Everything else is the packet as the switch forwarded it: an ECN event's CE mark is already
//! in the copy's IP header; a bit error (the switch flips the IPv4 identification of the packet
//! it forwards, so that the receiving NIC's ICRC check fails) is undone in the copy; a
//! dropped packet is copied before the switch drops it. With the UDP source and destination
//! ports put back ([`Lumina::udp_src_port`], 4791), the copy's ICRC is the packet's own — the
//! ICRC masks the TTL, the TOS and both checksums.
//!
//! Lumina's dumper (`lumina/roce-pkt-dump`) puts the ports back itself before it writes its
//! file (source port from the checksum field, destination 4791; checksums recomputed, CE set on
//! an ECN event's copy): copies on the RoCEv2 port, read with `DecodeConfig::lumina_port` set
//! to it, keep the ports they carry.

use crate::mirror::SwitchTime;

/// The largest sequence number: the switch's counter goes from there back to 1.
pub const SEQ_MAX: u64 = 0x7FFF_FFFF;

/// The event the switch injected on a packet (the copy's IPv4 TTL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LuminaEvent {
    /// None: forwarded as it came.
    None,
    /// Dropped after the copy: the packet's receiver never got it.
    Drop,
    /// Marked CE (the copy shows the mark).
    Ecn,
    /// Corrupted (IPv4 identification flipped): the receiving NIC's ICRC check drops it.
    BitError,
}

impl LuminaEvent {
    /// The event a TTL names; `None` for a TTL no Lumina switch writes (above 3).
    pub const fn from_ttl(ttl: u8) -> Option<Self> {
        match ttl {
            0 => Some(LuminaEvent::None),
            1 => Some(LuminaEvent::Drop),
            2 => Some(LuminaEvent::Ecn),
            3 => Some(LuminaEvent::BitError),
            _ => None,
        }
    }

    /// Short name for reports and inspect (`none`, `drop`, `ecn`, `bit_error`).
    pub const fn name(self) -> &'static str {
        match self {
            LuminaEvent::None => "none",
            LuminaEvent::Drop => "drop",
            LuminaEvent::Ecn => "ecn",
            LuminaEvent::BitError => "bit_error",
        }
    }

    /// True when the packet never reached its receiver whole (dropped, or corrupted so that
    /// the receiving NIC discards it).
    pub const fn lost(self) -> bool {
        matches!(self, LuminaEvent::Drop | LuminaEvent::BitError)
    }
}

/// What a Lumina copy carries besides the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lumina {
    /// The switch's ingress timestamp, ns (48 bits).
    pub switch_ns: u64,
    /// The switch's sequence number (48 bits on the wire; the switch writes 1 to [`SEQ_MAX`]).
    pub seq: u64,
    /// The event injected.
    pub event: LuminaEvent,
    /// The packet's own UDP source port (the copy's UDP checksum field).
    pub udp_src_port: u16,
    /// The copy's UDP source and destination ports, as captured.
    pub copy_src_port: u16,
    /// See `copy_src_port`.
    pub copy_dst_port: u16,
}

impl Lumina {
    /// Read a copy's fields: its Ethernet addresses, IPv4 TTL and UDP ports and checksum.
    /// `None` when the TTL names no event (not a Lumina copy).
    pub fn read(dst_mac: [u8; 6], src_mac: [u8; 6], ttl: u8, udp: [u16; 3]) -> Option<Self> {
        let u48 = |m: [u8; 6]| {
            let mut b = [0u8; 8];
            b[2..].copy_from_slice(&m);
            u64::from_be_bytes(b)
        };
        Some(Lumina {
            switch_ns: u48(dst_mac),
            seq: u48(src_mac),
            event: LuminaEvent::from_ttl(ttl)?,
            udp_src_port: udp[2],
            copy_src_port: udp[0],
            copy_dst_port: udp[1],
        })
    }

    /// The switch's time of the copy, for a switch clock (`mirror_clock`): 1 ns units,
    /// wrapping every 2^48 ns (3.3 days).
    pub fn switch_time(&self) -> SwitchTime {
        SwitchTime {
            ns: self.switch_ns,
            unit_ns: 1,
            period_ns: Some(1 << 48),
        }
    }

    /// The sequence number the switch gives the packet after one with `seq`.
    pub const fn next_seq(seq: u64) -> u64 {
        if seq >= SEQ_MAX { 1 } else { seq + 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields by hand: MACs read as 48-bit big-endian numbers, the TTL's four events and
    /// a TTL no switch writes.
    #[test]
    fn fields_by_hand() {
        let l = Lumina::read(
            [0x00, 0x00, 0x00, 0x01, 0x02, 0x03],
            [0x00, 0x00, 0x00, 0x00, 0x01, 0x00],
            2,
            [0x1234, 5000, 49152],
        )
        .unwrap();
        assert_eq!(l.switch_ns, 0x01_0203);
        assert_eq!(l.seq, 256);
        assert_eq!(l.event, LuminaEvent::Ecn);
        assert_eq!(
            (l.udp_src_port, l.copy_src_port, l.copy_dst_port),
            (49152, 0x1234, 5000)
        );
        let ev: Vec<_> = (0..=4).map(LuminaEvent::from_ttl).collect();
        assert_eq!(
            ev,
            [
                Some(LuminaEvent::None),
                Some(LuminaEvent::Drop),
                Some(LuminaEvent::Ecn),
                Some(LuminaEvent::BitError),
                None
            ]
        );
        assert!(Lumina::read([0; 6], [0; 6], 64, [0; 3]).is_none());
    }

    /// The switch's counter: `value < 0x7fffffff ? value + 1 : 1`.
    #[test]
    fn the_sequence_wraps_to_one() {
        assert_eq!(Lumina::next_seq(1), 2);
        assert_eq!(Lumina::next_seq(0x7FFF_FFFE), 0x7FFF_FFFF);
        assert_eq!(Lumina::next_seq(0x7FFF_FFFF), 1);
    }
}
