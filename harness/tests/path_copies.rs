//! Packets seen at two points of their path (docs/verdicts.md "Packets seen at two points of
//! their path"): a mirror session with two ports of a routed path as sources, or captures of
//! two points merged, hold every packet twice, the copy further along with a TTL one lower per
//! router between. The replay uses the host's copies — what it sends as it leaves, what it
//! receives as it arrives — and skips the others as `path_copy`.
//!
//! The captures are bundled traces with each frame written again as the other point saw it:
//! a frame the host sends `lag` ns later with its TTL one lower, a frame it receives `lag` ns
//! earlier with its TTL one higher (and, at the receiver, without the CE mark the switch
//! between set), other MAC addresses, the IPv4 checksum updated (RFC 1624). The host's copies
//! are then the original frames, so the replay must give the trace's golden file byte for
//! byte. Counts are tshark's of the originals: roce_dcqcn.pcap 2,553 frames (1,268 WRITE,
//! 1,253 ACKs, 32 CNPs, all to or from 10.0.0.1); dcqcn_np.pcap 2,097 (940 WRITE to 10.0.0.4).

mod common;

use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
use common::{Scratch, repo, run as ccreplay};
use std::net::Ipv4Addr;
use std::path::Path;

/// How the far point's copy of a frame differs from the host's.
#[derive(Clone, Copy)]
struct Far {
    /// ns after (sent by the host) or before (received) the host's copy.
    lag: u64,
    /// Routers between the points: the TTL difference.
    hops: u8,
    /// A received frame's CE mark is not there yet at the far point (ECT(0) instead).
    unmark: bool,
}

/// `trace` (a bundled capture) at two points of its path, `host` the capture point's host,
/// written to `dir/two.pcap` with its manifest (the trace's, pointed at it); returns the
/// manifest's path.
fn two_points(dir: &Path, trace: &str, host: Ipv4Addr, far: Far) -> String {
    let mut frames = Vec::new();
    let mut r = CaptureReader::open(repo().join(format!("traces/{trace}.pcap"))).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let f = rec.data.to_vec();
        frames.push((rec.ts_ns, 0, f.clone()));
        // Ethernet 14 (no VLAN), IPv4: ToS at 15, TTL at 22, source address at 26.
        let mut c = f;
        c[..12].copy_from_slice(&[2, 0, 0, 0, 0xEE, 2, 2, 0, 0, 0, 0xEE, 1]);
        let sent = c[26..30] == host.octets();
        let ttl_proto = u16::from_be_bytes([c[22], c[23]]);
        let hops = u16::from(far.hops) << 8;
        let t = if sent {
            common::set_ipv4_word(&mut c, 22, ttl_proto - hops);
            rec.ts_ns + far.lag
        } else {
            common::set_ipv4_word(&mut c, 22, ttl_proto + hops);
            if far.unmark && c[15] & 3 == 3 {
                let w = u16::from_be_bytes([c[14], c[15]]);
                common::set_ipv4_word(&mut c, 14, w & !3 | 2);
            }
            rec.ts_ns - far.lag
        };
        frames.push((t, 1, c));
    }
    frames.sort_by_key(|f| (f.0, f.1));
    let mut w = PcapWriter::create(dir.join("two.pcap")).unwrap();
    for (t, _, f) in &frames {
        w.write(*t, f).unwrap();
    }
    w.flush().unwrap();
    let text = std::fs::read_to_string(repo().join(format!("traces/{trace}.toml"))).unwrap();
    let text = text.replace(
        &format!("capture = \"{trace}.pcap\""),
        "capture = \"two.pcap\"",
    );
    assert!(text.contains("two.pcap"));
    let path = dir.join("two.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// `replay MANIFEST --model MODEL`: exit status, the decisions, stderr.
fn replay(dir: &Path, manifest: &str, model: &str) -> (i32, Vec<u8>, String) {
    let out = dir.join("out.jsonl");
    let out = out.to_str().unwrap();
    let args = ["replay", manifest, "--model", model, "-o", out];
    let (code, _, err) = ccreplay(dir, &args);
    (code, std::fs::read(out).unwrap_or_default(), err)
}

const SENDER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 4);

/// A sender's capture at its own port and one further along: its data, then the ACKs and
/// CNPs coming back, each twice. The copies are matched however far apart within a direction's
/// first 64 frames: 300 ns (the next frame), 2 µs, 20 µs (about 60 frames of the three flows
/// at 25 Gbps, 343 ns a frame).
#[rstest::rstest]
#[case::next_frame(300, 1)]
#[case::two_us(2_000, 1)]
#[case::twenty_us_three_routers(20_000, 3)]
fn a_senders_capture_at_two_points_replays_to_its_golden_file(#[case] lag: u64, #[case] hops: u8) {
    let dir = Scratch::new("path-sender");
    let far = Far {
        lag,
        hops,
        unmark: false,
    };
    let m = two_points(&dir, "roce_dcqcn", SENDER, far);
    let (code, got, err) = replay(&dir, &m, "dcqcn");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("5,106 frames: 5,106 RoCEv2, 2,553 events (tx_data 1,268, rx_ack 1,253, rx_cnp 32); 2,553 skipped: 2,553 seen again at another point of their path (the host's copies used)"),
        "{err}"
    );
    let golden = std::fs::read(repo().join("golden/roce_dcqcn/dcqcn.jsonl")).unwrap();
    assert!(got == golden, "{err}");
}

/// A receiver's capture at its port and one before the switch that marks: the far copies of
/// its data come first and carry no CE mark. The receiver's own copies, later, with the marks,
/// are the ones its NP reacts to: the golden file, byte for byte (the receiver's ACKs and
/// CNPs, twice, are its output, skipped either way: 300 + 340 + 300 ACKs and 74 + 79 + 64 CNPs,
/// twice, = 2,314).
#[test]
fn a_receivers_capture_at_two_points_uses_the_marks_it_received() {
    let dir = Scratch::new("path-receiver");
    let far = Far {
        lag: 3_000,
        hops: 1,
        unmark: true,
    };
    let m = two_points(&dir, "dcqcn_np", RECEIVER, far);
    let (code, got, err) = replay(&dir, &m, "dcqcn-np");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("4,194 frames: 4,194 RoCEv2, 940 events (rx_data 940); 3,254 skipped: 940 seen again at another point of their path (the host's copies used), 2,314 ACK/NAK/CNP sent by the receiver"),
        "{err}"
    );
    let golden = std::fs::read(repo().join("golden/dcqcn_np/dcqcn-np.jsonl")).unwrap();
    assert!(got == golden, "{err}");
}

/// Copies further apart than a direction's first 64 frames are not matched: the TTL of the
/// frames taken for one point then keeps changing, and the run is an error that names the two
/// TTLs — never a verdict on each packet replayed twice.
#[test]
fn copies_too_far_apart_to_match_are_an_error() {
    let dir = Scratch::new("path-far");
    let far = Far {
        lag: 200_000,
        hops: 1,
        unmark: false,
    };
    let m = two_points(&dir, "roce_dcqcn", SENDER, far);
    let golden = repo().join("golden/roce_dcqcn/dcqcn.jsonl");
    let golden = golden.to_str().unwrap();
    let args = ["diff", &m, "--model", "dcqcn", "--golden", golden];
    let (code, _, err) = ccreplay(&dir, &args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("changed TTL") && err.contains("(last 64 and 63)"),
        "{err}"
    );
    assert!(
        err.contains("two.pcap -Y 'ip.ttl == 64' -w one.pcap` (or 63"),
        "{err}"
    );
}

/// A path that changes once (every frame after the capture's middle two routers longer) is
/// no copy: every frame is an event, and the run conforms.
#[test]
fn a_path_that_changes_once_is_no_copy() {
    let dir = Scratch::new("path-reroute");
    let mut r = CaptureReader::open(repo().join("traces/roce_dcqcn.pcap")).unwrap();
    let mut w = PcapWriter::create(dir.join("two.pcap")).unwrap();
    let mut i = 0;
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let mut f = rec.data.to_vec();
        i += 1;
        if i > 1_276 {
            let ttl_proto = u16::from_be_bytes([f[22], f[23]]);
            common::set_ipv4_word(&mut f, 22, ttl_proto - 0x200);
        }
        w.write(rec.ts_ns, &f).unwrap();
    }
    w.flush().unwrap();
    let text = std::fs::read_to_string(repo().join("traces/roce_dcqcn.toml")).unwrap();
    let m = dir.join("two.toml");
    std::fs::write(&m, text.replace("roce_dcqcn.pcap", "two.pcap")).unwrap();
    let (code, got, err) = replay(&dir, m.to_str().unwrap(), "dcqcn");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("2,553 events (tx_data 1,268, rx_ack 1,253, rx_cnp 32); none skipped"),
        "{err}"
    );
    let golden = std::fs::read(repo().join("golden/roce_dcqcn/dcqcn.jsonl")).unwrap();
    assert!(got == golden, "{err}");
}

/// `init` reads the two points' capture as the host's: the same link rate (the scenario's
/// 25 Gbps, from its own frames' spacing — the far copies between them would halve it), base
/// RTT and MTU as from the trace itself, and says what it found.
#[test]
fn init_estimates_from_the_hosts_copies() {
    let dir = Scratch::new("path-init");
    let far = Far {
        lag: 2_000,
        hops: 1,
        unmark: false,
    };
    two_points(&dir, "roce_dcqcn", SENDER, far);
    std::fs::remove_file(dir.join("two.toml")).unwrap();
    std::fs::copy(repo().join("traces/roce_dcqcn.pcap"), dir.join("one.pcap")).unwrap();
    let network = |capture: &str| {
        let (code, _, err) = ccreplay(&dir, &["init", capture]);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(dir.join(capture).with_extension("toml")).unwrap();
        let keys = ["link_rate_bps =", "base_rtt_ns =", "mtu_bytes ="];
        let values: Vec<String> = text
            .lines()
            .filter(|l| keys.iter().any(|k| l.starts_with(k)))
            .map(str::to_string)
            .collect();
        (values, text)
    };
    let (two, text) = network("two.pcap");
    let (one, _) = network("one.pcap");
    assert_eq!(two, one, "{text}");
    assert!(
        two.contains(&"link_rate_bps = 25000000000".to_string()),
        "{text}"
    );
    // tshark: frame 1 (10.0.0.1's first WRITE) comes again 2 µs later as frame 7, TTL 63.
    assert!(
        text.contains("# 2,553 packets are here twice, seen at two points of their path (frame 7 is frame 1 again, TTL 63 after 64"),
        "{text}"
    );
}

/// A switch port has no host to be near: its capture holding two ports' copies is an error
/// that says which TTLs to keep.
#[test]
fn a_switch_ports_capture_of_two_ports_is_an_error() {
    let dir = Scratch::new("path-port");
    let far = Far {
        lag: 2_000,
        hops: 1,
        unmark: false,
    };
    two_points(&dir, "roce_dcqcn", SENDER, far);
    let m = dir.join("port.toml");
    std::fs::write(
        &m,
        "capture = \"two.pcap\"\ndialect = \"roce\"\n\n[capture_point]\nkind = \"switch_port\"\nport = \"tor1:1\"\n\n[network]\nlink_rate_bps = 25000000000\nbase_rtt_ns = 5255\nmtu_bytes = 1000\n\n[[models]]\nname = \"dcqcn-cp\"\n",
    )
    .unwrap();
    let (code, _, err) = replay(&dir, m.to_str().unwrap(), "dcqcn-cp");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the capture holds packets at two points of their path (frame 7 is frame 1 again, TTL 63 after 64)"),
        "{err}"
    );
}
