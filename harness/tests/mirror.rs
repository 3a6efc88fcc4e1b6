//! Captures a switch mirrored to a collector (docs/wire.md 2.1): the bundled traces, every
//! packet wrapped as a mirror session would deliver it (ERSPAN II, III, type I and gretap in
//! turn, codecs `MirrorRepr`), replay to the same decisions, byte for byte, as the traces
//! captured on the port — in every dialect, whatever shim sits before BTH or after the AETH.

mod common;

use common::{Scratch, repo, run};

use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
use ccreplay_codecs::mirror::{MirrorKind, MirrorRepr};
use rstest::rstest;

/// How a test wraps each record: `(kind, session, index)` per copy (one entry: one copy per
/// packet; two: each packet twice, the second copy right after the first), and a length the
/// switch cut frames to (ERSPAN T) when longer.
struct Wrap<'a> {
    copies: &'a [(MirrorKind, u16, u32)],
    cut: Option<usize>,
}

/// `x` with a comma every three digits from the right (how ccreplay's messages print counts).
fn commas(x: i64) -> String {
    let digits: Vec<char> = x.unsigned_abs().to_string().chars().rev().collect();
    let grouped: Vec<String> = digits
        .chunks(3)
        .map(|c| c.iter().rev().collect())
        .rev()
        .collect();
    format!("{}{}", if x < 0 { "-" } else { "" }, grouped.join(","))
}

/// `traces/NAME.pcap` wrapped packet by packet into `dir/NAME.pcap` (same times), with the
/// trace's manifest beside it (plus `extra` lines). Returns the number of frames cut.
fn mirror_trace(name: &str, dir: &std::path::Path, wrap: &Wrap<'_>, extra: &str) -> usize {
    let traces = repo().join("traces");
    let mut r = CaptureReader::open(traces.join(format!("{name}.pcap"))).unwrap();
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let (mut buf, mut n, mut cuts) = (Vec::new(), 0u32, 0);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        assert!(!rec.is_truncated(), "{name}: the bundled traces are whole");
        let mut frame = rec.data;
        let mut truncated = false;
        if let Some(len) = wrap.cut.filter(|&l| l < frame.len()) {
            (truncated, frame) = (true, &frame[..len]);
            cuts += 1;
        }
        for &(kind, session, index) in wrap.copies {
            let repr = MirrorRepr {
                key: (n % 3 == 0).then_some(n),
                truncated,
                ..common::mirroring_switch(kind, session, index, n, n)
            };
            buf.clear();
            repr.write(frame, &mut buf).unwrap();
            w.write(rec.ts_ns, &buf).unwrap();
        }
        n += 1;
    }
    w.flush().unwrap();
    let manifest = std::fs::read_to_string(traces.join(format!("{name}.toml"))).unwrap();
    std::fs::write(dir.join(format!("{name}.toml")), manifest + extra).unwrap();
    cuts
}

fn replay(manifest: &std::path::Path, out: &std::path::Path) -> String {
    let (code, err) = replay_code(manifest, out);
    assert_eq!(code, 0, "{err}");
    err
}

fn replay_code(manifest: &std::path::Path, out: &std::path::Path) -> (i32, String) {
    let (code, _, err) = run(
        &repo(),
        &[
            "replay",
            manifest.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    (code, err)
}

#[rstest]
fn a_mirrored_trace_replays_to_the_same_decisions(
    #[values(
        "roce_dcqcn",
        "dcqcn_np",
        "hpcc_dumbbell",
        "fncc_chain_receiver",
        "rcc_sender"
    )]
    name: &str,
    #[values(
        MirrorKind::ErspanII,
        MirrorKind::ErspanIII,
        MirrorKind::ErspanI,
        MirrorKind::Teb
    )]
    kind: MirrorKind,
) {
    let dir = Scratch::new(&format!("mirror-{name}"));
    let wrap = Wrap {
        copies: &[(kind, 5, 1)],
        cut: None,
    };
    mirror_trace(name, &dir, &wrap, "");
    let mirrored_err = replay(
        &dir.join(format!("{name}.toml")),
        &dir.join("mirrored.jsonl"),
    );
    let port_err = replay(
        &repo().join("traces").join(format!("{name}.toml")),
        &dir.join("port.jsonl"),
    );
    let (mirrored, port) = (
        std::fs::read(dir.join("mirrored.jsonl")).unwrap(),
        std::fs::read(dir.join("port.jsonl")).unwrap(),
    );
    assert!(!port.is_empty(), "{name}: no decisions");
    assert!(mirrored == port, "{name}: decisions differ");
    // The same accounting: every frame read as RoCEv2, used or skipped as on the port.
    let accounting = |err: &str, dir: &std::path::Path| {
        let line = err
            .lines()
            .find(|l| l.contains(" frames: "))
            .unwrap()
            .to_string();
        line.replace(&format!("{}/", dir.display()), "")
    };
    assert_eq!(
        accounting(&mirrored_err, &dir),
        accounting(&port_err, &repo().join("traces")),
        "{name}"
    );
    assert!(mirrored_err.contains(" RoCEv2, "), "{mirrored_err}");
    // And where the copies came from.
    let from = match kind {
        MirrorKind::ErspanII => "10.9.0.1 ERSPAN II session 5 index 0x1",
        MirrorKind::ErspanIII => "10.9.0.1 ERSPAN III session 5 Hw ID 1 ingress",
        MirrorKind::ErspanI => "10.9.0.1 ERSPAN I",
        MirrorKind::Teb => "10.9.0.1 gretap",
    };
    assert!(
        mirrored_err.contains(&format!("mirrored by {from} (")),
        "{mirrored_err}"
    );
}

/// Frames the switch cut after their headers (ERSPAN T) are replayed whole, as a snaplen's cut:
/// the sender trace's 1,268 data frames (1,074 and 1,058 bytes) cut to 100 bytes keep
/// Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 (first packets) and lose payload and
/// ICRC; its ACKs (62 bytes) and CNPs (74) stay whole.
#[test]
fn frames_the_switch_cut_after_their_headers_are_replayed() {
    let dir = Scratch::new("mirror-cut");
    let wrap = Wrap {
        copies: &[(MirrorKind::ErspanII, 5, 1)],
        cut: Some(100),
    };
    let cuts = mirror_trace("roce_dcqcn", &dir, &wrap, "");
    assert_eq!(cuts, 1_268);
    let err = replay(&dir.join("roce_dcqcn.toml"), &dir.join("mirrored.jsonl"));
    replay(
        &repo().join("traces/roce_dcqcn.toml"),
        &dir.join("port.jsonl"),
    );
    assert!(
        std::fs::read(dir.join("mirrored.jsonl")).unwrap()
            == std::fs::read(dir.join("port.jsonl")).unwrap()
    );
    assert!(
        err.contains(
            "1268 packets cut after their headers (by the capture's snaplen, or by the switch \
             that mirrored them) were replayed"
        ),
        "{err}"
    );
}

/// The sender trace with each packet mirrored twice (`copies`), in a scratch folder named
/// `scratch`, replayed: it must fail (exit status 2). Returns the folder, the manifest and
/// stderr.
fn mirrored_twice(
    scratch: &str,
    copies: &[(MirrorKind, u16, u32)],
) -> (Scratch, std::path::PathBuf, String) {
    let dir = Scratch::new(scratch);
    let wrap = Wrap { copies, cut: None };
    mirror_trace("roce_dcqcn", &dir, &wrap, "");
    let manifest = dir.join("roce_dcqcn.toml");
    let (code, err) = replay_code(&manifest, &dir.join("both.jsonl"));
    assert_eq!(code, 2, "{err}");
    (dir, manifest, err)
}

/// The sender trace's 2,553 packets each mirrored twice — sessions 5 and 6 — is an error
/// naming both sources (the second copy of frame 1 is frame 2); `[mirror] session = 5` (or 6)
/// replays one copy of each, to the port's decisions, and skips the other 2,553 as
/// `other_mirror_session`; a session the capture does not hold replays nothing, and says
/// which it holds.
#[test]
fn the_same_traffic_from_two_sessions_is_an_error_until_one_is_chosen() {
    let copies = [(MirrorKind::ErspanII, 5, 1), (MirrorKind::ErspanII, 6, 2)];
    let (dir, manifest, err) = mirrored_twice("mirror-two-sessions", &copies);
    let wrap = Wrap {
        copies: &copies,
        cut: None,
    };
    assert!(
        err.contains(
            "the same traffic came from two mirror sources: flow 0's data from 10.9.0.1 ERSPAN II \
             session 5 index 0x1 and, from frame 2 on, from 10.9.0.1 ERSPAN II session 6 index 0x2 \
             (2,553 events from a second source)"
        ),
        "{err}"
    );
    assert!(err.contains("set `[mirror] session = 5` (or 6)"), "{err}");
    replay(
        &repo().join("traces/roce_dcqcn.toml"),
        &dir.join("port.jsonl"),
    );
    let port = std::fs::read(dir.join("port.jsonl")).unwrap();
    for session in [5, 6] {
        mirror_trace(
            "roce_dcqcn",
            &dir,
            &wrap,
            &format!("\n[mirror]\nsession = {session}\n"),
        );
        let err = replay(&manifest, &dir.join("one.jsonl"));
        assert!(
            std::fs::read(dir.join("one.jsonl")).unwrap() == port,
            "session {session}"
        );
        assert!(
            err.contains(
                "5,106 frames: 2,553 RoCEv2, 2,553 events (tx_data 1,268, rx_ack 1,253, rx_cnp 32); \
                 2,553 skipped: 2,553 mirrored in another session than [mirror] session"
            ),
            "{err}"
        );
    }
    mirror_trace("roce_dcqcn", &dir, &wrap, "\n[mirror]\nsession = 9\n");
    let (code, err) = replay_code(&manifest, &dir.join("none.jsonl"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "none of the 5,106 frames is a copy of ERSPAN session 9; 5,106 are other mirror \
             sessions' (session 5: 2,553, session 6: 2,553)"
        ),
        "{err}"
    );
}

/// One session copying the traffic at two ports (ERSPAN II index 1 and 2; ERSPAN III Hw ID 1
/// and 2, both ingress): `[mirror]` cannot tell them apart, and the hint's tshark filter keeps
/// one copy — run here when tshark is installed, to the port's decisions.
#[rstest]
#[case(MirrorKind::ErspanII, "erspan.index == 0x1")]
#[case(MirrorKind::ErspanIII, "erspan.hw == 1 && erspan.direction == 0")]
fn the_same_traffic_from_two_ports_of_one_session_names_a_filter_that_works(
    #[case] kind: MirrorKind,
    #[case] filter: &str,
) {
    let copies = [(kind, 5, 1), (kind, 5, 2)];
    let (dir, manifest, err) = mirrored_twice(&format!("mirror-two-ports-{kind:?}"), &copies);
    let capture = dir.join("roce_dcqcn.pcap");
    let want = format!(
        "one mirror session copies this traffic at two places: mirror one port and direction, or keep one copy with `tshark -r {} -Y '{filter}' -w one.pcap`",
        capture.display()
    );
    assert!(err.contains(&want), "{err}");
    let tshark = std::process::Command::new("tshark")
        .args(["-r", capture.to_str().unwrap(), "-Y", filter, "-w"])
        .arg(dir.join("one.pcap"))
        .output();
    let Ok(out) = tshark else {
        assert!(
            std::env::var("CCREPLAY_REQUIRE_TSHARK").is_err(),
            "tshark is required (CCREPLAY_REQUIRE_TSHARK=1) but not installed"
        );
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&manifest).unwrap();
    let one = text.replace("capture = \"roce_dcqcn.pcap\"", "capture = \"one.pcap\"");
    assert_ne!(one, text);
    std::fs::write(dir.join("one.toml"), one).unwrap();
    replay(&dir.join("one.toml"), &dir.join("one.jsonl"));
    replay(
        &repo().join("traces/roce_dcqcn.toml"),
        &dir.join("port.jsonl"),
    );
    assert!(
        std::fs::read(dir.join("one.jsonl")).unwrap()
            == std::fs::read(dir.join("port.jsonl")).unwrap()
    );
}

/// Hardware verdicts read a mirrored capture as the port's: `--dut wire` on a receiver NIC's
/// capture and `--dut observed` on a sender's print the same report and exit alike.
#[rstest]
#[case("rcc_receiver", "wire")]
#[case("dcqcn_np", "wire")]
#[case("roce_dcqcn", "observed")]
#[case("hpcc_dumbbell", "observed")]
fn hardware_verdicts_read_a_mirrored_capture_as_the_port(#[case] name: &str, #[case] dut: &str) {
    let dir = Scratch::new(&format!("mirror-dut-{name}"));
    let wrap = Wrap {
        copies: &[(MirrorKind::ErspanIII, 3, 9)],
        cut: None,
    };
    mirror_trace(name, &dir, &wrap, "");
    let diff = |manifest: &std::path::Path| {
        let (code, out, _) = run(
            &repo(),
            &["diff", manifest.to_str().unwrap(), "--dut", dut, "-q"],
        );
        let folder = manifest.parent().unwrap().display().to_string();
        (code, out.replace(&format!("{folder}/"), ""))
    };
    let port = diff(&repo().join("traces").join(format!("{name}.toml")));
    let mirrored = diff(&dir.join(format!("{name}.toml")));
    assert!(!port.1.is_empty());
    assert_eq!(mirrored, port, "{name} --dut {dut}");
}

/// `inspect`'s text names where each mirrored packet was copied, as tests/fixtures/
/// make_fixtures.py `build_mirror` set it (and nothing for the GRE packet that is no mirror).
#[test]
fn inspect_text_names_the_mirror_source() {
    let (code, out, _) = run(
        &repo(),
        &[
            "inspect",
            "tests/fixtures/mirror.pcap",
            "--format",
            "text",
            "-q",
        ],
    );
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    for (i, from) in [
        "10.9.0.1 ERSPAN II session 5 index 0x12345",
        "10.9.0.1 ERSPAN III session 7 Hw ID 5 egress",
        "10.9.0.1 ERSPAN III session 1023 Hw ID 63 ingress",
        "10.9.0.1 ERSPAN I",
        "10.9.0.1 gretap",
        "10.9.0.1 ERSPAN II session 5 index 0x0",
        "10.9.0.1 ERSPAN III session 9 Hw ID 0 ingress",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            lines[i].contains(&format!("  [mirrored by {from}]")),
            "frame {}: {}",
            i + 1,
            lines[i]
        );
    }
    assert!(!lines[7].contains("mirrored"), "{}", lines[7]);
}

/// A bundled trace as a collector receives a switch's ERSPAN III copies of it: stamped by the
/// switch at the port's time (100 ns units, the counter's 32 bits, Gra 1), written at the
/// collector's time — the port's plus up to 50 µs of path and clock jitter (Knuth's MMIX LCG),
/// never going backwards; the first copy 5 µs after its stamp. Writes that capture to
/// `dir/NAME.pcap` with the trace's manifest plus `[mirror] clock = "switch"`, and to
/// `port/NAME.pcap` the port's capture with the times the switch's clock gives: the stamp,
/// moved so the first copy keeps its capture time. Returns the two folders (`mirror-TAG` and
/// `mirror-TAG-port`), and the least and most of the capture's times minus those.
fn jittered(name: &str, tag: &str) -> (Scratch, Scratch, (i64, i64)) {
    let (dir, port) = (
        Scratch::new(&format!("mirror-{tag}")),
        Scratch::new(&format!("mirror-{tag}-port")),
    );
    let traces = repo().join("traces");
    let mut r = CaptureReader::open(traces.join(format!("{name}.pcap"))).unwrap();
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let mut p = PcapWriter::create(port.join(format!("{name}.pcap"))).unwrap();
    let stamp = |t: u64| t / 100 * 100;
    let (mut rng, mut last, mut n, mut delta) = (0x5EEDu64, 0, 0u32, None);
    let (mut buf, mut lo, mut hi) = (Vec::new(), i64::MAX, i64::MIN);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let t = rec.ts_ns;
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let collector = match delta {
            None => stamp(t) + 5_000,
            Some(_) => (t + (rng >> 33) % 50_001).max(last),
        };
        last = collector;
        let delta = *delta.get_or_insert(collector - stamp(t));
        let repr = common::mirroring_switch(MirrorKind::ErspanIII, 5, 1, n, (t / 100) as u32);
        buf.clear();
        repr.write(rec.data, &mut buf).unwrap();
        w.write(collector, &buf).unwrap();
        let at = stamp(t) + delta;
        p.write(at, rec.data).unwrap();
        let off = collector as i64 - at as i64;
        (lo, hi) = (lo.min(off), hi.max(off));
        n += 1;
    }
    w.flush().unwrap();
    p.flush().unwrap();
    let manifest = std::fs::read_to_string(traces.join(format!("{name}.toml"))).unwrap();
    std::fs::write(port.join(format!("{name}.toml")), &manifest).unwrap();
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("{manifest}\n[mirror]\nclock = \"switch\"\n"),
    )
    .unwrap();
    (dir, port, (lo, hi))
}

/// `[mirror] clock = "switch"` (docs/manifest.md): a collector's jitter changes roce_dcqcn's
/// DCQCN decisions (its timers and byte counter see other gaps); timed by the switch's stamps
/// the events are at the port's times floored to 100 ns, shifted by the first copy's offset —
/// the decisions of the port capture with exactly those times, and the note says how far the
/// capture's times were. Every expected time is computed here from the port capture.
#[test]
fn the_switch_clock_takes_the_collectors_jitter_out() {
    let (dir, port, (lo, hi)) = jittered("roce_dcqcn", "clock");
    let toml = dir.join("roce_dcqcn.toml");
    let err = replay(&toml, &dir.join("switch_clock.jsonl"));
    replay(&port.join("roce_dcqcn.toml"), &dir.join("port.jsonl"));
    // The same capture timed by the collector.
    std::fs::copy(port.join("roce_dcqcn.toml"), &toml).unwrap();
    replay(&toml, &dir.join("capture_clock.jsonl"));
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(read("switch_clock.jsonl") == read("port.jsonl"));
    assert!(read("capture_clock.jsonl") != read("port.jsonl"));
    assert_eq!(lo, 0, "the first copy keeps its capture time");
    assert!(hi > 10_000, "{hi}: tens of µs of jitter");
    assert!(
        err.contains(&format!(
            "2,553 events timed by the mirroring switch's clock (ERSPAN III, 100 ns units); \
             the capture's times were 0 to {} ns from them",
            commas(hi)
        )),
        "{err}"
    );
}

/// Hardware verdicts on a jittered collector's capture timed by the switch read the port's
/// capture at the switch's times: the same report (the observed judge's timestamp resolution
/// is the stamps' 100 ns, as the port capture's times measure).
#[rstest]
#[case("rcc_receiver", "wire")]
#[case("dcqcn_np", "wire")]
#[case("roce_dcqcn", "observed")]
#[case("hpcc_dumbbell", "observed")]
fn hardware_verdicts_take_the_switch_clock(#[case] name: &str, #[case] dut: &str) {
    let (dir, port, _) = jittered(name, &format!("clock-dut-{name}"));
    let diff = |manifest: &std::path::Path| {
        let (code, out, _) = run(
            &repo(),
            &["diff", manifest.to_str().unwrap(), "--dut", dut, "-q"],
        );
        let folder = manifest.parent().unwrap().display().to_string();
        (code, out.replace(&format!("{folder}/"), ""))
    };
    let at_port = diff(&port.join(format!("{name}.toml")));
    let mirrored = diff(&dir.join(format!("{name}.toml")));
    assert!(!at_port.1.is_empty());
    assert_eq!(mirrored, at_port, "{name} --dut {dut}");
}

/// `clock = "switch"` with events no switch stamped — the port's own capture, or ERSPAN II
/// copies — is the verdict's error (exit 2), naming the first and the way out.
#[rstest]
#[case(None, "frame 1, captured on the port, not mirrored")]
#[case(
    Some(MirrorKind::ErspanII),
    "frame 1, no switch timestamp (only ERSPAN III carries one)"
)]
fn the_switch_clock_needs_every_event_stamped(
    #[case] kind: Option<MirrorKind>,
    #[case] first: &str,
) {
    let dir = Scratch::new("mirror-clock-untimed");
    let clock = "\n[mirror]\nclock = \"switch\"\n";
    match kind {
        Some(kind) => {
            let wrap = Wrap {
                copies: &[(kind, 5, 1)],
                cut: None,
            };
            mirror_trace("roce_dcqcn", &dir, &wrap, clock);
        }
        None => {
            let traces = repo().join("traces");
            std::fs::copy(traces.join("roce_dcqcn.pcap"), dir.join("roce_dcqcn.pcap")).unwrap();
            let manifest = std::fs::read_to_string(traces.join("roce_dcqcn.toml")).unwrap();
            std::fs::write(dir.join("roce_dcqcn.toml"), manifest + clock).unwrap();
        }
    }
    let (code, err) = replay_code(&dir.join("roce_dcqcn.toml"), &dir.join("d.jsonl"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "[mirror] clock = \"switch\", but 2,553 events had no switch time (first: {first})"
        )),
        "{err}"
    );
    assert!(
        err.contains("remove `clock = \"switch\"` from [mirror]"),
        "{err}"
    );
    // No event was timed by a switch: no note says any was.
    assert!(!err.contains("timed by the mirroring switch"), "{err}");
}

/// `init` on a jittered collector's ERSPAN III capture sees the capture stray from the stamps
/// by more than their unit and times the events by the switch: `[mirror] clock = "switch"`,
/// and its link and RTT estimates are those of the port's capture at the switch's times. On the
/// bundled roce_dcqcn_erspan (a collector with exact times) it keeps the capture's clock
/// (harness/tests/init.rs).
#[test]
fn init_chooses_the_switch_clock_when_the_collector_jitters() {
    let (dir, port, (lo, hi)) = jittered("roce_dcqcn", "clock-init");
    let init = |d: &std::path::Path| {
        let (code, out, err) = run(d, &["init", "roce_dcqcn.pcap", "-o", "-"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let (mirrored, at_port) = (init(&dir), init(&port));
    assert!(
        mirrored.contains(&format!(
            "[mirror]\n# every RoCEv2 packet was mirrored as ERSPAN III, stamped by the switch in \
             100 ns units;\n# the capture's times were {} to {} ns from those stamps \
             (docs/manifest.md):\n# the path to the collector added jitter, so the switch's \
             clock times the events\nclock = \"switch\"\n",
            commas(lo),
            commas(hi)
        )),
        "{mirrored}"
    );
    assert!(!at_port.contains("[mirror]"), "{at_port}");
    let network = |m: &str| {
        let start = m.find("[network]").unwrap();
        m[start..start + m[start..].find("\n\n").unwrap()].to_string()
    };
    assert_eq!(network(&mirrored), network(&at_port));
}

/// `init` on the sender trace mirrored twice (ERSPAN II sessions 5 and 6, every packet in
/// both): it sees the same packets in two sessions, replays one — `[mirror] session = 5`, the
/// lower of two equal counts — and its estimates are the port capture's (not the 0 ns between
/// a packet and its copy); its try replays, and the manifest gives the port's decisions.
#[test]
fn init_replays_one_session_of_a_capture_mirrored_twice() {
    let copies = [(MirrorKind::ErspanII, 5, 1), (MirrorKind::ErspanII, 6, 2)];
    let (dir, manifest, _) = mirrored_twice("mirror-init-two-sessions", &copies);
    std::fs::remove_file(&manifest).unwrap();
    let (code, _, err) = run(&dir, &["init", "roce_dcqcn.pcap"]);
    assert_eq!(code, 0, "{err}");
    let made = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        made.contains(
            "[mirror]\n# the same packets were mirrored by more than one ERSPAN session: \
             5 (2,553 RoCEv2 packets), 6 (2,553 RoCEv2 packets);\n# each packet would replay \
             once per copy, so session 5's are replayed (set another to replay its)\nsession = 5\n"
        ),
        "{made}"
    );
    // The estimates of the port's own capture.
    let port = Scratch::new("mirror-init-two-sessions-port");
    std::fs::copy(
        repo().join("traces/roce_dcqcn.pcap"),
        port.join("roce_dcqcn.pcap"),
    )
    .unwrap();
    let (code, _, err) = run(&port, &["init", "roce_dcqcn.pcap"]);
    assert_eq!(code, 0, "{err}");
    let at_port = std::fs::read_to_string(port.join("roce_dcqcn.toml")).unwrap();
    let section = |m: &str, name: &str| {
        let start = m.find(name).unwrap();
        m[start..start + m[start..].find("\n\n").unwrap()].to_string()
    };
    for name in ["[network]", "[capture_point]", "[[flows]]"] {
        assert_eq!(section(&made, name), section(&at_port, name), "{name}");
    }
    replay(&manifest, &dir.join("one.jsonl"));
    replay(&port.join("roce_dcqcn.toml"), &dir.join("port.jsonl"));
    assert!(
        std::fs::read(dir.join("one.jsonl")).unwrap()
            == std::fs::read(dir.join("port.jsonl")).unwrap()
    );
}
