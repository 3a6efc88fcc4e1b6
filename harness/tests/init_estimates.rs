//! `ccreplay init`'s network estimates, and replay's notes, on captures as hosts take them (found on public
//! soft-RoCE captures: dumpcap on the host, a few `rping` messages): times that are not the
//! wire's, frames far apart, one-packet messages, both NICs sending. Every estimate a capture
//! cannot support is a GUESS, and the manifest init writes always parses. The frames are
//! written here; every figure below is worked by hand from them.

mod common;

use std::path::Path;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::RoceRepr;
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const T0: u64 = 1_700_000_000_000_000_000;

/// A plain RoCEv2 frame from `src` to `dst` (common::synth::emit): Ethernet 14 + IPv4 20 +
/// UDP 8 + BTH 12 (+ RETH 16 for WRITE_FIRST, + AETH 4 for an ACK) + payload + ICRC 4 bytes.
fn frame(src: [u8; 4], dst: [u8; 4], opcode: Opcode, qp: u32, psn: u32, payload: usize) -> Vec<u8> {
    let bth = BthRepr {
        opcode,
        dest_qp: qp,
        psn,
        ..Default::default()
    };
    let mut roce = RoceRepr::for_opcode(bth);
    if opcode == Opcode::RC_ACK {
        roce.aeth = Some(AethRepr {
            syndrome: 0x1F,
            msn: psn,
        });
    }
    roce.payload = vec![0x5A; payload];
    common::synth::emit(Dialect::Roce, src, dst, roce)
}

fn write(path: &Path, frames: &[(u64, Vec<u8>)]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (t, f) in frames {
        w.write(*t, f).unwrap();
    }
    w.flush().unwrap();
}

/// `ccreplay init NAME.pcap -o -` in `dir`: exit code, manifest, stderr.
fn init(dir: &Path, name: &str, extra: &[&str]) -> (i32, String, String) {
    let pcap = format!("{name}.pcap");
    let mut args = vec!["init", pcap.as_str(), "-o", "-"];
    args.extend_from_slice(extra);
    common::run(dir, &args)
}

/// A host's own capture: 10.0.0.1 writes three two-packet messages 1 ms apart, its software
/// stamping each message's frames 24 ns apart (a 1,098-byte WRITE_FIRST cannot cross any
/// Ethernet link in 24 ns), each answered 10 µs after its last frame; 10.0.0.2 sends one-packet
/// SENDs that 10.0.0.1 answers 2 µs later.
fn host_capture(dir: &Path) {
    let mut frames = Vec::new();
    for m in 0..3u32 {
        let t = T0 + u64::from(m) * 1_000_000;
        frames.push((t, frame(A, B, Opcode::RC_WRITE_FIRST, 0x20, 2 * m, 1024)));
        frames.push((
            t + 24,
            frame(A, B, Opcode::RC_WRITE_LAST, 0x20, 2 * m + 1, 500),
        ));
        frames.push((t + 10_024, frame(B, A, Opcode::RC_ACK, 0x10, 2 * m + 1, 0)));
        let u = t + 500_000;
        frames.push((u, frame(B, A, Opcode::RC_SEND_ONLY, 0x11, m, 64)));
        frames.push((u + 2_000, frame(A, B, Opcode::RC_ACK, 0x21, m, 0)));
    }
    write(&dir.join("host.pcap"), &frames);
}

/// Two frames 24 ns apart read (1,098 + 24) × 8 bits / 24 ns = 374.00 Gbps, 400 Gbps within
/// 15 %, and no run of four frames reads anything like it (the next message is 1 ms later):
/// a guess, not a measurement.
#[test]
fn bunched_times_are_a_guess() {
    let dir = common::Scratch::new("init-est-bunched");
    host_capture(&dir);
    let (code, text, err) = init(&dir, "host", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(
            "# GUESS: two data frames 24 ns apart, the first of 1098 B (+24 B preamble, gap and FCS): 374.00 Gbps, and no run of 4 or more frames reads it"
        ),
        "{text}"
    );
    assert!(text.contains("\nlink_rate_bps = 400000000000\n"), "{text}");
}

/// The base RTT is the tap host's: 10.0.0.1 sends the most data (6 frames to 3), so it is
/// the sender, and its data wait 10,000 ns for their ACKs (3 of them); 10.0.0.2's SENDs are
/// answered in 2,000 ns, which is not 10.0.0.1's round trip. The MTU: WRITE_FIRST does not
/// end its message, so its 1,024 bytes are a full MTU.
#[test]
fn the_base_rtt_is_the_senders_own() {
    let dir = common::Scratch::new("init-est-rtt");
    host_capture(&dir);
    let (code, text, err) = init(&dir, "host", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("kind = \"sender\"\nhost = \"10.0.0.1\""),
        "{text}"
    );
    // Nanosecond times (24 ns apart): no unit to name.
    assert!(
        text.contains("# measured: the smallest data-to-ACK delay of 3 ACKs (timestamps at the tap; set the device's configured T if it differs)\nbase_rtt_ns = 10000\n"),
        "{text}"
    );
    assert!(
        text.contains("# measured: the largest data payload seen (a full packet of a multi-packet message)\nmtu_bytes = 1024\n"),
        "{text}"
    );
}

/// Times to the microsecond (every one a multiple of 1,000 ns, not all of 10,000): the
/// base RTT names the unit. Three SENDs 1 ms apart, each answered 12,000 ns later: 12,000.
#[test]
fn a_microsecond_captures_base_rtt_names_its_unit() {
    let dir = common::Scratch::new("init-est-rtt-us");
    let mut frames = Vec::new();
    for m in 0..3u32 {
        let t = T0 + 1_000 + u64::from(m) * 1_000_000;
        frames.push((t, frame(A, B, Opcode::RC_SEND_ONLY, 0x20, m, 64)));
        frames.push((t + 12_000, frame(B, A, Opcode::RC_ACK, 0x10, m, 0)));
    }
    write(&dir.join("us.pcap"), &frames);
    let (code, text, err) = init(&dir, "us", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("# measured: the smallest data-to-ACK delay of 3 ACKs (timestamps at the tap, to 1000 ns; set the device's configured T if it differs)\nbase_rtt_ns = 12000\n"),
        "{text}"
    );
}

/// A sender with no round trip to read: its base RTT is a GUESS of 10 µs. Three SENDs of
/// 10.0.0.1 1 ms apart, (1) answered by no ACK; (2) each answered by an ACK on the SEND's own
/// timestamp (a host's stamps): the smallest delay, 0 ns, is no round trip either.
#[test]
fn a_sender_without_a_round_trip_guesses_its_base_rtt() {
    let dir = common::Scratch::new("init-est-no-rtt");
    for (name, ack) in [("none", None), ("same", Some(0))] {
        let mut frames = Vec::new();
        for m in 0..3u32 {
            let t = T0 + u64::from(m) * 1_000_000;
            frames.push((t, frame(A, B, Opcode::RC_SEND_ONLY, 0x20, m, 64)));
            if let Some(d) = ack {
                frames.push((t + d, frame(B, A, Opcode::RC_ACK, 0x10, m, 0)));
            }
        }
        write(&dir.join(format!("{name}.pcap")), &frames);
        let (code, text, err) = init(&dir, name, &[]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(
            text.contains("kind = \"sender\"\nhost = \"10.0.0.1\""),
            "{name}: {text}"
        );
        assert!(
            text.contains("# GUESS: no ACK answers a data packet's PSN: 10 µs assumed; set your network's base RTT\nbase_rtt_ns = 10000\n"),
            "{name}: {text}"
        );
    }
}

/// At a READ's responder the data are READ responses, which no ACK answers: the base RTT is
/// a GUESS that says so. 10.0.0.2 asks 10.0.0.1 for 256 bytes three times, 1 ms apart; each
/// READ_RESPONSE_ONLY leaves 10.0.0.1 5 µs after its request: 3 data packets sent, none
/// received, so 10.0.0.1 is the sender.
#[test]
fn a_read_responders_base_rtt_is_a_guess_that_says_why() {
    let dir = common::Scratch::new("init-est-read");
    let mut frames = Vec::new();
    for m in 0..3u32 {
        let t = T0 + u64::from(m) * 1_000_000;
        frames.push((t, frame(B, A, Opcode(0x0C), 0x20, m, 0)));
        frames.push((t + 5_000, frame(A, B, Opcode(0x10), 0x10, m, 256)));
    }
    write(&dir.join("read.pcap"), &frames);
    let (code, text, err) = init(&dir, "read", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("kind = \"sender\"\nhost = \"10.0.0.1\""),
        "{text}"
    );
    assert!(
        text.contains("# GUESS: no ACK answers a data packet's PSN (READ responses are acknowledged by none): 10 µs assumed; set your network's base RTT\nbase_rtt_ns = 10000\n"),
        "{text}"
    );
}

/// `rping`'s pace: one-packet SENDs of 64 bytes 1 ms apart, each answered 20,003 ns later.
/// The frames (14 + 20 + 8 + 12 + 64 + 4 = 122 bytes, with 24 more) read 146 × 8 bits per
/// 1 ms = 1.17 Mbps: no Ethernet rate, and the link is at least that fast, so 1 Gbps is
/// assumed (the rate was once written as 1 Mbps, which the DCQCN defaults' 40 Mbps increase
/// step does not fit: a manifest that did not parse). No message shows the MTU: 1024 assumed.
#[test]
fn frames_far_apart_and_one_packet_messages_are_guesses() {
    let dir = common::Scratch::new("init-est-slow");
    let mut frames = Vec::new();
    for m in 0..4u32 {
        let t = T0 + u64::from(m) * 1_000_000;
        frames.push((t, frame(A, B, Opcode::RC_SEND_ONLY, 0x20, m, 64)));
        frames.push((t + 20_003, frame(B, A, Opcode::RC_ACK, 0x10, m, 0)));
    }
    write(&dir.join("slow.pcap"), &frames);
    let (code, text, err) = init(&dir, "slow", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(
            "# GUESS: two data frames 1000000 ns apart, the first of 122 B (+24 B preamble, gap and FCS): 1.17 Mbps, no Ethernet rate"
        ),
        "{text}"
    );
    assert!(
        text.contains("1 Gbps assumed, set your link's rate\nlink_rate_bps = 1000000000\n"),
        "{text}"
    );
    assert!(
        text.contains("# GUESS: every message is one packet (ONLY opcodes), so none shows the MTU: the largest payload, 64 B, fits in it; 1024 B"),
        "{text}"
    );
    assert!(text.contains("\nmtu_bytes = 1024\n"), "{text}");
    assert!(text.contains("\nbase_rtt_ns = 20003\n"), "{text}");
}

/// A value init cannot take (given, here) is named, and the hint is about values — not the
/// "no RoCEv2 on port 4791" hint about other UDP ports, when RoCEv2 was found.
#[test]
fn a_bad_value_gets_a_hint_about_values() {
    let dir = common::Scratch::new("init-est-hint");
    host_capture(&dir);
    let (code, _, err) = init(&dir, "host", &["--param", "mtu_bytes=0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("mtu_bytes"), "{err}");
    assert!(err.contains("--param KEY=VALUE"), "{err}");
    assert!(!err.contains("--udp-port"), "{err}");
}

/// A host's capture stamps what it sends as the kernel hands it to the NIC and what it
/// receives as it polls it, so a reply can read earlier than the frame it answers (a public
/// soft-RoCE capture: an ACK 1 µs before its data). Replayed at the previous time, counted,
/// and the note names the step and the likely cause: 1 event, by up to 1,000 ns (the ACK at
/// 1,000 ns before the data frame fed just before it).
#[test]
fn a_reply_stamped_before_its_data_is_said_to_be_a_hosts_stamp() {
    let dir = common::Scratch::new("init-est-back");
    let frames = vec![
        (T0, frame(A, B, Opcode::RC_WRITE_FIRST, 0x20, 0, 1024)),
        (T0 + 5_000, frame(A, B, Opcode::RC_WRITE_LAST, 0x20, 1, 500)),
        (T0 + 4_000, frame(B, A, Opcode::RC_ACK, 0x10, 1, 0)),
    ];
    write(&dir.join("back.pcap"), &frames);
    // init replays what it wrote (here: nothing to compare, DCQCN saw no CNP) and says so.
    let (_, _, err) = common::run(&dir, &["init", "back.pcap"]);
    assert!(
        err.contains(
            "1 event had timestamps going backwards (by up to 1,000 ns); fed at the previous time"
        ),
        "{err}"
    );
    assert!(
        err.contains("hint: steps of a few µs are a host's own capture"),
        "{err}"
    );
}

/// Every ICRC zeroed (as a capture tool that does not keep it would leave them): no packet
/// reads cleanly, and init says how the closest reading failed — 3 RoCEv2 packets, all 3 with
/// a bad ICRC — instead of only "none reads cleanly". inspect's detection line says it too.
#[test]
fn a_capture_whose_every_icrc_fails_says_so() {
    let dir = common::Scratch::new("init-est-icrc");
    let frames: Vec<(u64, Vec<u8>)> = (0..3u32)
        .map(|k| {
            let mut f = frame(A, B, Opcode::RC_SEND_ONLY, 0x20, k, 64);
            let end = f.len();
            f[end - 4..].fill(0);
            (T0 + u64::from(k) * 1_000, f)
        })
        .collect();
    write(&dir.join("icrc.pcap"), &frames);
    let (code, _, err) = init(&dir, "icrc", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holds no RoCEv2 packet (UDP to port 4791) that reads cleanly in 3 frames (3 sampled: as roce, 3 with a bad ICRC)"),
        "{err}"
    );
    let (_, _, err) = common::run(&dir, &["inspect", "icrc.pcap"]);
    assert!(
        err.contains("0 of 3 RoCEv2 packets read cleanly as `roce` (3 with a bad ICRC)"),
        "{err}"
    );
}

/// A `diff` that differs while `[network]` still holds init's guesses says so: the reference
/// starts at the link rate, so a guessed rate alone can make a correct NIC differ. A sender
/// of one-packet SENDs 100 µs apart (the link rate a guess, 1 Gbps), a CNP after the fourth:
/// DCQCN cuts; against a golden file whose first rate is another, the diff differs, and the
/// hint names `link_rate_bps` and `mtu_bytes` (one-packet messages: guessed too) — not the
/// base RTT, which was measured.
#[test]
fn a_diff_that_differs_names_the_guessed_network_values() {
    let dir = common::Scratch::new("init-est-diff");
    let mut frames = Vec::new();
    for m in 0..8u32 {
        let t = T0 + u64::from(m) * 100_000;
        frames.push((t, frame(A, B, Opcode::RC_SEND_ONLY, 0x20, m, 64)));
        frames.push((t + 20_003, frame(B, A, Opcode::RC_ACK, 0x10, m, 0)));
        if m == 3 {
            frames.push((t + 30_001, frame(B, A, Opcode::CNP, 0x10, 0, 0)));
        }
    }
    write(&dir.join("g.pcap"), &frames);
    let (code, _, err) = common::run(&dir, &["init", "g.pcap"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = common::run(&dir, &["replay", "g.toml", "-o", "g.jsonl"]);
    assert_eq!(code, 0, "{err}");
    // DCQCN's first cut from the guessed 1 Gbps with alpha 1: Rc / 2 = 500 Mbps. A NIC on a
    // 10 Gbps link cuts to 5 Gbps.
    let golden = std::fs::read_to_string(dir.join("g.jsonl")).unwrap();
    assert!(golden.contains("\"rate_bps\": 500000000,"), "{golden}");
    let other = golden.replacen("\"rate_bps\": 500000000,", "\"rate_bps\": 5000000000,", 1);
    std::fs::write(dir.join("other.jsonl"), other).unwrap();
    let (code, _, err) = common::run(&dir, &["diff", "g.toml", "--golden", "other.jsonl"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "link_rate_bps, mtu_bytes are still init's guesses (under `# GUESS`: the capture could not tell)"
        ),
        "{err}"
    );
    assert!(!err.contains("base_rtt_ns"), "{err}");
}

/// Peers at other distances have ACKs of other TTLs (10.0.0.2 one router away, TTL 63;
/// 10.0.0.3 three, TTL 61): the base RTT is the smallest delay over every peer, 3,000 ns
/// (10.0.0.2's three ACKs, each 3 µs after its WRITE), not the farthest peer's 9,000 — the
/// lowest TTL is looked for per peer (the point nearest the sender when a capture holds two;
/// docs/verdicts.md "Packets seen at two points of their path"). The times are whole µs: the
/// note names the unit.
#[test]
fn the_base_rtt_is_the_nearest_peers_whatever_its_ttl() {
    let dir = common::Scratch::new("init-est-ttl");
    const C: [u8; 4] = [10, 0, 0, 3];
    let mut frames = Vec::new();
    let ttl = |mut f: Vec<u8>, ttl: u8| {
        // IPv4 at 14: TTL and protocol (17) at 22..24.
        common::set_ipv4_word(&mut f, 22, u16::from(ttl) << 8 | 17);
        f
    };
    for m in 0..3u32 {
        let t = T0 + u64::from(m) * 100_000;
        frames.push((t, frame(A, B, Opcode::RC_WRITE_ONLY, 0x20, m, 512)));
        frames.push((t + 1_000, frame(A, C, Opcode::RC_WRITE_ONLY, 0x30, m, 512)));
        let ack = frame(B, A, Opcode::RC_ACK, 0x10, m, 0);
        frames.push((t + 3_000, ttl(ack, 63)));
        let ack = frame(C, A, Opcode::RC_ACK, 0x11, m, 0);
        frames.push((t + 10_000, ttl(ack, 61)));
    }
    write(&dir.join("peers.pcap"), &frames);
    let (code, text, err) = init(&dir, "peers", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("# measured: the smallest data-to-ACK delay of 6 ACKs (timestamps at the tap, to 1000 ns; set the device's configured T if it differs)\nbase_rtt_ns = 3000\n"),
        "{text}"
    );
}
