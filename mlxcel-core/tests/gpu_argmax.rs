//! The greedy token's argmax kernel (`MLXCEL_FAST_ARGMAX`, `kernels::argmax`,
//! `cuda/argmax.cu`) against MLX's argmax on fresh random logits. On the GPU host every case
//! must give MLX's index exactly, for fp16, bf16 and f32 rows of several lengths (one CTA, a
//! partial last CTA, Llama-3's and Qwen2's vocabularies), with planted ties (the lowest index
//! wins), -0 against +0, NaN (the first NaN wins: MLX 0.32.4, as numpy), +inf twice, and rows
//! with nothing above -inf (MLX answers 0, or the first NaN's index). Consecutive calls reuse one slot's accumulator and ticket, so a reset that
//! failed would show in the next case. On the CPU (CI) the kernel is never offered.

mod common;

use common::{randn, rng};
use mlxcel_core::kernels::argmax::try_argmax_token;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::{Array, Dtype};
use rand::Rng;

/// The cases of one row length: (name, values).
fn cases(r: &mut rand::rngs::StdRng, n: usize) -> Vec<(&'static str, Vec<f32>)> {
    let base = randn(r, n);
    let mut out = vec![("random", base.clone())];
    // The maximum planted twice: the lower index must win.
    let (i, j) = (r.gen_range(0..n), r.gen_range(0..n));
    let mut tie = base.clone();
    tie[i] = 9.0;
    tie[j] = 9.0;
    out.push(("tie", tie));
    // The maximum at the last index and at index 0.
    let mut last = base.clone();
    last[n - 1] = 9.0;
    out.push(("last", last));
    let mut first = base.clone();
    first[0] = 9.0;
    out.push(("first", first));
    // Everything negative but one -0 and one +0 (equal: the lower index wins).
    let mut zeros: Vec<f32> = base.iter().map(|v| -1.0 - v.abs()).collect();
    zeros[j] = -0.0;
    zeros[i] = 0.0;
    out.push(("signed zeros", zeros));
    // NaN: the first one wins, wherever it is.
    let mut nan = base.clone();
    nan[i] = f32::NAN;
    nan[j] = f32::NAN;
    out.push(("nan", nan));
    let mut nan0 = base.clone();
    nan0[0] = f32::NAN;
    out.push(("nan at 0", nan0));
    // +inf twice.
    let mut inf = base.clone();
    inf[j] = f32::INFINITY;
    inf[i] = f32::INFINITY;
    out.push(("inf", inf));
    // Nothing above -inf: MLX answers index 0; with a NaN, the NaN's index.
    out.push(("all -inf", vec![f32::NEG_INFINITY; n]));
    let mut none = vec![f32::NEG_INFINITY; n];
    none[i] = f32::NAN;
    out.push(("all -inf and a nan", none));
    out
}

#[test]
fn argmax_kernel_gives_mlx_argmax_or_is_not_offered() {
    let mut r = rng("argmax_kernel_gives_mlx_argmax_or_is_not_offered");
    common::set_flags(&[("MLXCEL_FAST_ARGMAX", true)]);
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let mut checked = 0;
    for n in [1usize, 7, 2048, 2049, 128_256, 151_936] {
        for (name, values) in cases(&mut r, n) {
            for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32] {
                let x = Array::from_slice(&values, &[1, 1, n as i32])
                    .unwrap()
                    .astype(dtype)
                    .unwrap();
                let got = try_argmax_token(&x).unwrap();
                if !on_cuda {
                    assert!(got.is_none(), "the kernel must not be offered off CUDA");
                    continue;
                }
                let got = got
                    .expect("the kernel must apply to one row on CUDA")
                    .to_vec::<u32>()
                    .unwrap();
                let want = x
                    .argmax(&[-1], false)
                    .unwrap()
                    .reshape(&[1])
                    .unwrap()
                    .to_vec::<u32>()
                    .unwrap();
                assert_eq!(got, want, "n {n}, {name}, {dtype:?}");
                checked += 1;
            }
        }
    }
    // Several rows are not the kernel's: the caller keeps MLX's argmax.
    let two = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert!(try_argmax_token(&two).unwrap().is_none());
    common::clear_flags(&["MLXCEL_FAST_ARGMAX"]);
    if on_cuda {
        eprintln!("argmax: {checked} rows equal to MLX's argmax");
        assert_eq!(checked, 6 * 10 * 3);
    }
}
