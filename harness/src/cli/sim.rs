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
    /// Override a scenario or model parameter: a dotted key of the scenario file and a TOML
    /// value, e.g. `params.w_ai_bytes=40` (repeatable; recorded in the outputs; docs/sim.md).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<sim::scenario::Override>,
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
    let input = |e: sim::SimError| {
        Failure::input(
            e,
            "docs/sim.md describes scenario files and --set".to_string(),
        )
    };
    let sc = sim::Scenario::load_with(&a.scenario, &a.set).map_err(input)?;
    let bar = (io::stderr().is_terminal() && !super::quiet()).then(|| {
        let b = indicatif::ProgressBar::new(sc.duration_ns / 1_000);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg} [{bar:40}] {pos}/{len} µs simulated ({elapsed})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message(sc.name.clone());
        b
    });
    let mut tick = |now_ns: u64| {
        if let Some(b) = &bar {
            b.set_position(now_ns / 1_000);
        }
    };
    let res = sim::simulate(&sc, a.seed, &mut tick);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut out = res.map_err(input)?;
    // The overrides go into every output, so the run can be repeated from them.
    out.record_overrides(&sc.name, &a.set);
    let mut written = sim::write(&out, &a.out, false).map_err(input)?;
    let path = a.out.join("metrics.json");
    let io_err = |source: io::Error| {
        input(sim::SimError::Io {
            path: path.clone(),
            source,
        })
    };
    // Streamed to a temporary file renamed onto metrics.json when complete: the text of a
    // long run's series is several times their size, and a failed write (a full disk) leaves
    // the previous file as it was.
    let (f, pending) = ccreplay::outfile::Pending::create(&path).map_err(io_err)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, f);
    sim::scenario::write_metrics_json(&mut w, &out.metrics, &a.set)
        .map_err(|e| io_err(io::Error::from(e)))?;
    io::Write::flush(&mut w).map_err(io_err)?;
    drop(w);
    pending.commit().map_err(io_err)?;
    written.push(path.clone());
    for p in written {
        note!("ccreplay: wrote {}", p.display());
    }
    Ok(0)
}

pub(crate) fn run_synth(a: SynthArgs) -> Result<u8, Failure> {
    // Derived from the list synth runs, so the hint cannot go stale.
    let hint = || {
        let names: Vec<&str> = sim::BUNDLED.iter().map(|(n, _)| *n).collect();
        format!("bundled scenarios: {}", names.join(", "))
    };
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
