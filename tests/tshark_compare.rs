//! `inspect` against Wireshark: for every fixture, every field inspect reports under a Wireshark
//! name is asked of `tshark -T fields` and the two values compared, packet by packet.
//!
//! tshark comes from Debian's `tshark` package (`.ci/run` installs it). Without it the test is
//! skipped with a message, unless `CCREPLAY_REQUIRE_TSHARK=1` (as in CI), where it fails.

use std::collections::BTreeSet;
use std::process::Command;

use ccreplay_codecs::Dialect;
use ccreplay_tests::{fixture_captures, fixture_dialect, inspect_json};
use serde_json::Value;

/// Where tshark 4.0 and wire.md disagree; the reason is printed with each skip.
fn known_disagreement(dialect: Dialect, record: &Value, key: &str) -> Option<&'static str> {
    if matches!(dialect, Dialect::Hpcc | Dialect::Rcc) && key.starts_with("infiniband.") {
        // Plain Wireshark knows no shim between UDP and BTH: it reads the INT stack or the RCC
        // timestamp as a BTH. With contrib/wireshark/ccreplay.lua it does not, and
        // tests/lua_dissector.rs compares those packets field by field.
        return Some("shim before BTH");
    }
    let opcode = record.get("infiniband.bth.opcode").and_then(Value::as_u64);
    if key.starts_with("infiniband.") && opcode.is_some_and(|op| op >> 5 == 2) {
        // Wireshark 4.0 reads a DETH on RD responses too, and its RD headers 8 bytes late.
        return Some("RD transport: tshark 4.0 parses RDETH/DETH differently");
    }
    if record.get("erspan.ft").and_then(Value::as_u64) == Some(2) && is_outer_inner(key) {
        // Wireshark 4.0 reads no further than an ERSPAN III header of frame type 2 (an IP
        // packet without its Ethernet header): its ip.* are the outer header's alone.
        return Some("ERSPAN III frame type 2: tshark 4.0 does not read the IP packet");
    }
    let layered = is_outer_inner(key) || key.starts_with("udp.");
    if record.get("ccreplay.error.reason").and_then(Value::as_str) == Some("unsupported")
        && record.get("ccreplay.error.layer").and_then(Value::as_str) == Some("geneve")
        && layered
    {
        // RFC 8926 3.4 drops a Geneve version it does not know; Wireshark 4.0 reads on.
        return Some("Geneve version 1: tshark 4.0 reads the frame inside");
    }
    let dst = record.get("udp.dstport").and_then(Value::as_u64);
    if record.get("ccreplay.tunnel").is_some()
        && matches!(dst, Some(4789 | 6081))
        && (layered || key.starts_with("vxlan.") || key.starts_with("geneve."))
    {
        // One tunnel level is read (docs/wire.md 2.2); Wireshark reads the nested one too.
        return Some("a tunnel inside a tunnel: tshark 4.0 reads two levels");
    }
    None
}

/// Fields tshark repeats for a packet in GRE, the outer header's first: inspect writes a
/// mirrored frame's under the plain name (tshark's last occurrence) and the encapsulation's
/// under `ccreplay.mirror.*` (its first, compared through `MIRROR_ALIASES`).
fn is_outer_inner(key: &str) -> bool {
    key.starts_with("eth.") || key.starts_with("ip.") || key.starts_with("ipv6.")
}

/// inspect's keys for a mirrored packet's outer headers, and tshark's name for them.
const MIRROR_ALIASES: [(&str, &str); 4] = [
    ("ccreplay.mirror.eth.src", "eth.src"),
    ("ccreplay.mirror.eth.dst", "eth.dst"),
    ("ccreplay.mirror.ip.src", "ip.src"),
    ("ccreplay.mirror.ip.dst", "ip.dst"),
];

/// inspect's keys for a tunnelled packet's outer headers, and tshark's names for them (IPv4,
/// IPv6): tshark's first occurrence, or its second when a mirror's encapsulation is outside.
const TUNNEL_ALIASES: [(&str, &str, &str); 6] = [
    ("ccreplay.tunnel.eth.src", "eth.src", "eth.src"),
    ("ccreplay.tunnel.eth.dst", "eth.dst", "eth.dst"),
    ("ccreplay.tunnel.ip.src", "ip.src", "ipv6.src"),
    ("ccreplay.tunnel.ip.dst", "ip.dst", "ipv6.dst"),
    (
        "ccreplay.tunnel.ip.ecn",
        "ip.dsfield.ecn",
        "ipv6.tclass.ecn",
    ),
    ("ccreplay.tunnel.udp.srcport", "udp.srcport", "udp.srcport"),
];

/// Fields inspect names the Wireshark way but fills with a different meaning by design.
const NOT_COMPARED: [&str; 3] = [
    // tshark prints the hardware-queue time ("Jan 1 …"); inspect prints the same instant as a
    // decimal, compared below through frame.time_epoch.
    "frame.time",
    // Wireshark's vlan.etype/vlan.id repeat per tag; inspect gives the outer tag (and the
    // full list under ccreplay.vlan.*): compared on the first occurrence only, see `first`.
    "vlan.etype_all",
    "eth.type_all",
];

fn tshark() -> Option<String> {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some("tshark".into());
    }
    if std::env::var("CCREPLAY_REQUIRE_TSHARK").is_ok_and(|v| v == "1") {
        panic!("tshark is required (CCREPLAY_REQUIRE_TSHARK=1) but not installed");
    }
    eprintln!("tshark not installed: skipping the Wireshark comparison (apt-get install tshark)");
    None
}

/// A tshark field value as a comparable JSON value: integers in hex or decimal, FT_BYTES as a
/// big-endian integer, the first of repeated occurrences (the last with `last`).
fn norm_tshark(key: &str, s: &str, last: bool) -> Option<Value> {
    let first = if last {
        s.rsplit(',').next()
    } else {
        s.split(',').next()
    }?
    .trim();
    if first.is_empty() {
        return None;
    }
    if matches!(key, "infiniband.immdt" | "infiniband.ieth") {
        return u64::from_str_radix(first, 16).ok().map(Value::from);
    }
    if key == "frame.time_epoch" {
        return Some(Value::String(first.to_string()));
    }
    if let Some(h) = first.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(Value::from);
    }
    if let Ok(n) = first.parse::<u64>() {
        return Some(Value::from(n));
    }
    match first {
        "True" => Some(Value::from(1)),
        "False" => Some(Value::from(0)),
        _ => Some(Value::String(first.to_string())),
    }
}

#[test]
fn inspect_agrees_with_tshark_field_by_field() {
    let Some(tshark) = tshark() else { return };
    let mut compared = 0usize;
    let mut skipped_known = 0usize;
    for path in fixture_captures() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let dialect = fixture_dialect(&name);
        let (records, _) = inspect_json(&path, dialect);
        let keys: BTreeSet<String> = records
            .iter()
            .flat_map(|r| r.as_object().unwrap().keys())
            .filter(|k| !k.starts_with("ccreplay.") && !NOT_COMPARED.contains(&k.as_str()))
            .cloned()
            .chain(MIRROR_ALIASES.map(|(_, t)| t.to_string()))
            .chain(
                TUNNEL_ALIASES
                    .iter()
                    .flat_map(|&(_, v4, v6)| [v4, v6].map(String::from)),
            )
            .collect();
        let keys: Vec<String> = keys.into_iter().collect();
        let mut cmd = Command::new(&tshark);
        cmd.args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-E",
            "separator=\t",
        ]);
        cmd.args(["-o", "gui.column.format:\"No.\",\"%m\""]);
        for k in &keys {
            cmd.args(["-e", k]);
        }
        let out = cmd.output().expect("run tshark");
        assert!(
            out.status.success(),
            "tshark on {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // Join on frame.number: Wireshark also numbers pcapng blocks that carry no packet
        // (custom blocks), which inspect counts but does not report.
        let fno = keys
            .iter()
            .position(|k| k == "frame.number")
            .expect("frame.number");
        let by_frame: std::collections::HashMap<u64, &str> = text
            .lines()
            .map(|l| (l.split('\t').nth(fno).unwrap().parse::<u64>().unwrap(), l))
            .collect();
        for rec in &records {
            let n = rec["frame.number"].as_u64().unwrap();
            let line = by_frame
                .get(&n)
                .unwrap_or_else(|| panic!("{name}: tshark has no frame {n}"));
            let cols: Vec<&str> = line.split('\t').collect();
            let frame = &rec["frame.number"];
            let mirrored = rec.get("ccreplay.mirror").is_some();
            for (&(ours_key, k), col) in MIRROR_ALIASES
                .iter()
                .zip(MIRROR_ALIASES.map(|(_, t)| cols[keys.iter().position(|k| k == t).unwrap()]))
            {
                if let Some(ours) = rec.get(ours_key) {
                    assert_eq!(
                        norm_tshark(k, col, false).as_ref(),
                        Some(ours),
                        "{name} frame {frame}: `{ours_key}` against tshark's first `{k}`"
                    );
                    compared += 1;
                }
            }
            let tunnelled = rec.get("ccreplay.tunnel").is_some();
            let v6 = rec
                .get("ccreplay.tunnel.ip.src")
                .and_then(Value::as_str)
                .is_some_and(|a| a.contains(':'));
            for &(ours_key, v4_key, v6_key) in &TUNNEL_ALIASES {
                let Some(ours) = rec.get(ours_key) else {
                    continue;
                };
                let k = if v6 { v6_key } else { v4_key };
                let col = cols[keys.iter().position(|x| x == k).unwrap()];
                // The tunnel's headers come after a mirror's (eth, ip; its GRE has no udp).
                let nth = usize::from(mirrored && !k.starts_with("udp."));
                let theirs = col.split(',').nth(nth).unwrap_or("");
                assert_eq!(
                    norm_tshark(k, theirs, false).as_ref(),
                    Some(ours),
                    "{name} frame {frame}: `{ours_key}` against tshark's `{k}` #{nth} ({col})"
                );
                compared += 1;
            }
            for (k, col) in keys.iter().zip(cols) {
                let Some(ours) = rec.get(k) else { continue };
                // Empty: tshark did not dissect that field in this packet (e.g. shims it does
                // not know shift what follows); nothing to compare.
                let last = (mirrored && is_outer_inner(k))
                    || (tunnelled && (is_outer_inner(k) || k.starts_with("udp.")));
                let Some(theirs) = norm_tshark(k, col, last) else {
                    continue;
                };
                if let Some(why) = known_disagreement(dialect, rec, k) {
                    let _ = why;
                    skipped_known += 1;
                    continue;
                }
                // frame.time_epoch: a string of the same digits as tshark's.
                let equal = theirs == *ours;
                assert!(
                    equal,
                    "{name} frame {frame}: `{k}`: inspect {ours}, tshark {theirs} ({col})"
                );
                compared += 1;
            }
        }
    }
    eprintln!(
        "compared {compared} fields with tshark ({skipped_known} skipped: RD transport, shims)"
    );
    assert!(compared > 2000, "only {compared} fields compared");
}
