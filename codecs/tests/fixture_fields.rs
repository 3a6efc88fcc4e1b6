//! The decoder's structure of every fixture record — where each layer starts, header lengths,
//! VLAN tags, IP and UDP fields, payload and ICRC, PFC frames, the error of a malformed frame,
//! and every extension header's fields and offset — against the values
//! `tests/fixtures/make_fixtures.py` *set* when it built them (cross-checked against tshark
//! 4.0 by `check_with_tshark.py`: the `infiniband.*`, `ip.*`, `macc.*` names are tshark's
//! fields), never values read back from this crate.
//!
//! The harness's `inspect` is checked against the same files (tests/inspect_fixtures.rs); this
//! pins the codecs at their own layer (cargo-mutants over codecs/src/packet.rs found these
//! unchecked by the codecs' own tests: docs/conformance.md "cargo-mutants on the codecs").

use std::path::PathBuf;

use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::ib::ExtHeaders;
use ccreplay_codecs::packet::IpAddrs;
use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
use rstest::rstest;
use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name);
    std::fs::read(p).expect("fixture present (run tests/fixtures/make_fixtures.py)")
}

/// A fixture's expected file, one JSON object per record.
fn lines(stem: &str) -> Vec<Value> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(format!("{stem}.expected.jsonl"));
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn u(v: &Value, key: &str) -> Option<u64> {
    v.get(key)
        .map(|x| x.as_u64().unwrap_or_else(|| panic!("{key}: {x}")))
}

fn list(v: &Value, key: &str) -> Vec<u64> {
    v.get(key).map_or(Vec::new(), |x| {
        x.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_u64().unwrap())
            .collect()
    })
}

/// Each header flag with the fixture's key for its offset in the frame.
const OFFSETS: [(u16, &str); 9] = [
    (ExtHeaders::RDETH, "ccreplay.offset.rdeth"),
    (ExtHeaders::DETH, "ccreplay.offset.deth"),
    (ExtHeaders::RETH, "ccreplay.offset.reth"),
    (ExtHeaders::ATOMIC_ETH, "ccreplay.offset.atomiceth"),
    (ExtHeaders::AETH, "ccreplay.offset.aeth"),
    (ExtHeaders::ATOMIC_ACK_ETH, "ccreplay.offset.atomicacketh"),
    (ExtHeaders::IMM_DT, "ccreplay.offset.immdt"),
    (ExtHeaders::IETH, "ccreplay.offset.ieth"),
    (ExtHeaders::CNP, "ccreplay.offset.cnp"),
];

#[test]
fn every_extension_header_reads_as_the_generator_wrote_it() {
    let expected = lines("roce_opcodes");
    let bytes = fixture("roce_opcodes.pcap");
    let mut reader = CaptureReader::from_slice(&bytes).unwrap();
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    // How many records carried each header: none may be checked vacuously.
    let mut seen = [0usize; 9];
    let mut lines = expected.iter();
    while let Some(rec) = reader.next_record() {
        let rec = rec.unwrap();
        let line = lines.next().expect("one expected line per record");
        let n = rec.frame_number;
        let p = Packet::decode_ethernet(rec.data, &cfg);
        let Some(r) = &p.roce else {
            assert_ne!(
                u(line, "ccreplay.roce"),
                Some(1),
                "frame {n}: RoCEv2 expected"
            );
            continue;
        };
        for (i, (flag, key)) in OFFSETS.into_iter().enumerate() {
            let want = u(line, key).map(|v| v as usize);
            assert_eq!(r.header_offset(flag), want, "frame {n}: {key}");
            seen[i] += usize::from(want.is_some());
        }
        let deth = r.deth().map(|d| (d.q_key, d.reserved, d.src_qp));
        let want = u(line, "infiniband.deth.q_key").map(|q| {
            let reserved = u(line, "ccreplay.deth.reserved").unwrap();
            (
                q as u32,
                reserved as u8,
                u(line, "infiniband.deth.srcqp").unwrap() as u32,
            )
        });
        assert_eq!(deth, want, "frame {n}: DETH");
        let rdeth = r.rdeth().map(|d| (d.reserved, d.ee_context));
        let want = u(line, "infiniband.rdeth.eecnxt").map(|e| {
            let reserved = u(line, "ccreplay.rdeth.reserved").unwrap();
            (reserved as u8, e as u32)
        });
        assert_eq!(rdeth, want, "frame {n}: RDETH");
        let reth = r.reth().map(|x| (x.va, x.r_key, x.dma_len));
        // tshark names AtomicETH's VA and R_Key `infiniband.reth.*` too: a RETH is where the
        // generator put one.
        let want = u(line, "ccreplay.offset.reth").map(|_| {
            let va = u(line, "infiniband.reth.va").unwrap();
            let key = u(line, "infiniband.reth.r_key").unwrap();
            (
                va,
                key as u32,
                u(line, "infiniband.reth.dmalen").unwrap() as u32,
            )
        });
        assert_eq!(reth, want, "frame {n}: RETH");
        let atomic = r
            .atomic_eth()
            .map(|a| (a.va, a.r_key, a.swap_add, a.compare));
        let want = u(line, "ccreplay.atomiceth.va").map(|va| {
            (
                va,
                u(line, "ccreplay.atomiceth.r_key").unwrap() as u32,
                u(line, "infiniband.atomiceth.swapdt").unwrap(),
                u(line, "infiniband.atomiceth.cmpdt").unwrap(),
            )
        });
        assert_eq!(atomic, want, "frame {n}: AtomicETH");
        assert_eq!(
            r.atomic_ack_eth(),
            u(line, "infiniband.atomicacketh.origremdt"),
            "frame {n}: AtomicAckETH"
        );
        let want = u(line, "infiniband.immdt").map(|v| v as u32);
        assert_eq!(r.imm_dt(), want, "frame {n}: ImmDt");
        let want = u(line, "infiniband.ieth").map(|v| v as u32);
        assert_eq!(r.ieth(), want, "frame {n}: IETH");
    }
    assert!(lines.next().is_none(), "as many records as expected lines");
    for ((_, key), k) in OFFSETS.iter().zip(seen) {
        assert!(k > 0, "no record carries {key}");
    }
}

#[rstest]
#[case("roce_opcodes", "pcap", Dialect::Roce)]
#[case("roce_linktypes_eth_us", "pcap", Dialect::Roce)]
#[case("roce_linktypes_eth_be_ns", "pcap", Dialect::Roce)]
#[case("roce_linktypes_sll", "pcap", Dialect::Roce)]
#[case("roce_linktypes_sll2", "pcap", Dialect::Roce)]
#[case("roce_linktypes_rawip", "pcap", Dialect::Roce)]
#[case("roce_linktypes_snaplen", "pcap", Dialect::Roce)]
#[case("roce_linktypes_multi", "pcapng", Dialect::Roce)]
#[case("hpcc", "pcap", Dialect::Hpcc)]
#[case("fncc", "pcap", Dialect::Fncc)]
#[case("rcc", "pcap", Dialect::Rcc)]
#[case("malformed", "pcap", Dialect::Roce)]
fn every_layer_is_where_the_generator_put_it(
    #[case] stem: &str,
    #[case] ext: &str,
    #[case] dialect: Dialect,
) {
    let bytes = fixture(&format!("{stem}.{ext}"));
    let mut reader = CaptureReader::from_slice(&bytes).unwrap();
    let cfg = DecodeConfig::for_dialect(dialect);
    let want = lines(stem);
    let mut i = 0;
    while let Some(rec) = reader.next_record() {
        let rec = rec.unwrap();
        let v = &want[i];
        i += 1;
        let n = rec.frame_number;
        let p = Packet::from_record(&rec, &cfg);
        // Error: layer, offset, reason.
        let err = p.error.as_ref().map(|e| {
            (
                e.layer.name().to_string(),
                e.offset as u64,
                e.kind.reason().to_string(),
            )
        });
        let want_err = v.get("ccreplay.error.layer").map(|l| {
            (
                l.as_str().unwrap().to_string(),
                u(v, "ccreplay.error.offset").unwrap(),
                v["ccreplay.error.reason"].as_str().unwrap().to_string(),
            )
        });
        assert_eq!(err, want_err, "{stem} frame {n}: error");
        assert_eq!(p.is_malformed(), want_err.is_some(), "{stem} frame {n}");
        if u(v, "ccreplay.cnp.reserved_nonzero") == Some(1) {
            // The warning points at the CNP's 16 reserved bytes.
            let w = p
                .warning
                .as_ref()
                .map(|w| (w.layer.name(), w.offset as u64));
            assert_eq!(
                w,
                Some(("cnp", u(v, "ccreplay.offset.cnp").unwrap())),
                "{stem} {n}"
            );
        }
        // VLAN tags, outermost first.
        let tags: Vec<_> = p
            .eth
            .map_or(Vec::new(), |e| e.vlans.iter().flatten().copied().collect());
        if let Some(count) = u(v, "ccreplay.vlan.count") {
            assert_eq!(tags.len() as u64, count, "{stem} frame {n}: VLAN tags");
            let got = |f: fn(&ccreplay_codecs::packet::VlanTag) -> u64| -> Vec<u64> {
                tags.iter().map(f).collect()
            };
            assert_eq!(
                got(|t| t.vid.into()),
                list(v, "ccreplay.vlan.vid"),
                "{stem} {n}"
            );
            assert_eq!(
                got(|t| t.pcp.into()),
                list(v, "ccreplay.vlan.pcp"),
                "{stem} {n}"
            );
            assert_eq!(
                got(|t| t.tpid.into()),
                list(v, "ccreplay.vlan.tpid"),
                "{stem} {n}"
            );
        }
        // A value the generator wrote must be the decoder's (it leaves out what it did not
        // set, e.g. the IP offset of a frame cut inside its UDP header).
        let check = |key: &str, got: Option<u64>| {
            if let Some(w) = u(v, key) {
                assert_eq!(got, Some(w), "{stem} frame {n}: {key}");
            }
        };
        let ip = p.ip.as_ref();
        check("ccreplay.offset.ip", ip.map(|ip| ip.offset as u64));
        if let Some(ip) = ip {
            let (ttl, dscp, ecn) = (ip.ttl.into(), ip.dscp.into(), ip.ecn.into());
            match ip.addrs {
                IpAddrs::V4 { .. } => {
                    check("ip.hdr_len", Some(ip.header_len as u64));
                    check("ip.ttl", Some(ttl));
                    check("ip.dsfield.dscp", Some(dscp));
                    check("ip.dsfield.ecn", Some(ecn));
                }
                IpAddrs::V6 { .. } => {
                    let ext = u(v, "ccreplay.ip.ext_len").unwrap_or(0);
                    assert_eq!(
                        ip.header_len as u64,
                        40 + ext,
                        "{stem} frame {n}: IPv6 headers"
                    );
                    check("ipv6.hlim", Some(ttl));
                    check("ipv6.tclass.dscp", Some(dscp));
                    check("ipv6.tclass.ecn", Some(ecn));
                }
            }
        }
        let udp = p.udp.as_ref();
        check("ccreplay.offset.udp", udp.map(|x| x.offset as u64));
        check("udp.srcport", udp.map(|x| x.src_port.into()));
        check("udp.dstport", udp.map(|x| x.dst_port.into()));
        check("udp.length", udp.map(|x| x.length.into()));
        let r = p.roce.as_ref();
        check("ccreplay.offset.bth", r.map(|r| r.bth_offset as u64));
        check("infiniband.bth.opcode", r.map(|r| r.bth.opcode().0.into()));
        check("infiniband.bth.psn", r.map(|r| r.bth.psn().into()));
        check("infiniband.bth.se", r.map(|r| r.bth.se().into()));
        check("infiniband.bth.m", r.map(|r| r.bth.mig_req().into()));
        check("infiniband.bth.padcnt", r.map(|r| r.bth.pad_cnt().into()));
        check("infiniband.bth.tver", r.map(|r| r.bth.tver().into()));
        check("infiniband.bth.p_key", r.map(|r| r.bth.p_key().into()));
        check("ccreplay.bth.fecn", r.map(|r| r.bth.fecn().into()));
        check("ccreplay.bth.becn", r.map(|r| r.bth.becn().into()));
        check("ccreplay.bth.resv6", r.map(|r| r.bth.resv6().into()));
        check("infiniband.bth.destqp", r.map(|r| r.bth.dest_qp().into()));
        check("infiniband.bth.a", r.map(|r| r.bth.ack_req().into()));
        check("infiniband.bth.reserved7", r.map(|r| r.bth.resv7().into()));
        // The 12 bytes the view is over: the frame's, at the BTH's offset.
        if let Some(r) = r {
            let at = r.bth_offset;
            assert_eq!(
                &r.bth.as_bytes()[..],
                &rec.data[at..at + 12],
                "{stem} frame {n}"
            );
        }
        check("ccreplay.payload.len", r.map(|r| r.payload.len() as u64));
        check(
            "ccreplay.offset.payload",
            r.map(|r| r.payload_offset as u64),
        );
        if let (None, Some(icrc), Some(len), Some(pad)) = (
            u(v, "ccreplay.offset.payload"),
            u(v, "ccreplay.offset.icrc"),
            u(v, "ccreplay.payload.len"),
            u(v, "infiniband.bth.padcnt"),
        ) {
            // Not written (ACKs): the payload ends pad bytes before the ICRC.
            let at = r.map(|r| r.payload_offset as u64);
            assert_eq!(
                at,
                Some(icrc - pad - len),
                "{stem} frame {n}: payload offset"
            );
        }
        if want_err.is_none() {
            // (A stack refused for its nHop has no view; the generator wrote the raw nHop.)
            check(
                "ccreplay.int.nhop",
                r.and_then(|r| r.int_stack()).map(|s| s.header.n_hop.into()),
            );
        }
        check(
            "infiniband.invariant.crc",
            r.and_then(|r| r.icrc_field()).map(u64::from),
        );
        let icrc_at = r.and_then(|r| r.icrc_field().map(|_| r.icrc_offset as u64));
        check("ccreplay.offset.icrc", icrc_at);
        // The ICRC recomputed (IPv4 options and IPv6 extension headers included: frames
        // 78-82 of roce_opcodes) agrees with the one carried exactly when the generator wrote
        // a good one.
        let valid = p.icrc_check().map(|(c, f)| u64::from(c == f));
        check("ccreplay.icrc.valid", valid);
        check(
            "ccreplay.icrc.computed",
            p.icrc_check().map(|(c, _)| c.into()),
        );
        // PFC.
        let pfc = p
            .pfc
            .map(|f| (u64::from(f.class_enable), f.quanta.map(u64::from).to_vec()));
        let want_pfc = u(v, "macc.cbfc.enbv").map(|e| {
            let q = (0..8).map(|k| u(v, &format!("macc.cbfc.pause_time.c{k}")).unwrap());
            (e, q.collect())
        });
        assert_eq!(pfc, want_pfc, "{stem} frame {n}: PFC");
    }
    assert_eq!(i, want.len(), "{stem}: records");
}

/// A frame whose link layer could not be read: the error kept, nothing else decoded.
#[test]
fn a_failed_frame_keeps_its_error() {
    let e = ccreplay_codecs::DecodeError::truncated(ccreplay_codecs::Layer::LinuxSll, 0, 16, 3);
    let p = Packet::failed(&[1, 2, 3], e);
    assert!(p.is_malformed());
    assert_eq!(p.error, Some(e));
    assert!(p.eth.is_none() && p.ip.is_none() && p.roce.is_none());
}

/// roce_opcodes' frame 7 (RC WRITE_FIRST: RETH, 7 payload bytes at 70, 1 pad byte, the ICRC
/// at 78, 82 bytes: the generator's offsets) cut by a snaplen inside its payload and inside
/// its ICRC: the error names the layer cut, where it starts, what it needed and what was left.
#[test]
fn a_record_cut_in_its_payload_or_icrc() {
    let bytes = fixture("roce_opcodes.pcap");
    let mut reader = CaptureReader::from_slice(&bytes).unwrap();
    let frame = loop {
        let rec = reader.next_record().unwrap().unwrap();
        if rec.frame_number == 7 {
            break rec.data.to_vec();
        }
    };
    assert_eq!(frame.len(), 82);
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let cut = |n: usize| {
        let p = Packet::decode(&frame[..n], 82, ccreplay_codecs::LinkStart::Ethernet, &cfg);
        let e = p.error.unwrap();
        (e.layer, e.offset, e.kind)
    };
    use ccreplay_codecs::{ErrorKind::Truncated, Layer};
    let t = |needed, available| Truncated { needed, available };
    assert_eq!(cut(72), (Layer::Payload, 70, t(8, 2)));
    assert_eq!(cut(79), (Layer::Icrc, 78, t(4, 1)));
    assert_eq!(cut(80), (Layer::Icrc, 78, t(4, 2)));
}

/// Frames built by hand (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, UDP; no checksums: the
/// decoder reads lengths, not checksums) for the edges of the length checks.
fn frame(tags: &[u16], ip_total: u16, udp_len: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for &tpid in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&[0x60, 0x64]); // PCP 3, VID 100
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let ip = f.len();
    f.extend_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f[ip + 2..ip + 4].copy_from_slice(&ip_total.to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35]); // ports 12345 -> 53
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f
}

#[test]
fn length_edges_by_hand() {
    use ccreplay_codecs::{ErrorKind, Layer, LinkStart};
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let decode = |f: &[u8]| {
        let p = Packet::decode_ethernet(f, &cfg);
        (
            p.error.map(|e| (e.layer, e.offset)),
            p.udp.map(|u| u.length),
        )
    };
    // A UDP datagram of 8 bytes (no payload) is whole; 7 is not a UDP length.
    assert_eq!(decode(&frame(&[], 28, 8)), (None, Some(8)));
    assert_eq!(decode(&frame(&[], 28, 7)).0, Some((Layer::Udp, 34)));
    // An IPv4 packet of its header alone is whole; no UDP header follows in it.
    let f = frame(&[], 20, 8);
    let p = Packet::decode_ethernet(&f, &cfg);
    assert_eq!(p.ip.map(|ip| ip.end), Some(34));
    assert_eq!(p.error.map(|e| e.layer), Some(Layer::Udp));
    // Two tags are read (IP at 14 + 8); a third is refused where it starts (22).
    let f2 = frame(&[0x88A8, 0x8100], 28, 8);
    let two = Packet::decode_ethernet(&f2, &cfg);
    assert_eq!((two.error, two.ip.map(|ip| ip.offset)), (None, Some(22)));
    let at: Vec<usize> = two
        .eth
        .unwrap()
        .vlans
        .iter()
        .flatten()
        .map(|t| t.offset)
        .collect();
    assert_eq!(at, [14, 18]);
    let f3 = frame(&[0x88A8, 0x8100, 0x8100], 28, 8);
    let three = Packet::decode_ethernet(&f3, &cfg);
    let e = three.error.unwrap();
    assert_eq!((e.layer, e.offset), (Layer::Vlan, 22));
    assert!(matches!(e.kind, ErrorKind::Unsupported { found: 3, .. }));
    // Cut 2 bytes into the second tag (at 18): truncated there, 4 needed, 2 left.
    let e = Packet::decode(&f2[..20], f2.len(), LinkStart::Ethernet, &cfg)
        .error
        .unwrap();
    let truncated = ErrorKind::Truncated {
        needed: 4,
        available: 2,
    };
    assert_eq!((e.layer, e.offset, e.kind), (Layer::Vlan, 18, truncated));
}

/// UDP to 4791 with fewer than 4 bytes after its header cannot hold an ICRC: refused at the
/// BTH's place, naming the UDP length (11 = 8 + 3); 12 bytes (room for the ICRC alone) get
/// past that check to the BTH, which is cut.
#[test]
fn roce_too_short_for_an_icrc_by_hand() {
    use ccreplay_codecs::{ErrorKind, Layer};
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let roce = |udp_len: u16| {
        let mut f = frame(&[], 20 + udp_len, udp_len);
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        f.resize(14 + 20 + usize::from(udp_len), 0);
        let p = Packet::decode_ethernet(&f, &cfg);
        let e = p.error.unwrap();
        (e.layer, e.offset, e.kind)
    };
    let (layer, at, kind) = roce(11);
    assert_eq!((layer, at), (Layer::Icrc, 42));
    assert!(
        matches!(
            kind,
            ErrorKind::BadLength {
                field: "udp.length",
                found: 11,
                ..
            }
        ),
        "{kind:?}"
    );
    assert_eq!(roce(12).0, Layer::Bth);
}

/// IPv6 frames by hand (14 + 40 + UDP 8 to port 53): a payload length the frame cannot hold,
/// trailing bytes after the packet (Ethernet padding: allowed), and extension headers cut,
/// out of order or fragmenting — each refused at the first byte after the fixed header (54).
#[test]
fn ipv6_lengths_and_extension_headers_by_hand() {
    use ccreplay_codecs::Layer;
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let v6 = |payload_len: u16, next: u8, after: &[u8]| {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xDD];
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&payload_len.to_be_bytes());
        f.extend_from_slice(&[next, 64]);
        f.extend_from_slice(&[0xFD; 32]);
        f.extend_from_slice(after);
        f
    };
    let udp = [0x30, 0x39, 0x00, 0x35, 0x00, 0x08, 0, 0];
    let err = |f: &[u8]| {
        Packet::decode_ethernet(f, &cfg)
            .error
            .map(|e| (e.layer, e.offset, e.kind.reason()))
    };
    assert_eq!(err(&v6(8, 17, &udp)), None);
    let mut padded = v6(8, 17, &udp);
    padded.extend_from_slice(&[0, 0]);
    assert_eq!(err(&padded), None);
    assert_eq!(err(&v6(9, 17, &udp)), Some((Layer::Ipv6, 14, "bad_length")));
    // Hop-by-hop (0) announced, 2 of its 8 bytes there.
    assert_eq!(
        err(&v6(2, 0, &[17, 0])),
        Some((Layer::Ipv6Ext, 54, "truncated"))
    );
    // Hop-by-hop after hop-by-hop: RFC 8200 allows it first only.
    let twice = [0, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0];
    let mut after = twice.to_vec();
    after.extend_from_slice(&udp);
    assert_eq!(
        err(&v6(24, 0, &after)),
        Some((Layer::Ipv6Ext, 54, "unsupported"))
    );
    // A fragment header (44): the first fragment of a datagram, more to come.
    let mut frag = vec![17, 0, 0, 1, 0, 0, 0, 7];
    frag.extend_from_slice(&udp);
    assert_eq!(
        err(&v6(16, 44, &frag)),
        Some((Layer::Ipv6Ext, 54, "unsupported"))
    );
}
