//! `inspect` against the values the fixture generator *set* (tests/fixtures/*.expected.jsonl,
//! written by tests/fixtures/make_fixtures.py with scapy): every key of every expected record
//! must be in inspect's record for that frame, with the same value.

use ccreplay_tests::{fixture_captures, fixture_config, inspect_json_with};
use serde_json::Value;

/// Keys the generator records about how it built a capture, which a decoder cannot know.
const GENERATOR_ONLY: [&str; 2] = ["ccreplay.section", "ccreplay.ts_raw"];

#[test]
fn every_expected_field_matches() {
    let captures = fixture_captures();
    assert!(captures.len() >= 10, "fixtures missing: {captures:?}");
    let (mut checked, mut snaplen_cut) = (0, 0);
    for path in captures {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let stem = name.rsplit_once('.').unwrap().0;
        let expected_path = path.with_file_name(format!("{stem}.expected.jsonl"));
        let expected: Vec<Value> = std::fs::read_to_string(&expected_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (records, summary) = inspect_json_with(&path, fixture_config(&name));
        assert_eq!(records.len(), expected.len(), "{name}: record count");
        for (ours, exp) in records.iter().zip(&expected) {
            let frame = &exp["frame.number"];
            for (k, v) in exp.as_object().unwrap() {
                if GENERATOR_ONLY.contains(&k.as_str()) {
                    continue;
                }
                let got = ours
                    .get(k)
                    .unwrap_or_else(|| panic!("{name} frame {frame}: no `{k}`"));
                // frame.time_epoch too: a string of the exact digits on both sides.
                assert_eq!(got, v, "{name} frame {frame}: `{k}`");
                checked += 1;
            }
        }
        // Malformed: the generator broke a header, or wrote an opcode wire.md does not list
        // (reported as an `unknown_opcode` error, its bytes kept opaque). Cut by the
        // snaplen after the headers: the generator wrote fewer bytes than the frame's length
        // and they ran out in the payload or the ICRC — counted apart, not malformed (a cut
        // inside a header is malformed, as `replay` counts it).
        // (or by the switch that mirrored the packet: ERSPAN T)
        let cut = |e: &Value| {
            (e.get("ccreplay.truncated") == Some(&Value::from(1))
                || e.get("erspan.truncated") == Some(&Value::from(1)))
                && e.get("ccreplay.error.reason") == Some(&Value::from("truncated"))
                && ["payload", "icrc"]
                    .map(Value::from)
                    .contains(&e["ccreplay.error.layer"])
        };
        let malformed = expected
            .iter()
            .filter(|e| {
                (e.get("ccreplay.error.layer").is_some()
                    || e.get("ccreplay.opcode.known") == Some(&Value::from(0)))
                    && !cut(e)
            })
            .count();
        assert_eq!(summary["malformed"], malformed, "{name}: malformed count");
        let cut = expected.iter().filter(|e| cut(e)).count();
        assert_eq!(summary["cut_by_snaplen"], cut, "{name}: cut by the snaplen");
        snaplen_cut += cut;
        assert_eq!(summary["packets"], expected.len(), "{name}: packet count");
    }
    assert!(checked > 5000, "only {checked} fields checked");
    assert!(
        snaplen_cut > 0,
        "no packet cut by a snaplen among the fixtures"
    );
}

/// The summary's flow list against the generator's packets: one entry per (source,
/// destination, DestQP) of the RoCEv2 packets it built whole, with their count.
#[test]
fn the_flow_list_counts_the_generators_packets() {
    use std::collections::BTreeMap;
    let mut checked = 0;
    for path in fixture_captures() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let stem = name.rsplit_once('.').unwrap().0;
        let expected =
            std::fs::read_to_string(path.with_file_name(format!("{stem}.expected.jsonl"))).unwrap();
        let mut want: BTreeMap<(String, String, u64), u64> = BTreeMap::new();
        let mut whole = true;
        for line in expected.lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            if e.get("ccreplay.error.layer").is_some() {
                whole = false;
            }
            let Some(qp) = e.get("infiniband.bth.destqp").and_then(Value::as_u64) else {
                continue;
            };
            let addr = |v4: &str, v6: &str| {
                e.get(v4)
                    .or_else(|| e.get(v6))
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_string()
            };
            *want
                .entry((addr("ip.src", "ipv6.src"), addr("ip.dst", "ipv6.dst"), qp))
                .or_default() += 1;
        }
        // Captures with a packet broken before its DestQP could name it differently.
        if !whole {
            continue;
        }
        let (_, summary) = inspect_json_with(&path, fixture_config(&name));
        let got: BTreeMap<(String, String, u64), u64> = summary["flow_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    (
                        f["src"].as_str().unwrap().to_string(),
                        f["dst"].as_str().unwrap().to_string(),
                        f["dest_qp"].as_u64().unwrap(),
                    ),
                    f["packets"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(summary["flows"], want.len(), "{name}");
        checked += want.len();
    }
    assert!(checked > 20, "only {checked} flows checked");
}
