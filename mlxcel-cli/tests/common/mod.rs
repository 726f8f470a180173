//! Helpers shared by the CLI tests.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the `mlxcel` binary with `args`, writing `stdin` (if any) to its standard input and
/// closing it, and returns what it printed.
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
