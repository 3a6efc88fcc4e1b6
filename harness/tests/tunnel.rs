//! RoCEv2 inside overlay tunnels (docs/wire.md 2.2): VXLAN and Geneve are decoded, the inner
//! frame is the packet, and its congestion mark is what decapsulation leaves (RFC 6040 4.2:
//! the underlay's switches mark the outer header). The captures are tunnel twins of two
//! bundled captures, rebuilt by scapy (tests/fixtures/tunnel/make_tunnel_twins.py: each frame
//! wrapped at its own timestamp, a CE mark moved to the outer header with the sender's ECT
//! left inside); the expected decisions are the originals' golden files, and the counts are
//! tshark's of the twins (940 WRITE, 940 ACK and 217 CNP frames in dcqcn_np_vxlan.pcap).

mod common;

use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
use ccreplay_codecs::frame::{FrameRepr, IpRepr};
use ccreplay_codecs::shim::IntConfig;
use ccreplay_codecs::tunnel::{TunnelKind, TunnelRepr};
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
use common::{Scratch, repo, run as ccreplay, tshark};
use std::path::Path;

/// `traces/STEM.toml` with its capture replaced by the twin `FILE` (copied into `dir`);
/// `edit` changes the manifest's text. Returns the manifest's path.
fn twin(dir: &Path, stem: &str, file: &str, edit: impl Fn(String) -> String) -> String {
    std::fs::copy(
        repo().join("tests/fixtures/tunnel").join(file),
        dir.join(file),
    )
    .unwrap();
    let text = std::fs::read_to_string(repo().join(format!("traces/{stem}.toml"))).unwrap();
    let text = text.replace(
        &format!("capture = \"{stem}.pcap\""),
        &format!("capture = \"{file}\""),
    );
    assert!(text.contains(file));
    let path = dir.join(format!("{stem}_twin.toml"));
    std::fs::write(&path, edit(text)).unwrap();
    path.to_str().unwrap().to_string()
}

fn replay(dir: &Path, manifest: &str, model: &str) -> (i32, Vec<u8>, String) {
    let out = dir.join(format!("{model}.jsonl"));
    let (code, _, err) = ccreplay(
        dir,
        &[
            "replay",
            manifest,
            "--model",
            model,
            "-o",
            out.to_str().unwrap(),
        ],
    );
    (code, std::fs::read(&out).unwrap_or_default(), err)
}

fn golden(stem: &str, model: &str) -> Vec<u8> {
    std::fs::read(repo().join(format!("golden/{stem}/{model}.jsonl"))).unwrap()
}

#[test]
fn a_receiver_behind_a_vxlan_tunnel_answers_the_outer_marks() {
    let dir = Scratch::new("tunnel-np");
    let manifest = twin(&dir, "dcqcn_np", "dcqcn_np_vxlan.pcap", |t| t);
    let (code, got, err) = replay(&dir, &manifest, "dcqcn-np");
    assert_eq!(code, 0, "{err}");
    // The original's 217 CNP decisions, byte for byte: 373 data packets are CE only on the
    // outer header (tshark: 131 with ECT(1) inside, 242 with ECT(0)), so reading the inner
    // header alone would leave the receiver nothing to answer.
    assert_eq!(got, golden("dcqcn_np", "dcqcn-np"));
    assert_eq!(got.iter().filter(|&&b| b == b'\n').count(), 217);
    // Every frame accounted for: 940 WRITEs are events, 940 ACKs and 217 CNPs the
    // receiver's own.
    assert!(
        err.contains(
            "2,097 frames: 2,097 RoCEv2, 940 events (rx_data 940); 1,157 skipped: 1,157 ACK/NAK/CNP sent by the receiver"
        ),
        "{err}"
    );
    // The CNPs the receiver sent, inside the tunnel too, are its decisions.
    let (code, out, err) = ccreplay(&dir, &["diff", &manifest, "--dut", "wire"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("CONFORMANT: 4 flows, 217 decisions, 0 mismatched, 0 missing, 0 extra"),
        "{out}"
    );
}

#[test]
fn a_sender_in_geneve_over_ipv6_replays_as_its_plain_capture() {
    let dir = Scratch::new("tunnel-rp");
    let manifest = twin(&dir, "dcqcn_clamp", "dcqcn_clamp_geneve.pcap", |t| t);
    for model in ["dcqcn", "dcqcn-nic"] {
        let (code, got, err) = replay(&dir, &manifest, model);
        assert_eq!(code, 0, "{model}: {err}");
        assert_eq!(got, golden("dcqcn_clamp", model), "{model}");
        // tshark: 393 WRITEs, 253 ACKs, 10 CNPs.
        assert!(
            err.contains(
                "656 frames: 656 RoCEv2, 656 events (tx_data 393, rx_ack 253, rx_cnp 10); none skipped"
            ),
            "{err}"
        );
    }
}

/// The sender judged from what it put on the wire (`--dut observed`, docs/observed.md): the
/// same report in Geneve as in the plain capture, line for line but the capture's name — the
/// rates it measures are of the flow's bytes, not of the encapsulation.
#[test]
fn the_observed_judge_reads_a_tunnelled_sender_as_the_plain_one() {
    let dir = Scratch::new("tunnel-observed");
    let twin = twin(&dir, "dcqcn_clamp", "dcqcn_clamp_geneve.pcap", |t| t);
    let plain = repo().join("traces/dcqcn_clamp.toml");
    let judge = |m: &str| {
        let (code, out, err) = ccreplay(&dir, &["diff", m, "--dut", "observed"]);
        assert_eq!(code, 0, "{m}: {out}{err}");
        // The capture's path aside (the accounting line starts with it).
        format!("{out}{err}")
            .lines()
            .map(|l| match l.split_once(".pcap: ") {
                Some((_, rest)) => rest.to_string(),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (judge(plain.to_str().unwrap()), judge(&twin));
    // The 10 decisions of golden/dcqcn_clamp/dcqcn.jsonl.
    assert!(
        a.iter()
            .any(|l| l.starts_with("CONFORMANT: 2 flows, 10 decisions")),
        "{a:?}"
    );
    assert_eq!(a, b);
}

#[test]
fn a_tunnel_port_turned_off_says_which_line_to_remove() {
    let dir = Scratch::new("tunnel-off");
    let manifest = twin(&dir, "dcqcn_np", "dcqcn_np_vxlan.pcap", |t| {
        t.replace("udp_port = 4791\n", "udp_port = 4791\nvxlan_port = 0\n")
    });
    let (code, _, err) = replay(&dir, &manifest, "dcqcn-np");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "none of the 2,097 frames is RoCEv2 to UDP port 4791; 2,097 are UDP to port 4789"
        ),
        "{err}"
    );
    assert!(
        err.contains("hint: UDP 4789 is VXLAN's port, which ")
            && err.contains("moves (`network.vxlan_port`): remove that line"),
        "{err}"
    );
}

fn fields(program: &str, capture: &str, keys: &[&str], opts: &[&str]) -> Vec<String> {
    common::field_columns(program, capture, keys, opts)
        .lines()
        .map(str::to_string)
        .collect()
}

/// tests/fixtures/tunnel.pcap, frame by frame as tshark 4.0 shows it. tshark repeats `ip.*`
/// and `udp.*` for the outer and inner headers (outer first); ccreplay shows the inner ones,
/// which `-E occurrence=l` picks out of tshark's. Frames 5-8 differ by design (the script's
/// list): 5 carries MPLS, which ccreplay leaves as UDP; 6 is Geneve version 1, which RFC 8926
/// drops and tshark reads; 7 is cut inside VXLAN; 8 nests VXLAN, read one level deep.
#[test]
fn tunnel_fields_are_tsharks() {
    if !tshark() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let capture = "tests/fixtures/tunnel.pcap";
    let keys = [
        "frame.number",
        "vxlan.flags",
        "vxlan.vni",
        "geneve.flags",
        "geneve.proto_type",
        "geneve.vni",
        "ip.src",
        "ip.dst",
        "ip.dsfield.ecn",
        "udp.srcport",
        "udp.dstport",
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
    ];
    let bin = env!("CARGO_BIN_EXE_ccreplay");
    let ours = fields(bin, capture, &keys, &["occurrence=l"]);
    let theirs = fields("tshark", capture, &keys, &["occurrence=l"]);
    assert_eq!((ours.len(), theirs.len()), (10, 10));
    for f in [1, 2, 3, 4, 9, 10] {
        assert_eq!(ours[f - 1], theirs[f - 1], "frame {f}");
    }
    // The outer headers ccreplay shows under its own names are tshark's first occurrences.
    let outer = fields(
        bin,
        capture,
        &[
            "ccreplay.tunnel.ip.src",
            "ccreplay.tunnel.ip.ecn",
            "ccreplay.tunnel.udp.srcport",
        ],
        &[],
    );
    let first = fields(
        "tshark",
        capture,
        &["ip.src", "ip.dsfield.ecn", "udp.srcport"],
        &["occurrence=f"],
    );
    for f in [1, 2, 4, 9] {
        assert_eq!(outer[f - 1], first[f - 1], "frame {f}");
    }
    // Frame 3's outer header is IPv6: its traffic class 0x00000001 is ECT(1).
    assert_eq!(outer[2], "fd00:9::1\t1\t49153");
}

/// What each frame of tests/fixtures/tunnel.pcap decodes to (the script's list): the ECN
/// decapsulation leaves, by RFC 6040's table, and where decoding stops.
#[test]
fn every_tunnel_case_decodes_as_the_rfcs_say() {
    let bin = env!("CARGO_BIN_EXE_ccreplay");
    let rows = fields(
        bin,
        "tests/fixtures/tunnel.pcap",
        &[
            "ccreplay.tunnel",
            "ccreplay.tunnel.ip.ecn",
            "ip.dsfield.ecn",
            "ccreplay.tunnel.decap_ecn",
            "ccreplay.geneve.options_len",
            "udp.dstport",
            "ccreplay.warning.layer",
            "ccreplay.error.layer",
            "ccreplay.error.reason",
            "ccreplay.mirror",
        ],
        &["separator=,"],
    );
    let want = [
        // outer CE on inner ECT(0): CE.
        "vxlan,3,2,3,,4791,,,,",
        // I clear: read, reported.
        "vxlan,0,2,2,,4791,vxlan,,,",
        // outer ECT(1) on inner ECT(0): ECT(1); 8 bytes of options.
        "geneve,1,2,1,8,4791,,,,",
        // IP inside Geneve, no options.
        "geneve,2,2,2,0,4791,,,,",
        // MPLS inside: the packet stays UDP to 6081 (outer ECN 0).
        ",,0,,,6081,,,,",
        ",,0,,,6081,,geneve,unsupported,",
        ",,3,,,4789,,vxlan,truncated,",
        // The inner VXLAN packet is plain UDP (its ECN ECT(0) under an outer Not-ECT).
        "vxlan,0,2,2,,4789,,,,",
        // outer CE on inner Not-ECT: dropped by the decapsulator, no ECN to act on.
        "vxlan,3,0,,,4791,,,,",
        // frame 1 as an ERSPAN II copy.
        "vxlan,3,2,3,,4791,,,,erspan2",
    ];
    assert_eq!(rows, want);
}

/// `frame` as a tunnel endpoint sends it when the underlay marked it: a CE-marked RoCEv2
/// packet is written again (codecs' decoder and `FrameRepr`) with its sender's ECT(0), and the
/// CE goes on the outer header; anything else (ACKs, PFC frames) is wrapped as it is.
fn encapsulate(frame: &[u8], n: u16, out: &mut Vec<u8>) {
    let p = Packet::decode_ethernet(frame, &DecodeConfig::default());
    let mut unmarked = Vec::new();
    let mut outer_ecn = None;
    if let Some(mut f) = FrameRepr::from_packet(&p)
        && let IpRepr::V4 { ecn: ecn @ 3, .. } = &mut f.ip
    {
        *ecn = 2;
        f.emit(Dialect::Roce, IntConfig::default(), &mut unmarked)
            .unwrap();
        outer_ecn = Some(3);
    }
    let inner = if outer_ecn.is_some() {
        &unmarked
    } else {
        frame
    };
    let repr = TunnelRepr {
        kind: TunnelKind::Vxlan,
        src_mac: [2, 0, 0, 0, 9, 1],
        dst_mac: [2, 0, 0, 0, 9, 2],
        src_ip: [10, 9, 0, 1],
        dst_ip: [10, 9, 0, 2],
        ttl: 64,
        ident: n,
        udp_src_port: 49152 | (n & 0x3FFF),
        vni: 5001,
        ecn: outer_ecn,
    };
    repr.write(inner, out).unwrap();
}

/// The switch judge on an underlay switch's taps (docs/switch.md): the packets it forwards
/// are VXLAN, and it marks the outer header. Its marks are the decapsulated ones, so its
/// verdict is the plain taps' — and it sees marks at all only if it reads them there.
#[test]
fn a_switch_judged_from_tunnelled_taps_gives_the_plain_verdict() {
    let dir = Scratch::new("tunnel-switch");
    common::sim("scenarios/switch/dcqcn_marking.toml", &dir, &[]);
    let setup = common::last_switch_setup(&dir);
    let judge = |args: &[&str]| {
        let mut a = vec!["switch", setup.to_str().unwrap(), "--format", "json"];
        a.extend_from_slice(args);
        let (code, out, err) = ccreplay(&repo(), &a);
        (code, out, err)
    };
    let (code, plain, err) = judge(&[]);
    assert_eq!(code, 0, "{plain}{err}");
    // Every tap's capture rewritten in place, frame by frame at the same times.
    let (mut marked, mut frames) = (0, 0);
    for pcap in std::fs::read_dir(&*dir).unwrap() {
        let pcap = pcap.unwrap().path();
        if pcap.extension().is_none_or(|x| x != "pcap") {
            continue;
        }
        let mut r = CaptureReader::open(&pcap).unwrap();
        let tmp = pcap.with_extension("vxlan");
        let mut w = PcapWriter::create(&tmp).unwrap();
        let mut buf = Vec::new();
        while let Some(rec) = r.next_record() {
            let rec = rec.unwrap();
            buf.clear();
            encapsulate(rec.data, frames as u16, &mut buf);
            marked += usize::from(buf[15] & 3 == 3);
            frames += 1;
            w.write(rec.ts_ns, &buf).unwrap();
        }
        w.flush().unwrap();
        drop((w, r));
        std::fs::rename(&tmp, &pcap).unwrap();
    }
    assert!(
        frames > 1_000 && marked > 10,
        "{frames} frames, {marked} marked"
    );
    let (code, tunnelled, err) = judge(&[]);
    assert_eq!(code, 0, "{tunnelled}{err}");
    let (plain, tunnelled): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&plain).unwrap(),
        serde_json::from_str(&tunnelled).unwrap(),
    );
    // The same packets aligned, the same marks found, every check passed.
    assert_eq!(tunnelled["ok"], true, "{tunnelled}");
    assert_eq!(tunnelled["taps"], plain["taps"]);
    for k in [
        "packets",
        "marked",
        "marked_upstream",
        "below_kmin",
        "above_kmax",
    ] {
        assert_eq!(tunnelled["marking"][k], plain["marking"][k], "{k}");
    }
    // As many as the simulated switch marked (its own record, STEM.truth.jsonl).
    let truth = std::fs::read_to_string(
        setup.with_file_name(
            setup
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .replace(".switch.toml", ".truth.jsonl"),
        ),
    )
    .unwrap();
    let marks = truth.matches("\"marked\":true").count();
    assert!(marks > 10);
    assert_eq!(plain["marking"]["marked"], marks);
    assert_eq!(tunnelled["failures"], serde_json::json!([]));
    // The queue is of the frames the underlay carries, each 50 bytes longer (outer Ethernet
    // 14, IPv4 20, UDP 8, VXLAN 8): its bins and PFC peak hold more bytes.
    let peak = |v: &serde_json::Value| v["pfc"]["peak_bytes"][0].as_u64().unwrap();
    assert!(peak(&tunnelled) > peak(&plain));
    assert_eq!((peak(&tunnelled) - peak(&plain)) % 50, 0);
}

/// `dcqcn_np_vxlan.pcap` with every frame's outer UDP destination moved from 4789 to 8472
/// (Linux's VXLAN port; its checksum left stale: nothing checks it), in `dir`.
fn on_linux_port(dir: &Path) -> std::path::PathBuf {
    let src = repo().join("tests/fixtures/tunnel/dcqcn_np_vxlan.pcap");
    let mut r = CaptureReader::open(&src).unwrap();
    let path = dir.join("np8472.pcap");
    let mut w = PcapWriter::create(&path).unwrap();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let mut f = rec.data.to_vec();
        // Outer Ethernet 14 + IPv4 20: the UDP destination port at 36.
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4789);
        f[36..38].copy_from_slice(&8472u16.to_be_bytes());
        w.write(rec.ts_ns, &f).unwrap();
    }
    w.flush().unwrap();
    path
}

#[test]
fn init_and_inspect_read_vxlan_on_another_port_when_told() {
    let dir = Scratch::new("tunnel-8472");
    let moved = on_linux_port(&dir);
    let moved = moved.to_str().unwrap();
    // Not told: nothing read, and the hint says which option reads it.
    let (code, _, err) = ccreplay(&dir, &["init", moved, "-o", "-"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("in 2,097 frames; 2,097 are UDP to port 8472: nothing to replay"),
        "{err}"
    );
    assert!(
        err.contains("`ccreplay init CAPTURE --vxlan-port 8472` reads the RoCEv2 inside"),
        "{err}"
    );
    // Told: the manifest of the 4789 twin, but for the capture's name and the port.
    let (code, manifest, err) = ccreplay(&dir, &["init", moved, "--vxlan-port", "8472", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    let std = repo().join("tests/fixtures/tunnel/dcqcn_np_vxlan.pcap");
    let (code, standard, err) = ccreplay(&dir, &["init", std.to_str().unwrap(), "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    let body = |m: &str| {
        m.lines()
            .filter(|l| !l.starts_with("capture = ") && !l.starts_with("# Written by"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        manifest.contains("\nudp_port = 4791\nvxlan_port = 8472\n"),
        "{manifest}"
    );
    assert_eq!(
        body(&manifest).replace("vxlan_port = 8472\n", ""),
        body(&standard)
    );
    assert_eq!(manifest.matches("[[flows]]").count(), 4);
    // inspect, told, shows the tunnel.
    let (code, out, err) = ccreplay(
        &dir,
        &[
            "inspect",
            moved,
            "--vxlan-port",
            "8472",
            "-e",
            "vxlan.vni",
            "-e",
            "udp.dstport",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().next(), Some("5001\t4791"));
}

/// `inspect --format text` ends a tunnelled packet's line with its tunnel (docs/inspect.md).
#[test]
fn the_text_line_names_the_tunnel() {
    let (code, out, err) = ccreplay(
        &repo(),
        &[
            "inspect",
            "tests/fixtures/tunnel.pcap",
            "--format",
            "text",
            "--dialect",
            "roce",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    // Frames 1 and 3 of the script's list: VXLAN 5001 over IPv4, Geneve 0xABCDE over IPv6.
    assert!(
        lines[0].ends_with("  [in VXLAN 5001 10.9.0.1 -> 10.9.0.2]"),
        "{}",
        lines[0]
    );
    assert!(
        lines[2].ends_with("  [in Geneve 703710 fd00:9::1 -> fd00:9::2]"),
        "{}",
        lines[2]
    );
    // Frame 10: mirrored, then tunnelled: both said, the tunnel first.
    assert!(
        lines[9].contains("  [in VXLAN 5001 10.9.0.1 -> 10.9.0.2]  [mirrored by 10.10.0.1"),
        "{}",
        lines[9]
    );
}
