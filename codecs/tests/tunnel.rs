//! Overlay tunnels (codecs tunnel.rs, docs/wire.md 2.2) over `tests/fixtures/tunnel.pcap`:
//! frames scapy built (its `VXLAN`, `GENEVE`, `ERSPAN_II` and `scapy.contrib.roce`,
//! tests/fixtures/tunnel/make_tunnel_twins.py) and tshark 4.0 dissects to the same fields
//! (tests/tshark_compare.rs). The expected numbers are the ones that script set, and the
//! offsets the sums of the header lengths it stacked.

use std::path::PathBuf;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::IpAddrs;
use ccreplay_codecs::tunnel::{Tunnel, TunnelKind, TunnelRepr};
use ccreplay_codecs::{DecodeConfig, ErrorKind, Layer, LinkStart, Packet};

/// The records of tunnel.pcap, in order, with their original lengths.
fn records() -> Vec<(Vec<u8>, usize)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tunnel.pcap");
    let mut r = CaptureReader::open(path).expect("fixture (make_tunnel_twins.py)");
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        out.push((rec.data.to_vec(), rec.orig_len as usize));
    }
    assert_eq!(out.len(), 10);
    out
}

fn decode<'a>(b: &'a (Vec<u8>, usize), cfg: &DecodeConfig) -> Packet<'a> {
    Packet::decode(&b.0, b.1, LinkStart::Ethernet, cfg)
}

const VTEP1: [u8; 4] = [10, 9, 0, 1];
const VTEP2: [u8; 4] = [10, 9, 0, 2];
const HOST1: [u8; 4] = [10, 0, 0, 1];
const HOST2: [u8; 4] = [10, 0, 0, 2];

fn tunnel(p: &Packet<'_>) -> Tunnel {
    p.tunnel.expect("tunnelled")
}

/// Frame 1: VXLAN over IPv4. Outer Ethernet 14 + IPv4 20 + UDP 8: the VXLAN header at 42,
/// the inner frame at 50, its IPv4 at 64, UDP at 84, BTH at 92 (an ACK, MSN 1).
#[test]
fn the_inner_frame_is_the_packet() {
    let r = records();
    let p = decode(&r[0], &DecodeConfig::default());
    assert_eq!(p.error, None);
    let t = tunnel(&p);
    assert_eq!(t.kind, TunnelKind::Vxlan);
    assert_eq!(
        (t.eth_offset, t.ip_offset, t.offset, t.inner),
        (Some(0), 14, 42, 50)
    );
    assert_eq!((t.flags, t.vni, t.udp_src_port), (0x0800, 5001, 49153));
    assert_eq!(
        t.ip_addrs(p.data),
        Some(IpAddrs::V4 {
            src: VTEP1,
            dst: VTEP2
        })
    );
    assert_eq!(
        t.macs(p.data),
        Some(([2, 0, 0, 0, 9, 1], [2, 0, 0, 0, 9, 2]))
    );
    let ip = p.ip.unwrap();
    assert_eq!(
        (ip.offset, ip.addrs),
        (
            64,
            IpAddrs::V4 {
                src: HOST1,
                dst: HOST2
            }
        )
    );
    let eth = p.eth.unwrap();
    assert_eq!((eth.src, eth.dst), ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
    assert_eq!(p.udp.unwrap().offset, 84);
    let roce = p.roce.unwrap();
    assert_eq!(
        (roce.bth_offset, roce.bth.dest_qp(), roce.bth.psn()),
        (92, 0x10_0001, 5)
    );
    // The ICRC covers the inner IP and UDP headers: scapy's checks.
    let (computed, found) = p.icrc_check().unwrap();
    assert_eq!(computed, found);
    // The frame on the wire is the whole outer frame.
    assert_eq!(p.wire_len(r[0].1), 112);
}

/// RFC 6040 4.2 on each frame: (outer ECN, inner ECN, what decapsulation leaves).
#[test]
fn the_mark_is_the_decapsulated_one() {
    let r = records();
    let cfg = DecodeConfig::default();
    for (i, outer, inner, want) in [
        // CE outside, ECT(0) inside: CE.
        (0, 3, 2, Some(3)),
        // Not-ECT outside: the inner ECT(0).
        (1, 0, 2, Some(2)),
        // ECT(1) outside, ECT(0) inside: ECT(1).
        (2, 1, 2, Some(1)),
        (3, 2, 2, Some(2)),
        // VXLAN in VXLAN: the first level's outer Not-ECT, the second's ECT(0).
        (7, 0, 2, Some(2)),
        // CE on Not-ECT: dropped, no mark.
        (8, 3, 0, None),
        (9, 3, 2, Some(3)),
    ] {
        let p = decode(&r[i], &cfg);
        let t = tunnel(&p);
        assert_eq!(
            (t.ecn, p.ip.unwrap().ecn),
            (outer, inner),
            "frame {}",
            i + 1
        );
        assert_eq!(p.ecn(), want, "frame {}", i + 1);
    }
    // A packet in no tunnel: its own ECN (frame 5's outer header, Not-ECT, left as UDP).
    let p = decode(&r[4], &cfg);
    assert_eq!((p.tunnel, p.ecn()), (None, Some(0)));
}

#[test]
fn geneve_reads_its_options_and_protocol() {
    let r = records();
    let cfg = DecodeConfig::default();
    // Frame 3: outer IPv6 (14 + 40 + UDP 8: Geneve at 62), Opt Len 2 (8 bytes), Ethernet:
    // the inner frame at 62 + 8 + 8 = 78, a CNP.
    let p = decode(&r[2], &cfg);
    assert_eq!(p.error, None);
    let t = tunnel(&p);
    assert_eq!(
        (t.kind, t.ip_offset, t.offset, t.options_len, t.inner),
        (TunnelKind::Geneve, 14, 62, 8, 78)
    );
    assert_eq!((t.flags, t.protocol, t.vni), (0, 0x6558, 0xA_BCDE));
    let mut src = [0u8; 16];
    src[..4].copy_from_slice(&[0xfd, 0, 0, 9]);
    let mut dst = src;
    (src[15], dst[15]) = (1, 2);
    assert_eq!(t.ip_addrs(p.data), Some(IpAddrs::V6 { src, dst }));
    assert!(p.roce.unwrap().bth.opcode().is_cnp());
    // Frame 4: IPv4 directly (protocol 0x0800): no inner Ethernet, the IP at 50.
    let p = decode(&r[3], &cfg);
    let t = tunnel(&p);
    assert_eq!(
        (t.protocol, t.vni, t.options_len, t.inner),
        (0x0800, 42, 0, 50)
    );
    assert_eq!((p.eth, p.ip.unwrap().offset), (None, 50));
    assert!(p.roce.is_some());
    // Frame 5: MPLS inside: the packet stays its UDP to 6081.
    let p = decode(&r[4], &cfg);
    assert_eq!((p.tunnel, p.error, p.roce), (None, None, None));
    assert_eq!(p.udp.unwrap().dst_port, 6081);
}

#[test]
fn what_a_tunnel_header_gets_wrong() {
    let r = records();
    let cfg = DecodeConfig::default();
    // Frame 2: VXLAN with I clear: read, one warning at the VXLAN header.
    let p = decode(&r[1], &cfg);
    assert_eq!((p.error, tunnel(&p).vni), (None, 7));
    let w = p.warning.unwrap();
    assert_eq!((w.layer, w.offset, p.warnings), (Layer::Vxlan, 42, 1));
    // Frame 6: Geneve version 1: unsupported at 42, the outer UDP kept as the packet's.
    let p = decode(&r[5], &cfg);
    let e = p.error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Geneve, 42));
    assert_eq!(
        e.kind,
        ErrorKind::Unsupported {
            what: "Geneve version",
            found: 1
        }
    );
    assert_eq!((p.tunnel, p.udp.unwrap().dst_port), (None, 6081));
    // Frame 7: a 46-byte record of frame 1 (112 bytes): 4 of VXLAN's 8 bytes.
    let p = decode(&r[6], &cfg);
    assert_eq!((r[6].0.len(), r[6].1), (46, 112));
    let e = p.error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Vxlan, 42));
    assert_eq!(
        e.kind,
        ErrorKind::Truncated {
            needed: 8,
            available: 4
        }
    );
    assert!(!p.headers_complete());
}

#[test]
fn one_level_and_inside_a_mirror() {
    let r = records();
    let cfg = DecodeConfig::default();
    // Frame 8: VXLAN (VNI 1) around VXLAN (VNI 2): the first level read, the inner packet
    // plain UDP from port 50000 to 4789.
    let p = decode(&r[7], &cfg);
    assert_eq!((p.error, tunnel(&p).vni), (None, 1));
    let udp = p.udp.unwrap();
    assert_eq!((udp.src_port, udp.dst_port, p.roce), (50000, 4789, None));
    // Frame 10: ERSPAN II around frame 1: outer Ethernet 14 + IPv4 20 + GRE 8 (sequence) +
    // ERSPAN 8 = 50 before the copy, so every tunnel offset of frame 1 moves by 50.
    let p = decode(&r[9], &cfg);
    assert_eq!(p.error, None);
    assert_eq!(p.mirror.unwrap().inner, 50);
    let t = tunnel(&p);
    assert_eq!(
        (t.eth_offset, t.ip_offset, t.offset, t.inner),
        (Some(50), 64, 92, 100)
    );
    assert_eq!(
        t.ip_addrs(p.data),
        Some(IpAddrs::V4 {
            src: VTEP1,
            dst: VTEP2
        })
    );
    assert_eq!(p.ip.unwrap().offset, 114);
    assert_eq!(p.ecn(), Some(3));
    // The frame on the wire where the switch copied it: the tunnelled frame, 112 bytes.
    assert_eq!(p.wire_len(r[9].1), 112);
}

/// The ports come from the configuration: 0 turns a tunnel off, another port moves it.
#[test]
fn the_ports_are_configured() {
    let r = records();
    let off = DecodeConfig {
        vxlan_port: 0,
        ..DecodeConfig::default()
    };
    let p = decode(&r[0], &off);
    assert_eq!(
        (p.tunnel, p.roce, p.udp.unwrap().dst_port),
        (None, None, 4789)
    );
    // Geneve still read.
    assert!(decode(&r[2], &off).tunnel.is_some());
    let moved = DecodeConfig {
        vxlan_port: 8472,
        geneve_port: 4789,
        ..DecodeConfig::default()
    };
    // UDP 4789 read as Geneve: VXLAN's flags byte 0x08 is Geneve's Ver 0, Opt Len 8 (32
    // bytes of options): the inner frame at 42 + 8 + 32 = 82, protocol 0x0000 (VXLAN's
    // reserved bytes): not a frame Geneve carries, so the packet stays its UDP.
    let p = decode(&r[0], &moved);
    assert_eq!((p.tunnel, p.roce), (None, None));
    // And 6081 is no tunnel then.
    let p = decode(&r[2], &moved);
    assert_eq!((p.tunnel, p.udp.unwrap().dst_port), (None, 6081));
    // Port 0 turns a tunnel off: a packet to UDP port 0 is not read as it.
    let mut zero = r[0].clone();
    zero.0[36..38].copy_from_slice(&[0, 0]);
    let p = decode(&zero, &off);
    assert_eq!((p.tunnel, p.udp.unwrap().dst_port), (None, 0));
}

/// inspect's `ccreplay.tunnel` values (docs/inspect.md).
#[test]
fn the_kinds_are_named_as_inspect_writes_them() {
    assert_eq!(TunnelKind::Vxlan.name(), "vxlan");
    assert_eq!(TunnelKind::Geneve.name(), "geneve");
}

fn endpoint(kind: TunnelKind, ecn: Option<u8>) -> TunnelRepr {
    TunnelRepr {
        kind,
        src_mac: [2, 0, 0, 0, 9, 1],
        dst_mac: [2, 0, 0, 0, 9, 2],
        src_ip: VTEP1,
        dst_ip: VTEP2,
        ttl: 64,
        ident: 1,
        udp_src_port: 49153,
        vni: 5001,
        ecn,
    }
}

/// The writer wraps frame 1's inner frame as scapy did, but for the outer UDP checksum: scapy
/// computes it, the writer sends 0 (RFC 7348 5).
#[test]
fn the_writer_wraps_as_scapy_did() {
    let r = records();
    for i in [0, 8] {
        let scapy = &r[i].0;
        let mut out = Vec::new();
        endpoint(TunnelKind::Vxlan, Some(3))
            .write(&scapy[50..], &mut out)
            .unwrap();
        assert_eq!(out.len(), scapy.len());
        assert_eq!(&out[40..42], &[0, 0]);
        assert_eq!(
            (&out[..40], &out[42..]),
            (&scapy[..40], &scapy[42..]),
            "frame {}",
            i + 1
        );
    }
}

#[test]
fn the_writer_copies_the_inner_mark_and_writes_geneve() {
    let r = records();
    let inner = &r[0].0[50..];
    let cfg = DecodeConfig::default();
    for kind in [TunnelKind::Vxlan, TunnelKind::Geneve] {
        let mut out = Vec::new();
        endpoint(kind, None).write(inner, &mut out).unwrap();
        let p = Packet::decode_ethernet(&out, &cfg);
        assert_eq!(p.error, None, "{kind:?}");
        let t = tunnel(&p);
        // RFC 6040 normal mode: the inner ECT(0) copied outside.
        assert_eq!((t.kind, t.vni, t.ecn, p.ecn()), (kind, 5001, 2, Some(2)));
        assert_eq!((t.offset, t.inner, t.options_len), (42, 50, 0));
        assert_eq!(&p.data[50..], inner);
        let (computed, found) = p.icrc_check().unwrap();
        assert_eq!(computed, found);
    }
    // A frame no IPv4 packet can carry: 65,535 - 20 - 8 - 8 = 65,499 bytes at most.
    let big = vec![0u8; 65_500];
    let e = endpoint(TunnelKind::Vxlan, None)
        .write(&big, &mut Vec::new())
        .unwrap_err();
    assert_eq!(e.len, 65_500);
    assert!(
        endpoint(TunnelKind::Vxlan, None)
            .write(&big[..65_499], &mut Vec::new())
            .is_ok()
    );
}
