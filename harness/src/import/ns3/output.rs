//! The output files: one events file per host and side, staged and renamed into place only when the
//! whole import succeeds.

use super::*;

/// Which side of a flow a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Side {
    Sender,
    Receiver,
}

/// One output events file: its flows (global flow index → local id) and writer.
pub(super) struct Group {
    pub(super) side: Side,
    pub(super) host: u32,
    pub(super) stem: String,
    pub(super) flows: Vec<usize>,
    pub(super) w: BufWriter<File>,
    pub(super) path: PathBuf,
    /// Renames the complete file onto `path`; removes it if the import fails.
    pub(super) pending: Option<crate::outfile::Pending>,
    pub(super) base_rtt_ns: u64,
    pub(super) win_bytes: u64,
    /// HPCC: ACKs written without INT (the pcap needs none).
    pub(super) acks_without_int: u64,
    /// Events written.
    pub(super) events: u64,
}

/// Stage a manifest at `path`: written to its temporary file, renamed by the returned guard's
/// `commit` (removed if it is dropped).
pub(super) fn stage_manifest(
    path: &Path,
    m: &Manifest,
) -> Result<crate::outfile::Pending, ImportError> {
    let body = toml::to_string(m).map_err(|e| {
        ImportError::Unsupported(format!(
            "{}: cannot write the manifest: {e}",
            path.display()
        ))
    })?;
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut f, pending) = crate::outfile::Pending::create(path).map_err(io)?;
    f.write_all(body.as_bytes())
        .and_then(|()| f.flush())
        .map_err(io)?;
    Ok(pending)
}

/// The output folder, created for this import: the folders it had to create are removed again
/// (when still empty) unless [`OutDir::keep`] is called, so a failed import leaves no folder
/// behind.
pub(super) struct OutDir {
    pub(super) created: Vec<PathBuf>,
}

impl OutDir {
    pub(super) fn create(dir: &Path) -> Result<OutDir, ImportError> {
        let mut created = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() || p.exists() {
                break;
            }
            created.push(p.to_path_buf());
            d = p.parent();
        }
        std::fs::create_dir_all(dir).map_err(|source| ImportError::Io {
            path: dir.into(),
            source,
        })?;
        Ok(OutDir { created })
    }

    pub(super) fn keep(mut self) {
        self.created.clear();
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        // Deepest first; `remove_dir` leaves a folder someone else wrote into.
        for d in &self.created {
            let _ = std::fs::remove_dir(d);
        }
    }
}
