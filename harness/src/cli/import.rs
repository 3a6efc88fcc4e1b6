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
  ccreplay import ns3 mix/config.txt --scenario experiment.toml
  ccreplay sim experiment.toml --out ran/

Exit status: 0 imported; 2 a file is missing or bad (named with its line or byte offset), or the
import would lose something: a flow without events, no host traced, a trace without records
(nothing is written then).")]
    Ns3(ImportNs3Args),
}

#[derive(Args)]
pub(crate) struct ImportNs3Args {
    /// The simulator's config file (it names the topology, flow, trace and mix.tr files).
    pub(crate) config: PathBuf,
    /// Output folder for the events files and manifests (needs the run's mix.tr).
    #[arg(long, required_unless_present = "scenario")]
    pub(crate) out: Option<PathBuf>,
    /// Write the experiment (config, topology, flows) as a `ccreplay sim` scenario to this
    /// file: the same experiment closed loop in ccreplay (docs/import.md). No mix.tr needed.
    #[arg(long, value_name = "OUT.toml")]
    pub(crate) scenario: Option<PathBuf>,
    /// Read this binary trace instead of the config's TRACE_OUTPUT_FILE.
    #[arg(long)]
    pub(crate) mix: Option<PathBuf>,
}

pub(crate) fn run_ns3(a: ImportNs3Args) -> Result<u8, Failure> {
    let hint = |e: &ccreplay::import::ImportError| {
        e.todo().map_or_else(
            || {
                "the config names its files as the simulator reads them; see docs/import.md"
                    .to_string()
            },
            str::to_string,
        )
    };
    if let Some(path) = &a.scenario {
        let s = ccreplay::import::ns3::write_scenario(&a.config, path).map_err(|e| {
            let h = hint(&e);
            Failure::input(e, h)
        })?;
        for w in &s.warnings {
            eprintln!("ccreplay: warning: {w}");
        }
        note!(
            "ccreplay: wrote {} ({} hosts, {} switches, {} links, {} flows): run it with `ccreplay sim {} --out DIR`",
            path.display(),
            s.hosts,
            s.switches,
            s.links,
            s.flows,
            path.display()
        );
    }
    let Some(out) = a.out else {
        return Ok(0);
    };
    let opts = ccreplay::import::ns3::Options {
        config: a.config,
        out,
        mix: a.mix,
    };
    let s = ccreplay::import::ns3::import(&opts).map_err(|e| {
        let h = hint(&e);
        Failure::input(e, h)
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
