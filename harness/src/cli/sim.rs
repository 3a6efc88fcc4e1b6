//! `ccreplay sim` and `ccreplay synth`: scenarios through the network simulator.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use clap::Args;

use ccreplay::sim;

use super::Failure;

#[derive(Args)]
pub(crate) struct SimArgs {
    /// The scenario file (TOML; docs/sim.md).
    pub(crate) scenario: PathBuf,
    /// Output folder (created if needed).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Seed instead of the scenario's.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
}

#[derive(Args)]
pub(crate) struct SynthArgs {
    /// Scenario names (default: every bundled scenario).
    pub(crate) scenarios: Vec<String>,
    /// Output folder.
    #[arg(long, default_value = "traces")]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(a: SimArgs) -> Result<u8, Failure> {
    let hint = || "docs/sim.md describes scenario files".to_string();
    let written = sim::run_cli(
        &a.scenario,
        &a.out,
        a.seed,
        io::stderr().is_terminal() && !super::quiet(),
    )
    .map_err(|e| Failure::input(e, hint()))?;
    for p in written {
        note!("ccreplay: wrote {}", p.display());
    }
    Ok(0)
}

pub(crate) fn run_synth(a: SynthArgs) -> Result<u8, Failure> {
    let hint =
        || "bundled scenarios: roce_dcqcn, hpcc_dumbbell, fncc_dumbbell, rcc_dumbbell".to_string();
    let written = if a.scenarios.is_empty() {
        sim::generate_bundled(&a.out).map_err(|e| Failure::input(e, hint()))?
    } else {
        let mut w = Vec::new();
        for name in &a.scenarios {
            w.extend(sim::generate_one(name, &a.out).map_err(|e| Failure::input(e, hint()))?);
        }
        w
    };
    for p in written {
        note!("ccreplay: wrote {}", p.display());
    }
    Ok(0)
}
