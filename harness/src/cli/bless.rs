//! `ccreplay bless`: rewrite golden files from the reference models.

use std::path::PathBuf;

use clap::Args;

use ccreplay::golden::{self, Blessed};

use super::Failure;

#[derive(Args)]
pub(crate) struct BlessArgs {
    /// Traces, as `check` takes them: folders of capture + manifest pairs, manifests, or
    /// captures (the manifest beside each).
    #[arg(default_value = "traces")]
    pub(crate) paths: Vec<PathBuf>,
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
    let (manifests, _) = golden::resolve_traces(&a.paths).map_err(|e| {
        Failure::input(
            e,
            "run from the repository root, or name the traces: ccreplay bless DIR|TRACE.toml|CAPTURE"
                .to_string(),
        )
    })?;
    let written = golden::bless_manifests(&manifests, &a.golden, a.trace.as_deref(), a.jobs)
        .map_err(|e| Failure::input(e, None))?;
    if written.is_empty() {
        return Err(Failure::input("no trace matched: nothing written", None));
    }
    // Changed files first: they are what a review of `git diff golden/` is about.
    for kind in [Blessed::Changed, Blessed::New, Blessed::Unchanged] {
        for (p, _) in written.iter().filter(|(_, k)| *k == kind) {
            note!("ccreplay: {:<9} {}", kind.word(), p.display());
        }
    }
    let count = |k| written.iter().filter(|(_, w)| *w == k).count();
    note!(
        "ccreplay: {} golden file{}: {} changed, {} new, {} unchanged",
        written.len(),
        super::plural(written.len() as u64),
        count(Blessed::Changed),
        count(Blessed::New),
        count(Blessed::Unchanged)
    );
    Ok(0)
}
