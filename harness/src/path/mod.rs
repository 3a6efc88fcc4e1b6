//! Packets seen at two points of their path (docs/verdicts.md "Packets seen at two points of
//! their path"). A mirror session whose sources are two ports of a routed path, or captures of
//! two points merged, hold each packet once per point, the copy further along with a TTL (IPv6:
//! hop limit) lower by the routers between. Replayed as they are, a sender would seem to send
//! at twice its rate and a receiver to get every packet twice.
//!
//! Each direction of a flow keeps the copies of one point, its host's: what the host sends as
//! it leaves (the higher TTL), what it receives as it arrives (the lower: after every queue and
//! ECN mark on the way); the others are skipped (`Skip::PathCopy`). Two points are known when a
//! frame comes again with the same identity ([`PathKey`]) and another TTL. A direction's first
//! [`HOLD_FRAMES`] frames are looked at for that; the frames it receives wait meanwhile (the
//! far copy comes first, so which to keep is not known yet), at most [`HOLD_NS`]. A direction
//! with no copy among them is one point; if its TTL then keeps changing, the verdict says so.
//! A capture whose first [`HOLD_NS`] shows no packet at two points holds nothing after: a
//! direction found at two points later has its far copies used until then, and the host's
//! copies of them skipped, so that no packet is an event twice.
//! At a switch port there is no host to be near: copies there are the verdict's error.
//!
//! Role: the replay's extraction (`extract`) and `init`'s survey (`detect::survey`) tell the
//! copies apart here. May use: codecs (the packet's fields) and nothing else of the harness.

use ccreplay_codecs::capture::Record;
use ccreplay_codecs::packet::{Packet, Roce};

/// A direction's frames looked at for copies before it is taken for one point.
pub(crate) const HOLD_FRAMES: u32 = 64;
/// The longest a received frame waits for the copy that tells which point is its host's: the
/// queues between the two points (250 µs is 3 MB at 100 Gbps), and how long the capture's
/// start is watched for packets at two points before nothing is held.
pub(crate) const HOLD_NS: u64 = 250_000;
/// Slots of a direction's table: frames are found by PSN, so a copy up to this many packets
/// later is matched.
const SLOTS: usize = 64;

/// A frame's identity through routers: `extract`'s `DupKey` less what a router rewrites
/// (TTL, the IPv4 checksum, ECN, which a switch marks on the way). PSN, opcode and ICRC (which
/// masks them: wire.md 4); IPv4 total length, ID, flags and fragment offset; IPv6 version, flow
/// label, payload length and next header; the UDP source port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PathKey(pub(crate) [u64; 3]);

impl PathKey {
    /// The key of `p` (RoCEv2 `r`) and its TTL or hop limit (0 for a Lumina copy).
    #[inline]
    pub(crate) fn of(rec: &Record<'_>, p: &Packet<'_>, r: &Roce<'_>) -> (PathKey, u8) {
        let icrc = r.icrc.map_or(0, u32::from_be_bytes);
        let a = u64::from(r.bth.psn()) | u64::from(r.bth.opcode().0) << 24 | u64::from(icrc) << 32;
        let Some(ip) = p.ip else {
            return (PathKey([a, 0, 0]), 0);
        };
        // The header's first 8 bytes. IPv4: version and IHL, ToS (masked), total length, ID,
        // flags and fragment offset. IPv6: version, traffic class (masked), flow label,
        // payload length, next header, hop limit (masked).
        let mask = if ip.addrs.src().is_ipv4() {
            0xFF00_FFFF_FFFF_FFFF
        } else {
            0xF00F_FFFF_FFFF_FF00
        };
        let b = rec.data.get(ip.offset..ip.offset + 8).map_or(0, |w| {
            u64::from_be_bytes(w.try_into().unwrap_or([0; 8])) & mask
        });
        let c = p.udp.map_or(0, |u| u64::from(u.src_port));
        // A Lumina copy's TTL is the event the switch injected (docs/wire.md 2.3), not hops.
        let ttl = if p.lumina.is_some() { 0 } else { ip.ttl };
        (PathKey([a, b, c]), ttl)
    }

    fn psn(self) -> usize {
        (self.0[0] & 0xFF_FFFF) as usize
    }
}

/// One frame of a direction's table.
#[derive(Clone, Copy, Default)]
struct Slot {
    key: PathKey,
    frame: u64,
    ttl: u8,
    /// Made an event at once while its direction was unknown (not held): if it was the far
    /// copy, the host's copy of it must not be one too.
    early: bool,
    full: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Still looking: `seen` frames so far.
    #[default]
    Unknown,
    /// One point: its TTL now, and how often it changed since.
    One { ttl: u8 },
    /// Two points: the host's TTL.
    Two { near: u8 },
}

/// One direction of a flow.
#[derive(Clone, Default)]
struct Dir {
    state: State,
    seen: u32,
    /// By PSN, while `Unknown` and `Two`; dropped at `One`.
    table: Vec<Slot>,
    /// `One`: frames whose TTL differs from the frame's before, and the TTL before the last.
    flips: u64,
    before: u8,
}

/// What becomes of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Use,
    /// A copy of the packet at the other point (`far_kept`: the host's own copy, after the far
    /// one was used because it came first).
    Skip {
        far_kept: bool,
    },
    /// Wait until its direction is known ([`Points::held_is_used`]).
    Hold,
}

/// A pair of copies found: the later frame, the earlier, their TTLs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathPair {
    /// The frame that came again.
    pub frame: u64,
    /// The frame it copies.
    pub of: u64,
    /// Its TTL.
    pub ttl: u8,
    /// The TTL of the frame it copies.
    pub of_ttl: u8,
}

/// A direction taken for one point whose TTL then changed: two points whose copies came
/// too far apart to be matched, or a path that keeps changing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtlFlips {
    /// The direction: `2 × flow`, + 1 for ACK / NAK / CNP.
    pub dir: usize,
    /// Frames whose TTL was not the one of the frame before.
    pub flips: u64,
    /// The last two TTLs.
    pub ttls: (u8, u8),
}

/// A frame as [`Points::see`] looks at it: its identity, TTL, frame number and time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub(crate) key: PathKey,
    pub(crate) ttl: u8,
    pub(crate) frame: u64,
    pub(crate) t_ns: u64,
}

/// Which way a frame goes, from the capture point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Sent by the host: its copy is the first, the higher TTL.
    Sent,
    /// Received by the host: its copy is the last, the lower TTL.
    Received,
    /// Through a switch port: no host to be near (copies found, never chosen).
    AtPort,
}

/// Every direction's points, by `2 × flow + (1 for ACK / NAK / CNP)`.
#[derive(Default)]
pub(crate) struct Points {
    dirs: Vec<Dir>,
    /// The first pair found.
    pub(crate) first_pair: Option<PathPair>,
    /// Directions found at two points.
    pub(crate) two: u64,
    /// The first frame's time, and whether received frames are still held (until [`HOLD_NS`]
    /// after it with no direction at two points).
    first_ns: Option<u64>,
    done_holding: bool,
}

impl Points {
    /// The fate of frame `f` of direction `dir`, going `way`.
    #[inline(always)]
    pub(crate) fn see(&mut self, dir: usize, f: Frame, way: Way) -> Fate {
        // The usual case, on every event's path: past the capture's start, one point, its TTL
        // unchanged.
        if self.done_holding
            && let Some(d) = self.dirs.get(dir)
            && d.state == (State::One { ttl: f.ttl })
        {
            return Fate::Use;
        }
        self.see_rest(dir, f, way)
    }

    /// [`Self::see`] but its usual case.
    fn see_rest(&mut self, dir: usize, f: Frame, way: Way) -> Fate {
        let Frame {
            key,
            ttl,
            frame,
            t_ns,
        } = f;
        let (received, port) = (way == Way::Received, way == Way::AtPort);
        if !self.done_holding {
            let first = *self.first_ns.get_or_insert(t_ns);
            self.done_holding = self.two == 0 && t_ns.saturating_sub(first) >= HOLD_NS;
        }
        if self.dirs.len() <= dir {
            self.dirs.resize(dir + 1, Dir::default());
        }
        let d = &mut self.dirs[dir];
        match d.state {
            State::One { ttl: last } => {
                // The usual case: one point, its TTL unchanged.
                if ttl != last {
                    d.flips += 1;
                    d.before = last;
                    d.state = State::One { ttl };
                }
                Fate::Use
            }
            State::Two { near } => {
                let i = key.psn() % SLOTS;
                let s = d.table[i];
                d.table[i] = Slot {
                    key,
                    frame,
                    ttl,
                    early: false,
                    full: true,
                };
                if ttl != near {
                    Fate::Skip { far_kept: false }
                } else if s.full && s.key == key && s.ttl != near && s.early {
                    // Its far copy was used before the two points were known.
                    Fate::Skip { far_kept: true }
                } else {
                    Fate::Use
                }
            }
            State::Unknown => {
                if d.table.is_empty() {
                    d.table = vec![Slot::default(); SLOTS];
                }
                d.seen += 1;
                let i = key.psn() % SLOTS;
                let s = d.table[i];
                let hold = received && !port && !self.done_holding;
                d.table[i] = Slot {
                    key,
                    frame,
                    ttl,
                    early: !hold,
                    full: true,
                };
                if s.full && s.key == key && s.ttl != ttl {
                    self.first_pair.get_or_insert(PathPair {
                        frame,
                        of: s.frame,
                        ttl,
                        of_ttl: s.ttl,
                    });
                    self.two += 1;
                    let d = &mut self.dirs[dir];
                    if port {
                        // No host to be near: found, and left to the verdict.
                        *d = Dir {
                            state: State::One { ttl },
                            ..Dir::default()
                        };
                        return Fate::Use;
                    }
                    let near = if received {
                        ttl.min(s.ttl)
                    } else {
                        ttl.max(s.ttl)
                    };
                    d.state = State::Two { near };
                    // Decided here (skipped, if the far copy): no copy that came early.
                    d.table[i].early = false;
                    return if ttl != near {
                        Fate::Skip { far_kept: false }
                    } else if s.early {
                        Fate::Skip { far_kept: true }
                    } else {
                        Fate::Use
                    };
                }
                if d.seen >= HOLD_FRAMES {
                    self.settle(dir, ttl);
                    return Fate::Use;
                }
                if hold { Fate::Hold } else { Fate::Use }
            }
        }
    }

    /// No received frame is held any more (the capture's first [`HOLD_NS`] showed no packet
    /// at two points).
    pub(crate) fn done_holding(&self) -> bool {
        self.done_holding
    }

    /// Direction `dir` is taken for one point (its frames seen, or one waited too long);
    /// `ttl` is its last frame's.
    pub(crate) fn settle(&mut self, dir: usize, ttl: u8) {
        if let Some(d) = self.dirs.get_mut(dir)
            && d.state == State::Unknown
        {
            *d = Dir {
                state: State::One { ttl },
                ..Dir::default()
            };
        }
    }

    /// Whether a held frame of `dir` with `ttl` is used (else skipped, a far copy), or `None`
    /// while its direction is still unknown.
    pub(crate) fn held_is_used(&self, dir: usize, ttl: u8) -> Option<bool> {
        match self.dirs.get(dir)?.state {
            State::Unknown => None,
            State::One { .. } => Some(true),
            State::Two { near } => Some(ttl == near),
        }
    }

    /// The direction taken for one point whose TTL changed most often since.
    pub(crate) fn most_flips(&self) -> Option<TtlFlips> {
        self.dirs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.flips > 0)
            .max_by_key(|&(i, d)| (d.flips, std::cmp::Reverse(i)))
            .map(|(i, d)| TtlFlips {
                dir: i,
                flips: d.flips,
                ttls: match d.state {
                    State::One { ttl } => (d.before, ttl),
                    _ => (d.before, d.before),
                },
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's key by PSN alone (the rest of the identity 0).
    fn key(psn: u64) -> PathKey {
        PathKey([psn, 0, 0])
    }

    /// Frame `frame` with PSN `psn` and `ttl` at `t_ns`.
    fn f(psn: u64, ttl: u8, frame: u64, t_ns: u64) -> Frame {
        Frame {
            key: key(psn),
            ttl,
            frame,
            t_ns,
        }
    }

    use Way::{AtPort, Received, Sent};

    /// What the host sends: its copy (TTL 64) first and used; the far copy (63) matched and
    /// skipped; from then on each frame by its TTL.
    #[test]
    fn sent_frames_keep_the_higher_ttl() {
        let mut p = Points::default();
        let see = |p: &mut Points, psn, ttl, frame| p.see(0, f(psn, ttl, frame, 0), Sent);
        assert_eq!(see(&mut p, 1, 64, 1), Fate::Use);
        assert_eq!(see(&mut p, 2, 64, 2), Fate::Use);
        assert_eq!(see(&mut p, 1, 63, 3), Fate::Skip { far_kept: false });
        let pair = PathPair {
            frame: 3,
            of: 1,
            ttl: 63,
            of_ttl: 64,
        };
        assert_eq!((p.first_pair, p.two), (Some(pair), 1));
        assert_eq!(see(&mut p, 2, 63, 4), Fate::Skip { far_kept: false });
        assert_eq!(see(&mut p, 3, 64, 5), Fate::Use);
        // A resend of packet 1 (the same identity: a NIC whose IP ID is 0) at the host's TTL
        // is a packet again, not the host's copy of a far one used.
        assert_eq!(see(&mut p, 1, 64, 6), Fate::Use);
    }

    /// What the host receives: the far copy (TTL 63) first, held; its own (62) decides — used,
    /// and the held one skipped.
    #[test]
    fn received_frames_wait_for_the_lower_ttl() {
        let mut p = Points::default();
        let see = |p: &mut Points, psn, ttl| p.see(1, f(psn, ttl, 0, 0), Received);
        assert_eq!(see(&mut p, 7, 63), Fate::Hold);
        assert_eq!(p.held_is_used(1, 63), None);
        assert_eq!(see(&mut p, 7, 62), Fate::Use);
        assert_eq!(p.held_is_used(1, 63), Some(false));
        assert_eq!(p.held_is_used(1, 62), Some(true));
        assert_eq!(see(&mut p, 8, 63), Fate::Skip { far_kept: false });
        assert_eq!(see(&mut p, 8, 62), Fate::Use);
    }

    /// No copy among a direction's first 64 frames: one point, every frame used, and each
    /// change of TTL after counted (the verdict's error at 8).
    #[test]
    fn a_direction_without_copies_is_one_point() {
        let mut p = Points::default();
        for psn in 0..u64::from(HOLD_FRAMES) - 1 {
            assert_eq!(p.see(1, f(psn, 62, 0, 0), Received), Fate::Hold);
        }
        // The 64th frame settles it: used, and so is every held one.
        assert_eq!(p.see(1, f(63, 62, 0, 0), Received), Fate::Use);
        assert_eq!(p.held_is_used(1, 62), Some(true));
        assert_eq!(p.most_flips(), None);
        for (psn, ttl) in [(64, 61), (65, 62), (66, 61)] {
            assert_eq!(p.see(1, f(psn, ttl, 0, 0), Received), Fate::Use);
        }
        let flips = TtlFlips {
            dir: 1,
            flips: 3,
            ttls: (62, 61),
        };
        assert_eq!(p.most_flips(), Some(flips));
    }

    /// After the capture's first `HOLD_NS` with no copy, nothing is held; a direction found
    /// at two points later has used its far copy, and the host's copy of it is skipped.
    #[test]
    fn after_the_start_the_far_copy_used_is_the_only_one() {
        let mut p = Points::default();
        assert_eq!(p.see(0, f(1, 64, 1, 0), Sent), Fate::Use);
        assert_eq!(p.see(1, f(9, 63, 2, HOLD_NS - 1), Received), Fate::Hold);
        assert!(!p.done_holding());
        assert_eq!(p.see(3, f(5, 63, 3, HOLD_NS), Received), Fate::Use);
        assert!(p.done_holding());
        assert_eq!(p.see(3, f(4, 63, 3, HOLD_NS), Received), Fate::Use);
        assert_eq!(
            p.see(3, f(5, 62, 4, HOLD_NS + 1), Received),
            Fate::Skip { far_kept: true }
        );
        // Known at two points now, the host's copy of another far one used before.
        assert_eq!(
            p.see(3, f(4, 62, 4, HOLD_NS + 1), Received),
            Fate::Skip { far_kept: true }
        );
        assert_eq!(
            p.see(3, f(6, 63, 5, HOLD_NS + 2), Received),
            Fate::Skip { far_kept: false }
        );
        assert_eq!(p.see(3, f(6, 62, 6, HOLD_NS + 3), Received), Fate::Use);
    }

    /// At a switch port a pair is found and nothing chosen: every frame used.
    #[test]
    fn at_a_switch_port_copies_are_found_not_chosen() {
        let mut p = Points::default();
        assert_eq!(p.see(0, f(1, 64, 1, 0), AtPort), Fate::Use);
        assert_eq!(p.see(0, f(1, 63, 2, 10), AtPort), Fate::Use);
        assert_eq!(p.two, 1);
        assert_eq!(p.see(0, f(2, 64, 3, 20), AtPort), Fate::Use);
        assert_eq!(p.see(0, f(2, 63, 4, 30), AtPort), Fate::Use);
        // Found once: the direction is not looked at again.
        assert_eq!(p.two, 1);
    }

    /// A direction whose far copy was held at the start and another used after it (nothing
    /// held any more): when its copy says which point is the host's, the held one is skipped
    /// and the host's copy of the used one too.
    #[test]
    fn held_and_used_far_copies_each_come_once() {
        let mut p = Points::default();
        assert_eq!(p.see(1, f(1, 63, 1, 0), Received), Fate::Hold);
        assert_eq!(p.see(5, f(7, 64, 2, HOLD_NS), Sent), Fate::Use);
        assert!(p.done_holding());
        assert_eq!(p.see(1, f(2, 63, 3, HOLD_NS), Received), Fate::Use);
        assert_eq!(p.see(1, f(1, 62, 4, HOLD_NS), Received), Fate::Use);
        assert_eq!(p.held_is_used(1, 63), Some(false));
        assert_eq!(
            p.see(1, f(2, 62, 5, HOLD_NS), Received),
            Fate::Skip { far_kept: true }
        );
    }

    /// The identity leaves out what a router rewrites: an IPv4 frame with another TTL, ToS
    /// and checksum has the same key; another IP ID does not.
    #[test]
    fn the_key_leaves_out_ttl_tos_and_checksum() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/roce_dcqcn.pcap");
        let mut r = ccreplay_codecs::capture::CaptureReader::open(path).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        let cfg = ccreplay_codecs::DecodeConfig::default();
        let key_of = |data: &[u8]| {
            let rec = Record { data, ..rec };
            let p = Packet::from_record(&rec, &cfg);
            PathKey::of(&rec, &p, p.roce.as_ref().unwrap())
        };
        let (k, ttl) = key_of(rec.data);
        assert_eq!(ttl, 64);
        // Ethernet 14, IPv4: ToS at 15, TTL at 22, checksum at 24..26, ID at 18..20.
        let mut f = rec.data.to_vec();
        (f[15], f[22], f[24], f[25]) = (f[15] | 3, 61, 0xAB, 0xCD);
        assert_eq!(key_of(&f), (k, 61));
        // What a router leaves alone is the identity: the IP ID (18..20), the BTH opcode (at
        // 42: WRITE_FIRST, 0x06, made WRITE_MIDDLE), the ICRC (the last 4 bytes), each alone.
        let n = f.len();
        for (at, bit) in [(19, 1), (42, 1), (n - 1, 1), (n - 4, 0x80)] {
            let mut g = f.clone();
            g[at] ^= bit;
            assert_ne!(key_of(&g).0, k, "byte {at}");
        }
    }
}
