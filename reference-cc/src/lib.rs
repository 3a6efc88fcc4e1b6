//! Bit-accurate, sans-IO reference models of RoCEv2 congestion control: DCQCN, HPCC, FNCC, RCC.
//!
//! Every model is a pure state machine (algorithms.md C-1): it is fed [`Event`]s that carry their
//! own timestamps, returns [`Decision`]s, and exposes its next timer deadline (C-5). Time is u64
//! ns, bytes u64, rates u64 bps (C-2). Real-valued state is f64 computed only with `+ - * /`,
//! `sqrt`, `min`, `max` in the order the spec writes them, and `libm` for `tanh` (C-3).
//!
//! No `unsafe` but one block: the simulator's cache prefetch hint (`net::prefetch`, x86_64
//! `PREFETCHT0`, which reads nothing and cannot fault; 11 % of the k = 8 fat tree's time).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod dcqcn;
pub mod event;
pub mod fncc;
pub mod hpcc;
pub mod model;
pub mod net;
pub mod ns3;
pub mod psn;
pub mod rcc;

pub use event::{Cause, Decision, Event, EventKind, FlowId, Outputs, State, StateValue};
pub use model::{Model, ParamError};
