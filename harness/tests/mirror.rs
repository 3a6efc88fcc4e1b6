//! Captures a switch mirrored to a collector (docs/wire.md 2.1): the bundled traces, every
//! packet wrapped as a mirror session would deliver it (ERSPAN II, III, type I and gretap in
//! turn, codecs `MirrorRepr`), replay to the same decisions, byte for byte, as the traces
//! captured on the port — in every dialect, whatever shim sits before BTH or after the AETH.

mod common;

use common::{Scratch, repo, run};

use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
use ccreplay_codecs::mirror::{MirrorKind, MirrorRepr};
use rstest::rstest;

const KINDS: [MirrorKind; 4] = [
    MirrorKind::ErspanII,
    MirrorKind::ErspanIII,
    MirrorKind::ErspanI,
    MirrorKind::Teb,
];

/// `traces/NAME.pcap` wrapped packet by packet into `dir/NAME.pcap` (same times), with the
/// trace's manifest beside it; `cut`: frames the switch cut to that many bytes (ERSPAN II,
/// T = 1) when longer. Returns the number of frames cut.
fn mirror_trace(name: &str, dir: &std::path::Path, cut: Option<usize>) -> usize {
    let traces = repo().join("traces");
    let mut r = CaptureReader::open(traces.join(format!("{name}.pcap"))).unwrap();
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let (mut buf, mut n, mut cuts) = (Vec::new(), 0, 0);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        assert!(!rec.is_truncated(), "{name}: the bundled traces are whole");
        let mut repr = MirrorRepr {
            kind: KINDS[n % 4],
            src_mac: [2, 0, 0, 0, 0, 0x5a],
            dst_mac: [2, 0, 0, 0, 0, 0xc0],
            src_ip: [10, 9, 0, 1],
            dst_ip: [10, 9, 0, 2],
            ttl: 63,
            key: (n % 3 == 0).then_some(n as u32),
            seq: n as u32,
            session: 5,
            vlan: 0,
            cos: 3,
            truncated: false,
            index: 1,
            timestamp: n as u32,
        };
        let mut frame = rec.data;
        if let Some(len) = cut.filter(|&l| l < frame.len()) {
            (repr.kind, repr.truncated, frame) = (MirrorKind::ErspanII, true, &frame[..len]);
            cuts += 1;
        }
        buf.clear();
        repr.write(frame, &mut buf);
        w.write(rec.ts_ns, &buf).unwrap();
        n += 1;
    }
    w.flush().unwrap();
    std::fs::copy(
        traces.join(format!("{name}.toml")),
        dir.join(format!("{name}.toml")),
    )
    .unwrap();
    cuts
}

fn replay(manifest: &std::path::Path, out: &std::path::Path) -> String {
    let (code, _, err) = run(
        &repo(),
        &[
            "replay",
            manifest.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    err
}

#[rstest]
#[case("roce_dcqcn")]
#[case("dcqcn_np")]
#[case("hpcc_dumbbell")]
#[case("fncc_chain_receiver")]
#[case("rcc_sender")]
fn a_mirrored_trace_replays_to_the_same_decisions(#[case] name: &str) {
    let dir = Scratch::new(&format!("mirror-{name}"));
    mirror_trace(name, &dir, None);
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
        let line = err.lines().next().unwrap().to_string();
        line.replace(&format!("{}/", dir.display()), "")
    };
    assert_eq!(
        accounting(&mirrored_err, &dir),
        accounting(&port_err, &repo().join("traces")),
        "{name}"
    );
    assert!(mirrored_err.contains(" RoCEv2, "), "{mirrored_err}");
}

/// Frames the switch cut after their headers (ERSPAN T) are replayed whole, as a snaplen's cut:
/// the sender trace's 1,268 data frames (1,074 and 1,058 bytes) cut to 100 bytes keep
/// Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 (first packets) and lose payload and
/// ICRC; its ACKs (62 bytes) and CNPs (74) stay whole.
#[test]
fn frames_the_switch_cut_after_their_headers_are_replayed() {
    let dir = Scratch::new("mirror-cut");
    let cuts = mirror_trace("roce_dcqcn", &dir, Some(100));
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
