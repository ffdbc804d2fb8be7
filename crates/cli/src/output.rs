//! Output files that never lose data: checked before any work starts (a directory, the input
//! file itself, an existing file without `--force`, a place that cannot be written), then
//! written whole to a temporary file beside the target, synced, and renamed over it — so a
//! killed or size-limited run leaves the old file (or none), never a truncated one.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// A destination checked up front.
pub struct OutputFile {
    path: PathBuf,
    dir: PathBuf,
    /// Replace an existing file (else the final rename refuses to, even if one appeared since).
    overwrite: bool,
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl OutputFile {
    /// Checks that `path` can take the output: `flag` names it in messages; `inputs` are files
    /// the run reads, which it must never replace.
    pub fn prepare(path: &Path, flag: &str, overwrite: bool, inputs: &[&Path]) -> Result<Self> {
        if path.as_os_str().is_empty() {
            bail!("{flag} is empty; give a file name");
        }
        if path.is_dir() {
            bail!("{flag} {} is a directory; give a file name inside it", path.display());
        }
        for input in inputs {
            if same_file(path, input) {
                bail!("{flag} {} is the input file; writing there would destroy it: choose another {flag}", path.display());
            }
        }
        if path.exists() && !overwrite {
            bail!("{} already exists; pass --force to replace it, or choose another {flag}", path.display());
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A trial file where the real one will go: permissions, read-only or special file
        // systems and missing folders fail here, before the work.
        if let Err(e) = NamedTempFile::new_in(&dir) {
            // tempfile's error names its random file; the OS reason is what matters.
            let reason = e.raw_os_error().map_or(e.to_string(), |code| std::io::Error::from_raw_os_error(code).to_string());
            bail!("{flag} {}: cannot create files in {}: {reason}", path.display(), dir.display());
        }
        Ok(Self { path: path.to_path_buf(), dir, overwrite })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `write`'s output atomically: temporary file, fsync, rename, fsync of the folder.
    pub fn write_with(&self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let tmp = NamedTempFile::new_in(&self.dir).with_context(|| format!("creating a file in {}", self.dir.display()))?;
        write(tmp.path())?;
        // Temporary files are created owner-only; outputs are ordinary files (rw-r--r--, as
        // `std::fs::write` under the usual umask would leave them).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .with_context(|| format!("setting permissions of {}", tmp.path().display()))?;
        }
        tmp.as_file().sync_all().with_context(|| format!("syncing {}", tmp.path().display()))?;
        let persisted = if self.overwrite { tmp.persist(&self.path) } else { tmp.persist_noclobber(&self.path) };
        persisted.map_err(|e| e.error).with_context(|| format!("writing {}", self.path.display()))?;
        // The rename itself is durable once the folder is synced (not possible everywhere).
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Writes `bytes` atomically.
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        self.write_with(|tmp| {
            let mut f = std::fs::OpenOptions::new().write(true).open(tmp)?;
            f.write_all(bytes).with_context(|| format!("writing {} bytes for {}", bytes.len(), self.path.display()))?;
            f.flush()?;
            Ok(())
        })
    }
}
