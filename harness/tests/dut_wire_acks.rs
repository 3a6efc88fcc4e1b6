//! `--dut wire` on fncc_chain_receiver with its replies edited (a NAK's N changed, an ACK sent
//! twice, not at all or late, a cumulative ACK, a NAK not sent, the capture cut short): how an
//! ACK or NAK is paired with the data packet it answers, and which decisions are then
//! mismatched, missing, extra, late, coalesced or past the capture's end. The frames the tests
//! name (frame 26, #12, ...) are listed in common/wire.rs above `fncc_chain`; "the conformance
//! test above" is dut_wire.rs's
//! `every_bundled_receiver_capture_conforms_and_every_packet_is_accounted_for`.

mod common;

use common::run as ccreplay;
use common::wire::{diff_json, diff_json_with, fix_icrc, fncc_chain};

const FNCC_N: usize = 58; // after the AETH (54..58): N u16, then the INT stack

fn flow0(v: &serde_json::Value) -> &serde_json::Value {
    &v["flows"][0]
}

#[test]
fn a_naks_flow_count_is_compared_with_the_packet_it_answers() {
    // Frame 26's N: 1 → 2.
    let dir = fncc_chain("nak-n", |recs| {
        let f = &mut recs[25].1;
        assert_eq!(&f[FNCC_N..FNCC_N + 2], &[0, 1]);
        f[FNCC_N + 1] = 2;
        fix_icrc(f);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&1.into(), &0.into(), &0.into()),
        "{f}"
    );
    let d = &f["first_divergence"];
    assert_eq!(d["reference"]["cause"]["index"], 12, "{d}");
    assert_eq!(d["fields"][0]["field"], "ack_n");
    assert_eq!(
        (&d["fields"][0]["reference"], &d["fields"][0]["dut"]),
        (&"1".into(), &"2".into())
    );
    assert_eq!(v["mismatches"], 1, "only that packet: {v}");
}

#[test]
fn a_second_ack_is_extra_and_a_retransmissions_missing_ack_is_missing() {
    // Frame 29 (the ACK of the retransmitted 16777036) sent twice: nothing waits for the
    // second; it is an extra decision, shown with the latest data packet then (#14).
    let dir = fncc_chain("twice", |recs| {
        let again = recs[28].clone();
        recs.insert(29, again);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &0.into(), &1.into()),
        "{f}"
    );
    assert_eq!(f["first_divergence"]["dut"]["cause"]["index"], 14, "{f}");
    assert_eq!(v["dut_accounting"]["extra"], 1);

    // Frame 31 (the ACK of the retransmitted 16777037) never sent: #15 is missing, and the
    // ACK of frame 33 still answers #16.
    let dir = fncc_chain("noack", |recs| {
        recs.remove(30);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &1.into(), &0.into()),
        "{f}"
    );
    assert_eq!(
        f["first_divergence"]["reference"]["cause"]["index"], 15,
        "{f}"
    );
    assert_eq!(v["dut_accounting"]["unanswered"], 1);
}

/// Replies out of order on the wire (a capture that merged queues, or a NIC that reordered):
/// frame 31 (the ACK of 16777037, #15) sent 1 ns after frame 33 (the ACK of 16777038, #16).
/// Frame 33 passes over #15; frame 31 then answers it, late: every decision still compared
/// (509), none missing or extra, and the accounting names it.
#[test]
fn an_ack_after_a_later_packets_is_late_not_missing_and_extra() {
    let dir = fncc_chain("late", |recs| {
        let (t33, _) = recs[32];
        let (_, ack31) = recs.remove(30);
        recs.insert(31, (t33 + 1, ack31));
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    assert_eq!(
        (&v["decisions"], &v["missing"], &v["extra"]),
        (&509.into(), &0.into(), &0.into()),
        "{v}"
    );
    let a = &v["dut_accounting"];
    assert_eq!(
        (&a["late"], &a["unanswered"], &a["acks"]),
        (&1.into(), &0.into(), &500.into()),
        "{a}"
    );
    let (code, out, err) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("500 ACKs of their data packet's PSN, 1 of them after a later packet's reply"),
        "{out}"
    );
}

/// A NIC that coalesces ACKs (FNCC 3.2.3: a cumulative ACK for every m packets) is not a
/// NIC that lost one: the same capture without frame 31 (the ACK of #15) is missing #15 by
/// default, with a hint naming the allowance (frame 33's ACK of 16777038 acknowledges
/// 16777037: two packets, #15 and #16); with `--allow ack_coalescing=2` #15 is coalesced, not
/// compared, and the NIC conforms: 516 data packets, 508 decisions compared (509 − #15).
#[test]
fn a_cumulative_ack_is_coalescing_when_the_user_allows_it() {
    let dir = fncc_chain("coalesce", |recs| {
        recs.remove(30);
    });
    let (code, out, err) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "hint: 1 of 1 unanswered data packets were acknowledged by a later ACK or NAK"
        ) && out.contains("--allow ack_coalescing=2"),
        "{out}"
    );
    let (code, v, err) = diff_json_with(
        &dir,
        "fncc_chain_receiver.toml",
        &["--allow", "ack_coalescing=2"],
    );
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    let get = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(
        [
            "data",
            "coalesced",
            "unanswered",
            "silent",
            "acked_later",
            "ack_coalescing"
        ]
        .map(get),
        [516, 1, 0, 7, 0, 2],
        "{w}"
    );
    assert_eq!(v["decisions"], 508, "{v}");
    // A count, at least 1.
    let (code, _, err) = ccreplay(
        &dir,
        &[
            "diff",
            "fncc_chain_receiver.toml",
            "--dut",
            "wire",
            "--allow",
            "ack_coalescing=0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a whole number of at least 1"), "{err}");
}

#[test]
fn without_its_nak_the_packets_of_the_gap_are_missing() {
    // Frame 26 never sent: nothing says the responder saw the gap, so #12 and #13 (frames 25
    // and 27) are unanswered, not dropped by rule: 2 missing; of the 7 packets dropped after a
    // NAK (the conformance test above), frame 27 was one: 6 remain.
    let dir = fncc_chain("nonak", |recs| {
        recs.remove(25);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let f = flow0(&v);
    assert_eq!(
        (&f["mismatches"], &f["missing"], &f["extra"]),
        (&0.into(), &2.into(), &0.into()),
        "{f}"
    );
    assert_eq!(
        f["first_divergence"]["reference"]["cause"]["index"], 12,
        "{f}"
    );
    let w = &v["dut_accounting"];
    assert_eq!(
        (&w["unanswered"], &w["silent"], &w["naks"]),
        (&2.into(), &6.into(), &8.into()),
        "{w}"
    );
}

/// The capture ends before the NIC's last replies: packets that arrived within the NIC's
/// slowest turnaround of the end (a data packet to the ACK of its PSN, the largest in the
/// capture) may have their reply after it — not compared; older ones are missing.
#[test]
fn a_reply_the_capture_ends_before_is_not_missing() {
    // The first 28 frames (tshark above): it ends with frame 28, the retransmitted 16777036
    // (#14), whose ACK (frame 29) is not captured. The simulator's NIC replies in the ns a
    // packet arrives (frames 1-24: each ACK at its data packet's time): turnaround 0, and
    // #14 arrived at the end. #12 NAK'd, #13 dropped after it (silent): 15 data packets,
    // 12 ACKs, 1 NAK, 1 silent, 1 cut by the end.
    let dir = fncc_chain("cut28", |recs| recs.truncate(28));
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    let get = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(
        [
            "data",
            "acks",
            "naks",
            "silent",
            "cut_by_end",
            "turnaround_ns",
            "unanswered"
        ]
        .map(get),
        [15, 12, 1, 1, 1, 0, 0],
        "{w}"
    );
    assert_eq!((&v["decisions"], &v["missing"]), (&13.into(), &0.into()));
    let (_, out, _) = ccreplay(&dir, &["diff", "fncc_chain_receiver.toml", "--dut", "wire"]);
    assert!(
        out.contains(
            "15 data packets: 13 answered, 1 dropped out of sequence after a NAK (no reply by IB \
             RC rules: not compared), 1 within the NIC's slowest turnaround (0 ns) of the \
             capture's end (reply not captured: not compared)"
        ),
        "{out}"
    );

    // The first 40 frames without the ACKs 35, 37 and 39 (the gap closed at frame 29):
    // #17, #18 and #19 (frames 34, 36, 38, 979-1,077 ns apart) wait, and #20 (frame 40,
    // 16777042) arrives at the end. Turnaround 0: #20 is cut by the end, the three before it
    // are missing — a NIC that stopped answering.
    let dir = fncc_chain("cut40", |recs| {
        recs.truncate(40);
        for i in [38, 36, 34] {
            assert_eq!(recs[i].1[42], 0x11);
            recs.remove(i);
        }
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 1, "{err}");
    let w = &v["dut_accounting"];
    assert_eq!(
        (
            &w["cut_by_end"],
            &w["unanswered"],
            &w["silent"],
            &v["missing"]
        ),
        (&1.into(), &3.into(), &1.into(), &3.into()),
        "{v}"
    );

    // Every reply 1,500 ns late (a NIC's turnaround; rewrite puts the frames in time order
    // again), the capture cut after #16 (frame 32, 19.951 µs): #15 (18.875 µs, 1,076 ns
    // before the end) and #16 wait, both within the 1,500 ns turnaround — cut by the end; the
    // ACK of #14 (17.799 + 1.5 µs) is in.
    let dir = fncc_chain("late", |recs| {
        recs.truncate(32);
        for r in recs.iter_mut().filter(|r| r.1[42] == 0x11) {
            r.0 += 1_500;
        }
        let end = recs[31].0;
        recs.retain(|r| r.0 <= end);
    });
    let (code, v, err) = diff_json(&dir, "fncc_chain_receiver.toml");
    assert_eq!(code, 0, "{v}{err}");
    let w = &v["dut_accounting"];
    assert_eq!(
        (
            &w["turnaround_ns"],
            &w["cut_by_end"],
            &w["acks"],
            &w["unanswered"]
        ),
        (&1_500.into(), &2.into(), &13.into(), &0.into()),
        "{w}"
    );
}
