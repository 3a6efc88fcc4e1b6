//! Parsers and writers for everything a RoCEv2 congestion-control capture holds.
#![forbid(unsafe_code)]

pub mod capture;
pub mod shim;
