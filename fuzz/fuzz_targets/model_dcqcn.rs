//! Fuzz the DCQCN models (`dcqcn`, `dcqcn-nic`, `dcqcn-np`) over arbitrary event sequences,
//! timers included. The input type and every check live in the stable property test
//! `reference-cc/tests/dcqcn_props.rs`, included here so both run the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../reference-cc/tests/dcqcn_props.rs"]
mod props;

fuzz_target!(|data: &[u8]| {
    props::check(data);
});
