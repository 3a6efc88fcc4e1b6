//! A capture that holds each packet twice (docs/verdicts.md "Packets captured twice"): a
//! mirror session with two ports of the path, two capture interfaces on one wire, `tcpdump -i
//! any`. Each packet would replay once per copy; a data frame identical to one of its flow
//! less than `[network] base_rtt_ns` before, with no NAK or READ request between, is the packet
//! captured twice (no sender resends unasked), and a quarter of the data frames or more is the
//! verdict's error.
//!
//! The captures are the bundled traces/dcqcn_np.pcap with a copy of every frame written
//! `delay` ns after it; the counts are tshark's of the original (940 WRITE frames, 2,097 in
//! all) and its manifest's base RTT; the resends after NAKs that are not copies are the bundled
//! fncc_chain captures' (7 NAKs), which `check` passes (tests/check_select.rs).

mod common;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
use common::{Scratch, repo, run as ccreplay};
use std::path::Path;

/// traces/dcqcn_np.toml's base RTT.
const BASE_RTT_NS: u64 = 7_247;

/// The error's words for the doubled dcqcn_np.pcap (tshark: 940 WRITE frames).
const TWICE: &str = "940 of its 1,880 data frames are copies of a frame of the same flow less than the base RTT (7,247 ns) before, with no NAK or READ request between";

/// traces/dcqcn_np.pcap with each frame also written `delay` ns later, `edit` applied to the
/// copy's bytes, in time order; its manifest in `dir`. Returns the manifest's path.
fn twice(dir: &Path, delay: u64, edit: impl Fn(&mut [u8])) -> String {
    twice_from(dir, &repo().join("traces/dcqcn_np.pcap"), delay, edit)
}

/// [`twice`] of another capture of dcqcn_np's packets.
fn twice_from(dir: &Path, src: &Path, delay: u64, edit: impl Fn(&mut [u8])) -> String {
    let mut frames = Vec::new();
    let mut r = CaptureReader::open(src).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let mut copy = rec.data.to_vec();
        edit(&mut copy);
        frames.push((rec.ts_ns, 0, rec.data.to_vec(), rec.orig_len));
        frames.push((rec.ts_ns + delay, 1, copy, rec.orig_len));
    }
    // At one instant the original, then the copy.
    frames.sort_by_key(|f| (f.0, f.1));
    let mut w = PcapWriter::create(dir.join("twice.pcap")).unwrap();
    for (t, _, f, len) in &frames {
        w.write_truncated(*t, f, *len).unwrap();
    }
    w.flush().unwrap();
    manifest(dir, "twice.pcap")
}

/// traces/dcqcn_np.toml for `capture` in `dir`.
fn manifest(dir: &Path, capture: &str) -> String {
    let text = std::fs::read_to_string(repo().join("traces/dcqcn_np.toml")).unwrap();
    let text = text.replace(
        "capture = \"dcqcn_np.pcap\"",
        &format!("capture = \"{capture}\""),
    );
    assert!(text.contains(capture) && text.contains(&format!("base_rtt_ns = {BASE_RTT_NS}")));
    let path = dir.join(capture).with_extension("toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// `replay --model dcqcn-np`: exit status, the decisions and stderr.
fn replay(dir: &Path, manifest: &str) -> (i32, Vec<u8>, String) {
    let out = dir.join("out.jsonl");
    let out = out.to_str().unwrap();
    let args = ["replay", manifest, "--model", "dcqcn-np", "-o", out];
    let (code, _, err) = ccreplay(dir, &args);
    (code, std::fs::read(out).unwrap_or_default(), err)
}

#[test]
fn a_capture_of_every_packet_twice_is_an_error() {
    let dir = Scratch::new("dup-twice");
    let m = twice(&dir, 100, |_| {});
    let (code, _, err) = replay(&dir, &m);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(TWICE) && err.contains("editcap -D 16"),
        "{err}"
    );
    // tshark: frames 1 (WRITE_FIRST) and 2 (an ACK) at the same instant, frame 3 495 ns on;
    // the copies 100 ns later come third and fourth.
    assert!(err.contains("(first: frame 3, of frame 1)"), "{err}");
    // Every record is still accounted for: 2 × 2,097 frames, 2 × 940 data.
    assert!(
        err.contains("4,194 frames: 4,194 RoCEv2, 1,880 events (rx_data 1,880)"),
        "{err}"
    );
}

/// The hint's `editcap -D 16` keeps one copy: the capture replays to its golden file.
#[test]
fn the_hint_s_editcap_keeps_one_copy() {
    if !common::tshark() {
        return;
    }
    let dir = Scratch::new("dup-editcap");
    twice(&dir, 100, |_| {});
    let out = std::process::Command::new("editcap")
        .args(["-D", "16", "twice.pcap", "one.pcap"])
        .current_dir(&*dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, got, err) = replay(&dir, &manifest(&dir, "one.pcap"));
    assert_eq!(code, 0, "{err}");
    let golden = std::fs::read(repo().join("golden/dcqcn_np/dcqcn-np.jsonl")).unwrap();
    assert!(got == golden, "{err}");
}

/// The window is the base RTT, open at its end.
#[rstest::rstest]
#[case::at_the_same_instant(0, true)]
#[case::just_inside(BASE_RTT_NS - 1, true)]
#[case::one_rtt_later(BASE_RTT_NS, false)]
fn a_copy_is_less_than_a_base_rtt_later(#[case] delay: u64, #[case] copies: bool) {
    let dir = Scratch::new("dup-window");
    let m = twice(&dir, delay, |_| {});
    let (code, _, err) = replay(&dir, &m);
    assert_eq!(code, if copies { 2 } else { 0 }, "{err}");
    assert_eq!(err.contains(TWICE), copies, "{err}");
    assert!(err.contains("1,880 events (rx_data 1,880)"), "{err}");
}

/// The same packet on the far side of a router (TTL one less) is no copy: it is the packet
/// at another point of its path, and the receiver's own copy of it is used
/// (tests/path_copies.rs).
#[test]
fn a_frame_a_router_forwarded_is_not_a_copy() {
    let dir = Scratch::new("dup-ttl");
    // IPv4 at 14: TTL and protocol at 22..24.
    let m = twice(&dir, 100, |f| {
        let w = u16::from_be_bytes([f[22], f[23]]);
        common::set_ipv4_word(f, 22, w - 0x100);
    });
    let (code, _, err) = replay(&dir, &m);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("copies of a frame"), "{err}");
    assert!(
        err.contains("940 events (rx_data 940)")
            && err.contains("940 seen again at another point of their path"),
        "{err}"
    );
}

/// The same PSN with other bytes — a QP that both writes and answers READs sends two PSN
/// sequences to one DestQP (docs/verdicts.md "READ traffic") — is another packet: each data
/// frame's copy with its last payload byte changed (and its ICRC recomputed) is no copy.
#[test]
fn the_same_psn_with_other_bytes_is_not_a_copy() {
    let dir = Scratch::new("dup-payload");
    let m = twice(&dir, 100, |f| {
        let n = f.len();
        if n > 100 {
            f[n - 5] ^= 0xFF;
            fix_icrc(f);
        }
    });
    let err = no_copies(&dir, &m);
    assert!(err.contains("1,880 events (rx_data 1,880)"), "{err}");
}

/// Cut by the snapshot length (no ICRC to tell them apart), a WRITE_MIDDLE and a
/// READ_RESPONSE_MIDDLE with one PSN are two packets: each WRITE_MIDDLE's copy turned into a
/// READ response (tshark: 932 of the 940 WRITE frames are WRITE_MIDDLE) leaves 8 copies, the
/// FIRST and LAST frames', under a quarter: no error.
#[test]
fn the_same_psn_with_another_opcode_is_not_a_copy() {
    let dir = Scratch::new("dup-opcode");
    let cut = cut_to(&dir, 100);
    // Ethernet 14, IPv4 20, UDP 8: the BTH opcode at 42.
    let m = twice_from(&dir, &cut, 100, |f| {
        if f[42] == 0x07 {
            f[42] = 0x0E;
        }
    });
    no_copies(&dir, &m);
}

/// Cut by the snapshot length, the same PSN from another UDP source port (a NIC that moves a
/// QP to another path) is another packet.
#[test]
fn the_same_psn_from_another_udp_port_is_not_a_copy() {
    let dir = Scratch::new("dup-port");
    let cut = cut_to(&dir, 100);
    // Ethernet 14, IPv4 20: the UDP source port at 34.
    let m = twice_from(&dir, &cut, 100, |f| {
        let port = u16::from_be_bytes([f[34], f[35]]);
        f[34..36].copy_from_slice(&(port ^ 1).to_be_bytes());
    });
    no_copies(&dir, &m);
}

/// traces/dcqcn_np.pcap cut to `snaplen` bytes a frame, in `dir`.
fn cut_to(dir: &Path, snaplen: usize) -> std::path::PathBuf {
    let mut r = CaptureReader::open(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let cut = dir.join("cut.pcap");
    let mut w = PcapWriter::create(&cut).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let n = rec.data.len().min(snaplen);
        w.write_truncated(rec.ts_ns, &rec.data[..n], rec.orig_len)
            .unwrap();
    }
    w.flush().unwrap();
    cut
}

/// Recompute a frame's ICRC (its last 4 bytes), as the NIC would send it.
fn fix_icrc(f: &mut [u8]) {
    common::fix_icrc(f, Dialect::Roce);
}

/// `replay` of manifest `m` passes and finds no copies.
fn no_copies(dir: &Path, m: &str) -> String {
    let (code, _, err) = replay(dir, m);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("copies"), "{err}");
    err
}

/// A NIC that sends every packet with IP ID 0 (DF set, as RoCEv2 NICs may): the IP headers
/// of a flow's full-size frames are then alike, and the frames differ in PSN and ICRC. The
/// capture is no copy of itself; doubled, it is.
///
/// Cut by the snapshot length after their headers (100 bytes: no ICRC), they are told apart by
/// PSN alone.
#[rstest::rstest]
#[case::once(None, None, 0)]
#[case::twice(Some(100), None, 2)]
#[case::once_cut(None, Some(100), 0)]
#[case::twice_cut(Some(100), Some(100), 2)]
fn frames_with_ip_id_0_are_told_apart_by_psn_and_icrc(
    #[case] delay: Option<u64>,
    #[case] snaplen: Option<usize>,
    #[case] code: i32,
) {
    let dir = Scratch::new("dup-id0");
    let mut r = CaptureReader::open(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let id0 = dir.join("id0.pcap");
    let mut w = PcapWriter::create(&id0).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let mut f = rec.data.to_vec();
        // IPv4 at 14: ID at 18, which the ICRC covers (its last 4 bytes, recomputed as
        // the NIC would send it).
        common::set_ipv4_word(&mut f, 18, 0);
        fix_icrc(&mut f);
        let cut = snaplen.unwrap_or(f.len()).min(f.len());
        w.write_truncated(rec.ts_ns, &f[..cut], rec.orig_len)
            .unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let m = match delay {
        Some(d) => twice_from(&dir, &id0, d, |_| {}),
        None => manifest(&dir, "id0.pcap"),
    };
    let (c, got, err) = replay(&dir, &m);
    assert_eq!(c, code, "{err}");
    assert_eq!(err.contains(TWICE), delay.is_some(), "{err}");
    if delay.is_none() {
        let golden = std::fs::read(repo().join("golden/dcqcn_np/dcqcn-np.jsonl")).unwrap();
        assert!(got == golden, "{err}");
    }
}

/// Go-back-N resends frames the sender put on the wire just before the NAK reached it:
/// fncc_chain's sender resends 3.1 µs after an original (tshark: frame 31 repeats frame 27's
/// PSN), under its 4,217 ns base RTT. The NAK between them makes them no copies. (tshark: 7
/// NAK frames, AETH syndrome 0x60..0x7F.)
#[test]
fn resends_after_a_nak_are_not_copies() {
    let trace = ccreplay::replay::Trace::load(&repo().join("traces/fncc_chain.toml")).unwrap();
    let (mut table, report) =
        ccreplay::extract::build_flow_table(&trace.capture, &trace.manifest).unwrap();
    let r = ccreplay::extract::stream_events(
        &trace.capture,
        &trace.manifest,
        &mut table,
        report,
        |_| {},
    )
    .unwrap();
    assert_eq!(r.event_kinds.rx_nak, 7);
    assert_eq!((r.copies, r.first_copy), (0, None));
}

/// Two capture interfaces on one wire, merged into one pcapng (`mergecap -I none`: an
/// interface per file): the error, and the hint's `tshark -Y 'frame.interface_id == 0'` keeps one copy.
#[test]
fn two_interfaces_merged_are_an_error_and_the_hint_s_filter_keeps_one() {
    if !common::tshark() {
        return;
    }
    let dir = Scratch::new("dup-interfaces");
    let mut r = CaptureReader::open(repo().join("traces/dcqcn_np.pcap")).unwrap();
    let mut w = PcapWriter::create(dir.join("second.pcap")).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        w.write(rec.ts_ns + 300, rec.data).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let first = repo().join("traces/dcqcn_np.pcap");
    let tool = |args: &[&str]| {
        let out = std::process::Command::new(args[0])
            .args(&args[1..])
            .current_dir(&*dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    };
    tool(&[
        "mergecap",
        // An interface per file (the default merges identical ones).
        "-I",
        "none",
        "-w",
        "both.pcapng",
        first.to_str().unwrap(),
        "second.pcap",
    ]);
    let (code, _, err) = replay(&dir, &manifest(&dir, "both.pcapng"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(TWICE), "{err}");
    tool(&[
        "tshark",
        "-r",
        "both.pcapng",
        "-Y",
        "frame.interface_id == 0",
        "-w",
        "one.pcapng",
    ]);
    let (code, got, err) = replay(&dir, &manifest(&dir, "one.pcapng"));
    assert_eq!(code, 0, "{err}");
    let golden = std::fs::read(repo().join("golden/dcqcn_np/dcqcn-np.jsonl")).unwrap();
    assert!(got == golden, "{err}");
}
