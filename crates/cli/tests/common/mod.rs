//! What the `whir` command's tests share: running it, reading what it said, a temporary folder.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `whir` with `args` and `env` set (no adapter chosen by the caller's environment).
pub fn whir_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_whir"));
    cmd.args(args).env("XDG_RUNTIME_DIR", std::env::temp_dir()).env_remove("WHIR_ADAPTER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run whir")
}

/// Runs `whir` with `args`.
pub fn whir(args: &[&str]) -> Output {
    whir_env(args, &[])
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit status 1 with an `error:` line: a handled error, not a panic (101) or a crash.
pub fn assert_clean_error(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert!(err.contains("error: ") && !err.contains("panicked"), "{what}: {err}");
    err
}

/// A folder of its own under the system's temporary folder, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("whir-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
