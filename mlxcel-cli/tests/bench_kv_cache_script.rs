//! `benchmarks/bench_kv_cache.sh` end to end on a tiny synthetic model (CPU): every run of
//! the sweep lands in `sweep.csv`, `summary.md` has a row per mode with the ratio to fp16,
//! and the compressed modes' KV caches are smaller than fp16's (what the sweep exists to
//! show next to the speed). Bad options are refused with a message.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benchmarks/bench_kv_cache.sh")
}

#[test]
fn the_sweep_records_every_run_and_the_compression() {
    let dir = common::fresh_dir("kv-sweep");
    let cfg = dir.join("config.json");
    std::fs::write(
        &cfg,
        serde_json::json!({
            "model_type": "llama", "architectures": ["LlamaForCausalLM"],
            "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
            "vocab_size": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "max_position_embeddings": 4096, "tie_word_embeddings": true
        })
        .to_string(),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = Command::new("bash")
        .arg(script())
        .args(["--bin", env!("CARGO_BIN_EXE_mlxcel")])
        .args(["--model", &format!("synthetic:{}", cfg.display())])
        .args(["--modes", "fp16,int8,turbo4", "--contexts", "64"])
        .args(["--tokens", "8", "--repeats", "2"])
        .args(["--out", out_dir.to_str().unwrap()])
        .env("MLXCEL_KV_BOUNDARY_LAYERS", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("[6/6]"), "{stdout}");

    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(rows.len(), 6, "{csv}");
    let kv_mb = |mode: &str| -> f64 {
        rows.iter()
            .find(|r| r[col("config")] == mode)
            .map(|r| r[col("kv MB")].parse().unwrap())
            .unwrap()
    };
    for mode in ["fp16", "int8", "turbo4"] {
        let n = rows.iter().filter(|r| r[col("config")] == mode).count();
        assert_eq!(n, 2, "{mode}: {csv}");
    }
    assert!(rows.iter().all(|r| r[col("prompt_fill")] == "random-kv"));
    assert!(rows
        .iter()
        .all(|r| r[col("tok/s")].parse::<f64>().unwrap() > 0.0));
    // int8 stores a byte per value plus a scale, turbo4 half a byte plus a norm.
    assert!(kv_mb("int8") < 0.6 * kv_mb("fp16"), "{csv}");
    assert!(kv_mb("turbo4") < 0.35 * kv_mb("fp16"), "{csv}");

    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| 64 | fp16 | 2 | 1.00x |"), "{summary}");
    for mode in ["int8", "turbo4"] {
        assert!(
            summary.contains(&format!("| 64 | {mode} | 2 |")),
            "{summary}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    for (args, says) in [
        (
            vec!["--fill", "prefill"],
            "--fill must be random-kv or model",
        ),
        (vec!["--contexts", "4k"], "'4k' is not a positive integer"),
        (vec!["--tokens", "2"], "at least 4"),
        (vec!["--frobnicate"], "unknown option '--frobnicate'"),
    ] {
        let out = Command::new("bash")
            .arg(script())
            .args(["--bin", env!("CARGO_BIN_EXE_mlxcel")])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
