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

/// Remove the temporary files of `path` that a killed run left (`.NAME.tmp-PID` of a process
/// that no longer runs; where the system cannot tell, ones older than an hour). Best effort:
/// a file that cannot be removed is left.
pub fn remove_stale_temps(path: &Path) {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = file
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || process_runs(pid, &e.path()) {
            continue;
        }
        let _ = std::fs::remove_file(e.path());
    }
}

/// True when process `pid` may still be writing `file`.
fn process_runs(pid: u32, file: &Path) -> bool {
    let proc = Path::new("/proc");
    if proc.is_dir() {
        return proc.join(pid.to_string()).exists();
    }
    std::fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age < std::time::Duration::from_secs(3600))
}

/// Write several files as one: every one to its temporary file first, then each renamed onto
/// its path, so a failure (a full disk) leaves all the old files, never a new capture beside
/// an old manifest. Paths that are special files are written in place.
pub fn write_all_atomic(files: &[(&Path, &[u8])]) -> io::Result<()> {
    let mut staged: Vec<Pending> = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let (mut f, pending) = Pending::create(path)?;
        f.write_all(bytes)?;
        f.flush()?;
        staged.push(pending);
    }
    for p in staged {
        p.commit()?;
    }
    Ok(())
}

/// Open `path` for writing: the file to write, and the temporary path to rename onto `path`
/// once complete ([`commit`]) — `None` when `path` is special and is written in place.
pub fn create(path: &Path) -> io::Result<(File, Option<PathBuf>)> {
    if is_special(path) {
        return Ok((File::options().write(true).open(path)?, None));
    }
    remove_stale_temps(path);
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
    fn temporary_files_of_dead_runs_are_removed() {
        let dir =
            std::env::temp_dir().join(format!("ccreplay-outfile-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("g.jsonl");
        // A pid above the kernel's pid_max (2^22) runs nowhere.
        let dead = dir.join(".g.jsonl.tmp-4194305");
        let ours = temp_path(&p);
        let other = dir.join(".h.jsonl.tmp-4194305");
        for f in [&dead, &other] {
            std::fs::write(f, b"cut").unwrap();
        }
        write_atomic(&p, b"whole").unwrap();
        assert!(!dead.exists(), "a killed run's temporary file stayed");
        assert!(other.exists(), "another file's temporary file was removed");
        assert!(!ours.exists());
        if Path::new("/proc").is_dir() {
            // A live process's (our parent's) file is kept.
            let live = dir.join(format!(
                ".g.jsonl.tmp-{}",
                std::os::unix::process::parent_id()
            ));
            std::fs::write(&live, b"busy").unwrap();
            write_atomic(&p, b"again").unwrap();
            assert!(live.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_files_are_all_old_or_all_new() {
        let dir = std::env::temp_dir().join(format!("ccreplay-outfile-all-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("t.pcap"), dir.join("t.toml"));
        std::fs::write(&a, b"old pcap").unwrap();
        std::fs::write(&b, b"old toml").unwrap();
        // The second file cannot be created (its folder is missing): nothing changes.
        let missing = dir.join("no/such/t.json");
        let e = write_all_atomic(&[(&a, b"new pcap"), (&b, b"new toml"), (&missing, b"x")]);
        assert!(e.is_err());
        assert_eq!(std::fs::read(&a).unwrap(), b"old pcap");
        assert_eq!(std::fs::read(&b).unwrap(), b"old toml");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "temporary files left: {left:?}");
        write_all_atomic(&[(&a, b"new pcap"), (&b, b"new toml")]).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new pcap");
        assert_eq!(std::fs::read(&b).unwrap(), b"new toml");
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
