//! Bad input to `mlxcel generate`: each case exits non-zero with a one-line error that
//! names the file and the problem, and never panics.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use mlxcel_core::mlx::io::save_gguf;
use mlxcel_core::{Array, Dtype};

fn tmp(name: &str) -> PathBuf {
    common::fresh_dir(&format!("cli-bad-{name}"))
}

/// Runs `mlxcel generate --model <model>` and returns its stderr, asserting failure.
fn fails(model: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(["generate", "--max-tokens", "1", "--prompt", "hi", "--model"])
        .arg(model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "should fail: {err}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a clean error exit, not a crash: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let error_lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(error_lines.len(), 1, "one error line: {err}");
    error_lines[0].to_string()
}

fn tiny_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mlxcel-models/tests/fixtures/tiny/llama3")
}

#[test]
fn missing_file() {
    let e = fails(Path::new("/nonexistent/model.gguf"));
    assert!(
        e.contains("/nonexistent/model.gguf") && e.contains("no such file"),
        "{e}"
    );
}

#[test]
fn truncated_gguf() {
    let d = tmp("trunc");
    let p = d.join("model.gguf");
    let w = Array::ones(&[256, 64], Dtype::F32).unwrap();
    save_gguf(
        &p,
        &[("token_embd.weight", &w)],
        &[("general.architecture", "llama")],
        &[],
    )
    .unwrap();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let e = fails(&p);
    assert!(e.contains("model.gguf") && e.contains("truncated"), "{e}");
}

#[test]
fn unknown_architecture() {
    let d = tmp("arch");
    let p = d.join("model.gguf");
    let w = Array::ones(&[4, 32], Dtype::F32).unwrap();
    save_gguf(
        &p,
        &[("token_embd.weight", &w)],
        &[("general.architecture", "mamba")],
        &[],
    )
    .unwrap();
    let e = fails(&p);
    assert!(
        e.contains("model.gguf") && e.contains("mamba") && e.contains("llama, qwen2, qwen3"),
        "{e}"
    );
}

#[test]
fn config_missing_a_field() {
    let d = tmp("cfg");
    let src = tiny_dir();
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    cfg.as_object_mut().unwrap().remove("num_hidden_layers");
    std::fs::write(d.join("config.json"), serde_json::to_string(&cfg).unwrap()).unwrap();
    std::fs::copy(src.join("model.safetensors"), d.join("model.safetensors")).unwrap();
    let e = fails(&d);
    assert!(
        e.contains("config.json") && e.contains("num_hidden_layers"),
        "{e}"
    );
}

#[test]
fn checkpoint_missing_a_tensor() {
    let d = tmp("tensor");
    let src = tiny_dir();
    std::fs::copy(src.join("config.json"), d.join("config.json")).unwrap();
    let f =
        mlxcel_core::mlx::io::TensorFile::load_safetensors(&src.join("model.safetensors")).unwrap();
    let keep: Vec<(String, Array)> = f
        .names()
        .into_iter()
        .filter(|n| n != "model.layers.1.mlp.up_proj.weight")
        .map(|n| {
            let a = f.get(&n).unwrap();
            (n, a)
        })
        .collect();
    let refs: Vec<(&str, &Array)> = keep.iter().map(|(n, a)| (n.as_str(), a)).collect();
    mlxcel_core::mlx::io::save_safetensors(&d.join("model.safetensors"), &refs, &[]).unwrap();
    let e = fails(&d);
    assert!(e.contains("model.layers.1.mlp.up_proj.weight"), "{e}");
}
