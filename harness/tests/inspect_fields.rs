//! `inspect -e` swaps for `tshark -T fields -e` (issue 18.5): on the same captures, with the
//! same fields and `-E` options, the output is byte for byte tshark's. tshark is the
//! independent tool here (Debian's package; `.ci/run` installs it); without it the comparison
//! is skipped, unless CCREPLAY_REQUIRE_TSHARK=1.

mod common;

use common::{repo, tshark};

use std::process::Command;

/// Fields of plain RoCEv2 both decoders name the same way: frame, Ethernet, IPv4, UDP, BTH,
/// RETH, AETH (hex ones among them: eth.type, destqp, va, r_key).
const FIELDS: &[&str] = &[
    "frame.number",
    "frame.time_epoch",
    "frame.len",
    "frame.cap_len",
    "eth.src",
    "eth.dst",
    "eth.type",
    "ip.src",
    "ip.dst",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ip.ttl",
    "udp.srcport",
    "udp.dstport",
    "udp.length",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.padcnt",
    "infiniband.bth.tver",
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    // Not infiniband.invariant.crc: tshark 4.0 leaves it out on CNPs (tshark_compare.rs
    // compares it where both report it).
    "no.such.field.in.either",
];

fn run(program: &str, pre: &[&str], capture: &str, opts: &[&str]) -> String {
    let mut c = Command::new(program);
    c.args(pre).current_dir(repo());
    if program == "tshark" {
        c.args(["-r", capture, "-T", "fields"]);
    } else {
        c.args(["inspect", capture, "--dialect", "roce"]);
    }
    for f in FIELDS {
        if program == "tshark" && *f == "no.such.field.in.either" {
            // tshark refuses an unknown field; ccreplay prints it empty. Compared below with
            // an empty column added to tshark's lines.
            continue;
        }
        c.args(["-e", f]);
    }
    for o in opts {
        c.args(["-E", o]);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn inspect_fields_are_tsharks_byte_for_byte() {
    if !tshark() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_ccreplay");
    for capture in [
        "traces/roce_dcqcn.pcap",
        "tests/fixtures/roce_linktypes_eth_ns.pcap",
        "tests/fixtures/roce_linktypes_tsresol9.pcapng",
    ] {
        for opts in [
            &[][..],
            &["header=y", "separator=,", "quote=d"][..],
            &["separator=/s", "occurrence=f", "aggregator=/s"][..],
        ] {
            let ours = run(bin, &[], capture, opts);
            let theirs = run("tshark", &[], capture, opts);
            let sep = opts
                .iter()
                .find_map(|o| o.strip_prefix("separator="))
                .map_or("\t", |s| if s == "/s" { " " } else { s });
            let theirs: String = theirs
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    let last = if i == 0 && opts.contains(&"header=y") {
                        "no.such.field.in.either".to_string()
                    } else {
                        // An absent field is empty, unquoted even with quote=d.
                        String::new()
                    };
                    format!("{l}{sep}{last}\n")
                })
                .collect();
            assert!(ours.lines().count() > 3, "{capture}");
            assert_eq!(
                ours.lines().count(),
                theirs.lines().count(),
                "{capture} {opts:?}"
            );
            if let Some((a, b)) = ours.lines().zip(theirs.lines()).find(|(a, b)| a != b) {
                panic!(
                    "{capture} {opts:?}: first difference\n  ccreplay: {a:?}\n  tshark:   {b:?}"
                );
            }
            assert_eq!(ours, theirs);
        }
    }
}

/// Fields whose display differs from the JSON record's decimal (hex of 4, 6, 8 and 16 digits,
/// bytes, MAC, IPv4 and IPv6 addresses) and the per-tag occurrences of `vlan.*` and
/// `ieee8021ad.*`.
const EVERY_OPCODE: &[&str] = &[
    "frame.number",
    "frame.time_epoch",
    "eth.src",
    "eth.type",
    "vlan.priority",
    "vlan.id",
    "ieee8021ad.priority",
    "ieee8021ad.id",
    "vlan.etype",
    "ip.src",
    "ip.hdr_len",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.tclass.dscp",
    "ipv6.tclass.ecn",
    "ipv6.flow",
    "ipv6.hlim",
    "udp.srcport",
    "udp.length",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.padcnt",
    "infiniband.bth.destqp",
    "infiniband.bth.reserved7",
    "infiniband.bth.psn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.atomiceth.swapdt",
    "infiniband.atomiceth.cmpdt",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.atomicacketh.origremdt",
    "infiniband.immdt",
    "infiniband.ieth",
    "infiniband.invariant.crc",
    "macc.opcode",
    "macc.cbfc.enbv",
    "macc.cbfc.enbv.c3",
    "macc.cbfc.pause_time.c0",
    "macc.cbfc.pause_time.c3",
    "macc.cbfc.pause_time.c7",
];

/// tests/fixtures/roce_opcodes.pcap (every opcode of docs/wire.md 3, VLAN tags, IPv6 with
/// and without extension headers, a PFC frame): cell by cell as tshark shows them, except
/// where tests/fixtures/README.md lists tshark 4.0 disagreeing: it reads RD packets' RDETH 8
/// bytes late (so the RD opcodes' extension headers are skipped), it leaves the ICRC out on
/// CNPs, unknown opcodes and some SEND payloads, and it adds ImmDt and IETH twice.
#[test]
fn every_opcode_tag_and_address_as_tshark_shows_them() {
    if !tshark() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_ccreplay");
    let capture = "tests/fixtures/roce_opcodes.pcap";
    let col = |name: &str| EVERY_OPCODE.iter().position(|f| *f == name).unwrap();
    for opts in [
        &[][..],
        &["occurrence=f"][..],
        &["occurrence=l", "aggregator=/s"][..],
    ] {
        let fields_of = |program: &str| common::field_columns(program, capture, EVERY_OPCODE, opts);
        let (ours, theirs) = (fields_of(bin), fields_of("tshark"));
        assert_eq!(ours.lines().count(), 91, "{opts:?}");
        assert_eq!(theirs.lines().count(), 91, "{opts:?}");
        let (mut same, mut skipped) = (0, 0);
        for (a, b) in ours.lines().zip(theirs.lines()) {
            let (a, b): (Vec<&str>, Vec<&str>) = (a.split('\t').collect(), b.split('\t').collect());
            assert_eq!(a.len(), EVERY_OPCODE.len(), "{a:?}");
            assert_eq!(b.len(), EVERY_OPCODE.len(), "{b:?}");
            let rd = a[col("infiniband.bth.opcode")]
                .parse::<u8>()
                .is_ok_and(|op| (0x40..0x60).contains(&op));
            for (i, f) in EVERY_OPCODE.iter().enumerate() {
                let rd_ext =
                    rd && f.starts_with("infiniband.") && !f.starts_with("infiniband.bth.");
                let crc_left_out = *f == "infiniband.invariant.crc" && b[i].is_empty();
                if rd_ext || crc_left_out {
                    skipped += 1;
                    continue;
                }
                let twice = format!("{},{}", a[i], a[i]);
                let want = if (*f == "infiniband.immdt" || *f == "infiniband.ieth")
                    && opts.is_empty()
                    && !a[i].is_empty()
                {
                    twice.as_str()
                } else {
                    a[i]
                };
                assert_eq!(
                    want, b[i],
                    "{opts:?} frame {} {f}: ccreplay {:?}, tshark {:?}",
                    a[0], a[i], b[i]
                );
                same += 1;
            }
        }
        // 91 frames x 45 fields: skipped at most the 13 extension-header fields (the ICRC
        // among them) of the 21 RD frames (0x40-0x54) and the ICRC of the 25 frames tshark
        // shows none for (fixtures/README.md).
        assert!(skipped <= 21 * 13 + 25, "{skipped} skipped");
        assert_eq!(same + skipped, 91 * EVERY_OPCODE.len());
    }
}

/// A capture taken with a snaplen (`tcpdump -s 128`, as captures of real NICs often are):
/// the frames longer than 128 bytes are cut by the capture after their headers (Ethernet, IPv4,
/// UDP, the 5-hop INT stack, BTH and RETH take at most 112 bytes), not malformed — counted apart in
/// the summary, and not failing `--strict` (with or without `-e`). The count expected is read
/// off the records' lengths here, not from the decoder. A frame that is malformed on the wire
/// still is (tests/fixtures/malformed.pcap).
#[test]
fn a_snaplen_capture_is_cut_not_malformed() {
    let bytes = std::fs::read(repo().join("traces/hpcc_dumbbell.pcap")).unwrap();
    let mut out = bytes[..24].to_vec();
    out[16..20].copy_from_slice(&128u32.to_le_bytes());
    let (mut off, mut longer) = (24, 0u64);
    while off + 16 <= bytes.len() {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let (cap, orig) = (word(off + 8) as usize, word(off + 12));
        let data = &bytes[off + 16..off + 16 + cap];
        let kept = cap.min(128);
        longer += (orig > 128) as u64;
        out.extend_from_slice(&bytes[off..off + 8]);
        out.extend_from_slice(&(kept as u32).to_le_bytes());
        out.extend_from_slice(&orig.to_le_bytes());
        out.extend_from_slice(&data[..kept]);
        off += 16 + cap;
    }
    assert!(longer > 1000, "{longer}");
    let dir = common::Scratch::new("inspect-snaplen");
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, out).unwrap();
    let inspect = |capture: &std::path::Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ccreplay"))
            .arg("inspect")
            .arg(capture)
            .args(args)
            .output()
            .unwrap()
    };
    let o = inspect(&cut, &["--format", "json", "--strict"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let summary: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(summary["malformed"], 0, "{summary}");
    assert_eq!(summary["cut_by_snaplen"], longer, "{summary}");
    let o = inspect(&cut, &["-e", "frame.number", "--strict"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = inspect(
        &repo().join("tests/fixtures/malformed.pcap"),
        &["--format", "json", "--strict"],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    let summary: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(summary["cut_by_snaplen"], 0, "{summary}");
    assert!(summary["malformed"].as_u64().unwrap() > 0, "{summary}");
}

/// ERF type 21 (InfiniBand) record `i`: a 16-byte ERF header, then bytes of an IB packet.
fn erf(i: u8) -> Vec<u8> {
    let mut r = vec![0u8; 8]; // timestamp
    r.extend_from_slice(&[21, 0x04, 0, 40, 0, 0, 0, 24]); // type, flags, rlen, lctr, wlen
    r.extend_from_slice(&[0xF0 | i, 0x12, 0xFF, 0xFF, 0, 0, 0, 5]); // an LRH
    r.extend_from_slice(&[0x04, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0, 0, i]); // a BTH
    r.extend_from_slice(&[0; 4]); // the ICRC
    r
}

/// A little-endian pcap (µs, snaplen 65535) of link type 197 (ERF) holding `n` ERF type 21
/// (InfiniBand) records: a 16-byte ERF header, then bytes of an IB packet (LRH, BTH, ICRC).
fn erf_pcap(n: u8) -> Vec<u8> {
    // ERF type 21 (InfiniBand) records: a 16-byte ERF header, then bytes of an IB packet.
    // Little-endian pcap, µs timestamps, snaplen 65535, link type 197.
    let mut pcap = 0xA1B2_C3D4u32.to_le_bytes().to_vec();
    pcap.extend_from_slice(&[2, 0, 4, 0]); // version 2.4
    for w in [0u32, 0, 65_535, 197] {
        // thiszone, sigfigs, snaplen, link type
        pcap.extend_from_slice(&w.to_le_bytes());
    }
    for i in 0..n {
        let r = erf(i);
        for w in [
            1_700_000_000u32,
            u32::from(i),
            r.len() as u32,
            r.len() as u32,
        ] {
            pcap.extend_from_slice(&w.to_le_bytes());
        }
        pcap.extend_from_slice(&r);
    }
    pcap
}

/// `replay` and `init` on a native InfiniBand capture (the pcap above, 3 ERF records): the
/// records are skipped as `unsupported_link` — not malformed — and the error says what ccreplay
/// reads instead of "0 PFC pause frames, 0 other".
#[test]
fn replay_and_init_say_a_link_type_they_do_not_read() {
    let dir = common::Scratch::new("replay-erf");
    std::fs::write(dir.join("ib.pcap"), erf_pcap(3)).unwrap();
    std::fs::write(
        dir.join("ib.toml"),
        "capture = \"ib.pcap\"\ndialect = \"roce\"\n[capture_point]\nkind = \"sender\"\nhost = \"10.0.0.1\"\n[network]\nlink_rate_bps = 100_000_000_000\nbase_rtt_ns = 8_000\nmtu_bytes = 1000\n[[models]]\nname = \"dcqcn\"\n",
    )
    .unwrap();
    let (code, _, err) = common::run(&dir, &["replay", "ib.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "3 frames: 0 RoCEv2, 0 events; 3 skipped: 3 of a link type ccreplay does not read"
        ),
        "{err}"
    );
    assert!(
        err.contains("none of the 3 frames is RoCEv2: 3 are of a link type ccreplay does not read (link type 197: 3 records)"),
        "{err}"
    );
    assert!(!err.contains("malformed"), "{err}");
    let (code, _, err) = common::run(&dir, &["init", "ib.pcap", "-o", "-"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("records of a link type ccreplay does not read (link type 197: 3 records: a native InfiniBand capture carries no RoCEv2)"),
        "{err}"
    );
}

/// A record of a link type ccreplay does not read — a native InfiniBand capture, as ibdump
/// and Endace cards write it (ERF, link type 197) — is not malformed: nothing in it is wrong,
/// ccreplay only does not decode it. The summary counts it as `unsupported_link` (by link type
/// in `unsupported_link_types`; `other` too, as neither RoCEv2 nor PFC), never as `malformed`;
/// the run warns with the link types it reads, and `--strict` (which asks for every packet
/// decoded) still fails. The captures are written byte by byte here: a pcap of three ERF
/// records, and a pcapng with an Ethernet interface (one RoCEv2 frame of the bundled hpcc
/// capture) and an ERF interface (two records).
#[test]
fn a_link_type_ccreplay_does_not_read_is_unsupported_not_malformed() {
    let dir = common::Scratch::new("inspect-erf");
    let pcap = erf_pcap(3);
    let path = dir.join("ib.pcap");
    std::fs::write(&path, &pcap).unwrap();
    let inspect = |capture: &std::path::Path, args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
            .arg("inspect")
            .arg(capture)
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let summary = |out: &str| -> serde_json::Value {
        serde_json::from_str(out.lines().last().unwrap()).unwrap()
    };
    let (code, out, err) = inspect(&path, &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let s = summary(&out);
    assert_eq!(
        (
            &s["packets"],
            &s["malformed"],
            &s["unsupported_link"],
            &s["other"]
        ),
        (&3.into(), &0.into(), &3.into(), &3.into()),
        "{s}"
    );
    assert_eq!(
        s["unsupported_link_types"],
        serde_json::json!({"197": 3}),
        "{s}"
    );
    // Each record still says where decoding stopped, and why.
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["ccreplay.link_type"], 197, "{first}");
    assert_eq!(first["ccreplay.error.reason"], "unsupported", "{first}");
    assert!(
        err.contains(&format!(
            "warning: {}: 3 of 3 records are of a link type ccreplay does not read (link type \
             197: 3 records): not decoded, not malformed",
            path.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("hint: ccreplay reads link types Ethernet (1)"),
        "{err}"
    );
    let (code, out, _) = inspect(&path, &["--format", "text"]);
    assert_eq!(code, 0);
    assert!(out.contains("; 0 malformed, "), "{out}");
    assert!(
        out.contains("\n3 of a link type ccreplay does not read (link type 197: 3 records): not decoded — not malformed\n"),
        "{out}"
    );
    for args in [&["--strict"][..], &["-e", "frame.number", "--strict"][..]] {
        let (code, _, err) = inspect(&path, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("3 of 3 packets of a link type ccreplay does not read (--strict)"),
            "{err}"
        );
        assert!(!err.contains("malformed (--strict)"), "{err}");
    }

    // A pcapng: interface 0 Ethernet, interface 1 ERF; frame 1 of hpcc_dumbbell on 0, two ERF
    // records on 1. Blocks: type, total length, body, total length (little-endian).
    let hpcc = std::fs::read(common::repo().join("traces/hpcc_dumbbell.pcap")).unwrap();
    let caplen = u32::from_le_bytes(hpcc[32..36].try_into().unwrap()) as usize;
    let eth = &hpcc[40..40 + caplen];
    let block = |out: &mut Vec<u8>, kind: u32, body: &[u8]| {
        let len = (12 + body.len()) as u32;
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&len.to_le_bytes());
    };
    let mut ng = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&[1, 0, 0, 0]); // version 1.0
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut ng, 0x0A0D_0D0A, &shb);
    for link in [1u16, 197] {
        let mut idb = link.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&65_535u32.to_le_bytes());
        block(&mut ng, 1, &idb);
    }
    for (iface, data) in [(0u32, eth.to_vec()), (1, erf(0)), (1, erf(1))] {
        let mut epb = iface.to_le_bytes().to_vec();
        epb.extend_from_slice(&[0; 8]); // timestamp
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&data);
        epb.resize(epb.len().div_ceil(4) * 4, 0);
        block(&mut ng, 6, &epb);
    }
    let path = dir.join("mixed.pcapng");
    std::fs::write(&path, ng).unwrap();
    let (code, out, err) = inspect(&path, &["--format", "json", "--dialect", "hpcc"]);
    assert_eq!(code, 0, "{err}");
    let s = summary(&out);
    assert_eq!(
        (
            &s["packets"],
            &s["malformed"],
            &s["unsupported_link"],
            &s["other"],
            &s["flows"]
        ),
        (&3.into(), &0.into(), &2.into(), &2.into(), &1.into()),
        "{s}"
    );
    assert!(err.contains("2 of 3 records are of a link type"), "{err}");
}
