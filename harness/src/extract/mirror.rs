//! Where a capture's packets were copied, when a switch mirrored them to a collector
//! (docs/wire.md 2.1): the replay must see each packet once, so the same traffic arriving
//! from two mirror sources (two sessions, two ports of one session, a mirror beside a tap) is
//! found here and made the verdict's error (docs/verdicts.md), and `[mirror] session` picks one.
//!
//! Role: the extraction records each event's source ([`MirrorSource::of`], per record, on any
//! thread) and [`Sources`] checks them in capture order. It reads decoded packets only. (The
//! switches' clocks, `[mirror] clock = "switch"`, are codecs' `mirror_clock`.)

use std::fmt;
use std::net::IpAddr;

use ccreplay_codecs::mirror::{Mirror, MirrorKind};
use ccreplay_reference_cc::FlowId;

/// A mirror source: the switch that sent the copy (its outer source address), the
/// encapsulation, and what the ERSPAN header says of where it was copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MirrorSource {
    /// The mirroring switch (outer IP source).
    pub switch: IpAddr,
    /// ERSPAN session ID (none for ERSPAN I and gretap).
    pub session: Option<u16>,
    /// ERSPAN II: Index (the port and direction, platform-defined); ERSPAN III: Hw ID << 1 |
    /// D (egress).
    pub port: Option<u32>,
    /// The encapsulation.
    pub kind: MirrorKind,
}

impl MirrorSource {
    /// The source of a mirrored packet.
    #[inline]
    pub fn of(m: &Mirror) -> Self {
        MirrorSource {
            switch: m.ip.addrs.src(),
            session: m.erspan.map(|e| e.span_id()),
            port: m.erspan.map(|e| {
                if e.version() == 1 {
                    e.index()
                } else {
                    u32::from(e.hw_id()) << 1 | u32::from(e.direction())
                }
            }),
            kind: m.kind,
        }
    }
}

impl fmt::Display for MirrorSource {
    /// `10.9.0.1 ERSPAN II session 5 index 0x12345`, `... ERSPAN III session 7 Hw ID 5
    /// egress`, `10.9.0.1 gretap`: the Wireshark fields that tell them apart.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            MirrorKind::Teb => "gretap",
            MirrorKind::ErspanI => "ERSPAN I",
            MirrorKind::ErspanII => "ERSPAN II",
            MirrorKind::ErspanIII => "ERSPAN III",
        };
        write!(f, "{} {kind}", self.switch)?;
        if let Some(s) = self.session {
            write!(f, " session {s}")?;
        }
        match (self.kind, self.port) {
            (MirrorKind::ErspanII, Some(i)) => write!(f, " index 0x{i:x}"),
            (MirrorKind::ErspanIII, Some(p)) => write!(
                f,
                " Hw ID {} {}",
                p >> 1,
                if p & 1 == 1 { "egress" } else { "ingress" }
            ),
            _ => Ok(()),
        }
    }
}

/// Two sources of one flow's packets in one direction: the first seen, and another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The flow.
    pub flow: FlowId,
    /// Its data (true) or its ACKs / NAKs / CNPs.
    pub data: bool,
    /// The source of its first packet (`None`: not mirrored).
    pub first: Option<MirrorSource>,
    /// The other source, and the frame it first came in.
    pub other: Option<MirrorSource>,
    /// That frame's number.
    pub frame: u64,
}

/// The sources of the events, checked in capture order: each flow's data and each flow's
/// ACKs / NAKs / CNPs must come from one source (one observation point).
#[derive(Debug, Default)]
pub struct Sources {
    /// Per flow id, for its data and its feedback: 1 + the index in `counts` of the source
    /// of its first event (0: none yet; `OVERFLOW`: a source past `MAX_SOURCES`).
    first: Vec<[u8; 2]>,
    /// Events per source (`None`: not mirrored), in order of first appearance.
    pub counts: Vec<(Option<MirrorSource>, u64)>,
    /// Events from a source other than their flow and direction's first.
    pub conflicts: u64,
    /// The first of them.
    pub conflict: Option<Conflict>,
}

/// At most this many sources are told apart and counted.
const MAX_SOURCES: usize = 16;
const OVERFLOW: u8 = u8::MAX;

impl Sources {
    /// An event of `flow` (its data when `data`) from `source`, in frame `frame`. A capture
    /// of the port itself costs a scan of one source and an index per event.
    #[inline]
    pub fn check(&mut self, flow: FlowId, data: bool, source: Option<MirrorSource>, frame: u64) {
        let slot = match self.counts.iter().position(|(s, _)| *s == source) {
            Some(i) => {
                self.counts[i].1 += 1;
                i as u8 + 1
            }
            None if self.counts.len() < MAX_SOURCES => {
                self.counts.push((source, 1));
                self.counts.len() as u8
            }
            None => OVERFLOW,
        };
        let f = flow as usize;
        if self.first.len() <= f {
            self.first.resize(f + 1, [0; 2]);
        }
        let first = &mut self.first[f][usize::from(data)];
        if *first == 0 {
            *first = slot;
        } else if *first != slot {
            self.conflicts += 1;
            let at = |s: u8| {
                self.counts
                    .get(usize::from(s).wrapping_sub(1))
                    .and_then(|c| c.0)
            };
            let first = at(*first);
            self.conflict.get_or_insert(Conflict {
                flow,
                data,
                first,
                other: source,
                frame,
            });
        }
    }

    /// True when some event was mirrored.
    pub fn mirrored(&self) -> bool {
        self.counts.iter().any(|(s, _)| s.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(kind: MirrorKind, session: Option<u16>, port: Option<u32>) -> MirrorSource {
        MirrorSource {
            switch: IpAddr::from([10, 9, 0, 1]),
            session,
            port,
            kind,
        }
    }

    /// A flow's data and its ACKs may come from different sources (a port's two directions
    /// mirrored apart); a second source for either is a conflict, the first one kept.
    #[test]
    fn a_second_source_for_a_flow_and_direction_is_a_conflict() {
        let a = Some(source(MirrorKind::ErspanII, Some(5), Some(1)));
        let b = Some(source(MirrorKind::ErspanII, Some(6), Some(2)));
        let mut s = Sources::default();
        s.check(0, true, a, 1);
        s.check(0, false, b, 2); // flow 0's ACKs from B: their first source
        s.check(0, true, a, 3);
        s.check(1, true, None, 4); // flow 1's data from the port itself
        assert_eq!((s.conflicts, s.conflict.is_none()), (0, true));
        s.check(0, true, b, 5);
        s.check(1, true, a, 6);
        assert_eq!(s.conflicts, 2);
        assert_eq!(
            s.conflict,
            Some(Conflict {
                flow: 0,
                data: true,
                first: a,
                other: b,
                frame: 5,
            })
        );
        assert_eq!(s.counts, vec![(a, 3), (b, 2), (None, 1)]);
        assert!(s.mirrored());
    }

    #[test]
    fn a_port_capture_has_one_source() {
        let mut s = Sources::default();
        for (i, flow) in [0, 1, 0, 2, 1].into_iter().enumerate() {
            s.check(flow, i % 2 == 0, None, i as u64 + 1);
        }
        assert_eq!((s.conflicts, s.mirrored()), (0, false));
        assert_eq!(s.counts, vec![(None, 5)]);
    }

    /// At most 16 sources are told apart: a 17th is not counted, its flows still checked (a
    /// flow's first source among the uncounted ones stands for all of them).
    #[test]
    fn sources_past_sixteen_are_not_counted() {
        let mut s = Sources::default();
        for session in 0..17u16 {
            let src = Some(source(MirrorKind::ErspanII, Some(session), Some(1)));
            s.check(u32::from(session), true, src, u64::from(session) + 1);
        }
        assert_eq!(s.counts.len(), 16);
        assert_eq!(s.counts[15].0.and_then(|c| c.session), Some(15));
        // The 17th source again on its flow: not a second source.
        let seventeenth = Some(source(MirrorKind::ErspanII, Some(16), Some(1)));
        s.check(16, true, seventeenth, 18);
        assert_eq!(s.conflicts, 0);
        // Flow 0's data from another counted source is still a conflict.
        s.check(
            0,
            true,
            Some(source(MirrorKind::ErspanII, Some(1), Some(1))),
            18,
        );
        assert_eq!(s.conflicts, 1);
    }

    /// The names Wireshark's fields give them (erspan.spanid, .index, .hw, .direction).
    #[test]
    fn sources_read_as_their_headers_say() {
        let show = |kind, session, port| source(kind, session, port).to_string();
        assert_eq!(
            show(MirrorKind::ErspanII, Some(5), Some(0x12345)),
            "10.9.0.1 ERSPAN II session 5 index 0x12345"
        );
        // Hw ID 5, D 1: 5 << 1 | 1.
        assert_eq!(
            show(MirrorKind::ErspanIII, Some(7), Some(11)),
            "10.9.0.1 ERSPAN III session 7 Hw ID 5 egress"
        );
        assert_eq!(
            show(MirrorKind::ErspanIII, Some(7), Some(10)),
            "10.9.0.1 ERSPAN III session 7 Hw ID 5 ingress"
        );
        assert_eq!(show(MirrorKind::ErspanI, None, None), "10.9.0.1 ERSPAN I");
        assert_eq!(show(MirrorKind::Teb, None, None), "10.9.0.1 gretap");
    }
}
