//! `ccreplay import`: other tools' outputs as events files with manifests.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Failure;

#[derive(Subcommand)]
pub(crate) enum ImportCommand {
    /// The ns-3 simulator of the HPCC paper: its config.txt, topology, flows and mix.tr.
    #[command(after_help = "Examples:
  ccreplay import ns3 mix/config.txt --out imported/
  ccreplay replay imported/sender_0.toml

Exit status: 0 imported; 2 a file is missing or bad (named with its line or byte offset), or the
import would lose something: a flow without events, no host traced, a trace without records
(nothing is written then).")]
    Ns3(ImportNs3Args),
}

#[derive(Args)]
pub(crate) struct ImportNs3Args {
    /// The simulator's config file (it names the topology, flow, trace and mix.tr files).
    pub(crate) config: PathBuf,
    /// Output folder for the events files and manifests.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Read this binary trace instead of the config's TRACE_OUTPUT_FILE.
    #[arg(long)]
    pub(crate) mix: Option<PathBuf>,
}

pub(crate) fn run_ns3(a: ImportNs3Args) -> Result<u8, Failure> {
    let opts = ccreplay::import::ns3::Options {
        config: a.config,
        out: a.out,
        mix: a.mix,
    };
    let s = ccreplay::import::ns3::import(&opts).map_err(|e| {
        let hint = e.todo().map_or_else(
            || {
                "the config names its files as the simulator reads them; see docs/import.md"
                    .to_string()
            },
            str::to_string,
        );
        Failure::input(e, hint)
    })?;
    for w in &s.warnings {
        eprintln!("ccreplay: warning: {w}");
    }
    for p in &s.written {
        note!("ccreplay: wrote {}", p.display());
    }
    // Every record is accounted for: made events, rebuilt INT (HPCC), or ignored by reason.
    let a = &s.account;
    let int = if a.rebuilt_int > 0 {
        format!(", {} rebuilt INT", a.rebuilt_int)
    } else {
        String::new()
    };
    note!(
        "ccreplay: {} records: {} made {} events{int}, {}",
        s.records,
        a.made_events,
        s.events,
        a.ignored_text()
    );
    Ok(0)
}
