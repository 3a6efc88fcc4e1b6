//! Pass 1 on small captures written here with the codecs' writer: which flows a capture
//! holds, how their two directions pair (manifest, IP pair, PSN continuity) and what a capture
//! point replays of them (docs/manifest.md "Flows").

use std::fs;
use std::path::Path;

use ccreplay::extract;
use ccreplay::replay::{self, Trace};
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::int::IntStack;

mod common;

use common::synth::{SENDER, frame, write_hpcc_trace};

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("pairing-{name}"))
}

/// Two QPs of 10.0.0.1 sending to the same peer (neither the manifest nor the IP pair can
/// pair them): each ACK direction goes to the flow whose PSNs it acknowledges — flow A from PSN
/// 0xFFFFF0 through the 24-bit wrap to 0x21, flow B from 0x100 (C-2 serial arithmetic).
#[test]
fn two_qps_to_one_peer_pair_by_psn_continuity() {
    let dir = tmpdir("psn-continuity");
    let mut w = PcapWriter::create(dir.join("two.pcap")).unwrap();
    let mut t = 1_700_000_000_000_000_000u64;
    let peer = [10, 0, 1, 1];
    // (data DestQP, ACK DestQP, first PSN)
    let flows = [(0x100u32, 0x10u32, 0xFF_FFF0u32), (0x101, 0x11, 0x100)];
    for r in 0..50u32 {
        for &(qp, _, first) in &flows {
            let data = BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: qp,
                psn: first.wrapping_add(r) & 0xFF_FFFF,
                ..Default::default()
            };
            w.write(t, &frame(SENDER, peer, data, IntStack::new(), None, 1000))
                .unwrap();
            t += 80;
        }
        for &(_, ack_qp, first) in &flows {
            let ack = BthRepr {
                opcode: Opcode::RC_ACK,
                dest_qp: ack_qp,
                psn: first.wrapping_add(r) & 0xFF_FFFF,
                ..Default::default()
            };
            let aeth = Some(AethRepr {
                syndrome: 0x1F,
                msn: r,
            });
            w.write(t, &frame(peer, SENDER, ack, IntStack::new(), aeth, 0))
                .unwrap();
            t += 80;
        }
    }
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "two.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "psn continuity"),
            (Some(0x101), Some(0x11), "psn continuity")
        ]
    );
    assert!(report.unpaired_acks.is_empty());
}

/// The flow table a DUT's hello lists, at a switch port (traces/dcqcn_cp: the egress mirror of
/// sw0's port to h3): each flow's local IP is its sender's, as tshark 4.0 reads the capture
/// with contrib/wireshark/ccreplay.lua and `-o ccreplay.dialect:hpcc` (`ip.src`, `ip.dst`,
/// `infiniband.bth.destqp`: 10.0.0.1 / .2 / .3 to 10.0.0.4, DestQP 0x200001 / 2 / 3, 178, 146
/// and 129 packets, in order of first packet).
#[test]
fn a_switch_ports_flows_name_their_senders() {
    let trace = Trace::load(&common::repo().join("traces/dcqcn_cp.toml")).unwrap();
    let (table, _) = ccreplay::events_in::flow_table(&trace).unwrap();
    let got: Vec<(String, String, Option<u32>)> = table
        .flows
        .iter()
        .map(|f| (f.local_ip.to_string(), f.remote_ip.to_string(), f.remote_qp))
        .collect();
    let want: Vec<(String, String, Option<u32>)> = (1..=3)
        .map(|i| {
            (
                format!("10.0.0.{i}"),
                "10.0.0.4".into(),
                Some(0x20_0000 + i),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// (remote QP, local QP, how paired) of a flow.
type Pairing = (Option<u32>, Option<u32>, &'static str);

/// The pairing of each flow of `table`, in flow order.
fn pairs(table: &extract::FlowTable) -> Vec<Pairing> {
    table
        .flows
        .iter()
        .map(|f| (f.remote_qp, f.local_qp, f.paired_by))
        .collect()
}

/// Pass 1 over `dir/capture` for an hpcc sender at 10.0.0.1 whose manifest lists no flows
/// (so pairing is by IP pair, then PSN continuity): each flow's pairing, and the report.
fn pass1(dir: &Path, capture: &str) -> (Vec<Pairing>, extract::ExtractReport) {
    let manifest = write_hpcc_trace(dir, "unused", 1, 1, "");
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (table, report) = extract::build_flow_table(&dir.join(capture), &m).unwrap();
    (pairs(&table), report)
}

/// One data frame of `qp` at `psn` from 10.0.0.1 to `peer`, or the ACK of `psn` on `ack_qp`
/// coming back (hpcc dialect, no INT: pairing reads QPs and PSNs only).
fn data_to(peer: [u8; 4], qp: u32, psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_WRITE_MIDDLE,
        dest_qp: qp,
        psn,
        ..Default::default()
    };
    frame(SENDER, peer, bth, IntStack::new(), None, 1000)
}

fn ack_from(peer: [u8; 4], ack_qp: u32, psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_ACK,
        dest_qp: ack_qp,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    frame(peer, SENDER, bth, IntStack::new(), aeth, 0)
}

/// Pairing by PSN continuity when the receiver coalesces its ACKs and the capture lost a
/// frame. Three QPs of 10.0.0.1 to one peer, so neither the IP pair nor a manifest pairs them:
/// - A sends PSNs 0x100..=0x10F and is acknowledged every fourth packet (ACK PSNs 0x103,
///   0x107, 0x10B, 0x10F: 3, 7, 11 and 15 past its first; its sent range spans 15);
/// - B the same from 0x5000 (ACKs 0x5003 .. 0x500F);
/// - C sends 0x9000..=0x9003 but the capture dropped 0x9003 (tcpdump at line rate does), so
///   its sent range spans 2 and its one ACK, of 0x9003, is 3 past its first: the rule's
///   allowance of one PSN past the range (docs/manifest.md "Flows": a range holds one PSN
///   more than was sent).
///
/// Every ACK lies 3 or more past its flow's first PSN, so pairing needs the spans (a span
/// left at 0 would pair none), and C's needs the allowance of one.
#[test]
fn coalesced_acks_and_a_dropped_frame_still_pair_by_psn_continuity() {
    let dir = tmpdir("psn-coalesced");
    let mut w = PcapWriter::create(dir.join("c.pcap")).unwrap();
    let peer = [10, 0, 1, 1];
    let mut t = 1_700_000_000_000_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 80;
    };
    for i in 0..16u32 {
        put(&mut w, data_to(peer, 0x100, 0x100 + i));
        put(&mut w, data_to(peer, 0x101, 0x5000 + i));
        if i < 3 {
            put(&mut w, data_to(peer, 0x102, 0x9000 + i));
        }
        if i % 4 == 3 {
            put(&mut w, ack_from(peer, 0x10, 0x100 + i));
            put(&mut w, ack_from(peer, 0x11, 0x5000 + i));
        }
        if i == 3 {
            put(&mut w, ack_from(peer, 0x12, 0x9003));
        }
    }
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "c.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "psn continuity"),
            (Some(0x101), Some(0x11), "psn continuity"),
            (Some(0x102), Some(0x12), "psn continuity"),
        ]
    );
    assert!(report.unpaired_acks.is_empty());
}

/// The manifest's `[[flows]]` in the two-pass table (`build_flow_table`, which `--jobs` and
/// the library use whatever the manifest says): a listed flow of which the capture holds only
/// ACKs is still a flow (paired by the manifest, its data QP from the list); a listed flow of
/// which it holds nothing is not one. The capture: flow 0x100 / 0x10 whole (4 data, 4 ACKs);
/// of the listed 0x200 / 0x20 its 2 ACKs only; of the listed 0x300 / 0x30 nothing.
#[test]
fn listed_flows_seen_by_their_acks_only_or_not_at_all() {
    let dir = tmpdir("listed");
    let mut w = PcapWriter::create(dir.join("l.pcap")).unwrap();
    let (peer, peer2, peer3) = ([10, 0, 1, 1], [10, 0, 1, 2], [10, 0, 1, 3]);
    let mut t = 1_000_000u64;
    for i in 0..4u32 {
        w.write(t, &data_to(peer, 0x100, i)).unwrap();
        w.write(t + 10, &ack_from(peer, 0x10, i)).unwrap();
        if i < 2 {
            w.write(t + 20, &ack_from(peer2, 0x20, 0x40 + i)).unwrap();
        }
        t += 100;
    }
    w.flush().unwrap();
    let listed = format!(
        "{}{}{}",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x10\nremote_ip = \"10.0.1.1\"\nremote_qp = 0x100\n",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x20\nremote_ip = \"10.0.1.2\"\nremote_qp = 0x200\n",
        "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x30\nremote_ip = \"10.0.1.3\"\nremote_qp = 0x300\n",
    );
    let manifest = write_hpcc_trace(&dir, "unused", 1, 1, &listed);
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (table, report) = extract::build_flow_table(&dir.join("l.pcap"), &m).unwrap();
    let got: Vec<_> = table
        .flows
        .iter()
        .map(|f| {
            (
                f.remote_ip.to_string(),
                f.remote_qp,
                f.local_qp,
                f.paired_by,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("10.0.1.1".into(), Some(0x100), Some(0x10), "manifest"),
            ("10.0.1.2".into(), Some(0x200), Some(0x20), "manifest"),
        ]
    );
    assert_eq!(table.data_flow(peer3.into(), 0x300), None);
    assert!(report.unpaired_acks.is_empty());
}

/// At a receiver that also sends (a host with flows both ways): only the data it receives
/// are events. Host 10.0.1.1 receives 3 data frames from 10.0.0.1 (QP 0x100) and ACKs them
/// (receiver feedback); it also sends 2 data frames to 10.0.0.9 and receives their 2 ACKs —
/// both directions of its own sending flow are the wrong direction here.
#[test]
fn a_receiver_that_also_sends_replays_only_the_data_it_receives() {
    let dir = tmpdir("receiver-both-ways");
    let mut w = PcapWriter::create(dir.join("r.pcap")).unwrap();
    let (host, sender, other) = ([10, 0, 1, 1], SENDER, [10, 0, 0, 9]);
    let bth = |opcode, dest_qp, psn| BthRepr {
        opcode,
        dest_qp,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    let no = IntStack::new();
    let mut t = 1_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 100;
    };
    for i in 0..3u32 {
        let d = bth(Opcode::RC_WRITE_MIDDLE, 0x10, i);
        put(&mut w, frame(sender, host, d, no, None, 1000));
        let a = bth(Opcode::RC_ACK, 0x100, i);
        put(&mut w, frame(host, sender, a, no, aeth, 0));
        if i < 2 {
            let d = bth(Opcode::RC_WRITE_MIDDLE, 0x900, 0x70 + i);
            put(&mut w, frame(host, other, d, no, None, 1000));
            let a = bth(Opcode::RC_ACK, 0x90, 0x70 + i);
            put(&mut w, frame(other, host, a, no, aeth, 0));
        }
    }
    w.flush().unwrap();
    let manifest = "capture = \"r.pcap\"\ndialect = \"hpcc\"\n[capture_point]\nkind = \"receiver\"\n\
                    host = \"10.0.1.1\"\n[network]\nlink_rate_bps = 100_000_000_000\n\
                    base_rtt_ns = 8_000\nmtu_bytes = 1000\n[[models]]\nname = \"hpcc\"\n\
                    [source]\nkind = \"synthesized\"\ngenerator = \"harness/tests/pipeline.rs\"\n\
                    seed = 0\n";
    fs::write(dir.join("r.toml"), manifest).unwrap();
    let m = ccreplay::manifest::Manifest::load(&dir.join("r.toml")).unwrap();
    let (mut table, report) = extract::build_flow_table(&dir.join("r.pcap"), &m).unwrap();
    let mut kinds = Vec::new();
    let report = extract::stream_events(&dir.join("r.pcap"), &m, &mut table, report, |e| {
        kinds.push(e.kind)
    })
    .unwrap();
    assert_eq!(table.flows.len(), 1);
    assert_eq!(kinds.len(), 3);
    assert!(
        kinds
            .iter()
            .all(|k| matches!(k, ccreplay_reference_cc::EventKind::RxData { .. }))
    );
    use ccreplay::extract::Skip;
    assert_eq!(report.packets, 10);
    assert_eq!(report.skipped.get(Skip::ReceiverFeedback), 3);
    assert_eq!(report.skipped.get(Skip::WrongDirection), 4);
}

/// A RoCEv2 frame from `src` to `dst` whose UDP payload (8 bytes) is too short for a BTH:
/// Ethernet 14 + IPv4 20 (total length 36) + UDP 8 (length 16, port 4791) + 8 zero bytes.
fn bth_cut_short(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7, 0, 16, 0, 0]);
    f.extend_from_slice(&[0; 8]);
    f
}

/// Damage counts where it is the capture point's own traffic (the warning, and `--strict`'s
/// error): at sender 10.0.0.1, four frames too short for a BTH — one it sends, one it
/// receives, two between other hosts — are 4 malformed, 2 of them damage in its traffic.
#[test]
fn damage_is_counted_in_the_hosts_own_traffic_only() {
    let dir = tmpdir("damage");
    let mut w = PcapWriter::create(dir.join("d.pcap")).unwrap();
    let (peer, a, b) = ([10, 0, 1, 1], [10, 0, 0, 7], [10, 0, 0, 8]);
    let frames = [
        data_to(peer, 0x100, 0),
        bth_cut_short(SENDER, peer),
        bth_cut_short(a, b),
        bth_cut_short(peer, SENDER),
        bth_cut_short(b, a),
    ];
    for (i, f) in frames.iter().enumerate() {
        w.write(1_000_000 + 100 * i as u64, f).unwrap();
    }
    w.flush().unwrap();
    let manifest = write_hpcc_trace(&dir, "unused", 1, 1, "");
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let (mut table, report) = extract::build_flow_table(&dir.join("d.pcap"), &m).unwrap();
    let report =
        extract::stream_events(&dir.join("d.pcap"), &m, &mut table, report, |_| {}).unwrap();
    assert_eq!((report.packets, report.events), (5, 1));
    assert_eq!(report.malformed, 4);
    assert_eq!(report.damaged_in_traffic, 2);
}

/// A sender manifest's `[[flows]]` is the whole pairing (docs/manifest.md): the capture is
/// read once, and a flow it does not list keeps its data as a flow of its own ("data only")
/// while its ACK direction is reported unpaired — not paired by IP, as a manifest without
/// `[[flows]]` would. Listed: 0x100 / 0x10 to 10.0.1.1; not listed: 0x101 / 0x11 to
/// 10.0.1.2; 3 data frames and 3 ACKs each.
#[test]
fn a_manifest_that_lists_flows_pairs_those_only() {
    let dir = tmpdir("listed-only");
    let mut w = PcapWriter::create(dir.join("t.pcap")).unwrap();
    let (p1, p2) = ([10, 0, 1, 1], [10, 0, 1, 2]);
    let mut t = 1_000_000u64;
    for i in 0..3u32 {
        for f in [
            data_to(p1, 0x100, i),
            data_to(p2, 0x101, i),
            ack_from(p1, 0x10, i),
            ack_from(p2, 0x11, i),
        ] {
            w.write(t, &f).unwrap();
            t += 100;
        }
    }
    w.flush().unwrap();
    let listed = "[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x10\nremote_ip = \"10.0.1.1\"\nremote_qp = 0x100\n";
    let base = fs::read_to_string(write_hpcc_trace(&dir, "unused", 1, 1, listed)).unwrap();
    fs::write(dir.join("t.toml"), format!("capture = \"t.pcap\"\n{base}")).unwrap();
    let trace = Trace::load(&dir.join("t.toml")).unwrap();
    let mut events = 0;
    let (table, report) = replay::for_each_event(&trace, |_| events += 1).unwrap();
    let got = pairs(&table);
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "manifest"),
            (Some(0x101), None, "data only"),
        ]
    );
    assert_eq!(
        report.unpaired_acks,
        [("10.0.1.2".parse().unwrap(), 0x11, 3)]
    );
    // 3 + 3 data frames and flow 0x100's 3 ACKs; the other 3 ACKs are skipped.
    assert_eq!(events, 9);
    assert_eq!(report.skipped.get(extract::Skip::UnpairedAck), 3);
}

/// C-2 at the pairing's edge: a PSN exactly half the 24-bit space (2^23) past a flow's first
/// is not after it, so it does not widen the flow's sent range. Flow 0x102 sends PSNs 0 and
/// 0x800000 and its one ACK names 0x800000: no flow's range holds it (0x102's spans 0, flow
/// 0x101's is 0x100000..=0x100003), so the direction stays unpaired.
#[test]
fn a_psn_half_the_space_ahead_does_not_widen_a_flows_range() {
    let dir = tmpdir("psn-half");
    let mut w = PcapWriter::create(dir.join("h.pcap")).unwrap();
    let peer = [10, 0, 1, 1];
    let mut t = 1_000_000u64;
    let mut put = |w: &mut PcapWriter<_>, f: Vec<u8>| {
        w.write(t, &f).unwrap();
        t += 100;
    };
    for i in 0..4u32 {
        put(&mut w, data_to(peer, 0x101, 0x10_0000 + i));
    }
    put(&mut w, ack_from(peer, 0x11, 0x10_0003));
    put(&mut w, data_to(peer, 0x102, 0));
    put(&mut w, data_to(peer, 0x102, 0x80_0000));
    put(&mut w, ack_from(peer, 0x12, 0x80_0000));
    w.flush().unwrap();
    let (got, report) = pass1(&dir, "h.pcap");
    assert_eq!(
        got,
        [
            (Some(0x101), Some(0x11), "psn continuity"),
            (Some(0x102), None, "data only"),
        ]
    );
    assert_eq!(
        report.unpaired_acks,
        [("10.0.1.1".parse().unwrap(), 0x12, 1)]
    );
}

/// Two QPs of 10.0.0.1 to one peer, both from PSN 0 (as simulators start), one after the
/// other, into `dir/NAME.pcap`: A (data QP 0x100) sends PSNs 0..=3 (frames 1-4, 100 ns apart),
/// acknowledged on QP 0x10 8 µs later (frames 5-8); then B (0x101) the same, acknowledged on
/// 0x11 (frames 9-16).
fn overlapping_one_after_the_other(dir: &Path, name: &str) {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let peer = [10, 0, 1, 1];
    let mut t = 1_000_000u64;
    for (qp, ack_qp) in [(0x100, 0x10), (0x101, 0x11)] {
        for psn in 0..4u32 {
            w.write(t + 100 * u64::from(psn), &data_to(peer, qp, psn))
                .unwrap();
        }
        for psn in 0..4u32 {
            w.write(
                t + 8_000 + 100 * u64::from(psn),
                &ack_from(peer, ack_qp, psn),
            )
            .unwrap();
        }
        t += 20_000;
    }
    w.flush().unwrap();
}

/// The same two flows sending at once: A's PSN k, then B's (frames 1-8), and 8 µs later A's
/// ACK of k on 0x10, then B's on 0x11 (frames 9-16).
fn overlapping_at_once(dir: &Path, name: &str) {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let peer = [10, 0, 1, 1];
    let t = 1_000_000u64;
    for psn in 0..4u32 {
        let t = t + 200 * u64::from(psn);
        w.write(t, &data_to(peer, 0x100, psn)).unwrap();
        w.write(t + 100, &data_to(peer, 0x101, psn)).unwrap();
    }
    for psn in 0..4u32 {
        let t = t + 8_000 + 200 * u64::from(psn);
        w.write(t, &ack_from(peer, 0x10, psn)).unwrap();
        w.write(t + 100, &ack_from(peer, 0x11, psn)).unwrap();
    }
    w.flush().unwrap();
}

/// [`overlapping_one_after_the_other`]: both ranges are 0..=3, so every ACK PSN hits both
/// flows; but 0x10's first ACK (frame 5) comes before B's first data (frame 9), so it cannot
/// answer B — it pairs with A, and 0x11 with what is left.
#[test]
fn overlapping_psn_ranges_pair_when_one_flow_began_after_the_ack() {
    let dir = tmpdir("psn-overlap-sequential");
    overlapping_one_after_the_other(&dir, "s");
    let (got, report) = pass1(&dir, "s.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), Some(0x10), "psn continuity"),
            (Some(0x101), Some(0x11), "psn continuity"),
        ]
    );
    assert!(report.unpaired_acks.is_empty());
    assert!(report.ambiguous_acks.is_empty());
}

/// [`overlapping_at_once`]: both flows began before either ACK direction's first ACK, every
/// ACK PSN (0..=3) falls in both ranges (0..=3), so PSN continuity cannot tell which answers
/// which. Neither is guessed: both directions stay unpaired, reported as ambiguous with the
/// two candidate flows (4 packets each), and not among the plain unpaired ones.
#[test]
fn overlapping_psn_ranges_of_flows_sending_at_once_are_not_guessed() {
    let dir = tmpdir("psn-overlap-together");
    overlapping_at_once(&dir, "t");
    let (got, report) = pass1(&dir, "t.pcap");
    assert_eq!(
        got,
        [
            (Some(0x100), None, "data only"),
            (Some(0x101), None, "data only"),
        ]
    );
    let peer = std::net::IpAddr::from([10, 0, 1, 1]);
    assert_eq!(
        report.ambiguous_acks,
        [
            (peer, 0x10, 4, vec![0x100, 0x101]),
            (peer, 0x11, 4, vec![0x100, 0x101]),
        ]
    );
    assert!(report.unpaired_acks.is_empty());
}

/// What a user sees of that ambiguous pairing: `replay` names both ACK directions, the flows
/// each could answer and the fix; with no flow left to decide on, the run is an error (hpcc
/// decides on ACKs only, and none was paired: 8 `tx_data` events).
#[test]
fn an_ambiguous_pairing_is_reported_with_its_fix() {
    let dir = tmpdir("psn-overlap-cli");
    overlapping_at_once(&dir, "t");
    let base = fs::read_to_string(write_hpcc_trace(&dir, "unused", 1, 1, "")).unwrap();
    fs::write(dir.join("t.toml"), format!("capture = \"t.pcap\"\n{base}")).unwrap();
    let (code, _, err) = common::run(&dir, &["replay", "t.toml", "-o", "d.jsonl"]);
    for qp in ["0x000010", "0x000011"] {
        let line = format!(
            "4 ACK/NAK/CNP packets from 10.0.1.1 to QP {qp} not paired: they could answer the data to 10.0.1.1 QP 0x000100 or QP 0x000101 (the flows' PSN ranges overlap)"
        );
        assert!(err.contains(&line), "{line}\n{err}");
    }
    assert!(
        err.contains("hint: add a [[flows]] pairing for it to t.toml"),
        "{err}"
    );
    assert!(
        err.contains("8 events (tx_data 8); 8 skipped: 8 ACK/NAK/CNP of no flow"),
        "{err}"
    );
    assert_eq!(code, 2, "{err}");
}

/// `init` writes the pairing it can tell and no other: of the flows one after the other, both
/// `[[flows]]` entries (A answered on 0x10 = 16, B on 0x11 = 17: every ACK of A's PSNs came
/// back before B sent them again); of the flows at once none — each ACK's PSN had been sent by
/// both QPs and answered by neither yet — and a comment per flow naming the two ACK QPs to
/// choose from.
#[test]
fn init_pairs_overlapping_flows_only_when_the_capture_tells_them_apart() {
    let dir = tmpdir("psn-overlap-init");
    overlapping_one_after_the_other(&dir, "s");
    overlapping_at_once(&dir, "t");
    let (code, _, err) = common::run(&dir, &["init", "s.pcap"]);
    assert_eq!(code, 0, "{err}");
    let m: toml::Table = fs::read_to_string(dir.join("s.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let flows: Vec<(i64, i64)> = m["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["remote_qp"].as_integer().unwrap(),
                f["local_qp"].as_integer().unwrap(),
            )
        })
        .collect();
    assert_eq!(flows, [(0x100, 0x10), (0x101, 0x11)]);

    // The trial replay finds nothing to decide on (the pairing is left to the user): exit 2,
    // the manifest written all the same.
    let (code, _, err) = common::run(&dir, &["init", "t.pcap"]);
    assert_eq!(code, 2, "{err}");
    let text = fs::read_to_string(dir.join("t.toml")).unwrap();
    let m: toml::Table = text.parse().unwrap();
    assert!(!m.contains_key("flows"), "{text}");
    for qp in ["0x000100", "0x000101"] {
        let line = format!(
            "# 10.0.0.1 -> 10.0.1.1 QP {qp} (4 data packets): another QP to 10.0.1.1 sent the same PSNs at the same time,\n# so the ACKs on QP 0x000010, 0x000011 could answer either"
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
}
