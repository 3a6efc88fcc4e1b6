//! `ccreplay inspect`: decode a capture packet by packet.

use std::io::{self, IsTerminal, Write};

use clap::Args;

use ccreplay::inspect::{self, Format, InspectOptions};
use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect};

use super::Failure;

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// A pcap or pcapng capture.
    pub(crate) file: String,
    /// Which congestion-control shims the packets carry.
    #[arg(long, default_value = "roce", value_parser = parse_dialect)]
    pub(crate) dialect: Dialect,
    /// Output format (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Exit 1 when any packet is malformed.
    #[arg(long)]
    pub(crate) strict: bool,
    /// INT stacks are `grown` (2 + 8 × nHop bytes) instead of padded to --max-hops.
    #[arg(long)]
    pub(crate) int_grown: bool,
    /// Records in a padded INT stack; nHop above it is an error.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=15))]
    pub(crate) max_hops: u8,
    /// UDP destination port of RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub(crate) udp_port: u16,
    /// Link rate in Gbps used to report PFC pause times in ns.
    #[arg(long, default_value_t = 100)]
    pub(crate) pfc_link_gbps: u64,
}

pub(crate) fn parse_dialect(s: &str) -> Result<Dialect, String> {
    s.parse()
}

pub(crate) fn run(a: InspectArgs) -> Result<u8, Failure> {
    let stdout = io::stdout();
    let format = a.format.unwrap_or(if stdout.is_terminal() {
        Format::Text
    } else {
        Format::Json
    });
    let opts = InspectOptions {
        decode: DecodeConfig {
            dialect: a.dialect,
            int: IntConfig {
                layout: if a.int_grown {
                    IntLayout::Grown
                } else {
                    IntLayout::Padded
                },
                max_hops: a.max_hops,
            },
            udp_port: a.udp_port,
        },
        format,
        pfc_link_bps: a.pfc_link_gbps.saturating_mul(1_000_000_000),
    };
    // `inspect::run` batches its output in 64 KiB blocks: no second buffer in between.
    let mut out = stdout.lock();
    match inspect::run(&a.file, &opts, &mut out) {
        Ok(summary) => {
            let _ = out.flush();
            if let Some(e) = &summary.capture_error {
                eprintln!(
                    "ccreplay: {}: capture ended early after {} records: {e}",
                    a.file, summary.packets
                );
            }
            if a.strict && summary.malformed > 0 {
                eprintln!(
                    "ccreplay: {} of {} packets malformed (--strict)",
                    summary.malformed, summary.packets
                );
                return Ok(1);
            }
            Ok(0)
        }
        Err(inspect::InspectError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(Failure::input(
            e,
            "inspect reads pcap and pcapng files (link types Ethernet, Linux SLL/SLL2, raw IP)"
                .to_string(),
        )),
    }
}
