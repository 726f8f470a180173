//! `benchmarks/gpu/ncu_attention_table.py` (issue 5's per-call targets by kernel time, ADR 0030)
//! on a made-up ncu export of a `bench attention` run: it must pair each mode with its own
//! launches (the copy roofline first, a setup-time `negative` launch left out, an SDPA baseline
//! of two cuDNN kernels per call, a fused call with and without a separate merge), compute
//! medians, TB/s, the fraction of copy and the ratio to the SDPA, and refuse an export that does
//! not match the bench's rows. The device runs it on real exports (`attention_kernel_times.sh`);
//! here its arithmetic and its pairing are checked where CI can see them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benchmarks/gpu/ncu_attention_table.py")
}

/// One ncu raw-page row: its ID (unused), the kernel's name and its duration in ns.
fn launch(name: &str, ns: u64) -> String {
    format!("\"0\",\"{name}\",\"{ns}\"")
}

const COPY: &str =
    "void mlx::unary_v<mlx::Negative, __half, __half, unsigned int, 8>(const T2 *, T3 *, T4)";
const SETUP_NEGATIVE: &str =
    "void mlx::unary_v<mlx::Negative, float, float, unsigned int, 4>(const T2 *, T3 *, T4)";
const SDPA: &str = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35";
const LEAN: &str = "void cudnn::lean_reduction_kernel<0, 0, 0>(void *, float *)";
const INT8: &str = "mlx::custom_kernel_mlxcel_decode_attention_mma_1_1_128_4_f_3_12";
const TURBO4: &str = "mlx::custom_kernel_mlxcel_decode_attention_mma_4_4_128_4_t_5_12";
const MERGE: &str = "mlx::custom_kernel_mlxcel_merge_splits_warp_128_128_t_float1";

/// Writes the export and the bench's results.csv into `dir`; `contexts_in_csv` lets a test
/// list fewer contexts than the launches hold.
fn write_case(dir: &Path, contexts_in_csv: &[usize]) -> (PathBuf, PathBuf) {
    let mut rows = vec![
        "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"".to_string(),
        "\"\",\"\",\"ns\"".to_string(),
    ];
    // The copy roofline: 1 MiB read + written in 1 us at the median (2.097 TB/s).
    for ns in [900, 1000, 5000] {
        rows.push(launch(COPY, ns));
    }
    // 4K: the SDPA (20 + 4 us), int8 folded (10 us), then turbo4 (8 us) after a setup launch.
    for ns in [20_000, 21_000, 19_000] {
        rows.push(launch(SDPA, ns));
        rows.push(launch(LEAN, 4000));
    }
    for ns in [10_000, 11_000, 9_000] {
        rows.push(launch(INT8, ns));
    }
    rows.push(launch(SETUP_NEGATIVE, 300_000));
    for _ in 0..3 {
        rows.push(launch(TURBO4, 8000));
    }
    // 128K: the SDPA (96 + 4 us), int8 (40 + 5 us merge), turbo4 (20 + 5 us merge).
    for _ in 0..3 {
        rows.push(launch(SDPA, 96_000));
        rows.push(launch(LEAN, 4000));
    }
    for (main, ns) in [(INT8, 40_000), (TURBO4, 20_000)] {
        for _ in 0..3 {
            rows.push(launch(main, ns));
            rows.push(launch(MERGE, 5000));
        }
    }
    let ncu = dir.join("ncu.csv");
    std::fs::write(&ncu, rows.join("\n") + "\n").unwrap();
    let bench = dir.join("bench");
    std::fs::create_dir_all(&bench).unwrap();
    let mut csv = String::from("shape,ctx,mode,path,bytes,time_us,host_build_us,tb_per_s,fraction_of_copy,speedup_vs_mlx_fp16_sdpa,pipelined_us,speedup_pipelined\n");
    for &ctx in contexts_in_csv {
        let k = ctx / 4096;
        for (mode, path, bytes) in [
            ("fp16", "mlx-sdpa", 2_400_000),
            ("int8", "fused/mma-v4", 1_200_000),
            ("turbo4", "fused/mma-v4", 600_000),
        ] {
            csv += &format!("32:8:128,{ctx},{mode},{path},{},1,1,1,1,1,1,1\n", bytes * k);
        }
    }
    std::fs::write(bench.join("results.csv"), csv).unwrap();
    (ncu, bench)
}

fn run(ncu: &Path, bench: &Path) -> std::process::Output {
    Command::new("python3")
        .arg(script())
        .args([ncu.as_os_str(), bench.as_os_str()])
        .args(["--copy-mib", "1"])
        .output()
        .unwrap()
}

#[test]
fn each_mode_gets_its_own_launches_and_ratios() {
    let dir = common::fresh_dir("ncu-table");
    let (ncu, bench) = write_case(&dir, &[4096, 131072]);
    let out = run(&ncu, &bench);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 2 x 1 MiB in 1.0 us (the median of 0.9, 1.0 and 5.0).
    assert!(table.contains("= 2.097 TB/s"), "{table}");
    for row in [
        // SDPA at 4K: medians 20 + 4 us; 2.4 MB in 24 us = 0.10 TB/s, 5% of copy.
        "| 4096 | fp16 | MLX SDPA (lean + main) | 24.00 | 0.10 | 5% | 1.00x |",
        // int8 folded: median 10 us; 1.2 MB / 10 us = 0.12 TB/s; 24 / 10.
        "| 4096 | int8 | mma 1_1_128_4 | 10.00 | 0.12 | 6% | 2.40x |",
        // turbo4 after the setup-time negative launch, which must not split or join its group.
        "| 4096 | turbo4 | mma 4_4_128_4 | 8.00 | 0.07 | 4% | 3.00x |",
        "| 131072 | fp16 | MLX SDPA (lean + main) | 100.00 | 0.77 | 37% | 1.00x |",
        "| 131072 | int8 | mma 1_1_128_4 + merge | 45.00 | 0.85 | 41% | 2.22x |",
        "| 131072 | turbo4 | mma 4_4_128_4 + merge | 25.00 | 0.77 | 37% | 4.00x |",
    ] {
        assert!(table.contains(row), "missing {row:?} in\n{table}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_export_of_another_run_is_refused() {
    let dir = common::fresh_dir("ncu-table-bad");
    // The launches hold two contexts, results.csv one.
    let (ncu, bench) = write_case(&dir, &[4096]);
    let out = run(&ncu, &bench);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 contexts in the ncu launches, 1 in results.csv"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
