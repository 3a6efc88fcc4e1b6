//! A Lumina testbed's dump (docs/wire.md 2.3) replayed at the responder, as Lumina's CNP test
//! runs it: the switch marks, drops and corrupts chosen packets of a requester's WRITEs, and
//! mirrors every packet, rewritten, to its dump servers. The dumps are written here: each
//! packet with the codecs' writer (its ICRC), then rewritten as the Lumina switch's egress does
//! (codecs/tests/make_lumina_vectors.py does the same with scapy for the decoder's tests).
//! Every count and time below is set by hand from the packets the test writes.

use std::path::Path;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::{FrameRepr, IpRepr, RoceRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::IntConfig;
use serde_json::Value;

mod common;

const REQUESTER: [u8; 4] = [10, 0, 0, 1];
const RESPONDER: [u8; 4] = [10, 0, 0, 2];
/// The UDP port the switch sends its copies to.
const DUMPER_PORT: u16 = 5000;
/// The switch's timestamp of the first copy, ns, and the dump server's clock then.
const SWITCH_T0: u64 = 0x0000_1234_0000;
const CAPTURE_T0: u64 = 1_700_000_000_000_000_000;

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("lumina-{name}"))
}

/// A RoCEv2 frame as a NIC sends it (ICRC included): WRITE MIDDLE data of 1,000 bytes to the
/// responder's QP 0x11, ECT(0); or the responder's ACK / CNP to the requester's QP 0x22.
fn packet(opcode: Opcode, psn: u32) -> Vec<u8> {
    let data = opcode == Opcode::RC_WRITE_MIDDLE;
    packet_to(opcode, psn, if data { 0x11 } else { 0x22 })
}

/// [`packet`] to DestQP `qp`.
fn packet_to(opcode: Opcode, psn: u32, qp: u32) -> Vec<u8> {
    let data = opcode == Opcode::RC_WRITE_MIDDLE;
    let (src, dst) = if data {
        (REQUESTER, RESPONDER)
    } else {
        (RESPONDER, REQUESTER)
    };
    let mut roce = RoceRepr::for_opcode(BthRepr {
        opcode,
        dest_qp: qp,
        psn,
        ..Default::default()
    });
    if opcode == Opcode::RC_ACK {
        roce.aeth = Some(AethRepr {
            syndrome: 0x1F,
            msn: psn,
        });
    }
    if data {
        roce.payload = vec![0xA5; 1000];
    }
    let f = FrameRepr {
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_mac: [2, 0, 0, 0, 0, 1],
        vlans: [None, None],
        ip: IpRepr::V4 {
            src,
            dst,
            dscp: 26,
            ecn: 2,
            ttl: 64,
            identification: psn as u16,
            options: vec![],
        },
        udp_src_port: 0xC000 | psn as u16,
        udp_dst_port: 4791,
        roce,
    };
    let mut out = Vec::new();
    f.emit(Dialect::Roce, IntConfig::default(), &mut out)
        .unwrap();
    out
}

/// RFC 1071 over an IPv4 header whose checksum field is zero.
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xFFFF) + (s >> 16);
    }
    !(s as u16)
}

/// The Lumina switch's copy of `frame` (lumina/p4 `SwitchEgress`): timestamp and sequence
/// number in the MACs, the event in the TTL (an ECN event's CE mark set before the copy),
/// the UDP source port into the checksum field, a random source port, the dumper port, the
/// IPv4 checksum recomputed.
fn copy(frame: &[u8], switch_ns: u64, seq: u64, event: u8) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[0..6].copy_from_slice(&switch_ns.to_be_bytes()[2..]);
    f[6..12].copy_from_slice(&seq.to_be_bytes()[2..]);
    let ip = 14;
    if event == 2 {
        f[ip + 1] |= 3;
    }
    f[ip + 8] = event;
    f[ip + 10..ip + 12].fill(0);
    let sum = ipv4_checksum(&f[ip..ip + 20]);
    f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    let udp = ip + 20;
    let sport = [f[udp], f[udp + 1]];
    f[udp + 6..udp + 8].copy_from_slice(&sport);
    f[udp..udp + 2].copy_from_slice(&0x1000u16.wrapping_add(seq as u16).to_be_bytes());
    f[udp + 2..udp + 4].copy_from_slice(&DUMPER_PORT.to_be_bytes());
    f
}

/// One copy of the dump: the packet, the switch's time of it (ns after `SWITCH_T0`), the
/// dump server's lag behind the switch (jitter), and the event.
struct Copy {
    opcode: Opcode,
    psn: u32,
    /// The packet's DestQP when not its kind's usual one (`packet`).
    qp: Option<u32>,
    at_ns: u64,
    lag_ns: u64,
    event: u8,
}

/// The test's dump: the requester's WRITEs PSN 0..=7 one µs apart; the switch marks 2 and 3
/// (ECN), drops 4 and corrupts 6 (bit error); the responder's ACK of 3 and a CNP come back
/// between them. Switch sequence numbers 1..=10 in this order; the dump server's clock lags
/// the switch by 100 to 900 ns, unevenly.
fn the_dump() -> Vec<Copy> {
    let c = |opcode, psn, at_ns, lag_ns, event| Copy {
        opcode,
        psn,
        qp: None,
        at_ns,
        lag_ns,
        event,
    };
    let w = Opcode::RC_WRITE_MIDDLE;
    vec![
        c(w, 0, 0, 100, 0),
        c(w, 1, 1_000, 900, 0),
        c(w, 2, 2_000, 300, 2),
        c(w, 3, 3_000, 100, 2),
        c(Opcode::RC_ACK, 3, 3_500, 700, 0),
        c(Opcode::CNP, 0, 3_600, 200, 0),
        c(w, 4, 4_000, 500, 1),
        c(w, 5, 5_000, 100, 0),
        c(w, 6, 6_000, 800, 3),
        c(w, 7, 7_000, 100, 0),
    ]
}

/// Write `copies` (switch sequence number `seqs[i]` for the i-th) to `dir/NAME.pcap`, and a
/// manifest for the responder with `dcqcn-np` that reads them (`[mirror]` as given).
fn write_trace(dir: &Path, name: &str, copies: &[Copy], seqs: &[u64], mirror: &str) {
    write_trace_at(
        dir,
        name,
        copies,
        seqs,
        mirror,
        "receiver\"\nhost = \"10.0.0.2",
    );
}

/// [`write_trace`] at the capture point `point` (`KIND"\nhost = "IP`).
fn write_trace_at(
    dir: &Path,
    name: &str,
    copies: &[Copy],
    seqs: &[u64],
    mirror: &str,
    point: &str,
) {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    for (c, &seq) in copies.iter().zip(seqs) {
        let p = match c.qp {
            Some(qp) => packet_to(c.opcode, c.psn, qp),
            None => packet(c.opcode, c.psn),
        };
        let f = copy(&p, SWITCH_T0 + c.at_ns, seq, c.event);
        w.write(CAPTURE_T0 + c.at_ns + c.lag_ns, &f).unwrap();
    }
    w.flush().unwrap();
    let model = if point.starts_with("sender") {
        "dcqcn"
    } else {
        "dcqcn-np"
    };
    let manifest = format!(
        r#"capture = "{name}.pcap"
dialect = "roce"
[capture_point]
kind = "{point}"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "{model}"
[mirror]
{mirror}
"#
    );
    std::fs::write(dir.join(format!("{name}.toml")), manifest).unwrap();
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The responder's events and decisions from the dump, timed by the switch: the requester's 8
/// WRITEs minus the dropped PSN 4 and the corrupted PSN 6 are its 6 `rx_data` events, PSN 2
/// and 3 CE; the responder's own ACK and CNP are its output. The first copy keeps its capture
/// time (CAPTURE_T0 + 100), every later one is that plus the switch's interval — the dump
/// server's lag (100 to 900 ns) gone. `dcqcn-np` answers the first CE (PSN 2, 2,000 ns after
/// the first copy) with a CNP at once; PSN 3 is within N = 50 µs of it (docs/models/dcqcn.md).
#[test]
fn a_lumina_dump_replays_at_the_responder_by_the_switchs_clock() {
    let dir = tmpdir("responder");
    let dump = the_dump();
    let seqs: Vec<u64> = (1..=10).collect();
    write_trace(
        &dir,
        "cnp",
        &dump,
        &seqs,
        &format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\""),
    );
    let err = replay_the_responder(&dir, "cnp.toml");
    assert!(
        err.contains(
            "10 Lumina copies (events injected by the switch: 6 none, 1 drop, 2 ECN, 1 bit error)"
        ),
        "{err}"
    );
    assert!(
        err.contains("6 events timed by the mirroring switch's clock (Lumina, 1 ns units)"),
        "{err}"
    );
}

/// Replay [`the_dump`] at the responder from `manifest` in `dir` and check what the first
/// test's comment works out (events, times, marks, the first CNP); the run's stderr.
fn replay_the_responder(dir: &Path, manifest: &str) -> String {
    let args = [
        "replay",
        manifest,
        "-o",
        "d.jsonl",
        "--emit-events",
        "e.jsonl",
    ];
    let (code, _, err) = common::run(dir, &args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("10 frames: 10 RoCEv2, 6 events (rx_data 6); 4 skipped: 2 dropped or corrupted by the switch on the way (Lumina events), 2 ACK/NAK/CNP sent by the receiver"),
        "{err}"
    );
    let events = read_jsonl(&dir.join("e.jsonl"));
    let got: Vec<(u64, u64, u64)> = events
        .iter()
        .map(|e| {
            (
                e["t"].as_u64().unwrap(),
                e["psn"].as_u64().unwrap(),
                e["ecn"].as_u64().unwrap(),
            )
        })
        .collect();
    let t = |at_ns: u64| CAPTURE_T0 + 100 + at_ns;
    assert_eq!(
        got,
        [
            (t(0), 0, 2),
            (t(1_000), 1, 2),
            (t(2_000), 2, 3),
            (t(3_000), 3, 3),
            (t(5_000), 5, 2),
            (t(7_000), 7, 2),
        ]
    );
    let decisions = read_jsonl(&dir.join("d.jsonl"));
    assert_eq!(decisions[0]["t"].as_u64(), Some(t(2_000)));
    assert_eq!(decisions[0]["send_cnp"].as_bool(), Some(true));
    assert_eq!(decisions[0]["cause"]["index"].as_u64(), Some(2));
    err
}

/// Copies the dump servers lost, or that are out of the switch's order, make the replay an
/// error: without sequence number 5 (the ACK) the switch numbered a packet the capture does
/// not hold; with 7 and 8 swapped (the dropped PSN 4 and PSN 5) the events would replay out
/// of order.
#[test]
fn lost_or_reordered_copies_are_an_error() {
    let dir = tmpdir("integrity");
    let mirror = format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\"");
    let mut lost = the_dump();
    lost.remove(4);
    let seqs: Vec<u64> = (1..=10).filter(|&s| s != 5).collect();
    write_trace(&dir, "lost", &lost, &seqs, &mirror);
    let (code, _, err) = common::run(&dir, &["replay", "lost.toml", "-o", "d.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the Lumina switch numbered 1 packet that the capture does not hold (its sequence numbers skip them; first: 5, missing before frame 5)"),
        "{err}"
    );

    let seqs = [1, 2, 3, 4, 5, 6, 8, 7, 9, 10];
    write_trace(&dir, "swapped", &the_dump(), &seqs, &mirror);
    let (code, _, err) = common::run(&dir, &["replay", "swapped.toml", "-o", "d.jsonl"]);
    assert_eq!(code, 2, "{err}");
    // 8 after 6 is a gap of one (7), then 7 comes behind 8.
    assert!(
        err.contains(
            "1 Lumina copy is out of the switch's order (first: frame 8, sequence number 7 after 8)"
        ),
        "{err}"
    );
}

/// `init --lumina-port` writes the dump's `[mirror]`: the port and the switch's clock; and of
/// its two NICs, how to replay the other. Without the option, init finds the copies itself.
#[test]
fn init_writes_the_lumina_port_and_the_switchs_clock() {
    let dir = tmpdir("init");
    let seqs: Vec<u64> = (1..=10).collect();
    write_trace(&dir, "x", &the_dump(), &seqs, "");
    let (_, _, err) = common::run(
        &dir,
        &["init", "x.pcap", "-o", "i.toml", "--lumina-port", "5000"],
    );
    let text = std::fs::read_to_string(dir.join("i.toml")).unwrap_or_else(|_| panic!("{err}"));
    // Without the option the dump holds no RoCEv2 to port 4791, and init says which option
    // reads it: the 10 copies to 5000 all check their ICRC.
    let (code, _, err) = common::run(&dir, &["init", "x.pcap", "-o", "j.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("hint: UDP 5000 holds a Lumina switch's copies (10 of them check their ICRC with the packet's own ports put back): `ccreplay init CAPTURE --lumina-port 5000`"),
        "{err}"
    );
    let m: toml::Table = text.parse().unwrap();
    let mirror = m["mirror"].as_table().unwrap();
    assert_eq!(mirror["lumina_port"].as_integer(), Some(5000), "{text}");
    assert_eq!(mirror["clock"].as_str(), Some("switch"), "{text}");
    assert!(
        text.contains("# a Lumina testbed's dump (docs/wire.md 2.3): 10 of its 10 RoCEv2 packets are the switch's"),
        "{text}"
    );
    // Both NICs are on every packet: the requester (8 data packets sent) is replayed, and the
    // manifest says how to take the responder instead.
    assert_eq!(
        m["capture_point"]["host"].as_str(),
        Some("10.0.0.1"),
        "{text}"
    );
    assert!(
        text.contains("# so is its one peer, 10.0.0.2: for that NIC (the one that receives the data), kind = \"receiver\", host = \"10.0.0.2\""),
        "{text}"
    );
}

/// `inspect --lumina-port` shows each copy as the packet it copies, with the switch's fields:
/// the third copy is PSN 2, sequence number 3, stamped SWITCH_T0 + 2,000 = 305,399,760 ns,
/// marked CE by the switch; its UDP source port is the packet's own (0xC000 | PSN = 49154).
#[test]
fn inspect_shows_the_switchs_fields() {
    let dir = tmpdir("inspect");
    let seqs: Vec<u64> = (1..=10).collect();
    write_trace(&dir, "x", &the_dump(), &seqs, "");
    let args = [
        "inspect",
        "x.pcap",
        "--lumina-port",
        "5000",
        "--dialect",
        "roce",
    ];
    let (code, out, err) = common::run(&dir, &[&args[..], &["--format", "text"]].concat());
    assert_eq!(code, 0, "{err}");
    let third = out.lines().nth(2).unwrap_or_default();
    assert!(
        third.ends_with("[Lumina copy 3 at 305399760 ns, event ecn]"),
        "{out}"
    );
    let fields = [
        "-e",
        "ccreplay.lumina.seq",
        "-e",
        "ccreplay.lumina.event",
        "-e",
        "udp.srcport",
        "-e",
        "infiniband.bth.psn",
    ];
    let (code, out, err) = common::run(&dir, &[&args[..], &fields[..]].concat());
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[2], "3\tecn\t49154\t2", "{out}");
    assert_eq!(lines[6], "7\tdrop\t49156\t4", "{out}");
    assert_eq!(lines[8], "9\tbit_error\t49158\t6", "{out}");
}

/// Lumina's CNP test judged by `--dut wire` (docs/dut.md "CNP pacing"): the responder's NIC
/// decisions are the CNPs it sent. In the dump its one CNP (3,600 ns) answers the first mark
/// (PSN 2 at 2,000 ns; PSN 3's mark falls within N = 50 µs of it): conformant. A NIC that
/// answers PSN 3's mark too, with a second CNP at 4,100 ns, paces too fast: a decision the
/// reference never makes, and the run differs (exit status 1).
#[test]
fn the_responders_cnps_are_judged_from_the_dump() {
    let dir = tmpdir("wire");
    let mirror = format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\"");
    let seqs: Vec<u64> = (1..=11).collect();
    write_trace(&dir, "good", &the_dump(), &seqs, &mirror);
    let args = |t: &'static str| ["diff", t, "--dut", "wire", "--model", "dcqcn-np"];
    let (code, out, err) = common::run(&dir, &args("good.toml"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("CONFORMANT: 1 flows, 1 decisions, 0 mismatched, 0 missing, 0 extra"),
        "{out}"
    );
    assert!(
        out.contains("wire: 2 ACK/NAK/CNP sent by 10.0.0.2: 1 CNPs compared"),
        "{out}"
    );

    let mut bad = the_dump();
    bad.insert(
        7,
        Copy {
            opcode: Opcode::CNP,
            psn: 0,
            qp: None,
            at_ns: 4_100,
            lag_ns: 300,
            event: 0,
        },
    );
    write_trace(&dir, "bad", &bad, &seqs, &mirror);
    let (code, out, err) = common::run(&dir, &args("bad.toml"));
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("1 extra"), "{out}");
}

/// The same dump at the requester (the sender's NIC): its 8 WRITEs were all sent, whatever the
/// switch did to them after, so all 8 are `tx_data`; of the responder's ACK and CNP, the ACK
/// is dropped by the switch in this copy (event 1), so the requester never got it — skipped,
/// the CNP replayed. A stray ACK to another of its QPs (0x23), dropped too, is skipped the
/// same way, not reported as an ACK direction no flow answers (pairing never saw it either).
#[test]
fn at_the_requester_what_it_sent_counts_and_what_it_never_got_does_not() {
    let dir = tmpdir("requester");
    let mut dump = the_dump();
    dump[4].event = 1; // the ACK of PSN 3
    dump.push(Copy {
        opcode: Opcode::RC_ACK,
        psn: 3,
        qp: Some(0x23),
        at_ns: 7_500,
        lag_ns: 100,
        event: 1,
    });
    let seqs: Vec<u64> = (1..=11).collect();
    let mirror = format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\"");
    let point = "sender\"\nhost = \"10.0.0.1";
    write_trace_at(&dir, "req", &dump, &seqs, &mirror, point);
    let (code, _, err) = common::run(&dir, &["replay", "req.toml", "-o", "d.jsonl"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("11 frames: 11 RoCEv2, 9 events (tx_data 8, rx_cnp 1); 2 skipped: 2 dropped or corrupted by the switch on the way (Lumina events)"),
        "{err}"
    );
    assert!(!err.contains("match no data flow"), "{err}");
}

/// Write the copies of `the_dump()` whose sequence numbers (1..=10, in order) `keep` picks to
/// `dir/NAME`, in that order, and `extra` (a record that is no copy) right after the copy with
/// the sequence number it names.
fn write_dumper(dir: &Path, name: &str, keep: impl Fn(u64) -> bool, extra: Option<(u64, &[u8])>) {
    let mut w = PcapWriter::create(dir.join(name)).unwrap();
    for (i, c) in the_dump().iter().enumerate() {
        let seq = i as u64 + 1;
        if !keep(seq) {
            continue;
        }
        let f = copy(&packet(c.opcode, c.psn), SWITCH_T0 + c.at_ns, seq, c.event);
        let t = CAPTURE_T0 + c.at_ns + c.lag_ns;
        w.write(t, &f).unwrap();
        if let Some((_, bytes)) = extra.filter(|(after, _)| *after == seq) {
            w.write(t + 1, bytes).unwrap();
        }
    }
    w.flush().unwrap();
}

/// The switch's sequence numbers of a capture's records, in order (0: not a copy).
fn seqs_of(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    common::pcap_records(&bytes)
        .into_iter()
        .map(|(_, rec)| {
            // The 16-byte record header, then the frame.
            let f = &rec[16..];
            let udp = 14 + 20;
            if f.len() > udp + 4 && f[udp + 2..udp + 4] == DUMPER_PORT.to_be_bytes() {
                u64::from_be_bytes([0, 0, f[6], f[7], f[8], f[9], f[10], f[11]])
            } else {
                0
            }
        })
        .collect()
}

/// `ccreplay lumina` merges what the switch sent round-robin to two dump servers — the odd
/// sequence numbers to one, the even to the other, each in order — into one capture in the
/// switch's order: 1 to 10, the record that is no copy (an ARP request the first server also
/// caught, after its copy 3) still after copy 3. The merged capture replays exactly as the
/// dump written in order does (the responder's 6 events and its CNP decision).
#[test]
fn two_dump_servers_merge_into_the_switchs_order() {
    let dir = tmpdir("merge");
    // An ARP request the first server also caught (no copy, no RoCEv2).
    let mut stray = vec![0xFF; 6];
    stray.extend([2, 0, 0, 0, 0, 9, 0x08, 0x06]);
    stray.extend([0u8; 28]);
    write_dumper(&dir, "d1.pcap", |s| s % 2 == 1, Some((3, &stray[..])));
    write_dumper(&dir, "d2.pcap", |s| s % 2 == 0, None);
    let (code, _, err) = common::run(
        &dir,
        &[
            "lumina", "d1.pcap", "d2.pcap", "--port", "5000", "-o", "m.pcap",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("wrote m.pcap: 11 records from 2 dumps, 10 Lumina copies in the switch's order (sequence numbers 1 to 10); 0 missing, 0 duplicates dropped, 0 sequence numbers held by two different copies"),
        "{err}"
    );
    assert_eq!(
        seqs_of(&dir.join("m.pcap")),
        [1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10]
    );

    // The same dump written in order, and the merged one, replay alike.
    let mirror = format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\"");
    let all: Vec<u64> = (1..=10).collect();
    write_trace(&dir, "inorder", &the_dump(), &all, &mirror);
    let manifest = std::fs::read_to_string(dir.join("inorder.toml")).unwrap();
    std::fs::write(
        dir.join("m.toml"),
        manifest.replace("capture = \"inorder.pcap\"", "capture = \"m.pcap\""),
    )
    .unwrap();
    let replay = |t: &str| {
        let (code, out, err) = common::run(&dir, &["replay", t]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let merged = replay("m.toml");
    assert_eq!(merged, replay("inorder.toml"));
    assert_eq!(merged.lines().count(), 1, "{merged}");
}

/// Dumps that overlap (the same copy in both) are written once; a copy no dump holds is
/// counted and said; a port no copy went to is an error (exit status 2).
#[test]
fn duplicates_dropped_gaps_said_and_a_wrong_port_refused() {
    let dir = tmpdir("merge-edges");
    write_dumper(&dir, "a.pcap", |s| s <= 6, None);
    write_dumper(&dir, "b.pcap", |s| s >= 6 && s != 8, None);
    let (code, _, err) = common::run(&dir, &["lumina", "a.pcap", "b.pcap", "--port", "5000"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("wrote a.merged.pcap: 9 records from 2 dumps, 9 Lumina copies in the switch's order (sequence numbers 1 to 10); 1 missing, 1 duplicate dropped"),
        "{err}"
    );
    assert!(err.contains("1 sequence number no dump holds"), "{err}");
    assert_eq!(
        seqs_of(&dir.join("a.merged.pcap")),
        [1, 2, 3, 4, 5, 6, 7, 9, 10]
    );

    let (code, _, err) = common::run(
        &dir,
        &["lumina", "a.pcap", "--port", "5001", "-o", "x.pcap"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no record of the 6 read is a Lumina copy to UDP port 5001"),
        "{err}"
    );
    assert!(!dir.join("x.pcap").exists());
}

/// A RoCEv2 packet in the dump that is no copy of the switch's (the dump server's own port
/// caught it) has no switch time: timed by the switch, the run would mix two clocks, an error
/// whose hint keeps only the copies.
#[test]
fn a_packet_that_is_no_copy_is_an_error_timed_by_the_switch() {
    let dir = tmpdir("stray");
    let stray = packet(Opcode::RC_WRITE_MIDDLE, 99);
    write_dumper(&dir, "s.pcap", |_| true, Some((3, &stray[..])));
    let base = {
        let mirror = format!("lumina_port = {DUMPER_PORT}\nclock = \"switch\"");
        write_trace(
            &dir,
            "t",
            &the_dump(),
            &(1..=10).collect::<Vec<_>>(),
            &mirror,
        );
        std::fs::read_to_string(dir.join("t.toml")).unwrap()
    };
    std::fs::write(
        dir.join("s.toml"),
        base.replace("capture = \"t.pcap\"", "capture = \"s.pcap\""),
    )
    .unwrap();
    let (code, _, err) = common::run(&dir, &["replay", "s.toml", "-o", "d.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "1 event had no switch time (first: frame 4, captured on the port, not mirrored)"
        ),
        "{err}"
    );
    assert!(
        err.contains("hint: in a Lumina dump every RoCEv2 packet replayed must be one of the switch's copies to `lumina_port`: keep only those (`tshark -r s.pcap -Y 'udp.dstport == 5000' -w copies.pcap`)"),
        "{err}"
    );
}

/// The switch's counter runs from 2^31 − 1 back to 1 (`value < 0x7fffffff ? value + 1 : 1`):
/// a dump that straddles the wrap — numbers 0x7FFFFFFA to 0x7FFFFFFF, then 1 to 4 — written
/// with the part after the wrap first merges into the switch's order, none missing.
#[test]
fn a_dump_across_the_counters_wrap_merges_in_order() {
    let dir = tmpdir("wrap");
    let seqs: Vec<u64> = (0x7FFF_FFFA..=0x7FFF_FFFF).chain(1..=4).collect();
    let order = [6, 7, 8, 9, 0, 1, 2, 3, 4, 5];
    let dump = the_dump();
    let copies: Vec<Copy> = order
        .iter()
        .map(|&i| Copy {
            qp: None,
            ..dump[i]
        })
        .collect();
    let scrambled: Vec<u64> = order.iter().map(|&i| seqs[i]).collect();
    write_trace(&dir, "w", &copies, &scrambled, "");
    let (code, _, err) = common::run(
        &dir,
        &["lumina", "w.pcap", "--port", "5000", "-o", "m.pcap"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "10 Lumina copies in the switch's order (sequence numbers 2147483642 to 4); 0 missing"
        ),
        "{err}"
    );
    assert_eq!(seqs_of(&dir.join("m.pcap")), seqs);
}

/// A switch's copy as Lumina's own dumper writes it to its file (lumina/roce-pkt-dump
/// `is_roce_pkt`): the UDP source port back from the checksum field, the destination port
/// 4791, CE set on an ECN event (already set), the IPv4 checksum and the UDP checksum (RFC 768,
/// over the pseudo-header) recomputed; MACs and TTL as the switch wrote them.
fn dumped(copy: &[u8]) -> Vec<u8> {
    let mut f = copy.to_vec();
    let (ip, udp) = (14, 34);
    let sport = [f[udp + 6], f[udp + 7]];
    f[udp..udp + 2].copy_from_slice(&sport);
    f[udp + 2..udp + 4].copy_from_slice(&4791u16.to_be_bytes());
    if f[ip + 8] == 2 && matches!(f[ip + 1] & 3, 1 | 2) {
        f[ip + 1] |= 3;
    }
    f[ip + 10..ip + 12].fill(0);
    let sum = ipv4_checksum(&f[ip..ip + 20]);
    f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    f[udp + 6..udp + 8].fill(0);
    let len = u16::from_be_bytes([f[udp + 4], f[udp + 5]]) as usize;
    let mut pseudo = f[ip + 12..ip + 20].to_vec();
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(len as u16).to_be_bytes());
    pseudo.extend_from_slice(&f[udp..udp + len]);
    if pseudo.len() % 2 == 1 {
        pseudo.push(0);
    }
    let c = match ipv4_checksum(&pseudo) {
        0 => 0xFFFF,
        c => c,
    };
    f[udp + 6..udp + 8].copy_from_slice(&c.to_be_bytes());
    f
}

/// Rewrite `dir/NAME.pcap`'s copies as Lumina's dumper writes them ([`dumped`]).
fn as_the_dumper_writes(dir: &Path, name: &str) {
    let path = dir.join(format!("{name}.pcap"));
    let bytes = std::fs::read(&path).unwrap();
    let mut w = PcapWriter::create(&path).unwrap();
    for (t, f) in common::pcap_records(&bytes) {
        w.write(t, &dumped(&f[16..])).unwrap(); // past the record header
    }
    w.flush().unwrap();
}

/// What a Lumina user has: the dump servers' files as Lumina's dumper writes them, every copy
/// back on the RoCEv2 port with its own ports. With `lumina_port` the RoCEv2 port they replay
/// as the switch's copies do (the first test's events, times and CNP: the dropped PSN 4 and
/// the corrupted PSN 6 never reach the responder); `init` finds the copies by their TTLs
/// (0-3) and source MACs (sequence numbers 1-10) and writes that `[mirror]` itself.
#[test]
fn the_dumpers_files_replay_as_the_switchs_copies() {
    let dir = tmpdir("dumper-files");
    let seqs: Vec<u64> = (1..=10).collect();
    write_trace(
        &dir,
        "cnp",
        &the_dump(),
        &seqs,
        "lumina_port = 4791\nclock = \"switch\"",
    );
    as_the_dumper_writes(&dir, "cnp");
    replay_the_responder(&dir, "cnp.toml");

    let (code, _, err) = common::run(&dir, &["init", "cnp.pcap", "-o", "i.toml"]);
    let text = std::fs::read_to_string(dir.join("i.toml")).unwrap_or_else(|_| panic!("{err}"));
    assert!(
        err.contains("every RoCEv2 packet carries a Lumina switch's event in its IPv4 TTL (0-3) and its sequence number in its source MAC"),
        "{code} {err}"
    );
    let m: toml::Table = text.parse().unwrap();
    let mirror = m.get("mirror").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(mirror["lumina_port"].as_integer(), Some(4791), "{text}");
    assert_eq!(mirror["clock"].as_str(), Some("switch"), "{text}");
    assert!(
        text.contains(
            "# copies as Lumina's dumper writes them (on the RoCEv2 port, their ports put back)"
        ),
        "{text}"
    );
}
