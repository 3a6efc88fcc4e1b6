//! From a capture to per-flow events (harness.md 1-2).
//!
//! Two streaming passes over the capture, so memory grows with the number of flows, never with
//! the file: the first pass finds the flows and pairs their two directions, the second turns
//! every packet of a paired flow into an [`Event`](ccreplay_reference_cc::Event).
//!
//! A flow at a sender is (local IP, local QP, remote IP, remote QP): data packets carry the
//! remote QP, ACKs / NAKs / CNPs the local QP. The two directions are paired from the
//! manifest's `[[flows]]` when given, else by IP pair when exactly one QP goes each way, else by
//! PSN continuity (an ACK's PSN falls in the range of PSNs the candidate flow sent). What could
//! not be paired is reported, never dropped silently. At a receiver a flow is (local IP, local
//! QP, remote IP): data packets in.
//!
//! Role: `replay` (and through it `diff`, `check`, `bless`, the reports) reads captures here;
//! every record ends as an event or a counted skip ([`ExtractReport`], docs/verdicts.md). May
//! use: codecs (decoding), reference-cc's events, the manifest, `path` (a packet seen at two
//! points of its path).
//!
//! The files, by what they decide:
//! - `flows.rs`: pass 1, the flows and the pairing of their directions;
//! - `events.rs`: pass 2, each record decoded, classified and applied in capture order;
//! - `account.rs`: what became of every record (events by kind, skips by reason);
//! - `classify.rs`: how a record looks from the capture point (both passes);
//! - `copies.rs`: a data frame captured twice (the same packet at two points of its path:
//!   crate::path, applied in `events.rs`);
//! - `mirror.rs`: the mirror source of each event of a capture a switch mirrored, and the
//!   check that each flow's packets come from one.

use std::net::IpAddr;
use std::path::Path;

use ccreplay_codecs::capture::{CaptureError, CaptureReader};
use ccreplay_reference_cc::FlowId;

mod account;
mod classify;
mod copies;
mod events;
mod flows;
mod mirror;
pub use crate::path::PathPair;
pub use account::{EventCounts, ExtractReport, LuminaReport, Skip, Skipped};
pub use events::{stream_events, stream_events_jobs};
pub use flows::{FlowTable, build_flow_table, build_flow_table_jobs};
pub use mirror::{Conflict, MirrorSource, Sources};

/// One flow as the harness numbers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowInfo {
    /// Dense id, in order of first appearance.
    pub id: FlowId,
    /// The capture point's host.
    pub local_ip: IpAddr,
    /// Its QP (`None` at a sender whose ACK direction was never seen).
    pub local_qp: Option<u32>,
    /// The peer.
    pub remote_ip: IpAddr,
    /// The peer's QP (`None` at a receiver).
    pub remote_qp: Option<u32>,
    /// How the two directions were paired.
    pub paired_by: &'static str,
}

/// Why events could not be extracted (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The capture could not be opened or read.
    #[error("{path}: {source}")]
    Capture {
        /// File.
        path: String,
        /// Why.
        source: CaptureError,
    },
}

/// Open a capture for either pass.
fn open_capture(
    capture: &Path,
) -> Result<CaptureReader<ccreplay_codecs::capture::StreamSource<std::fs::File>>, ExtractError> {
    CaptureReader::open(capture).map_err(|source| ExtractError::Capture {
        path: capture.display().to_string(),
        source,
    })
}
