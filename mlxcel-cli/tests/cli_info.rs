//! The `mlxcel` binary end to end: `info` in text and JSON, and clean failures.

use std::process::Command;

fn mlxcel(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(args)
        .output()
        .expect("mlxcel runs")
}

#[test]
fn info_json_describes_the_loaded_library() {
    let out = mlxcel(&["info", "--json", "--kernel-check"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["mlx_version"], "0.32.4");
    assert!(v["libmlx_path"].as_str().unwrap().contains("libmlx"));
    let backend = v["backend"].as_str().unwrap();
    assert!(["cpu", "cuda", "metal"].contains(&backend), "{backend}");
    let gpus = v["gpu_count"].as_i64().unwrap();
    assert_eq!(v["gpu_available"].as_bool().unwrap(), gpus > 0);
    let status = v["kernel_check"]["status"].as_str().unwrap();
    if backend == "cpu" {
        assert!(status.starts_with("unavailable"), "{status}");
    } else {
        assert_eq!(status, "passed");
    }
}

#[test]
fn info_lists_every_switch_with_its_value_here() {
    let out = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(["info", "--json"])
        .env("MLXCEL_FUSED_QMV", "0")
        .env_remove("MLXCEL_FUSED_DECODE")
        .output()
        .expect("mlxcel runs");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let switches = v["switches"].as_array().expect("a switches list");
    let find = |name: &str| {
        switches
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from {switches:?}"))
    };
    assert_eq!(find("MLXCEL_FUSED_QMV")["enabled"], false);
    assert_eq!(find("MLXCEL_FUSED_QMV")["from_env"], true);
    assert_eq!(find("MLXCEL_FUSED_DECODE")["enabled"], true);
    assert_eq!(find("MLXCEL_FUSED_DECODE")["from_env"], false);
    assert_eq!(find("MLXCEL_FUSED_FP16")["enabled"], false);
    assert!(switches
        .iter()
        .all(|s| !s["doc"].as_str().unwrap().is_empty()));
}

#[test]
fn info_text_names_backend_and_library() {
    let out = mlxcel(&["info"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("backend") && text.contains("libmlx") && text.contains("0.32.4"),
        "{text}"
    );
}

#[test]
fn unknown_subcommand_fails_with_usage() {
    let out = mlxcel(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}
