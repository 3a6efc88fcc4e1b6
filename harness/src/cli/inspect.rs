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
    /// Which congestion-control shims the packets carry (default: detected from the first
    /// RoCEv2 packets, their ICRC as the oracle; the choice and why are on standard error).
    #[arg(long, value_parser = parse_dialect)]
    pub(crate) dialect: Option<Dialect>,
    /// Output format (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Exit 1 when any packet is malformed or of a link type ccreplay does not read.
    #[arg(long)]
    pub(crate) strict: bool,
    /// INT stacks are `grown` (2 + 8 × nHop bytes) instead of padded to --max-hops.
    #[arg(long)]
    pub(crate) int_grown: bool,
    /// Records in a padded INT stack; nHop above it is an error (default: detected with the
    /// dialect, else 5).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=15))]
    pub(crate) max_hops: Option<u8>,
    /// UDP destination port of RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub(crate) udp_port: u16,
    /// VXLAN's UDP destination port (0: not decoded).
    #[arg(long, default_value_t = ccreplay_codecs::tunnel::VXLAN_UDP_PORT)]
    pub(crate) vxlan_port: u16,
    /// Geneve's UDP destination port (0: not decoded).
    #[arg(long, default_value_t = ccreplay_codecs::tunnel::GENEVE_UDP_PORT)]
    pub(crate) geneve_port: u16,
    /// The UDP destination port a Lumina testbed's switch sends its copies to: each is read
    /// as the packet it copies, with the switch's timestamp, sequence number and event
    /// (docs/wire.md 2.3; 0: none).
    #[arg(long, default_value_t = 0)]
    pub(crate) lumina_port: u16,
    /// Link rate in Gbps used to report PFC pause times in ns.
    #[arg(long, default_value_t = 100)]
    pub(crate) pfc_link_gbps: u64,
    /// Print only this field (repeatable), one line per packet, as `tshark -T fields -e`
    /// does: Wireshark's field names (docs/inspect.md), tab-separated, empty when absent.
    #[arg(short = 'e', long = "field", conflicts_with = "format")]
    pub(crate) fields: Vec<String>,
    /// tshark's `-E` options for -e: header=y|n, separator=/t|/s|C, aggregator=,|/s|C,
    /// occurrence=a|f|l|N, quote=d|s|n.
    #[arg(short = 'E', requires = "fields")]
    pub(crate) field_options: Vec<String>,
}

pub(crate) fn parse_dialect(s: &str) -> Result<Dialect, String> {
    s.parse()
}

/// The configuration detected from the capture (INT options given on the command line win),
/// said on standard error.
fn detected(a: &InspectArgs) -> Result<DecodeConfig, Failure> {
    let ports = DecodeConfig {
        udp_port: a.udp_port,
        vxlan_port: a.vxlan_port,
        geneve_port: a.geneve_port,
        lumina_port: a.lumina_port,
        ..DecodeConfig::default()
    };
    let d =
        ccreplay::detect::detect_file_on(std::path::Path::new(&a.file), &ports).map_err(|e| {
            Failure::input(
                format!("{}: {e}", a.file),
                "inspect reads pcap and pcapng files (link types Ethernet, Linux SLL/SLL2, raw IP)"
                    .to_string(),
            )
        })?;
    let mut c = d.config();
    if c.int.layout == IntLayout::Grown {
        c.int.max_hops = d.best().max_n_hop.max(5);
    }
    if a.int_grown {
        c.int.layout = IntLayout::Grown;
    }
    if let Some(h) = a.max_hops {
        c.int.max_hops = h;
    }
    note!(
        "ccreplay: dialect {} detected: {} (--dialect to choose)",
        c.dialect,
        d.why()
    );
    Ok(c)
}

pub(crate) fn run(a: InspectArgs) -> Result<u8, Failure> {
    let stdout = io::stdout();
    let format = a.format.unwrap_or(if stdout.is_terminal() {
        Format::Text
    } else {
        Format::Json
    });
    let decode = match a.dialect {
        Some(dialect) => DecodeConfig {
            dialect,
            int: IntConfig {
                layout: if a.int_grown {
                    IntLayout::Grown
                } else {
                    IntLayout::Padded
                },
                max_hops: a.max_hops.unwrap_or(5),
            },
            udp_port: a.udp_port,
            // Every mirrored frame, whatever its session: inspect shows the capture.
            mirror_session: None,
            vxlan_port: a.vxlan_port,
            geneve_port: a.geneve_port,
            lumina_port: a.lumina_port,
        },
        None => detected(&a)?,
    };
    let opts = InspectOptions {
        decode,
        format,
        pfc_link_bps: a.pfc_link_gbps.saturating_mul(1_000_000_000),
    };
    let selection = if a.fields.is_empty() {
        None
    } else {
        let mut o = inspect::fields::FieldOptions::default();
        for e in &a.field_options {
            o.set(e).map_err(|e| Failure::input(e, None))?;
        }
        Some(inspect::fields::Selection::new(a.fields.clone(), o))
    };
    // `inspect::run` batches its output in 64 KiB blocks: no second buffer in between.
    let mut out = stdout.lock();
    let result = match &selection {
        Some(sel) => inspect::run_fields(
            &a.file,
            &opts,
            sel,
            &mut out,
            ccreplay::batches::default_workers(),
        ),
        None => inspect::run(&a.file, &opts, &mut out),
    };
    match result {
        Ok(summary) => {
            let _ = out.flush();
            if let Some(e) = &summary.capture_error {
                eprintln!(
                    "ccreplay: {}: capture ended early after {} records: {e}",
                    a.file, summary.packets
                );
            }
            if summary.unsupported_link > 0 {
                eprintln!(
                    "ccreplay: warning: {}: {} of {} records are of a link type ccreplay does not \
                     read ({}): not decoded, not malformed\nhint: ccreplay reads link types \
                     Ethernet (1), Linux SLL (113) and SLL2 (276) and raw IP (101, 12, 14, 228, \
                     229), not native InfiniBand (ERF 197 as Endace cards and ibdump record \
                     it, InfiniBand 247): capture the RoCEv2 traffic at an Ethernet port",
                    a.file,
                    summary.unsupported_link,
                    summary.packets,
                    ccreplay_codecs::capture::describe_links(&summary.unsupported_link_types)
                );
            }
            if a.strict && summary.malformed > 0 {
                eprintln!(
                    "ccreplay: {} of {} packets malformed (--strict)",
                    summary.malformed, summary.packets
                );
                return Ok(1);
            }
            if a.strict && summary.unsupported_link > 0 {
                eprintln!(
                    "ccreplay: {} of {} packets of a link type ccreplay does not read (--strict)",
                    summary.unsupported_link, summary.packets
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
