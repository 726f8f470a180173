//! `mlxcel bench attention` (and `bench gemv`'s option checks) on the CPU: a small sweep writes a CSV and a markdown table with a
//! row per (shape, context, mode, path), the fp16 SDPA row first in each group, and values the
//! columns promise (positive times, ratios of 1 for the SDPA row); bad values of its options
//! fail before any measurement with an error naming the option. On the CPU every mode takes a
//! split path; the fused kernels' rows come from the GPU runs in `benchmarks/results/`.

use std::process::Command;

use mlxcel_core::mlx::kernel::KernelBackend;

fn bench(args: &[&str]) -> std::process::Output {
    bench_what("attention", args)
}

fn bench_what(what: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(["bench", what])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn small_sweep_writes_both_tables() {
    let dir = std::env::temp_dir().join(format!("mlxcel-bench-attn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = bench(&[
        "--contexts",
        "128,200",
        "--modes",
        "fp16,turbo4,turbo4-asym",
        "--shapes",
        "4:2:64",
        "--split-modes",
        "turbo4",
        "--iters",
        "2",
        "--copy-mib",
        "8",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), 12, "{header:?}");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Per context: the SDPA row, then one row per mode (CPU: each mode's split path).
    assert_eq!(rows.len(), 2 * 4, "{csv}");
    for group in rows.chunks(4) {
        assert_eq!(group[0][col("path")], "mlx-sdpa", "{csv}");
        assert_eq!(group[0][col("speedup_vs_mlx_fp16_sdpa")], "1.000");
        assert_eq!(group[0][col("speedup_pipelined")], "1.000");
        let modes: Vec<&str> = group.iter().map(|r| r[col("mode")]).collect();
        assert_eq!(modes, ["fp16", "fp16", "turbo4", "turbo4-asym"], "{csv}");
        for r in group {
            assert_eq!(r.len(), header.len(), "{r:?}");
            for c in [
                "time_us",
                "speedup_vs_mlx_fp16_sdpa",
                "pipelined_us",
                "speedup_pipelined",
            ] {
                let v: f64 = r[col(c)].parse().unwrap();
                assert!(v > 0.0 && v.is_finite(), "{c} = {v} in {r:?}");
            }
            let (t, h): (f64, f64) = (
                r[col("time_us")].parse().unwrap(),
                r[col("host_build_us")].parse().unwrap(),
            );
            assert!(
                h >= 0.0 && h < t,
                "host build {h} within the call's {t} us: {r:?}"
            );
        }
        // The compressed modes' byte counts are below fp16's.
        let bytes: Vec<usize> = group
            .iter()
            .map(|r| r[col("bytes")].parse().unwrap())
            .collect();
        assert!(bytes[2] < bytes[3] && bytes[3] < bytes[0], "{bytes:?}");
    }
    // Off CUDA the run says why no row is fused and that the defaults are sized for a GPU.
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    assert_eq!(err.contains("not on CUDA"), !on_cuda, "{err}");
    let md = std::fs::read_to_string(dir.join("results.md")).unwrap();
    assert!(md.starts_with("Copy roofline (8 MiB"), "{md}");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| 4:2:64 |")).count(),
        8,
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_options_name_themselves() {
    for (args, says) in [
        (vec!["--shapes", "32:8"], "--shapes: \"32:8\" has 2 fields"),
        (
            vec!["--shapes", "28:8:128"],
            "not a multiple of its 8 KV heads",
        ),
        (
            vec!["--modes", "fp16,turbo5"],
            "invalid argument to --modes: unknown mode 'turbo5'",
        ),
        (vec!["--contexts", "0"], "--contexts"),
        (vec!["--iters", "0"], "--iters"),
        (vec!["--copy-mib", "5000"], "--copy-mib"),
    ] {
        fails_before_measuring("attention", &args, says);
    }
}

#[test]
fn gemv_bad_options_name_themselves() {
    for (args, says) in [
        (vec!["--iters", "0"], "--iters: at least 1"),
        (vec!["--model", "4096:14336"], "--model \"4096:14336\""),
        (vec!["--group", "7"], "--group 7"),
        (vec!["--schedules", "ring:x"], "\"ring:x\""),
    ] {
        fails_before_measuring("gemv", &args, says);
    }
}

/// `mlxcel bench WHAT ARGS` exits with status 1 and an error containing `says`, without a panic
/// and before measuring anything (no copy roofline printed).
fn fails_before_measuring(what: &str, args: &[&str], says: &str) {
    let out = bench_what(what, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.contains(says) && !err.contains("panicked"),
        "{args:?}: {err}"
    );
    assert!(
        !err.contains("copy roofline:"),
        "{args:?} measured before failing: {err}"
    );
}
