//! Fuzz the ns-3 profiles (`hpcc-ns3`, `dcqcn-ns3`) over arbitrary parameters and event
//! sequences. The input type and every check live in the stable property test
//! `reference-cc/tests/ns3_props.rs`, included here so both run the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../reference-cc/tests/ns3_props.rs"]
mod props;

fuzz_target!(|data: &[u8]| {
    props::check(data);
});
