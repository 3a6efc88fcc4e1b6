//! Congestion-control shims: the "dialect" of a trace (wire.md 5).

pub mod int;
