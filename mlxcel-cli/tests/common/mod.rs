//! Helpers shared by the CLI tests.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs the `mlxcel` binary with `args`, writing `stdin` (if any) to its standard input and
/// closing it, and returns what it printed.
#[allow(dead_code)] // every test crate compiles this module; each uses only part of it
pub fn mlxcel_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// An empty directory of its own for one test: `<temp>/mlxcel-<name>-<pid>`, removed first so a
/// rerun never sees an earlier run's files, and keyed by process id so test binaries running at
/// the same time never share one.
#[allow(dead_code)] // every test crate compiles this module; each uses only part of it
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlxcel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}
