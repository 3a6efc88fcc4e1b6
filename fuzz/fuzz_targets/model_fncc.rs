//! Fuzz the FNCC sender and receiver (and the FNCC-3 INT push) over arbitrary event sequences
//! and parameters. The input type and every check live in the stable property test
//! `reference-cc/tests/hpcc_fncc_property.rs`, included here so both run the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

// `check_hpcc` is the `model_hpcc` target's.
#[allow(dead_code)]
#[path = "../../reference-cc/tests/hpcc_fncc_property.rs"]
mod props;

fuzz_target!(|data: &[u8]| {
    props::check_fncc(data);
});
