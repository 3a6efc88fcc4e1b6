//! Packets captured twice (docs/verdicts.md "Packets captured twice"): a data frame's
//! identity and each flow's last frames.

use ccreplay_codecs::capture::Record;
use ccreplay_codecs::packet::Packet;

use crate::path::PathKey;

/// A data frame's identity without hashing its bytes: PSN, opcode and ICRC (over the IP and
/// UDP headers' invariant fields, BTH and payload: wire.md 4), the IP header's varying fields
/// (IPv4: ID, flags, TTL, checksum — which covers the rest of the header; IPv6: traffic class,
/// flow label, length, hop limit) and the UDP source port. Two frames of one flow with the same
/// key are the same packet, or a resend of it — and a sender resends only when asked (a NAK,
/// an RNR NAK, a repeated READ request: `Pre::resend_cue`) or after its timeout, which no NIC
/// sets below its round trip. So one with no cue between and less than a base RTT later is
/// the packet captured twice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct DupKey([u64; 3]);

impl DupKey {
    /// The key of `p`, whose identity through routers is `path` (its PSN, opcode and ICRC
    /// word and its UDP source port are this key's too).
    pub(super) fn of(rec: &Record<'_>, p: &Packet<'_>, path: PathKey) -> DupKey {
        let [a, _, c] = path.0;
        // IPv4: bytes 4..12 (ID, flags and fragment offset, TTL, protocol, checksum); IPv6:
        // bytes 0..8 (version, traffic class, flow label, payload length, next header, hop
        // limit).
        let b = p.ip.map_or(0, |ip| {
            let at = if ip.addrs.src().is_ipv4() { 4 } else { 0 };
            rec.data
                .get(ip.offset + at..ip.offset + at + 8)
                .map_or(0, |w| u64::from_be_bytes(w.try_into().unwrap_or([0; 8])))
        });
        // The frame's length is in the IP header (IPv4's checksum covers it).
        DupKey([a, b, c])
    }
}

/// The last data frames of a flow (`Apply::recent`): a copy of the same packet comes within a
/// few frames (two interfaces on one wire), or a queue's worth later (a mirror of two ports
/// of its path).
#[derive(Clone, Copy, Default)]
pub(super) struct Recent {
    /// Each frame's first key word (PSN, opcode, ICRC), apart: a frame's is compared with the
    /// 16 into a bit mask, the rest of the key only on a match.
    first: [u64; RECENT],
    /// The other key words, time, the cue epoch (`Apply::epoch`) and frame number.
    rest: [(u64, u64, u64, u64, u64); RECENT],
    next: usize,
    /// The PSN after the highest one remembered (none before the first frame): a frame at or
    /// past it copies nothing — the usual case, answered without the scan.
    ahead: Option<u32>,
}

pub(super) const RECENT: usize = 16;

impl Recent {
    /// The frame `key` copies, if it was seen in `epoch` less than `window_ns` from `t_ns`;
    /// remembers frame `frame` when not.
    #[inline(always)]
    pub(super) fn copy_of(
        &mut self,
        key: DupKey,
        t_ns: u64,
        epoch: u64,
        window_ns: u64,
        frame: u64,
    ) -> Option<u64> {
        let [a, b, c] = key.0;
        let psn = (a & 0xFF_FFFF) as u32;
        // Serial arithmetic (C-2): at or up to half the PSN space past `ahead` is new.
        let new = self
            .ahead
            .is_none_or(|at| psn.wrapping_sub(at) & 0xFF_FFFF < 1 << 23);
        let mut hits = 0u32;
        if new {
            self.ahead = Some((psn + 1) & 0xFF_FFFF);
        } else {
            for (i, &x) in self.first.iter().enumerate() {
                hits |= u32::from(x == a) << i;
            }
        }
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let (rb, rc, t, e, of) = self.rest[i];
            if rb == b && rc == c && e == epoch && t.abs_diff(t_ns) < window_ns {
                return Some(of);
            }
        }
        self.first[self.next] = a;
        self.rest[self.next] = (b, c, t_ns, epoch, frame);
        self.next = (self.next + 1) % RECENT;
        None
    }
}
