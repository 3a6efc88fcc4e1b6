//! Fuzz the HPCC sender over arbitrary event sequences and parameters. The input type and
//! every check live in the stable property test `reference-cc/tests/hpcc_fncc_property.rs`,
//! included here so both run the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

// `check_fncc` is the `model_fncc` target's.
#[allow(dead_code)]
#[path = "../../reference-cc/tests/hpcc_fncc_property.rs"]
mod props;

fuzz_target!(|data: &[u8]| {
    props::check_hpcc(data);
});
