//! Output files: written atomically (a temporary file beside the target, then a rename), so a
//! failed run leaves nothing half-written — except when the target is not a regular file
//! (`/dev/null`, `/dev/stdout`, a FIFO, a terminal): renaming over those would replace the
//! device with a regular file, so they are written in place.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// True when `path` exists and is neither a regular file nor a directory (it follows
/// symbolic links: `/dev/stdout` is the pipe or terminal behind it).
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The temporary file beside `path` that an atomic write of it goes through.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Open `path` for writing: the file to write, and the temporary path to rename onto `path`
/// once complete ([`commit`]) — `None` when `path` is special and is written in place.
pub fn create(path: &Path) -> io::Result<(File, Option<PathBuf>)> {
    if is_special(path) {
        return Ok((File::options().write(true).open(path)?, None));
    }
    let tmp = temp_path(path);
    Ok((File::create(&tmp)?, Some(tmp)))
}

/// Finish a write begun by [`create`]: rename the temporary file onto `path` (or, on error,
/// remove it).
pub fn commit(tmp: Option<PathBuf>, path: &Path) -> io::Result<()> {
    match tmp {
        None => Ok(()),
        Some(tmp) => std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        }),
    }
}

/// A write begun by [`create`] that removes its temporary file if dropped before
/// [`Pending::commit`]: for writers with many ways to fail (each `?` cleans up).
#[derive(Debug)]
pub struct Pending {
    tmp: Option<PathBuf>,
    path: PathBuf,
}

impl Pending {
    /// Begin writing `path`: the file to write, and the guard that finishes it.
    pub fn create(path: &Path) -> io::Result<(File, Pending)> {
        let (f, tmp) = create(path)?;
        Ok((
            f,
            Pending {
                tmp,
                path: path.to_path_buf(),
            },
        ))
    }

    /// Rename the complete file onto its path (see [`commit`]).
    pub fn commit(mut self) -> io::Result<()> {
        commit(self.tmp.take(), &self.path)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Write `bytes` to `path` atomically (in place when `path` is special).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (mut f, tmp) = create(path)?;
    let written = f.write_all(bytes).and_then(|()| f.flush());
    if let Err(e) = written {
        if let Some(tmp) = tmp {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e);
    }
    drop(f);
    commit(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_written_in_place_not_renamed_over() {
        // Through a symbolic link to /dev/null, so that a regression replaces the link in the
        // temporary folder, not the machine's /dev/null.
        let null = Path::new("/dev/null");
        if std::fs::metadata(null).map_or(true, |m| m.is_file()) {
            return;
        }
        let dir = std::env::temp_dir().join(format!("ccreplay-outfile-dev-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("null");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(null, &link).unwrap();
        assert!(is_special(&link));
        write_atomic(&link, b"discarded\n").unwrap();
        let (mut f, tmp) = create(&link).unwrap();
        assert!(tmp.is_none());
        f.write_all(b"discarded\n").unwrap();
        commit(tmp, &link).unwrap();
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(m.file_type().is_symlink(), "the link was renamed over");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn regular_files_are_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("ccreplay-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.txt");
        std::fs::write(&p, b"old contents, longer than the new").unwrap();
        assert!(!is_special(&p));
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert!(!temp_path(&p).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
