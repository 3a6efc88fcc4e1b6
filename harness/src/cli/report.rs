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
    /// Chart a simulation's `metrics.json` (docs/metrics.md): rates, fairness, queues, PFC.
    Sim {
        /// The simulation's output folder (or its metrics.json).
        dir: PathBuf,
        /// The HTML file to write.
        #[arg(short = 'o', long = "out", default_value = "report.html")]
        out: PathBuf,
        /// Also write each chart as a standalone SVG file into this folder.
        #[arg(long, value_name = "DIR")]
        svg_dir: Option<PathBuf>,
        /// Time charts start here: ns, or with a unit (`500us`, `1.5ms`; docs/report.md).
        #[arg(long, value_name = "TIME", value_parser = ccreplay::report::sim::parse_time)]
        from: Option<u64>,
        /// Time charts end here (default: the end of the run).
        #[arg(long, value_name = "TIME", value_parser = ccreplay::report::sim::parse_time)]
        to: Option<u64>,
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
        ReportWhat::Sim {
            dir,
            out,
            svg_dir,
            from,
            to,
        } => {
            let html = ccreplay::report::HtmlArgs {
                report: Some(out),
                max_charts: ccreplay::report::DEFAULT_MAX_CHARTS,
                svg_dir,
            };
            let written =
                ccreplay::report::sim::write_report(&html, &dir, from, to).map_err(|e| {
                    let hint = match e {
                        ccreplay::report::sim::ReportError::Window(_) => {
                            "the time charts show --from..--to, inside the run (docs/report.md)"
                        }
                        ccreplay::report::sim::ReportError::Other(_) => {
                            "`ccreplay sim SCENARIO --out DIR` writes DIR/metrics.json (docs/metrics.md)"
                        }
                    };
                    Failure::input(&e, hint.to_string())
                })?;
            for p in written {
                note!("ccreplay: wrote {}", p.display());
            }
            Ok(0)
        }
    }
}
