//! The ccreplay harness: from a capture to a conformance verdict.
//!
//! A capture is read and decoded ([`batches`], [`extract`]), replayed through a reference model
//! or a DUT ([`replay`], [`dut`]), and compared ([`diff`], [`golden`]); [`inspect`], [`sim`],
//! [`report`] and [`import`] serve the other commands of the CLI.
#![deny(unsafe_code)]

pub mod batches;
pub mod detect;
pub mod diff;
pub mod dut;
pub mod events_in;
pub mod extract;
pub mod golden;
pub mod import;
pub mod init;
pub mod inspect;
pub mod intern;
pub mod jsonl;
pub mod lumina;
pub mod manifest;
pub mod models;
pub mod observe;
pub mod outfile;
pub mod path;
pub mod protocol;
pub mod replay;
pub mod report;
pub mod sim;
pub mod switch;
pub mod verdict;
