//! `ccreplay`: the command line.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use ccreplay::inspect::{self, Format, InspectOptions};
use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect};

/// Trace-replay conformance harness for RoCEv2 congestion control.
#[derive(Parser)]
#[command(name = "ccreplay", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode a capture packet by packet (Wireshark field names in JSON).
    #[command(after_help = "Examples:
  ccreplay inspect traces/hpcc_incast.pcap --dialect hpcc
  ccreplay inspect capture.pcapng --format json | jq 'select(.\"infiniband.bth.opcode\" == 17)'
  ccreplay inspect capture.pcap --strict   # exit 1 if any packet is malformed

Exit status: 0 read to the end; 1 with --strict when a packet was malformed;
2 when the file cannot be read.")]
    Inspect(InspectArgs),
}

#[derive(Args)]
struct InspectArgs {
    /// A pcap or pcapng capture.
    file: String,
    /// Which congestion-control shims the packets carry.
    #[arg(long, default_value = "roce", value_parser = parse_dialect)]
    dialect: Dialect,
    /// Output format (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Exit 1 when any packet is malformed.
    #[arg(long)]
    strict: bool,
    /// INT stacks are `grown` (2 + 8 × nHop bytes) instead of padded to --max-hops.
    #[arg(long)]
    int_grown: bool,
    /// Records in a padded INT stack; nHop above it is an error.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=15))]
    max_hops: u8,
    /// UDP destination port of RoCEv2.
    #[arg(long, default_value_t = 4791)]
    udp_port: u16,
    /// Link rate in Gbps used to report PFC pause times in ns.
    #[arg(long, default_value_t = 100)]
    pfc_link_gbps: u64,
}

fn parse_dialect(s: &str) -> Result<Dialect, String> {
    s.parse()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Inspect(a) => run_inspect(a),
    }
}

fn run_inspect(a: InspectArgs) -> ExitCode {
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
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(inspect::InspectError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ccreplay: {e}");
            eprintln!(
                "hint: inspect reads pcap and pcapng files (link types Ethernet, Linux SLL/SLL2, raw IP)"
            );
            ExitCode::from(2)
        }
    }
}
