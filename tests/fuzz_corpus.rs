//! Every file of the cargo-fuzz seed corpora, replayed through the same target bodies on the
//! stable toolchain, so a crash the fuzzer once found stays a regression test here.

use std::fs;
use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use ccreplay_codecs::Dialect;
use ccreplay_codecs::fuzzing::{self, RoundTrip};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty seed corpus", dir.display());
    files
        .into_iter()
        .map(|p| (p.display().to_string(), fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn decoder_corpora() {
    for (target, dialect) in [
        ("decode_roce", Dialect::Roce),
        ("decode_hpcc", Dialect::Hpcc),
        ("decode_fncc", Dialect::Fncc),
        ("decode_rcc", Dialect::Rcc),
    ] {
        for (name, data) in corpus(target) {
            // Every dialect reads every file: a seed of one dialect is garbage to the others.
            for d in Dialect::ALL {
                let r = std::panic::catch_unwind(|| fuzzing::decode(&data, d));
                assert!(
                    r.is_ok(),
                    "{name} in dialect {d} (target {target}, own dialect {dialect})"
                );
            }
        }
    }
}

#[test]
fn roundtrip_corpus() {
    for (name, data) in corpus("roundtrip") {
        let mut u = Unstructured::new(&data);
        if let Ok(input) = RoundTrip::arbitrary(&mut u) {
            let r = std::panic::catch_unwind(|| fuzzing::roundtrip(input));
            assert!(r.is_ok(), "{name}");
        }
    }
}

#[test]
fn capture_reader_corpus() {
    for (name, data) in corpus("capture_reader") {
        let r = std::panic::catch_unwind(|| fuzzing::capture(&data));
        assert!(r.is_ok(), "{name}");
    }
}
