//! Output files that never lose data: checked before any work starts (a directory, a symbolic
//! link or a special file, the input file itself, an existing file without `--force`, a name or
//! a place that cannot be written), then written whole to a temporary file beside the target
//! (named `.<target>.<random>.partial`), synced, and renamed over it — so a killed or
//! size-limited run leaves the old file (or none), never a truncated one. Files are created with
//! the process's umask, as any other program's.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// A destination checked up front.
pub struct OutputFile {
    path: PathBuf,
    dir: PathBuf,
    /// Replace an existing file at the final rename (else it refuses to, even if one appeared
    /// since the check). Set after the first write: a report rewritten as it grows replaces
    /// its own earlier version.
    overwrite: Cell<bool>,
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The OS's words for an I/O error, without the paths libraries wrap around it (tempfile names
/// its random file, which the user never sees).
fn os_reason(e: &std::io::Error) -> String {
    let reason = e.raw_os_error().map_or(e.to_string(), |code| std::io::Error::from_raw_os_error(code).to_string());
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::EFBIG) {
        return format!("{reason}: a file-size limit (`ulimit -f`) or the file system refuses a file this large");
    }
    reason
}

/// What a non-regular file is, in words.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_fifo() {
            return "a named pipe";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    let _ = file_type;
    "not a regular file"
}

impl OutputFile {
    /// Checks that `path` can take the output: `flag` names it in messages; `inputs` are files
    /// the run reads, which it must never replace.
    pub fn prepare(path: &Path, flag: &str, overwrite: bool, inputs: &[&Path]) -> Result<Self> {
        if path.as_os_str().is_empty() {
            bail!("{flag} is empty; give a file name");
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_else(|_| "?".into());
                bail!(
                    "{flag} {} is a symbolic link (to {target}); outputs replace the file they are given, which would replace the link itself: give the path of a regular file",
                    path.display()
                );
            }
            Ok(meta) if meta.is_dir() => bail!("{flag} {} is a directory; give a file name inside it", path.display()),
            Ok(meta) if !meta.is_file() => bail!(
                "{flag} {} is {}, not a regular file; outputs are written only to regular files (--force does not change that): give a file name",
                path.display(),
                kind_of(meta.file_type())
            ),
            Ok(_) => {
                for input in inputs {
                    if same_file(path, input) {
                        bail!("{flag} {} is the input file; writing there would destroy it: choose another {flag}", path.display());
                    }
                }
                if !overwrite {
                    bail!("{} already exists; pass --force to replace it, or choose another {flag}", path.display());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("{flag} {}: cannot inspect it: {}", path.display(), os_reason(&e)),
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let out = Self { path: path.to_path_buf(), dir, overwrite: Cell::new(overwrite) };
        // A trial file where the real one will go: permissions, read-only or special file
        // systems and missing folders fail here, before the work.
        if let Err(e) = out.temp_file() {
            bail!("{flag} {}: cannot create files in {}: {}", path.display(), out.dir.display(), os_reason(&e));
        }
        // And the name itself, where no file has it yet (too long, not valid here): created
        // exclusively, so it is ours to remove at once.
        if !path.exists() {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(_) => {
                    let _ = std::fs::remove_file(path);
                }
                Err(e) => bail!("{flag} {}: cannot create it: {}", path.display(), os_reason(&e)),
            }
        }
        Ok(out)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A temporary file beside the target, named after it, created with mode 0666 less the umask.
    fn temp_file(&self) -> std::io::Result<tempfile::NamedTempFile> {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Keep the temporary name within NAME_MAX when the target's name is near it.
        let stem: String = name
            .chars()
            .scan(0, |len, c| {
                *len += c.len_utf8();
                (*len <= 120).then_some(c)
            })
            .collect();
        let prefix = format!(".{stem}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".partial");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        builder.tempfile_in(&self.dir)
    }

    /// Writes `write`'s output atomically: temporary file, fsync, rename, fsync of the folder.
    /// On any failure the temporary file is removed and the target left as it was.
    pub fn write_with(&self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let target = self.path.display();
        let tmp = self.temp_file().map_err(|e| anyhow::anyhow!("writing {target}: cannot create a file in {}: {}", self.dir.display(), os_reason(&e)))?;
        write(tmp.path())?;
        tmp.as_file().sync_all().map_err(|e| anyhow::anyhow!("writing {target}: {}; nothing was written", os_reason(&e)))?;
        let persisted = if self.overwrite.get() { tmp.persist(&self.path) } else { tmp.persist_noclobber(&self.path) };
        if let Err(e) = persisted {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                bail!("{target} appeared while the output was being made; it was not replaced (pass --force to replace it, or choose another name)");
            }
            bail!("writing {target}: {}; nothing was written", os_reason(&e.error));
        }
        self.overwrite.set(true);
        // The rename itself is durable once the folder is synced (not possible everywhere).
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Writes `bytes` atomically.
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        self.write_with(|tmp| {
            let written = std::fs::OpenOptions::new().write(true).open(tmp).and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()));
            written.map_err(|e| anyhow::anyhow!("writing {} bytes to {}: {}; nothing was written", bytes.len(), self.path.display(), os_reason(&e)))
        })
    }

    /// Whether `self` and `other` name the same file (existing or not).
    pub fn same_target(&self, other: &OutputFile) -> bool {
        let absolute = |p: &Path| std::path::absolute(p).ok().map(|a| a.components().collect::<PathBuf>());
        same_file(&self.path, &other.path) || absolute(&self.path).is_some_and(|a| Some(a) == absolute(&other.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("whir-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// A file that appears at the target while the output is made is left alone, and the
    /// message says what happened; the check left nothing behind.
    #[test]
    fn a_file_appearing_during_the_run_is_not_replaced() {
        let d = dir("appeared");
        let target = d.join("p.whir");
        let out = OutputFile::prepare(&target, "--out", false, &[]).unwrap();
        assert!(entries(&d).is_empty(), "the checks left {:?}", entries(&d));
        std::fs::write(&target, b"theirs").unwrap();
        let err = out.write(b"ours").unwrap_err().to_string();
        assert!(err.contains("appeared while the output was being made") && err.contains("--force"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        assert_eq!(entries(&d), ["p.whir"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A report rewritten as it grows replaces its own first version without --force, and its
    /// temporary files are named after it.
    #[test]
    fn a_report_replaces_its_own_earlier_version() {
        let d = dir("report");
        let target = d.join("cells.json");
        let out = OutputFile::prepare(&target, "--json", false, &[]).unwrap();
        out.write(b"[1]").unwrap();
        out.write(b"[1,2]").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"[1,2]");
        let tmp = out.temp_file().unwrap();
        let name = tmp.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".cells.json.") && name.ends_with(".partial"), "{name}");
        drop(tmp);
        assert_eq!(entries(&d), ["cells.json"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
