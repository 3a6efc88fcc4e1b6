//! `inspect` against the values the fixture generator *set* (tests/fixtures/*.expected.jsonl,
//! written by tests/fixtures/make_fixtures.py with scapy): every key of every expected record
//! must be in inspect's record for that frame, with the same value.

use ccreplay_tests::{epoch_text, fixture_captures, fixture_dialect, inspect_json};
use serde_json::Value;

/// Keys the generator records about how it built a capture, which a decoder cannot know.
const GENERATOR_ONLY: [&str; 2] = ["ccreplay.section", "ccreplay.ts_raw"];

#[test]
fn every_expected_field_matches() {
    let captures = fixture_captures();
    assert!(captures.len() >= 10, "fixtures missing: {captures:?}");
    let mut checked = 0;
    for path in captures {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let stem = name.rsplit_once('.').unwrap().0;
        let expected_path = path.with_file_name(format!("{stem}.expected.jsonl"));
        let expected: Vec<Value> = std::fs::read_to_string(&expected_path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (records, summary) = inspect_json(&path, fixture_dialect(&name));
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
                if k == "frame.time_epoch" {
                    // The generator writes the decimal as text; compare the exact digits.
                    assert_eq!(Value::String(epoch_text(ours)), *v, "{name} frame {frame}");
                } else {
                    assert_eq!(got, v, "{name} frame {frame}: `{k}`");
                }
                checked += 1;
            }
        }
        // Malformed: the generator broke a header, or wrote an opcode wire.md does not list
        // (reported as an `unknown_opcode` error, its bytes kept opaque).
        let malformed = expected
            .iter()
            .filter(|e| {
                e.get("ccreplay.error.layer").is_some()
                    || e.get("ccreplay.opcode.known") == Some(&Value::from(0))
            })
            .count();
        assert_eq!(summary["malformed"], malformed, "{name}: malformed count");
        assert_eq!(summary["packets"], expected.len(), "{name}: packet count");
    }
    assert!(checked > 5000, "only {checked} fields checked");
}
