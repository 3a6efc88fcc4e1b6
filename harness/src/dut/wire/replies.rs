//! Which data packet each ACK / NAK of a receiver NIC answers (docs/dut.md "`--dut wire`").
//!
//! An RC responder answers the data packets of a QP in their arrival order, each with at most
//! one reply (IB RC; the simulator's receiver NIC does exactly this, `at_receiver` in
//! reference-cc/src/net/engine/delivery.rs):
//!
//! - the expected PSN `e`: an ACK of that PSN, and `e` moves on;
//! - a PSN after `e` (a packet was lost): one NAK (PSN sequence error) naming `e`, for the
//!   first such packet only; the next ones are dropped with no reply until `e` arrives;
//! - a PSN before `e` (a duplicate): an ACK of the last PSN accepted, `e − 1`.
//!
//! Each reply carries the receiver's decision on the packet it answers (FNCC-2, RCC-1). The
//! responder's `e` is not on the wire where the capture begins (the first packets of a flow
//! may be lost before the tap), so the pairing does not predict replies; it reads them. Per
//! flow, in capture order, data packets wait; a reply takes the earliest waiting packet it can
//! answer:
//!
//! - an ACK of PSN p: the one with PSN p, else the earliest with a PSN before p (a duplicate);
//! - a NAK naming e: the earliest with PSN e or after (RNR NAKs name the packet itself).
//!
//! The packets it passes over got no reply: **silent** when their PSN is after the PSN the
//! flow's last NAK named and no ACK has reached that PSN since (the responder dropped them by
//! rule: their decision is not on the wire and is not compared); **coalesced** when the reply
//! acknowledges them (a PSN before the ACK's, or before the PSN a NAK names: IBA lets a
//! responder cover several packets with one ACK) and the user allows the NIC that
//! (`ack_coalescing` K: the K − 1 packets just before the reply; not compared either);
//! **unanswered** otherwise (the diff's *missing*). A reply no waiting packet can take is
//! **extra** (a decision the reference did not make) once the flow has had data in the
//! capture, and skipped before that (it answers a packet from before the capture began) —
//! unless it is an ACK of a recent packet of its PSN that a later packet's reply passed over
//! as unanswered: then it is that packet's reply, **late** (out of order on the wire).
//!
//! Where the capture ends, packets still wait whose reply may simply not have been captured
//! yet: those that arrived within the NIC's slowest turnaround seen in this capture (a data
//! packet to the ACK of its PSN) of the capture's last record are **cut by the end** (not
//! compared); the ones before that are unanswered. A NIC that answered nothing has no
//! turnaround: everything waiting is unanswered.

use std::collections::VecDeque;

use ccreplay_reference_cc::psn::psn_after;

use super::{AckSeen, Tally};

/// At most this many packets of one flow wait for a reply; beyond, the oldest is passed over
/// (no real responder lags this far behind, and the pairing's scans stay bounded).
const MAX_WAITING: usize = 1 << 14;

/// How far back (data packets of the flow) a late ACK looks for the packet it answers.
const LATE_REACH: usize = 64;

/// What the NIC's packets say about one data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Waiting for a reply (only while the capture is read).
    Waiting,
    /// An ACK of its PSN, a duplicate's ACK, or a NAK: the decision it carries.
    Reply(AckSeen),
    /// Dropped out of sequence after a NAK: no reply by rule, not compared.
    Silent,
    /// Acknowledged by a later reply within the allowed coalescing: not compared.
    Coalesced,
    /// Arrived too close to the capture's end for its reply to be in it: not compared.
    CutByEnd,
    /// No reply: missing.
    Unanswered,
}

/// One data packet of a flow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    pub psn: u32,
    /// Arrival, capture ns.
    pub t_ns: u64,
    pub answer: Answer,
    /// Passed over, unanswered, by a reply that acknowledged it (`Tally::acked_later`).
    acked_later: bool,
}

/// A flow's data packets and replies, paired.
#[derive(Default)]
pub(super) struct FlowReplies {
    /// Its data packets in capture order.
    pub slots: Vec<Slot>,
    /// Replies no waiting packet could take: (the slot of the flow's latest data packet then,
    /// the reply), in capture order.
    pub extra: Vec<(usize, AckSeen)>,
    waiting: VecDeque<usize>,
    /// The PSN the flow's last NAK named, until an ACK reaches it.
    gap: Option<u32>,
    /// Answering (`WireDut::event`): the next slot and the next extra reply.
    pub next: usize,
    pub next_extra: usize,
}

impl FlowReplies {
    /// A data packet arrived at `t_ns`.
    pub fn data(&mut self, psn: u32, t_ns: u64, tally: &mut Tally) {
        tally.data += 1;
        if self.waiting.len() == MAX_WAITING {
            self.pass_over(1, tally);
        }
        self.waiting.push_back(self.slots.len());
        self.slots.push(Slot {
            psn,
            t_ns,
            answer: Answer::Waiting,
            acked_later: false,
        });
    }

    /// Whether a reply (`nak`: a NAK or RNR NAK) with this PSN can answer a waiting packet.
    pub fn takes(&self, nak: bool, psn: u32) -> bool {
        self.taker(nak, psn).is_some()
    }

    /// The waiting packet a reply answers (its place in the queue).
    fn taker(&self, nak: bool, psn: u32) -> Option<usize> {
        let at = |i: &usize| self.slots[*i].psn;
        if nak {
            self.waiting
                .iter()
                .position(|i| at(i) == psn || psn_after(at(i), psn))
        } else {
            self.waiting
                .iter()
                .position(|i| at(i) == psn)
                .or_else(|| self.waiting.iter().position(|i| psn_after(psn, at(i))))
        }
    }

    /// The host sent a reply (`nak`: a NAK or RNR NAK) with this PSN at `t_ns`; one reply
    /// may acknowledge up to `coalesce` packets (the allowance `ack_coalescing`, at least 1).
    pub fn reply(
        &mut self,
        nak: bool,
        psn: u32,
        t_ns: u64,
        seen: AckSeen,
        coalesce: usize,
        tally: &mut Tally,
    ) {
        let Some(j) = self.taker(nak, psn) else {
            if !nak && self.late(psn, t_ns, seen, tally) {
                return;
            }
            match self.slots.len().checked_sub(1) {
                Some(last) => {
                    self.extra.push((last, seen));
                    tally.extra += 1;
                }
                None => tally.before_data += 1,
            }
            return;
        };
        self.passed_by_reply(j, psn, coalesce, tally);
        let Some(i) = self.waiting.pop_front() else {
            return;
        };
        let slot = &mut self.slots[i];
        slot.answer = Answer::Reply(seen);
        if nak {
            tally.naks += 1;
            self.gap = Some(psn);
        } else {
            if slot.psn == psn {
                tally.acks += 1;
                // The turnaround the NIC showed: the ACK of a packet's own PSN.
                let turnaround = t_ns.saturating_sub(slot.t_ns);
                tally.turnaround_ns = tally.turnaround_ns.max(turnaround);
            } else {
                tally.dups += 1;
            }
            // An ACK at or after the NAK's PSN: the responder has accepted it, the gap closed.
            if self.gap.is_some_and(|g| !psn_after(g, psn)) {
                self.gap = None;
            }
        }
    }

    /// An ACK of PSN `psn` that no waiting packet can take, for a recent packet of that PSN
    /// already passed over as unanswered: its reply came after a later packet's (out of order
    /// on the wire — a responder answers in order, so a capture that merged queues, or a NIC
    /// that reordered). It answers that packet (its decision is compared); `late` counts it.
    fn late(&mut self, psn: u32, t_ns: u64, seen: AckSeen, tally: &mut Tally) -> bool {
        let from = self.slots.len().saturating_sub(LATE_REACH);
        let Some(slot) = self.slots[from..]
            .iter_mut()
            .rev()
            .find(|s| s.psn == psn && s.answer == Answer::Unanswered)
        else {
            return false;
        };
        slot.answer = Answer::Reply(seen);
        tally.unanswered -= 1;
        if std::mem::take(&mut slot.acked_later) {
            tally.acked_later -= 1;
        }
        tally.acks += 1;
        tally.late += 1;
        tally.turnaround_ns = tally.turnaround_ns.max(t_ns.saturating_sub(slot.t_ns));
        true
    }

    /// The end of the capture (its last record at `end_ns`): what still waits got no reply —
    /// cut by the end when it arrived within `turnaround_ns` of it (and the NIC showed one).
    pub fn finish(&mut self, end_ns: u64, turnaround_ns: Option<u64>, tally: &mut Tally) {
        if let Some(window) = turnaround_ns {
            while let Some(&i) = self.waiting.back() {
                let slot = &mut self.slots[i];
                let in_gap = self.gap.is_some_and(|g| psn_after(slot.psn, g));
                if in_gap || end_ns.saturating_sub(slot.t_ns) > window {
                    break;
                }
                slot.answer = Answer::CutByEnd;
                tally.cut_by_end += 1;
                self.waiting.pop_back();
            }
        }
        self.pass_over(self.waiting.len(), tally);
    }

    /// A reply naming `psn` passed over the `n` oldest waiting packets. Those it acknowledges
    /// (a PSN before `psn`: an ACK of p covers every PSN up to p, a NAK naming e every PSN
    /// before e) are coalesced when among the `coalesce − 1` just before the reply; the rest
    /// are silent or unanswered as [`Self::pass_over`] says. The unanswered ones the reply
    /// acknowledges are counted for the verdict's hint, with the longest run one reply covered.
    fn passed_by_reply(&mut self, n: usize, psn: u32, coalesce: usize, tally: &mut Tally) {
        let allowed = coalesce.saturating_sub(1);
        let mut run = 0u64;
        for k in 0..n {
            let Some(i) = self.waiting.pop_front() else {
                break;
            };
            let slot = &mut self.slots[i];
            let in_gap = self.gap.is_some_and(|g| psn_after(slot.psn, g));
            let acked = psn_after(psn, slot.psn);
            if !in_gap && acked {
                run += 1;
                if n - k <= allowed {
                    slot.answer = Answer::Coalesced;
                    tally.coalesced += 1;
                    continue;
                }
                tally.acked_later += 1;
                slot.acked_later = true;
            }
            self.mark_passed(i, tally);
        }
        tally.most_acked = tally.most_acked.max(run + 1);
    }

    /// The `n` oldest waiting packets got no reply: silent in an open gap, else unanswered.
    fn pass_over(&mut self, n: usize, tally: &mut Tally) {
        for _ in 0..n {
            let Some(i) = self.waiting.pop_front() else {
                return;
            };
            self.mark_passed(i, tally);
        }
    }

    /// Slot `i` got no reply: silent in an open gap, else unanswered.
    fn mark_passed(&mut self, i: usize, tally: &mut Tally) {
        let slot = &mut self.slots[i];
        if self.gap.is_some_and(|g| psn_after(slot.psn, g)) {
            slot.answer = Answer::Silent;
            tally.silent += 1;
        } else {
            slot.answer = Answer::Unanswered;
            tally.unanswered += 1;
        }
    }

    /// The answer to the flow's next `rx_data` event with this PSN, and the extra replies that
    /// came after that packet: slots are consumed in order (a PSN that is not next skips to
    /// its next slot; one the capture never showed answers nothing).
    pub fn answer(&mut self, psn: u32) -> Option<(Answer, &[(usize, AckSeen)])> {
        let ahead = &self.slots[self.next..];
        let k = ahead[..ahead.len().min(MAX_WAITING)]
            .iter()
            .position(|s| s.psn == psn)?;
        let i = self.next + k;
        self.next = i + 1;
        let from = self.next_extra + self.extra[self.next_extra..].partition_point(|e| e.0 < i);
        let to = from + self.extra[from..].partition_point(|e| e.0 == i);
        self.next_extra = to;
        Some((self.slots[i].answer, &self.extra[from..to]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(n: u16) -> AckSeen {
        AckSeen {
            n: Some(n),
            cwnd: None,
            flags: None,
        }
    }

    /// Replies out of order on the wire: data 10, 11, 12 answered ACK 10, ACK 12, ACK 11. ACK
    /// 12 passes over 11 (unanswered, acknowledged by it); ACK 11 then answers 11, late — not
    /// an extra reply and a missing one. A second ACK of 11 is extra (11 has its reply), and
    /// an ACK of a PSN no packet had is extra too.
    #[test]
    fn an_ack_after_a_later_packets_answers_its_packet_late() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        for psn in [10, 11, 12] {
            f.data(psn, 100 * u64::from(psn), &mut t);
        }
        f.reply(false, 10, 1_010, seen(1), 1, &mut t);
        f.reply(false, 12, 1_220, seen(3), 1, &mut t);
        f.reply(false, 11, 1_230, seen(2), 1, &mut t);
        f.reply(false, 11, 1_240, seen(4), 1, &mut t);
        f.reply(false, 20, 1_250, seen(5), 1, &mut t);
        f.finish(1_250, Some(200), &mut t);
        let answers: Vec<Answer> = f.slots.iter().map(|s| s.answer).collect();
        assert_eq!(
            answers,
            [
                Answer::Reply(seen(1)),
                Answer::Reply(seen(2)),
                Answer::Reply(seen(3)),
            ]
        );
        assert_eq!(
            (t.acks, t.late, t.unanswered, t.acked_later, t.extra),
            (3, 1, 0, 0, 2)
        );
        // The late ACK's turnaround, 1,230 − 1,100, is the largest.
        assert_eq!(t.turnaround_ns, 130);
    }

    /// The responder of the module docs on a loss: data 10, 12 (11 lost), 13, then 11 and 12
    /// again. Replies: ACK 10, NAK 11 (for 12), nothing for 13, ACK 11, ACK 12.
    #[test]
    fn a_nak_answers_the_first_packet_out_of_sequence_and_the_next_are_silent() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.data(10, 0, &mut t);
        f.reply(false, 10, 0, seen(1), 1, &mut t);
        f.data(12, 0, &mut t);
        f.reply(true, 11, 0, seen(2), 1, &mut t);
        f.data(13, 0, &mut t);
        f.data(11, 0, &mut t);
        f.reply(false, 11, 0, seen(3), 1, &mut t);
        f.data(12, 0, &mut t);
        f.reply(false, 12, 0, seen(4), 1, &mut t);
        f.finish(0, None, &mut t);
        let answers: Vec<Answer> = f.slots.iter().map(|s| s.answer).collect();
        assert_eq!(
            answers,
            [
                Answer::Reply(seen(1)),
                Answer::Reply(seen(2)),
                Answer::Silent,
                Answer::Reply(seen(3)),
                Answer::Reply(seen(4)),
            ]
        );
        assert_eq!(
            (t.data, t.acks, t.naks, t.silent, t.unanswered),
            (5, 3, 1, 1, 0)
        );
        // ACK 11 passed over 13, dropped by rule: not a packet it acknowledged (13 is after 11).
        assert_eq!((t.acked_later, t.coalesced), (0, 0));
        // The events come in the same order; the second 12 takes the fifth slot.
        assert_eq!(f.answer(10).unwrap().0, Answer::Reply(seen(1)));
        assert_eq!(f.answer(12).unwrap().0, Answer::Reply(seen(2)));
        assert_eq!(f.answer(13).unwrap().0, Answer::Silent);
        assert_eq!(f.answer(11).unwrap().0, Answer::Reply(seen(3)));
        assert_eq!(f.answer(12).unwrap().0, Answer::Reply(seen(4)));
        assert!(f.answer(12).is_none());
    }

    /// A duplicate is answered with the last PSN accepted; a coalesced ACK leaves the packets
    /// before it unanswered; a second ACK of one PSN is extra, and so is one before any data
    /// only when the flow has had data.
    #[test]
    fn duplicates_coalescing_and_extra_replies() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.reply(false, 4, 0, seen(9), 1, &mut t); // before the capture's first data packet
        f.data(5, 0, &mut t);
        f.data(6, 0, &mut t);
        f.reply(false, 6, 0, seen(1), 1, &mut t); // coalesced: 5 unanswered
        f.data(5, 0, &mut t); // a duplicate: ACK of 6
        f.reply(false, 6, 0, seen(2), 1, &mut t);
        f.reply(false, 6, 0, seen(3), 1, &mut t); // nothing waits: extra, after the third packet
        f.finish(0, None, &mut t);
        let answers: Vec<Answer> = f.slots.iter().map(|s| s.answer).collect();
        assert_eq!(
            answers,
            [
                Answer::Unanswered,
                Answer::Reply(seen(1)),
                Answer::Reply(seen(2))
            ]
        );
        assert_eq!(f.extra, [(2, seen(3))]);
        assert_eq!(
            (t.acks, t.dups, t.unanswered, t.extra, t.before_data),
            (1, 1, 1, 1, 1)
        );
        assert!(f.answer(5).is_some());
        assert!(f.answer(6).unwrap().1.is_empty());
        let (a, extra) = f.answer(5).unwrap();
        assert_eq!((a, extra), (Answer::Reply(seen(2)), &[(2, seen(3))][..]));
    }

    /// Extra replies follow the packet they came after: data 5, 6, 7, each ACKed twice — the
    /// second ACK of each is extra, after slots 0, 1 and 2. The events 5 and 7 (6 never fed,
    /// as when the extraction skipped it) get their own packet's extras, not 6's.
    #[test]
    fn each_packet_gets_the_extra_replies_after_it() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        for (k, psn) in [5u16, 6, 7].into_iter().enumerate() {
            f.data(u32::from(psn), 0, &mut t);
            f.reply(false, u32::from(psn), 0, seen(10 * psn), 1, &mut t);
            f.reply(false, u32::from(psn), 0, seen(10 * psn + 1), 1, &mut t);
            assert_eq!(f.extra.len(), k + 1);
        }
        assert_eq!((t.acks, t.extra), (3, 3));
        assert_eq!(
            f.answer(5).unwrap(),
            (Answer::Reply(seen(50)), &[(0, seen(51))][..])
        );
        assert_eq!(
            f.answer(7).unwrap(),
            (Answer::Reply(seen(70)), &[(2, seen(71))][..])
        );
        assert!(f.answer(6).is_none());
    }

    /// An ACK passes over a waiting packet it does not acknowledge: data 12 then 10 (out of
    /// order, no NAK), ACK 10 — 12 is after 10, so unanswered, not a packet that ACK covered
    /// (nothing for the coalescing hint), whatever the allowance.
    #[test]
    fn a_packet_after_the_acks_psn_is_not_acknowledged_by_it() {
        for coalesce in [1, 2] {
            let mut t = Tally::default();
            let mut f = FlowReplies::default();
            f.data(12, 0, &mut t);
            f.data(10, 0, &mut t);
            f.reply(false, 10, 0, seen(1), coalesce, &mut t);
            assert_eq!(f.slots[0].answer, Answer::Unanswered, "K = {coalesce}");
            assert_eq!(
                (t.unanswered, t.acked_later, t.coalesced),
                (1, 0, 0),
                "K = {coalesce}"
            );
        }
    }

    /// A responder that coalesces ACKs (FNCC 3.2.3: one cumulative ACK for every m packets):
    /// an ACK of p acknowledges every PSN before p, a NAK naming e every PSN before e. With
    /// `ack_coalescing` K the K − 1 packets just before the reply are coalesced (not
    /// compared); older ones stay unanswered, and are counted as acknowledged later.
    #[test]
    fn coalesced_acks_within_the_allowance_are_not_compared() {
        let run = |k: usize| {
            let mut t = Tally::default();
            let mut f = FlowReplies::default();
            for psn in 1..=3 {
                f.data(psn, 0, &mut t);
            }
            f.reply(false, 3, 0, seen(1), k, &mut t); // acknowledges 1 and 2
            f.data(4, 0, &mut t);
            f.data(6, 0, &mut t); // 5 lost
            f.reply(true, 5, 0, seen(2), k, &mut t); // answers 6, acknowledges 4
            f.data(7, 0, &mut t); // in the gap: silent whatever K
            f.data(5, 0, &mut t);
            f.reply(false, 5, 0, seen(3), k, &mut t);
            f.finish(0, None, &mut t);
            let answers: Vec<Answer> = f.slots.iter().map(|s| s.answer).collect();
            (answers, t)
        };
        use Answer::{Coalesced as C, Reply as R, Silent as S, Unanswered as U};
        // K = 1: every ACK answers its own packet; 1, 2 and 4 are missing, each acknowledged
        // by a later reply (the hint's count); the ACK of 3 covered the most: 3 packets.
        let (a, t) = run(1);
        assert_eq!(a, [U, U, R(seen(1)), U, R(seen(2)), S, R(seen(3))]);
        assert_eq!(
            (
                t.unanswered,
                t.coalesced,
                t.acked_later,
                t.most_acked,
                t.silent
            ),
            (3, 0, 3, 3, 1)
        );
        // K = 2: the one packet just before each reply is coalesced: 2 and 4; 1 is not.
        let (a, t) = run(2);
        assert_eq!(a, [U, C, R(seen(1)), C, R(seen(2)), S, R(seen(3))]);
        assert_eq!((t.unanswered, t.coalesced, t.acked_later), (1, 2, 1));
        // K = 3: all three.
        let (a, t) = run(3);
        assert_eq!(a, [C, C, R(seen(1)), C, R(seen(2)), S, R(seen(3))]);
        assert_eq!((t.unanswered, t.coalesced, t.acked_later), (0, 3, 0));
        assert_eq!((t.acks, t.naks, t.data), (2, 1, 7));
    }

    /// Packets still waiting at the end: silent inside a NAK's gap, unanswered otherwise; the
    /// 24-bit PSN wrap is serial order (C-2).
    #[test]
    fn the_end_of_the_capture_and_the_psn_wrap() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.data(0xFF_FFFE, 0, &mut t);
        f.reply(true, 0xFF_FFFD, 0, seen(1), 1, &mut t);
        f.data(0xFF_FFFF, 0, &mut t);
        f.data(0, 0, &mut t);
        f.finish(0, None, &mut t);
        assert_eq!((t.naks, t.silent, t.unanswered), (1, 2, 0));

        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.data(0xFF_FFFF, 0, &mut t);
        f.reply(false, 0xFF_FFFF, 0, seen(1), 1, &mut t);
        f.data(0, 0, &mut t);
        f.finish(0, None, &mut t);
        assert_eq!((t.acks, t.silent, t.unanswered), (1, 0, 1));
    }

    /// At the end, packets that arrived within the turnaround of the last record are cut by
    /// the end; older ones unanswered; one inside a NAK's gap stays silent.
    #[test]
    fn a_packet_within_the_turnaround_of_the_end_is_cut_by_it() {
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.data(1, 0, &mut t);
        f.reply(false, 1, 300, seen(1), 1, &mut t); // turnaround 300 ns
        f.data(2, 1_000, &mut t);
        f.data(3, 1_500, &mut t); // 500 ns before the end: its ACK is overdue
        f.data(4, 1_700, &mut t); // 300 ns before: the window's edge, included
        f.data(5, 1_800, &mut t);
        f.finish(2_000, Some(t.turnaround_ns), &mut t);
        let answers: Vec<Answer> = f.slots.iter().map(|s| s.answer).collect();
        assert_eq!(
            answers,
            [
                Answer::Reply(seen(1)),
                Answer::Unanswered,
                Answer::Unanswered,
                Answer::CutByEnd,
                Answer::CutByEnd
            ]
        );
        assert_eq!((t.turnaround_ns, t.cut_by_end, t.unanswered), (300, 2, 2));

        // After a NAK naming 2, 3 is dropped by rule even at the end.
        let mut t = Tally::default();
        let mut f = FlowReplies::default();
        f.data(1, 0, &mut t);
        f.reply(false, 1, 300, seen(1), 1, &mut t);
        f.data(3, 1_000, &mut t);
        f.reply(true, 2, 1_300, seen(2), 1, &mut t);
        f.data(4, 1_900, &mut t);
        f.finish(2_000, Some(300), &mut t);
        assert_eq!((t.naks, t.silent, t.cut_by_end, t.unanswered), (1, 1, 0, 0));
    }
}
