//! Fuzz `dcqcn-cp` (DCQCN-1 at a switch port) over arbitrary parameters and dequeue sequences.
//! The checks live in the stable test `reference-cc/tests/dcqcn_cp_props.rs`, included here.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../reference-cc/tests/dcqcn_cp_props.rs"]
mod props;

fuzz_target!(|data: &[u8]| props::check(data));
