//! Pass 2 (`extract/events.rs`) and its account (`extract/account.rs`) on small captures
//! written here with the codecs' writer: what each record becomes — an event of its flow, at
//! its time, or a skip counted under its reason — and the tallies a verdict's diagnostics read.
//! Every expected count is the capture's own, as the test writes it.

use std::path::Path;

use ccreplay::extract::{self, ExtractReport, Skip};
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::{Event, EventKind};

mod common;

use common::synth::{SENDER, frame, write_hpcc_trace};

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("pass2-{name}"))
}

/// The peer of the sender 10.0.0.1 in these captures.
const PEER: [u8; 4] = [10, 0, 1, 1];

/// A data frame of QP 0x100 from 10.0.0.1 to the peer at `psn` (hpcc dialect, no INT).
fn data(psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_WRITE_MIDDLE,
        dest_qp: 0x100,
        psn,
        ..Default::default()
    };
    frame(SENDER, PEER, bth, IntStack::new(), None, 1000)
}

/// The peer's ACK of `psn`, to QP 0x10.
fn ack(psn: u32) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode::RC_ACK,
        dest_qp: 0x10,
        psn,
        ..Default::default()
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    frame(PEER, SENDER, bth, IntStack::new(), aeth, 0)
}

/// `f` sent to UDP port `port` instead of 4791: Ethernet 14 + IPv4 20 bytes, then the UDP
/// source port (2 bytes) and the destination port. The synthesized frames carry UDP checksum
/// 0 (none, RFC 768), so nothing else changes.
fn to_udp_port(mut f: Vec<u8>, port: u16) -> Vec<u8> {
    f[36..38].copy_from_slice(&port.to_be_bytes());
    f
}

/// Write `frames` (time in ns, frame) to `dir/NAME.pcap`.
fn capture(dir: &Path, name: &str, frames: &[(u64, Vec<u8>)]) {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    for (t, f) in frames {
        w.write(*t, f).unwrap();
    }
    w.flush().unwrap();
}

/// Both passes over `dir/NAME.pcap` at the hpcc sender 10.0.0.1 (no `[[flows]]`: pairing by
/// IP pair; base RTT 8 µs): the events, in order, and the report.
fn pass2(dir: &Path, name: &str) -> (Vec<Event>, ExtractReport) {
    let manifest = write_hpcc_trace(dir, "unused", 1, 1, "");
    let m = ccreplay::manifest::Manifest::load(&manifest).unwrap();
    let pcap = dir.join(format!("{name}.pcap"));
    let (mut table, report) = extract::build_flow_table(&pcap, &m).unwrap();
    let mut events = Vec::new();
    let report =
        extract::stream_events(&pcap, &m, &mut table, report, |e| events.push(*e)).unwrap();
    (events, report)
}

/// The tally of UDP ports that are not RoCEv2's keeps at most 64 of them (ExtractReport's
/// `other_udp_ports`: "at most 64 kept"), most first: one data frame, then two datagrams to
/// port 53 and one to each of the 65 ports 1000..=1064 — 66 ports, 67 datagrams. The tally
/// keeps the first 64 ports it meets (53 and 1000..=1062), 53 first with its 2.
#[test]
fn the_tally_of_other_udp_ports_keeps_64_most_first() {
    let dir = tmpdir("udp-ports");
    let mut frames = vec![(1_000, data(0))];
    for port in [53, 53].into_iter().chain(1000..=1064) {
        let t = 1_000 + 100 * frames.len() as u64;
        frames.push((t, to_udp_port(data(1), port)));
    }
    capture(&dir, "u", &frames);
    let (events, r) = pass2(&dir, "u");
    assert_eq!(events.len(), 1);
    // 2 + 65 (tshark 4.0.17 on the capture, `-Y "udp.dstport != 4791"`: 67 frames, one port
    // twice and 65 once). datagrams, all counted though not all tallied.
    assert_eq!(r.skipped.get(Skip::OtherUdpPort), 67);
    assert_eq!(r.other_udp_ports.len(), 64);
    assert_eq!(r.other_udp_ports[0], (53, 2));
    assert_eq!(r.other_udp_ports[1], (1000, 1));
    assert_eq!(r.other_udp_ports[63], (1062, 1));
}

/// Model time never goes backwards (C-2, C-5): an event stamped before the one fed last is fed
/// at that one's time and counted in `time_clamped`; an event at the same time is not a step
/// back. Data 0 and its ACK at 1 000 ns (a tie), data 1 at 900 ns (back: fed at 1 000),
/// its ACK at 1 100 ns: times 1 000, 1 000, 1 000, 1 100 and one clamped, by 100 ns.
#[test]
fn a_step_back_in_time_is_fed_at_the_previous_time_and_a_tie_is_not_one() {
    let dir = tmpdir("clamp");
    capture(
        &dir,
        "c",
        &[
            (1_000, data(0)),
            (1_000, ack(0)),
            (900, data(1)),
            (1_100, ack(1)),
        ],
    );
    // tshark's frame.time_epoch of the capture: 1 000, 1 000, 900, 1 100 ns.
    let (events, r) = pass2(&dir, "c");
    let times: Vec<u64> = events.iter().map(|e| e.t_ns).collect();
    assert_eq!(times, [1_000, 1_000, 1_000, 1_100]);
    assert_eq!(r.time_clamped, 1);
    assert_eq!(r.time_back_max_ns, 100);
    let kinds: Vec<bool> = events
        .iter()
        .map(|e| matches!(e.kind, EventKind::TxData { .. }))
        .collect();
    assert_eq!(kinds, [true, false, true, false]);
}

/// What a sender's verdict says about damage and about other hosts' traffic comes from pass
/// 2's tallies. At sender 10.0.0.1, six frames (numbered from 1, as tshark numbers them):
/// 1. data PSN 0 — an event;
/// 2. the ACK of PSN 0 with its last ICRC byte flipped — received, so bad ICRC (wire.md 4);
/// 3. data PSN 1 cut by a 50-byte snaplen (Ethernet 14 + IPv4 20 + UDP 8 whole, the INT
///    shim and BTH not) — malformed, short, to port 4791 (RoCEv2) and the host's own;
/// 4. data from 10.0.0.7 to 10.0.0.8 — of other hosts, a data sender 10.0.0.7;
/// 5. 10.0.0.8's ACK to 10.0.0.7 — of other hosts, no data sender;
/// 6. the ACK of PSN 1 — an event.
///
/// So 2 events; skipped 1 bad ICRC, 1 malformed, 2 of other hosts; all 6 RoCEv2 (UDP 4791);
/// 2 damaged frames in the host's own traffic (2 and 3).
#[test]
fn damage_and_other_hosts_traffic_are_tallied_where_the_verdict_reads_them() {
    let dir = tmpdir("damage");
    let mut bad_icrc = ack(0);
    *bad_icrc.last_mut().unwrap() ^= 0xFF;
    let cut = data(1);
    let (a, b) = ([10, 0, 0, 7], [10, 0, 0, 8]);
    let other = |src, dst, opcode, aeth| {
        let bth = BthRepr {
            opcode,
            dest_qp: 0x300,
            psn: 5,
            ..Default::default()
        };
        frame(
            src,
            dst,
            bth,
            IntStack::new(),
            aeth,
            if aeth.is_some() { 0 } else { 1000 },
        )
    };
    let aeth = Some(AethRepr {
        syndrome: 0x1F,
        msn: 0,
    });
    let mut w = PcapWriter::create(dir.join("d.pcap")).unwrap();
    w.write(1_000, &data(0)).unwrap();
    w.write(1_100, &bad_icrc).unwrap();
    w.write_truncated(1_200, &cut[..50], cut.len() as u32)
        .unwrap();
    w.write(1_300, &other(a, b, Opcode::RC_WRITE_MIDDLE, None))
        .unwrap();
    w.write(1_400, &other(b, a, Opcode::RC_ACK, aeth)).unwrap();
    w.write(1_500, &ack(1)).unwrap();
    w.flush().unwrap();
    let (events, r) = pass2(&dir, "d");
    assert_eq!((r.packets, r.events, events.len()), (6, 2, 2));
    assert_eq!(r.roce, 6);
    assert_eq!(r.skipped.get(Skip::BadIcrc), 1);
    assert_eq!(r.bad_icrc_examples, [2]);
    assert_eq!((r.malformed, r.skipped.get(Skip::Malformed)), (1, 1));
    assert_eq!(r.malformed_examples.len(), 1);
    assert_eq!(r.malformed_examples[0].0, 3);
    assert_eq!(r.snaplen_short, 1);
    assert_eq!(r.damaged_in_traffic, 2);
    assert_eq!((r.not_this_host, r.skipped.get(Skip::OtherHost)), (2, 2));
    assert_eq!(r.other_data_senders, [("10.0.0.7".parse().unwrap(), 1)]);
    assert_eq!(r.skipped.total(), 4);
}
