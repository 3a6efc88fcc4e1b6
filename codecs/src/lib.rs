//! Parsers and writers for everything a RoCEv2 congestion-control capture holds: Ethernet /
//! VLAN / IPv4 / IPv6 / UDP (via etherparse), InfiniBand BTH and its extension headers, CNPs, the
//! ICRC, the HPCC / FNCC / RCC shims and PFC pause frames, read from pcap and pcapng.
//!
//! The layout follows smoltcp's `wire` module: one file per header with named byte ranges, a
//! zero-copy view for the hot path and an owned `*Repr` for writing, and literal-byte tests.
//! The byte layouts are documented in `docs/wire.md` and on each module.
#![forbid(unsafe_code)]

pub mod capture;
pub mod error;
pub mod frame;
#[cfg(feature = "arbitrary")]
pub mod fuzzing;
pub mod ib;
pub mod lumina;
pub mod mirror;
pub mod mirror_clock;
pub mod packet;
pub mod pfc;
pub mod shim;
pub mod tunnel;

pub use error::{DecodeError, ErrorKind, Layer};
pub use packet::{DecodeConfig, LinkStart, Packet};
pub use shim::Dialect;
