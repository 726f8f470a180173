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

/// Whether the comma-separated list in the variable `var` names `name` (unset: every name is
/// allowed). The GPU tests take `MLXCEL_PARITY_MODES` and `MLXCEL_PARITY_FLAGS` this way, so
/// that one device call can spend its minutes on the kernels that changed.
pub fn env_list_allows(var: &str, name: &str) -> bool {
    std::env::var(var)
        .map(|only| only.split(',').any(|n| n == name))
        .unwrap_or(true)
}

/// An array's values as their bit patterns widened to u32 (u8, i8, fp16, bf16, f32): for
/// bit-for-bit comparisons of cache buffers and kernel outputs.
pub fn bits(a: &mlxcel_core::Array) -> Vec<u32> {
    use mlxcel_core::Dtype;
    match a.dtype() {
        Dtype::U8 => a
            .to_vec::<u8>()
            .unwrap()
            .into_iter()
            .map(u32::from)
            .collect(),
        Dtype::I8 => a
            .to_vec::<i8>()
            .unwrap()
            .into_iter()
            .map(|b| u32::from(b as u8))
            .collect(),
        Dtype::F16 => a
            .to_vec::<half::f16>()
            .unwrap()
            .into_iter()
            .map(|h| u32::from(h.to_bits()))
            .collect(),
        Dtype::BF16 => a
            .to_vec::<half::bf16>()
            .unwrap()
            .into_iter()
            .map(|h| u32::from(h.to_bits()))
            .collect(),
        Dtype::F32 => a
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect(),
        d => panic!("unexpected dtype {d:?}"),
    }
}

/// A side's stored bits at positions `[0, len)` after its last write ran: its data buffer
/// (turbo codes, int8 values, fp16 keys) and its aux buffer (turbo norms, int8 scales; empty
/// for fp16), each as [`bits`].
pub fn stored_bits(side: &dyn mlxcel_core::kv::side::KvSide, len: i32) -> (Vec<u32>, Vec<u32>) {
    let raw = side
        .raw()
        .expect("turbo, int8 and fp16 sides have raw buffers");
    if let Some(t) = raw.pending {
        t.eval().unwrap();
    }
    let upto = |a: &mlxcel_core::Array| {
        let s = a.shape();
        bits(&a.slice(&[0, 0, 0, 0], &[s[0], s[1], len, s[3]]).unwrap())
    };
    (upto(raw.data), raw.aux.map(upto).unwrap_or_default())
}

/// A cache of `mode` (e.g. turbo4, turbo4-asym, int8, fp16+int8) for heads of `d`, holding
/// `prefill_k` / `prefill_v` (the sides' rotation seeds as the model's caches use them).
pub fn split_cache(
    mode: &str,
    d: usize,
    prefill_k: &mlxcel_core::Array,
    prefill_v: &mlxcel_core::Array,
) -> mlxcel_core::kv::split::SplitKvCache {
    use mlxcel_core::kv::turbo::rotation::{K_SEED, V_SEED};
    let m = mlxcel_core::kv::KvMode::parse(mode).unwrap();
    let mut k = mlxcel_core::kv::mode::new_side(m.k, d, K_SEED).unwrap();
    let mut v = mlxcel_core::kv::mode::new_side(m.v, d, V_SEED).unwrap();
    k.append(prefill_k).unwrap();
    v.append(prefill_v).unwrap();
    mlxcel_core::kv::split::SplitKvCache::new(k, v, mode.into())
}
