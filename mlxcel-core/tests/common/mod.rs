//! Helpers shared by the integration tests: fresh random inputs with a printed seed
//! (set MLXCEL_TEST_SEED to replay a failure) and tolerance checks.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A generator seeded from MLXCEL_TEST_SEED or from the clock; the seed is printed so a
/// failing run can be replayed.
pub fn rng(test: &str) -> StdRng {
    let seed = std::env::var("MLXCEL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{test}: MLXCEL_TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}

/// `n` samples, roughly standard normal (sum of uniforms: no extra crate needed).
pub fn randn(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| (0..4).map(|_| rng.gen::<f32>()).sum::<f32>() * 1.732 - 3.464)
        .collect()
}

/// `n` samples in `[lo, hi)`.
pub fn uniform(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

/// Asserts |got - want| <= atol + rtol * |want| elementwise.
#[track_caller]
pub fn assert_close(got: &[f32], want: &[f32], atol: f32, rtol: f32) {
    assert_eq!(got.len(), want.len(), "length differs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "element {i}: got {g}, want {w} (atol {atol}, rtol {rtol})"
        );
    }
}

/// Row-major matmul of [m,k] x [k,n].
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
            }
        }
    }
    c
}

/// Asserts ‖got − want‖ / ‖want‖ <= tol (for results whose per-element error depends on
/// the backend's arithmetic, e.g. TF32 matmuls on the GPU).
#[track_caller]
pub fn assert_rel_norm(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length differs");
    let num: f64 = got
        .iter()
        .zip(want)
        .map(|(g, w)| ((g - w) as f64).powi(2))
        .sum();
    let den: f64 = want.iter().map(|w| (*w as f64).powi(2)).sum();
    let rel = (num / den.max(1e-30)).sqrt() as f32;
    assert!(rel <= tol, "relative error {rel} > {tol}");
}

/// Tolerance for f32 matrix products: MLX's CUDA backend runs them in TF32 (about
/// 3e-4 relative), the CPU backend in full f32.
pub fn f32_matmul_tol() -> f32 {
    if mlxcel_core::mlx::device::gpu_available() {
        2e-3
    } else {
        1e-5
    }
}

/// sqrt(mean((a - b)^2) / mean(b^2)) of two 4-d arrays: the parity metric of the
/// attention paths.
pub fn rel_rms(a: &mlxcel_core::Array, b: &mlxcel_core::Array) -> f32 {
    let mean_sq = |x: &mlxcel_core::Array| {
        x.astype(mlxcel_core::Dtype::F32)
            .unwrap()
            .square()
            .unwrap()
            .mean(&[0, 1, 2, 3], false)
            .unwrap()
            .item::<f32>()
            .unwrap()
    };
    (mean_sq(&a.subtract(b).unwrap()) / mean_sq(b)).sqrt()
}

/// Whether a 4-d array holds any NaN: the fused kernels' outputs are poisoned with NaN
/// (MLX's init value), so an unwritten element shows as one.
pub fn has_nan(a: &mlxcel_core::Array) -> bool {
    a.isnan()
        .unwrap()
        .any(&[0, 1, 2, 3], false)
        .unwrap()
        .item::<bool>()
        .unwrap()
}

/// `values` as an fp16 array of `shape`.
pub fn f16_array(values: &[f32], shape: &[i32]) -> mlxcel_core::Array {
    mlxcel_core::Array::from_slice(values, shape)
        .unwrap()
        .astype(mlxcel_core::Dtype::F16)
        .unwrap()
}

/// Sets `MLXCEL_*` switches for this process (on = "1", off = "0") and has mlxcel read them
/// again: flags are kept after their first read.
pub fn set_flags(switches: &[(&str, bool)]) {
    for (name, on) in switches {
        std::env::set_var(name, if *on { "1" } else { "0" });
    }
    mlxcel_core::flags::reload();
}

/// Unsets `MLXCEL_*` switches (back to their defaults), likewise re-read.
pub fn clear_flags(names: &[&str]) {
    for name in names {
        std::env::remove_var(name);
    }
    mlxcel_core::flags::reload();
}
