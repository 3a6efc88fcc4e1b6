//! RCC, receiver-driven RDMA congestion control (seed 002, Algorithm 1, §III-C..F;
//! algorithms.md RCC-1..5).
//!
//! - [`Receiver`] (`rcc-receiver`): on every data packet, Algorithm 1: one-way delay from the
//!   sender's timestamp (RCC-2), message counting from BTH opcodes (RCC-3), explicit window
//!   assignment `C × T / N`, the last-hop test and n-consecutive in-network detection (RCC-4),
//!   and the PID window (RCC-5); it writes `cwnd`, `N` and flags into the ACK.
//! - [`Sender`] (`rcc-sender`): applies the window each ACK carries and paces at
//!   `cwnd × 8 / T` (RCC-1).
//!
//! `docs/models/rcc.md` lists every formula with its source and every choice made where the
//! paper is silent.

pub mod opcode;
pub mod receiver;
pub mod sender;

pub use opcode::{MessagePosition, message_position};
pub use receiver::{Receiver, ReceiverParams};
pub use sender::{Sender, SenderParams};

use crate::model::ParamError;

/// ns per second × bits per byte: `bytes × 8e9 / ns` is bps.
pub(crate) const BITS_NS_PER_BYTE_S: u128 = 8_000_000_000;

pub(crate) use crate::model::err;

/// `floor(C_bps × T_ns / 8e9)` bytes: the bandwidth-delay product, exact in integers.
pub(crate) fn bdp_bytes(line_rate_bps: u64, base_rtt_ns: u64) -> u128 {
    u128::from(line_rate_bps) * u128::from(base_rtt_ns) / BITS_NS_PER_BYTE_S
}

/// Checks shared by both RCC params structs: `C`, `T`, the MTU, and a BDP that fits the
/// 32-bit `cwnd` field of the ACK extension (wire.md 5.5).
pub(crate) fn check_common(
    line_rate_bps: u64,
    base_rtt_ns: u64,
    mtu_bytes: u64,
) -> Result<(), ParamError> {
    if line_rate_bps == 0 {
        return Err(err("line_rate_bps", 0, "must be > 0"));
    }
    if base_rtt_ns == 0 {
        return Err(err(
            "base_rtt_ns",
            0,
            "must be > 0 (T divides the pacing rate)",
        ));
    }
    if mtu_bytes == 0 || mtu_bytes > u64::from(u32::MAX) {
        return Err(err("mtu_bytes", mtu_bytes, "must be in 1..=2^32-1"));
    }
    if bdp_bytes(line_rate_bps, base_rtt_ns) > u128::from(u32::MAX) {
        return Err(err(
            "base_rtt_ns",
            base_rtt_ns,
            "line_rate_bps × base_rtt_ns / 8e9 exceeds the 32-bit cwnd field of the RCC ACK \
             extension (wire.md 5.5)",
        ));
    }
    Ok(())
}
