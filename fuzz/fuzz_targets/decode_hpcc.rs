//! Packet decoder, dialect `hpcc`: arbitrary bytes never panic and never read past the captured
//! bytes (see `ccreplay_codecs::fuzzing::decode`).
#![no_main]

use ccreplay_codecs::Dialect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccreplay_codecs::fuzzing::decode(data, Dialect::Hpcc));
