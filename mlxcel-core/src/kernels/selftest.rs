//! A tiny kernel (`out = a * alpha + b`) that proves the custom-kernel path works on the
//! loaded backend: it is built through the cached wrapper, JIT-compiled by MLX, run for
//! f32, f16 and bf16 inputs and compared against the same math done with MLX ops.
//! `mlxcel info --kernel-check` runs it; the GPU test suite runs it on the H200.

use crate::error::{Error, Result};
use crate::mlx::kernel::{cached, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{random, Array, Dtype};

const CUDA_BODY: &str = include_str!("cuda/selftest_axpy.cu");
const METAL_BODY: &str = include_str!("metal/selftest_axpy.metal");

/// The kernel's description for `backend`.
pub fn source(backend: KernelBackend) -> KernelSource {
    let body = match backend {
        KernelBackend::Cuda => CUDA_BODY,
        KernelBackend::Metal => METAL_BODY,
    };
    KernelSource::new("mlxcel_selftest_axpy", &["a", "b", "alpha"], &["out"], body)
}

/// `a * alpha + b` through the custom kernel.
pub fn axpy(backend: KernelBackend, a: &Array, b: &Array, alpha: f32) -> Result<Array> {
    let n = a.size() as i32;
    let alpha = Array::from_slice(&[alpha], &[1])?;
    let kernel = cached(backend, &source(backend))?;
    let launch = Launch::new(&[a, b, &alpha], [n, 1, 1], [256, 1, 1])
        .output(&a.shape(), a.dtype())
        .template("N", TemplateArg::Int(n));
    kernel
        .call(&launch)?
        .pop()
        .ok_or_else(|| Error::invalid("selftest", "kernel returned no output"))
}

/// One dtype's result.
#[derive(Debug, Clone)]
pub struct DtypeCheck {
    pub dtype: Dtype,
    pub elements: usize,
    /// max |kernel - reference| over elements.
    pub max_abs_err: f32,
    pub passed: bool,
}

/// Runs the kernel on fresh random data for f32, f16 and bf16 (tolerance: one rounding
/// of the output type relative to the magnitude).
pub fn run(backend: KernelBackend, elements: usize) -> Result<Vec<DtypeCheck>> {
    let key = random::key(
        std::time::UNIX_EPOCH
            .elapsed()
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7),
    )?;
    let keys = random::split(&key, 2)?;
    let mut out = Vec::new();
    for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
        let n = elements as i32;
        let a = random::normal(
            &[n],
            Dtype::F32,
            Some(&keys.slice_axis(0, 0, 1)?.squeeze(&[0])?),
        )?
        .astype(dtype)?;
        let b = random::normal(
            &[n],
            Dtype::F32,
            Some(&keys.slice_axis(0, 1, 2)?.squeeze(&[0])?),
        )?
        .astype(dtype)?;
        let alpha = 1.75f32;
        let got = axpy(backend, &a, &b, alpha)?.to_f32_vec()?;
        let a32 = a.to_f32_vec()?;
        let b32 = b.to_f32_vec()?;
        let tol = match dtype {
            Dtype::F32 => 1e-6,
            Dtype::F16 => 1e-3,
            _ => 8e-3,
        };
        let mut max_abs = 0f32;
        let mut ok = got.len() == a32.len();
        for ((g, x), y) in got.iter().zip(&a32).zip(&b32) {
            let want = x * alpha + y;
            let err = (g - want).abs();
            max_abs = max_abs.max(err);
            // NaN-safe: a NaN error fails the check.
            if err.is_nan() || err > tol * want.abs().max(1.0) {
                ok = false;
            }
        }
        out.push(DtypeCheck {
            dtype,
            elements,
            max_abs_err: max_abs,
            passed: ok,
        });
    }
    Ok(out)
}
