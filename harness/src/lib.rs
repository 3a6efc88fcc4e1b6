//! ccreplay harness
