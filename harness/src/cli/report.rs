//! `ccreplay report`: self-contained HTML pages of a diff, a check or a simulation.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Failure;
use super::check::CheckArgs;
use super::diff::DiffArgs;

#[derive(Args)]
pub(crate) struct ReportArgs {
    #[command(subcommand)]
    pub(crate) what: ReportWhat,
}

#[derive(Subcommand)]
pub(crate) enum ReportWhat {
    /// Run `diff` and chart it: per flow, reference and DUT over time, first divergence marked.
    Diff {
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        #[command(flatten)]
        diff: DiffArgs,
    },
    /// Run `check` and chart every trace and model against its golden file.
    Check {
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        #[command(flatten)]
        check: CheckArgs,
    },
    /// Chart a simulation's `metrics.json` (docs/metrics.md): rates, windows, queues, PFC.
    Sim {
        /// The simulation's output folder (or its metrics.json).
        dir: PathBuf,
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        /// Also write each chart as a standalone SVG file into this folder.
        #[arg(long, value_name = "DIR")]
        svg_dir: Option<PathBuf>,
    },
}

pub(crate) fn run(a: ReportArgs) -> Result<u8, Failure> {
    match a.what {
        ReportWhat::Diff { out, mut diff } => {
            diff.html.report = Some(out);
            super::diff::run(diff)
        }
        ReportWhat::Check { out, mut check } => {
            check.html.report = Some(out);
            super::check::run(check)
        }
        ReportWhat::Sim { dir, out, svg_dir } => {
            let html = ccreplay::report::HtmlArgs {
                report: Some(out),
                max_charts: ccreplay::report::DEFAULT_MAX_CHARTS,
                svg_dir,
            };
            let written = ccreplay::report::write_sim_report(&html, &dir).map_err(|e| {
                Failure::input(
                    e,
                    "`ccreplay sim SCENARIO --out DIR` writes DIR/metrics.json (docs/metrics.md)"
                        .to_string(),
                )
            })?;
            for p in written {
                note!("ccreplay: wrote {}", p.display());
            }
            Ok(0)
        }
    }
}
