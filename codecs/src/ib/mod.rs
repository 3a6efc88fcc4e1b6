//! InfiniBand transport headers carried by RoCEv2 (wire.md 2-4).

pub mod bth;
pub mod ext;
pub mod icrc;
pub mod opcode;

pub use bth::{BTH_LEN, Bth, BthRepr, GSI_QP};
pub use ext::{AethRepr, AtomicEthRepr, DethRepr, NakCode, RdethRepr, RethRepr, Syndrome};
pub use opcode::{ExtHeaders, Opcode, Transport};

/// Length of the reserved block of a CNP (wire.md 3).
pub const CNP_RESERVED_LEN: usize = 16;
/// Length of the ICRC.
pub const ICRC_LEN: usize = 4;
/// The IANA UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
