//! `inspect -e` swaps for `tshark -T fields -e` (issue 18.5): on the same captures, with the
//! same fields and `-E` options, the output is byte for byte tshark's. tshark is the
//! independent tool here (Debian's package; `.ci/run` installs it); without it the comparison
//! is skipped, unless CCREPLAY_REQUIRE_TSHARK=1.

mod common;

use common::repo;

use std::process::Command;

fn tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var("CCREPLAY_REQUIRE_TSHARK").is_ok_and(|v| v == "1") {
        panic!("tshark is required (CCREPLAY_REQUIRE_TSHARK=1) but not installed");
    }
    ok
}

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
