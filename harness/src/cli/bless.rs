//! `ccreplay bless`: rewrite golden files from the reference models.

use std::path::PathBuf;

use clap::Args;

use ccreplay::golden;

use super::Failure;

#[derive(Args)]
pub(crate) struct BlessArgs {
    /// Folder of traces.
    #[arg(default_value = "traces")]
    pub(crate) dir: PathBuf,
    /// Folder of golden files.
    #[arg(long, default_value = "golden")]
    pub(crate) golden: PathBuf,
    /// Only this trace (its manifest's stem).
    #[arg(long)]
    pub(crate) trace: Option<String>,
    /// Threads that read and decode each capture (see `replay --jobs`).
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
}

pub(crate) fn run(a: BlessArgs) -> Result<u8, Failure> {
    let written = golden::bless(&a.dir, &a.golden, a.trace.as_deref(), a.jobs)
        .map_err(|e| Failure::input(e, None))?;
    for w in &written {
        note!("ccreplay: wrote {}", w.display());
    }
    if written.is_empty() {
        return Err(Failure::input("no trace matched: nothing written", None));
    }
    Ok(0)
}
