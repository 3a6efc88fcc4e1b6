//! Support for the cross-crate test suites: fixture paths and running `inspect` in-process.

use std::path::{Path, PathBuf};

use ccreplay::inspect::{self, Format, InspectOptions};
use ccreplay_codecs::{DecodeConfig, Dialect};

/// `tests/fixtures/` of the repository.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The dialect a fixture is written in, from its name (`hpcc*`, `fncc*`, `rcc*`, else roce).
pub fn fixture_dialect(name: &str) -> Dialect {
    for d in [Dialect::Hpcc, Dialect::Fncc, Dialect::Rcc] {
        if name.starts_with(d.name()) {
            return d;
        }
    }
    Dialect::Roce
}

/// Every capture under `tests/fixtures/` with its `.expected.jsonl` (the `detect_*` captures
/// have none: their names are the expectation), sorted.
pub fn fixture_captures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pcap" | "pcapng")
            ) && !p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("detect_"))
        })
        .collect();
    v.sort();
    v
}

/// How a fixture is read: its dialect, and for `lumina.pcap` the port of the Lumina switch's
/// copies — the RoCEv2 port for `lumina_dumped.pcap`, as Lumina's dumper writes them
/// (tests/fixtures/README.md).
pub fn fixture_config(name: &str) -> DecodeConfig {
    let lumina_port = if name.starts_with("lumina_dumped") {
        4791
    } else if name.starts_with("lumina") {
        5000
    } else {
        0
    };
    DecodeConfig {
        lumina_port,
        ..DecodeConfig::for_dialect(fixture_dialect(name))
    }
}

/// Run `inspect --format json` on a capture and return the per-packet records (the closing
/// summary record is dropped) and the summary.
pub fn inspect_json(path: &Path, dialect: Dialect) -> (Vec<serde_json::Value>, serde_json::Value) {
    inspect_json_with(path, DecodeConfig::for_dialect(dialect))
}

/// [`inspect_json`] with the whole decoding configuration.
pub fn inspect_json_with(
    path: &Path,
    decode: DecodeConfig,
) -> (Vec<serde_json::Value>, serde_json::Value) {
    let opts = InspectOptions {
        decode,
        format: Format::Json,
        pfc_link_bps: 100_000_000_000,
    };
    let mut out = Vec::new();
    inspect::run(path.to_str().unwrap(), &opts, &mut out).expect("inspect");
    let mut records: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let summary = records.pop().expect("summary record");
    assert_eq!(summary["ccreplay.record"], "summary");
    (records, summary)
}
