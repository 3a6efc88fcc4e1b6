//! Structure-aware round trip: arbitrary frames in every dialect, written, decoded and compared
//! field by field; the ICRC must verify (see `ccreplay_codecs::fuzzing::roundtrip`).
#![no_main]

use ccreplay_codecs::fuzzing::{RoundTrip, roundtrip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: RoundTrip| roundtrip(input));
