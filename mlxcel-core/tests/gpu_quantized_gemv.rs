//! The one-token 4-bit GEMV kernels (`kernels::quantized_gemv`) against a float64 host
//! reference on fresh random data: x fp16, W quantized by MLX (4-bit affine), reference
//! `sum_k x_k W_nk` with W dequantized by MLX in f32. On the GPU host (CUDA libmlx) every
//! shape must stay under a relative RMS of 2e-3 (fp16 output rounding alone is ~3e-4);
//! MLX's own `quantized_matmul` is measured against the same reference and printed for
//! context. On the CPU (CI) it checks the dispatch: the kernels never apply, and calling
//! them returns MLX's error instead of aborting.

mod common;

use common::{f16_array, randn, rng};
use mlxcel_core::flags;
use mlxcel_core::kernels::quantized_gemv::{
    applies, applies_add, applies_silu, gemv, gemv_add, gemv_rms_with, gemv_silu_mul,
    gemv_silu_mul_rms_with, gemv_silu_mul_with, gemv_with, parts_plan, tile_rows16, tile_tables16,
    try_gemv_parts, try_gemv_rms, FoldedNorm, Schedule,
};
use mlxcel_core::mlx::fast::rms_norm;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::ops::{quantize, Quantized};
use mlxcel_core::{Array, Dtype};

const TOL: f64 = 2e-3;

/// Every schedule the GPU tests run: the batched one, the default ring (8:3), ring variants
/// (8:4, the default until session 21; 8:2, the next candidate), and capped grids (CTAs owning several 16-row blocks;
/// a cap of 3 gives uneven block counts per CTA).
fn schedules() -> Vec<Schedule> {
    [
        "batched",
        "ring",
        "ring:8:4",
        "ring:8:2",
        "ring:4:4",
        "ring:8:4:64",
        "ring:8:4:3",
    ]
    .iter()
    .map(|s| Schedule::parse(s).unwrap())
    .collect()
}

/// The other schedules' outputs against the batched schedule's: bit-identical where the
/// warp count is the same (same tiles per lane, same order of accumulation), else within
/// TOL of the float64 reference. `call` runs one schedule.
fn check_schedules(what: &str, want: &[f64], call: &dyn Fn(Schedule) -> Array) {
    let base = call(Schedule::BATCHED);
    let base_bits = base.to_vec::<half::f16>().unwrap();
    for s in schedules().into_iter().skip(1) {
        let y = call(s);
        let e = rel_rms(&y, want);
        assert!(e < TOL, "{what} {s}: relative RMS {e} >= {TOL}");
        let same = y.to_vec::<half::f16>().unwrap() == base_bits;
        eprintln!("{what} {s}: relative RMS {e:.2e}, bit-identical to batched: {same}");
        if s.warps == Schedule::BATCHED.warps {
            assert!(
                same,
                "{what} {s}: not bit-identical to the batched schedule"
            );
        }
    }
}

fn weight(r: &mut rand::rngs::StdRng, n: usize, k: usize, group: i32) -> (Quantized, Vec<f32>) {
    let w: Vec<f32> = randn(r, n * k).iter().map(|v| v * 0.02).collect();
    let w = Array::from_slice(&w, &[n as i32, k as i32]).unwrap();
    let q = quantize(&w.astype(Dtype::F16).unwrap(), group, 4).unwrap();
    let dense = q.dequantize(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    (q, dense)
}

fn reference(x: &[f32], w: &[f32], n: usize, k: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let row = &w[i * k..(i + 1) * k];
            row.iter().zip(x).map(|(a, b)| *a as f64 * *b as f64).sum()
        })
        .collect()
}

/// The SwiGLU half in float64: silu(g) * u per row.
fn silu_mul(g: &[f64], u: &[f64]) -> Vec<f64> {
    g.iter()
        .zip(u)
        .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
        .collect()
}

fn rel_rms(got: &Array, want: &[f64]) -> f64 {
    let got = got.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    let num: f64 = got
        .iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - w).powi(2))
        .sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(1e-300)).sqrt()
}

fn input(r: &mut rand::rngs::StdRng, k: usize) -> (Array, Vec<f32>) {
    let x = Array::from_slice(&randn(r, k), &[1, 1, k as i32])
        .unwrap()
        .astype(Dtype::F16)
        .unwrap();
    let xv = x.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    (x, xv)
}

#[test]
fn gemv_matches_a_float64_reference_or_is_not_used() {
    let mut r = rng("gemv_matches_a_float64_reference_or_is_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    // (N, K, group): Llama-3-8B's stacked qkv, o, down (K = 14336) and a head-like shape,
    // plus small and odd tile counts and the largest K.
    let shapes = [
        (16, 128, 64),
        (48, 384, 32),
        (6144, 4096, 64),
        (4096, 4096, 64),
        (4096, 14336, 64),
        (1024, 14336, 128),
        (256, 20480, 64),
        (8000, 4096, 32),
    ];
    let mut worst: f64 = 0.0;
    // On the CPU only the dispatch is checked: the small shapes suffice (quantizing the
    // large ones with the CPU wheel would only slow CI down).
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[..2] };
    for &(n, k, g) in shapes {
        let (q, dense) = weight(&mut r, n, k, g);
        let (x, xv) = input(&mut r, k);
        let want = reference(&xv, &dense, n, k);
        assert_eq!(applies(&x, &q), on_cuda, "n={n} k={k} g={g}");
        if !on_cuda {
            assert!(gemv(&x, &q).and_then(|y| y.eval()).is_err());
            continue;
        }
        let y = gemv(&x, &q).unwrap();
        assert_eq!(y.shape(), vec![1, 1, n as i32]);
        let e = rel_rms(&y, &want);
        let mlx = rel_rms(&q.matmul(&x, true).unwrap(), &want);
        eprintln!(
            "qgemv4 n={n} k={k} g={g}: relative RMS {e:.2e} (MLX quantized_matmul {mlx:.2e})"
        );
        assert!(e < TOL, "n={n} k={k} g={g}: relative RMS {e} >= {TOL}");
        worst = worst.max(e);
        check_schedules(&format!("qgemv4 n={n} k={k} g={g}"), &want, &|s| {
            gemv_with(&x, &q, None, s).unwrap()
        });
        // The residual epilogue: x W^T + r.
        let (r_arr, rv) = input(&mut r, n);
        assert!(applies_add(&x, &q, &r_arr));
        let want_add: Vec<f64> = want.iter().zip(&rv).map(|(w, a)| w + *a as f64).collect();
        let e_add = rel_rms(&gemv_add(&x, &q, &r_arr).unwrap(), &want_add);
        eprintln!("qgemv4 + residual n={n} k={k} g={g}: relative RMS {e_add:.2e}");
        assert!(
            e_add < TOL,
            "residual n={n} k={k}: relative RMS {e_add} >= {TOL}"
        );
        worst = worst.max(e_add);
        check_schedules(&format!("qgemv4 + residual n={n} k={k}"), &want_add, &|s| {
            gemv_with(&x, &q, Some(&r_arr), s).unwrap()
        });
    }
    if on_cuda {
        eprintln!(
            "qgemv4: {} shapes, worst relative RMS {worst:.2e}",
            shapes.len()
        );
    }
}

#[test]
fn fused_gate_up_silu_matches_a_float64_reference_or_is_not_used() {
    let mut r = rng("fused_gate_up_silu_matches_a_float64_reference_or_is_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let shapes = [(32, 256, 64), (14336, 4096, 64), (512, 2048, 128)];
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[..1] };
    for &(n, k, g) in shapes {
        let (qg, dg) = weight(&mut r, n, k, g);
        let (qu, du) = weight(&mut r, n, k, g);
        let (x, xv) = input(&mut r, k);
        let (gr, ur) = (reference(&xv, &dg, n, k), reference(&xv, &du, n, k));
        let want = silu_mul(&gr, &ur);
        assert_eq!(applies_silu(&x, &qg, &qu), on_cuda);
        if !on_cuda {
            assert!(gemv_silu_mul(&x, &qg, &qu).and_then(|y| y.eval()).is_err());
            continue;
        }
        let e = rel_rms(&gemv_silu_mul(&x, &qg, &qu).unwrap(), &want);
        eprintln!("qgemv4 silu n={n} k={k} g={g}: relative RMS {e:.2e}");
        assert!(e < TOL, "silu n={n} k={k} g={g}: relative RMS {e} >= {TOL}");
        check_schedules(&format!("qgemv4 silu n={n} k={k} g={g}"), &want, &|s| {
            gemv_silu_mul_with(&x, &qg, &qu, s).unwrap()
        });
    }
}

/// `rms_norm(x, w, eps)` in float64 from the fp16 values of x and w (the folded norm's
/// exact target).
fn rms_reference(x: &Array, w: &Array, eps: f32) -> Vec<f32> {
    let f32s = |a: &Array| a.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    let (xv, wv) = (f32s(x), f32s(w));
    let k = xv.len() as f64;
    let ms: f64 = xv.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / k;
    let n = 1.0 / (ms + eps as f64).sqrt();
    xv.iter()
        .zip(&wv)
        .map(|(x, w)| (*x as f64 * n * *w as f64) as f32)
        .collect()
}

/// A residual-stream-like x `[1, 1, k]` (x 8, so the fp16 products would round differently
/// if a norm's scale were applied in the wrong place) and an RMSNorm weight `[k]` around 1,
/// both fp16.
fn residual_and_norm_weight(r: &mut rand::rngs::StdRng, k: usize) -> (Array, Array) {
    let xs: Vec<f32> = randn(r, k).iter().map(|v| v * 8.0).collect();
    let ws: Vec<f32> = randn(r, k).iter().map(|v| 1.0 + 0.3 * v).collect();
    (
        f16_array(&xs, &[1, 1, k as i32]),
        f16_array(&ws, &[k as i32]),
    )
}

/// `MLXCEL_FUSED_NORM`'s kernels: `rms_norm(x) W^T` and the gate/up pair of `rms_norm(x)`
/// with the norm in the kernels' x staging, against the float64 reference of the normalized
/// product (within TOL) and against MLX's `rms_norm` followed by the plain kernel (within
/// TOL / 4: the same roundings but for the sum of squares' order), on x scaled like a
/// residual stream (x 8, so the fp16 products would round differently if the norm's
/// scale were applied in the wrong place), for the schedules that take it. A capped grid
/// and a wrong weight are errors. On the CPU: the fold never applies and calls fail
/// cleanly.
#[test]
fn folded_rms_norm_matches_norm_then_gemv_or_is_not_used() {
    let mut r = rng("folded_rms_norm_matches_norm_then_gemv_or_is_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let eps = 1e-5f32;
    let shapes = [(64, 256, 64), (6144, 4096, 64), (4096, 2048, 32)];
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[..1] };
    let mut worst: f64 = 0.0;
    for &(n, k, g) in shapes {
        let (q, dense) = weight(&mut r, n, k, g);
        let (qu, du) = weight(&mut r, n, k, g);
        let (x, w) = residual_and_norm_weight(&mut r, k);
        let norm = FoldedNorm { weight: &w, eps };
        let xn = rms_reference(&x, &w, eps);
        let want = reference(&xn, &dense, n, k);
        let want_u = reference(&xn, &du, n, k);
        let want_silu = silu_mul(&want, &want_u);
        // A wrong weight and a capped grid are errors before any launch.
        let short = Array::ones(&[k as i32 - 8], Dtype::F16).unwrap();
        let bad = FoldedNorm {
            weight: &short,
            eps,
        };
        let err = gemv_rms_with(&x, bad, &q, Schedule::RING)
            .unwrap_err()
            .to_string();
        assert!(err.contains("norm weight"), "{err}");
        let capped = Schedule::parse("ring:8:4:64").unwrap();
        let err = gemv_rms_with(&x, norm, &q, capped).unwrap_err().to_string();
        assert!(err.contains("one CTA per 16 rows"), "{err}");
        common::set_flags(&[("MLXCEL_FUSED_NORM", true)]);
        let folds = try_gemv_rms(&x, norm, &q);
        common::clear_flags(&["MLXCEL_FUSED_NORM"]);
        if !on_cuda {
            assert!(
                folds.unwrap().is_none(),
                "the fold must not apply on the CPU"
            );
            let err = gemv_rms_with(&x, norm, &q, Schedule::RING)
                .and_then(|y| y.eval().map(|_| y))
                .unwrap_err()
                .to_string();
            assert!(err.contains("CUDA"), "{err}");
            continue;
        }
        assert!(
            folds.unwrap().is_some(),
            "n={n} k={k}: the fold must apply on CUDA"
        );
        // MLX's norm, then the plain kernel: the unfused path.
        let normed = rms_norm(&x, Some(&w), eps).unwrap();
        for s in ["batched", "ring", "ring:4:8"] {
            let sched = Schedule::parse(s).unwrap();
            let y = gemv_rms_with(&x, norm, &q, sched).unwrap();
            let e = rel_rms(&y, &want);
            let unfused = gemv_with(&normed, &q, None, sched)
                .unwrap()
                .astype(Dtype::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let unfused: Vec<f64> = unfused.iter().map(|v| *v as f64).collect();
            let d = rel_rms(&y, &unfused);
            let ys = gemv_silu_mul_rms_with(&x, norm, &q, &qu, sched).unwrap();
            let es = rel_rms(&ys, &want_silu);
            eprintln!("folded norm n={n} k={k} g={g} {s}: relative RMS {e:.2e} (silu {es:.2e}), {d:.2e} from MLX's norm + the kernel");
            assert!(e < TOL && es < TOL, "n={n} k={k} {s}: {e} / {es} >= {TOL}");
            assert!(d < TOL / 4.0, "n={n} k={k} {s}: {d} from the unfused path");
            worst = worst.max(e).max(es);
        }
    }
    if on_cuda {
        eprintln!("folded norm: worst relative RMS {worst:.2e}");
    }
}

/// `MLXCEL_QKV_PARTS`: the stacked qkv GEMV written as three arrays `[1, H, 1, D]` must be
/// bit-identical to the one-output kernel's row reshaped and split (same body, only the
/// store differs), with and without the folded norm, for every schedule (capped grids
/// without the norm: they have no NORM variant, and `try_gemv_parts` says so with `None`).
/// Shapes: Llama-3-8B's (32 + 8 + 8 heads of 128) and a head_dim-64 GQA-7 one (28 + 4 + 4
/// heads of 64). On the CPU: never planned, whatever the flag says.
#[test]
fn qkv_parts_are_the_split_of_one_output_or_are_not_used() {
    let mut r = rng("qkv_parts_are_the_split_of_one_output_or_are_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let eps = 1e-5f32;
    let cases: &[([i32; 3], i32, i32)] = &[([32, 8, 8], 128, 64), ([28, 4, 4], 64, 32)];
    let mut checked = 0;
    for &(heads, d, g) in cases {
        let n = (heads.iter().sum::<i32>() * d) as usize;
        let k = 2048;
        let (q, _) = weight(&mut r, n, k, g);
        let (x, w) = residual_and_norm_weight(&mut r, k);
        let norm = FoldedNorm { weight: &w, eps };
        let shapes = heads.map(|h| [1, h, 1, d]);
        let shape_refs = shapes.each_ref().map(|s| &s[..]);
        common::set_flags(&[("MLXCEL_QKV_PARTS", true), ("MLXCEL_FUSED_NORM", true)]);
        let plan = parts_plan(&x, &q, shape_refs);
        let wrong_sizes = [[1, heads[0], 1, d], [1, 1, 1, d], [1, 1, 1, d]];
        let wrong = parts_plan(&x, &q, wrong_sizes.each_ref().map(|s| &s[..])).is_none();
        let normed = rms_norm(&x, Some(&w), eps).unwrap();
        let mut results = Vec::new();
        if let Some(plan) = &plan {
            for s in schedules() {
                std::env::set_var("MLXCEL_QMV_SCHEDULE", s.to_string());
                flags::reload();
                let folded = try_gemv_parts(&x, Some(norm), &q, plan).unwrap();
                let plain = try_gemv_parts(&normed, None, &q, plan).unwrap();
                let single = gemv_with(&normed, &q, None, s).unwrap();
                let single_folded = (s.grid == 0).then(|| gemv_rms_with(&x, norm, &q, s).unwrap());
                results.push((s, folded, plain, single, single_folded));
            }
        }
        common::clear_flags(&[
            "MLXCEL_QMV_SCHEDULE",
            "MLXCEL_QKV_PARTS",
            "MLXCEL_FUSED_NORM",
        ]);
        if !on_cuda {
            assert!(plan.is_none(), "the parts must not apply on the CPU");
            continue;
        }
        assert!(
            plan.is_some(),
            "{heads:?} x {d}: the parts must apply on CUDA"
        );
        assert!(
            wrong,
            "parts whose sizes do not add up to N must not be planned"
        );
        let split = |y: &Array| -> Vec<Vec<half::f16>> {
            let all = y.to_vec::<half::f16>().unwrap();
            let (a, b) = (
                (heads[0] * d) as usize,
                ((heads[0] + heads[1]) * d) as usize,
            );
            vec![all[..a].to_vec(), all[a..b].to_vec(), all[b..].to_vec()]
        };
        for (s, folded, plain, single, single_folded) in results {
            let plain = plain.expect("parts without a norm always launch");
            for (i, p) in plain.iter().enumerate() {
                assert_eq!(p.shape(), shapes[i].to_vec(), "{s}: part {i}'s shape");
            }
            let bits = |ps: &[Array; 3]| -> Vec<Vec<half::f16>> {
                ps.iter()
                    .map(|p| p.to_vec::<half::f16>().unwrap())
                    .collect()
            };
            assert!(
                bits(&plain) == split(&single),
                "{heads:?} x {d} {s}: parts differ from the split of one output"
            );
            match (folded, single_folded) {
                (Some(f), Some(sf)) => {
                    assert!(
                        bits(&f) == split(&sf),
                        "{heads:?} x {d} {s}: folded parts differ from the folded one output"
                    );
                    checked += 1;
                }
                (None, None) => {}
                (f, sf) => panic!(
                    "{s}: the folded parts ran: {}, the folded single output ran: {}",
                    f.is_some(),
                    sf.is_some()
                ),
            }
            checked += 1;
        }
    }
    if on_cuda {
        eprintln!("qkv parts: {checked} launches bit-identical to the split of one output");
    }
}

#[test]
fn gemv_rejects_what_it_cannot_run() {
    let mut r = rng("gemv_rejects_what_it_cannot_run");
    // N not a multiple of 16, 8-bit weights, K past the shared-memory limit: never applies,
    // and a direct call is a clear error.
    let (q, _) = weight(&mut r, 40, 256, 64);
    let (x, _) = input(&mut r, 256);
    assert!(!applies(&x, &q));
    let err = gemv(&x, &q).unwrap_err().to_string();
    assert!(err.contains("not supported"), "{err}");
    let w = Array::from_slice(&randn(&mut r, 32 * 256), &[32, 256]).unwrap();
    let q8 = quantize(&w.astype(Dtype::F16).unwrap(), 64, 8).unwrap();
    assert!(!applies(&x, &q8));
    // K = 24576: x no longer fits the shared memory a launch gets (failed on the H200).
    let (qk, _) = weight(&mut r, 16, 24576, 64);
    let (xk, _) = input(&mut r, 24576);
    assert!(!applies(&xk, &qk));
    // A residual of the wrong length is an error, not a silent broadcast.
    let (q3, _) = weight(&mut r, 32, 256, 64);
    let (bad_r, _) = input(&mut r, 16);
    assert!(!applies_add(&x, &q3, &bad_r));
    assert!(gemv_add(&x, &q3, &bad_r).is_err());
    // Schedules that do not exist or do not fit are refused by name.
    assert!(Schedule::parse("ring:0:4").is_err());
    assert!(Schedule::parse("ring:8:1").is_err());
    assert!(Schedule::parse("fast").is_err());
    assert_eq!(Schedule::parse("ring").unwrap(), Schedule::RING);
    let (x2, _) = input(&mut r, 128);
    let (q2, _) = weight(&mut r, 32, 256, 64);
    assert!(gemv(&x2, &q2).is_err(), "K mismatch must be an error");
}

/// One kernel call of a test case.
type GemvCall<'a> = dyn Fn() -> mlxcel_core::Result<Array> + 'a;

/// The inputs of one flag test case: x and its residual-stream counterpart for the folded norm,
/// the residual, the gate (or plain) and up weights.
struct FlagCase<'a> {
    x: &'a Array,
    xr: &'a Array,
    res: &'a Array,
    q: &'a Quantized,
    qu: &'a Quantized,
    norm: FoldedNorm<'a>,
}

/// A flag test case's random inputs, owned ([`FlagInputs::case`] borrows them as a [`FlagCase`]),
/// drawn in this order: the gate (or plain) weight, the up weight, x, the residual, the
/// residual-stream x and its norm weight.
struct FlagInputs {
    q: Quantized,
    qu: Quantized,
    x: Array,
    res: Array,
    xr: Array,
    w: Array,
}

impl FlagInputs {
    fn new(r: &mut rand::rngs::StdRng, n: usize, k: usize, g: i32) -> Self {
        let (q, _) = weight(r, n, k, g);
        let (qu, _) = weight(r, n, k, g);
        let (x, _) = input(r, k);
        let (res, _) = input(r, n);
        let (xr, w) = residual_and_norm_weight(r, k);
        FlagInputs {
            q,
            qu,
            x,
            res,
            xr,
            w,
        }
    }

    /// The inputs as a case, the folded norm at eps 1e-5.
    fn case(&self) -> FlagCase<'_> {
        FlagCase {
            x: &self.x,
            xr: &self.xr,
            res: &self.res,
            q: &self.q,
            qu: &self.qu,
            norm: FoldedNorm {
                weight: &self.w,
                eps: 1e-5,
            },
        }
    }
}

/// The five ring kernels a flag test runs on `c` with `sched`, in this order: plain, with the
/// residual, with the folded norm, gate/up + SiLU, gate/up + SiLU with the norm.
fn five_kernels<'a>(
    c: &'a FlagCase<'a>,
    sched: Schedule,
) -> [(&'static str, Box<GemvCall<'a>>); 5] {
    [
        ("plain", Box::new(move || gemv_with(c.x, c.q, None, sched))),
        (
            "residual",
            Box::new(move || gemv_with(c.x, c.q, Some(c.res), sched)),
        ),
        (
            "norm",
            Box::new(move || gemv_rms_with(c.xr, c.norm, c.q, sched)),
        ),
        (
            "silu",
            Box::new(move || gemv_silu_mul_with(c.x, c.q, c.qu, sched)),
        ),
        (
            "silu norm",
            Box::new(move || gemv_silu_mul_rms_with(c.xr, c.norm, c.q, c.qu, sched)),
        ),
    ]
}

/// `call`'s output, evaluated with `switches` set; the switches are cleared again afterwards.
fn eval_with_flags(
    switches: &[(&str, bool)],
    call: &dyn Fn() -> mlxcel_core::Result<Array>,
) -> mlxcel_core::Result<Array> {
    common::set_flags(switches);
    let y = call().and_then(|y| y.eval().map(|_| y));
    common::clear_flags(&switches.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    y
}

/// A not-bit-identical kernel variant against the float64 reference `want`: `run(true)` (the
/// variant) within TOL and within 1.5x `run(false)`'s (the `baseline` it replaces) error plus
/// 1e-4, printed with `label`. On the CPU the kernels never run: `run(true)` must end in MLX's
/// CUDA error, and nothing is compared (None). Returns the variant's relative RMS.
fn against_float64(
    label: &str,
    baseline: &str,
    case: &str,
    want: &[f64],
    run: &dyn Fn(bool) -> mlxcel_core::Result<Array>,
) -> Option<f64> {
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        let err = run(true).unwrap_err().to_string();
        assert!(err.contains("CUDA"), "{case}: {err}");
        return None;
    }
    let e = rel_rms(&run(true).unwrap(), want);
    let e_default = rel_rms(&run(false).unwrap(), want);
    eprintln!("{label} {case}: relative RMS {e:.2e} ({baseline} {e_default:.2e})");
    assert!(e < TOL, "{case}: relative RMS {e} >= {TOL}");
    assert!(
        e < 1.5 * e_default + 1e-4,
        "{case}: {e} against the {baseline}'s {e_default}"
    );
    Some(e)
}

/// Runs `call` with `flag` off and on. On the CPU the kernels never run: the call with the
/// flag on must end in MLX's CUDA error, and nothing is compared (false). On CUDA both
/// outputs must have the same bits (true: one check); `case` names the case on failure.
fn same_bits_with_flag(
    flag: &str,
    case: &str,
    call: &dyn Fn() -> mlxcel_core::Result<Array>,
) -> bool {
    let run = |on: bool| eval_with_flags(&[(flag, on)], call);
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        let err = run(true).unwrap_err().to_string();
        assert!(err.contains("CUDA"), "{case}: {err}");
        return false;
    }
    let off = run(false).unwrap().to_vec::<half::f16>().unwrap();
    let on = run(true).unwrap().to_vec::<half::f16>().unwrap();
    assert!(off == on, "{case}: {flag} changed the output");
    true
}

/// [`same_bits_with_flag`] for `flag` over the five kernels of [`five_kernels`] on fresh
/// random inputs per shape (N, K, group; on the CPU only the last, where the kernels never
/// run), with the default ring and 4 warps x 8 stages; each case's name ends with `label`.
/// Returns the checks made (none on the CPU).
fn five_kernels_same_bits(
    r: &mut rand::rngs::StdRng,
    shapes: &[(usize, usize, i32)],
    flag: &str,
    label: &str,
) -> usize {
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let shapes = if on_cuda {
        shapes
    } else {
        &shapes[shapes.len() - 1..]
    };
    let mut checks = 0;
    for &(n, k, g) in shapes {
        let inputs = FlagInputs::new(r, n, k, g);
        let c = inputs.case();
        for s in ["ring", "ring:4:8"] {
            for (what, call) in five_kernels(&c, Schedule::parse(s).unwrap()) {
                let case = format!("{what} n={n} k={k} g={g} {s}{label}");
                checks += usize::from(same_bits_with_flag(flag, &case, &*call));
            }
        }
    }
    checks
}

/// The (N, K, group) shapes of the five-kernel bit-identity flag tests: Llama-3-8B's layer shapes
/// (K 4096 and down's 14336), group 32 and 128, and a small one whose K (384) is not a multiple
/// of 256 (the CPU runs only the last).
const BIT_IDENTITY_SHAPES: [(usize, usize, i32); 5] = [
    (6144, 4096, 64),
    (4096, 14336, 64),
    (4096, 2048, 32),
    (1024, 14336, 128),
    (48, 384, 32),
];

/// `MLXCEL_QMV_EARLY` (x's loads, the folded norm weight's and the scale loads issued before
/// the ring's first weight copies, held in registers, stored after them) must give the bits of
/// the prologue that stages them after the copies: the plain kernel with and without the
/// residual, the folded norm, gate/up + SiLU with and without it, on the layer shapes of
/// Llama-3-8B (K 4096 and down's 14336, whose table takes more chunks than the registers
/// hold, as does x at 4 warps), group 32 and 128, an unaligned-to-256 K, and the ring
/// schedules of 8 and 4 warps (4 warps leave more chunks past the registers). On the CPU the
/// kernels never run: every call still ends in MLX's CUDA error with the flag on.
#[test]
fn early_prologue_loads_are_bit_identical_or_are_not_used() {
    let mut r = rng("early_prologue_loads_are_bit_identical_or_are_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let checks = five_kernels_same_bits(&mut r, &BIT_IDENTITY_SHAPES, "MLXCEL_QMV_EARLY", "");
    if on_cuda {
        eprintln!("early GEMV prologue: {checks} bit-identity checks on CUDA");
    }
}

/// `MLXCEL_QMV_PAIR_BLOCKS` (plain launches of at least 32768 rows run two 16-row blocks per
/// CTA, x and its norm staged once for both) gives the bits of one block per CTA: the five
/// kernels (gate/up never pairs: the same bits trivially) on LM-head-sized shapes of group 64,
/// 32 and 128, one whose rows are not a whole number of 32-row pairs (one block per CTA), and a
/// small one (the only one the CPU runs, where every call ends in MLX's CUDA error with the flag
/// on); then the plain and folded-norm kernels on the tiled layout.
#[test]
fn pair_blocks_are_bit_identical_or_are_not_used() {
    let mut r = rng("pair_blocks_are_bit_identical_or_are_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let flag = "MLXCEL_QMV_PAIR_BLOCKS";
    let shapes = [
        (32768, 4096, 64),
        (65536, 2048, 32),
        (32768, 1152, 128),
        (32784, 1024, 64),
        (48, 384, 32),
    ];
    let mut checks = five_kernels_same_bits(&mut r, &shapes, flag, "");
    if !on_cuda {
        return;
    }
    let (q, _) = weight(&mut r, 32768, 4096, 64);
    let t = tile_rows16(&q).unwrap();
    let (x, _) = input(&mut r, 4096);
    let (xr, w) = residual_and_norm_weight(&mut r, 4096);
    let norm = FoldedNorm {
        weight: &w,
        eps: 1e-5,
    };
    for s in ["ring", "ring:4:8"] {
        let s = Schedule::parse(s).unwrap();
        let plain = || gemv_with(&x, &t, None, s);
        let normed = || gemv_rms_with(&xr, norm, &t, s);
        checks += usize::from(same_bits_with_flag(
            flag,
            &format!("tiled plain {s}"),
            &plain,
        ));
        checks += usize::from(same_bits_with_flag(
            flag,
            &format!("tiled norm {s}"),
            &normed,
        ));
    }
    eprintln!("pair blocks: {checks} bit-identity checks on CUDA");
    assert_eq!(
        checks,
        5 * 2 * 5 + 4,
        "5 shapes x 2 schedules x 5 kernels, 4 tiled"
    );
}

/// `MLXCEL_QMV_ALIGN128` (dynamic shared memory on a 128-byte boundary; off: 16 bytes, as
/// before) moves only where the ring and x sit in shared memory: the five kernels must give the
/// same bits either way, on Llama-3-8B's layer shapes (K 4096 and down's 14336), group 32 and
/// 128, and a small one, with the default ring and 4 warps x 8 stages (the folded-norm builds are
/// the ones whose placement moves at 8 warps). On the CPU every call ends in MLX's CUDA error.
#[test]
fn dynamic_shared_alignment_is_bit_identical() {
    let mut r = rng("dynamic_shared_alignment_is_bit_identical");
    layer_shapes_same_bits(
        &mut r,
        "MLXCEL_QMV_ALIGN128",
        "dynamic shared memory alignment",
    );
}

/// [`five_kernels_same_bits`] for `flag` on [`BIT_IDENTITY_SHAPES`]; on CUDA all 50 checks
/// (5 shapes x 2 schedules x 5 kernels) must have run, and `what` names them in the log.
fn layer_shapes_same_bits(r: &mut rand::rngs::StdRng, flag: &str, what: &str) {
    let checks = five_kernels_same_bits(r, &BIT_IDENTITY_SHAPES, flag, "");
    if KernelBackend::current() == Some(KernelBackend::Cuda) {
        eprintln!("{what}: {checks} bit-identity checks on CUDA");
        assert_eq!(checks, 50, "5 shapes x 2 schedules x 5 kernels");
    }
}

/// `MLXCEL_QMV_XSUM_STAGE` (POST's per-group sums of x formed while x is staged, the chunks
/// stored in POST's order there, instead of in a pass after the prologue's barrier) must give
/// the same bits: the five kernels on the layer shapes of Llama-3-8B (K 4096 and down's 14336,
/// where x takes more chunks than the registers hold), group 32 and 128, and a small one whose 48
/// chunks leave half a warp idle (the shuffles' idle lanes), with the default ring and 4 warps x
/// 8 stages (POST and OWN_CHUNKS at their defaults, on). On the CPU every call ends in MLX's
/// CUDA error with the flag on.
#[test]
fn x_sums_at_staging_are_bit_identical() {
    let mut r = rng("x_sums_at_staging_are_bit_identical");
    layer_shapes_same_bits(&mut r, "MLXCEL_QMV_XSUM_STAGE", "x sums at staging");
}

/// `MLXCEL_QMV_GBAR_PROBE` (a grid-wide barrier in the prologue of the residual-adding GEMVs,
/// a measuring probe) must give the same bits at both of its places (`MLXCEL_QMV_GBAR_AT`
/// `copies` and `start`): o_proj's and down's shapes of Llama-3-8B (256 CTAs) and a small one,
/// the default ring and 4 warps. Then a chain of 140 dependent launches in one evaluation (each
/// output the next residual) against the chain without the probe: more launches than the 128
/// counter slots, so every slot's counters are reused and must have been reset by the launch
/// before. A barrier that never released would hang this test. On the CPU every call ends in
/// MLX's CUDA error with the flag on.
#[test]
fn grid_barrier_probe_is_bit_identical() {
    let mut r = rng("grid_barrier_probe_is_bit_identical");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let shapes = [(4096, 4096, 64), (4096, 14336, 64), (48, 384, 32)];
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[2..] };
    let mut checks = 0;
    for at in ["copies", "start"] {
        std::env::set_var(flags::QMV_GBAR_AT_VAR, at);
        for &(n, k, g) in shapes {
            let (q, _) = weight(&mut r, n, k, g);
            let (x, _) = input(&mut r, k);
            let (res, _) = input(&mut r, n);
            for s in ["ring", "ring:4:8"] {
                let sched = Schedule::parse(s).unwrap();
                let case = format!("n={n} k={k} g={g} {s} at {at}");
                let call = || gemv_with(&x, &q, Some(&res), sched);
                checks += usize::from(same_bits_with_flag("MLXCEL_QMV_GBAR_PROBE", &case, &call));
            }
        }
        if on_cuda {
            let (n, k, g) = shapes[0];
            let (q, _) = weight(&mut r, n, k, g);
            let (x, _) = input(&mut r, k);
            let (res, _) = input(&mut r, n);
            let chain = || {
                let mut y = res.clone();
                for _ in 0..140 {
                    y = gemv_with(&x, &q, Some(&y), Schedule::RING)?;
                }
                Ok(y)
            };
            let case = format!("a chain of 140 launches at {at}");
            checks += usize::from(same_bits_with_flag("MLXCEL_QMV_GBAR_PROBE", &case, &chain));
        }
    }
    std::env::remove_var(flags::QMV_GBAR_AT_VAR);
    flags::reload();
    if on_cuda {
        eprintln!("grid barrier probe: {checks} bit-identity checks on CUDA");
    }
}

/// `MLXCEL_QMV_POST` (scales and biases applied per group after the mma, in fp32; codes fed as
/// exact fp16 offsets and the offsets removed through per-group sums of x) against the float64
/// reference, within TOL: the plain kernel with and without the residual, the folded norm,
/// gate/up + SiLU with and without it, on Llama-3-8B's layer shapes (qkv, o_proj, down's K =
/// 14336, gate/up), the largest K, group sizes 32, 64 and 128, tiles per warp odd and even
/// (the per-group sums run two tiles per pass); the default ring everywhere, a 2-stage ring and
/// 4 warps on the first shape (each combination is one NVRTC build on the device).
/// Each case also prints the default kernel's error on the same data: POST skips the fp16
/// rounding of every dequantized weight, so it should not be the worse of the two by much; it
/// must stay within TOL and within 1.5x the default's error plus 1e-4. On the CPU the kernels
/// never run: every call ends in MLX's CUDA error with the flag on.
#[test]
fn post_scaled_groups_match_a_float64_reference_or_are_not_used() {
    scaled_groups_against_float64(
        "post_scaled_groups_match_a_float64_reference_or_are_not_used",
        "MLXCEL_QMV_POST",
        "post",
        "default kernel",
    );
}

/// `MLXCEL_QMV_OWN_CHUNKS` (POST's loop with each lane reading only its own copies and the
/// mma's B columns split by quantization group: one per-group epilogue per tile, the groups
/// added across lanes after the loop) against the float64 reference, on the same kernels,
/// shapes, group sizes and schedules as POST's test, within TOL and within 1.5x POST's error
/// (the kernel it replaces) plus 1e-4. Group sizes 32, 64 and 128 put 4, 2 and 1 groups in a
/// tile: each splits the columns another way. On the CPU the kernels never run.
#[test]
fn own_chunks_match_a_float64_reference_or_are_not_used() {
    scaled_groups_against_float64(
        "own_chunks_match_a_float64_reference_or_are_not_used",
        "MLXCEL_QMV_OWN_CHUNKS",
        "own chunks",
        "POST kernel",
    );
}

/// The five kernels with `flag` off and on against the float64 reference ([`against_float64`]:
/// the flag's kernel is `label`, the one it replaces `baseline`) over the shapes and schedules
/// POST's test documents; `seed` names the random inputs.
fn scaled_groups_against_float64(seed: &str, flag: &str, label: &str, baseline: &str) {
    let mut r = rng(seed);
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let eps = 1e-5f32;
    let shapes = [
        (6144, 4096, 64),
        (4096, 14336, 64),
        (14336, 4096, 64),
        (256, 20480, 64),
        (4096, 2048, 32),
        (1024, 14336, 128),
        (48, 384, 32),
        (16, 1152, 128),
    ];
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[6..7] };
    let (mut checks, mut worst) = (0usize, 0f64);
    for &(n, k, g) in shapes {
        let (q, dense) = weight(&mut r, n, k, g);
        let (qu, du) = weight(&mut r, n, k, g);
        let (x, xv) = input(&mut r, k);
        let (res, rv) = input(&mut r, n);
        let (xr, w) = residual_and_norm_weight(&mut r, k);
        let xn = rms_reference(&xr, &w, eps);
        let norm = FoldedNorm { weight: &w, eps };
        let plain = reference(&xv, &dense, n, k);
        let with_res: Vec<f64> = plain.iter().zip(&rv).map(|(a, b)| a + *b as f64).collect();
        let normed = reference(&xn, &dense, n, k);
        let gate_up = silu_mul(&plain, &reference(&xv, &du, n, k));
        let gate_up_norm = silu_mul(&normed, &reference(&xn, &du, n, k));
        let scheds: &[&str] = if (n, k, g) == shapes[0] {
            &["ring", "ring:8:2", "ring:4:8"]
        } else {
            &["ring"]
        };
        let c = FlagCase {
            x: &x,
            xr: &xr,
            res: &res,
            q: &q,
            qu: &qu,
            norm,
        };
        // five_kernels' order.
        let wants: [&[f64]; 5] = [&plain, &with_res, &normed, &gate_up, &gate_up_norm];
        for &s in scheds {
            let calls = five_kernels(&c, Schedule::parse(s).unwrap());
            for ((what, call), want) in calls.into_iter().zip(wants) {
                let case = format!("{what} n={n} k={k} g={g} {s}");
                let run = |on: bool| eval_with_flags(&[(flag, on)], &*call);
                if let Some(e) = against_float64(label, baseline, &case, want, &run) {
                    worst = worst.max(e);
                    checks += 1;
                }
            }
        }
    }
    if on_cuda {
        eprintln!("{label}: {checks} cases on CUDA, worst relative RMS {worst:.2e}");
    }
}

/// `MLXCEL_QMV_NOMATH_PROBE` (a measuring probe: the POST kernels skip each tile's arithmetic)
/// must change the five kernels' outputs (the arithmetic really is skipped: a probe that did not
/// would time the shipped kernel) and leave them to the bit when switched off again (its builds
/// are cached apart from the shipped ones), at each of its levels (`MLXCEL_QMV_NOMATH_LEVEL`:
/// `loop`, `tables`, `xplain`, `nwx`, `prologue`, `nosums`, `partials`, `xtwice`, `nosb`, `noxsum`, `noprep`); each level's outputs must also
/// differ from the levels' before it (the deeper levels add a level marker to their outputs: a
/// level whose define did not reach its build would time another level's kernel). An unknown
/// level and POST off are errors, on every backend (the probe lives in the POST loop). On the CPU
/// the kernels never run: every call ends in MLX's CUDA error with the probe on.
#[test]
fn nomath_probe_skips_the_arithmetic_and_switches_back_or_is_not_used() {
    let mut r = rng("nomath_probe_skips_the_arithmetic_and_switches_back_or_is_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let (n, k, g) = if on_cuda {
        (4096, 4096, 64)
    } else {
        (48, 384, 32)
    };
    let inputs = FlagInputs::new(&mut r, n, k, g);
    let c = inputs.case();
    let probe = "MLXCEL_QMV_NOMATH_PROBE";
    let mut checks = 0;
    // earlier[i]: kernel i's outputs at the levels before the current one.
    let mut earlier: Vec<Vec<Vec<half::f16>>> = vec![Vec::new(); 5];
    for level in [
        "loop", "tables", "xplain", "nwx", "prologue", "nosums", "partials", "xtwice", "nosb",
        "noxsum", "noprep",
    ] {
        std::env::set_var(flags::QMV_NOMATH_LEVEL_VAR, level);
        for (i, (what, call)) in five_kernels(&c, Schedule::parse("ring").unwrap())
            .into_iter()
            .enumerate()
        {
            let what = format!("{what} at level {level}");
            let run = |on: bool| eval_with_flags(&[(probe, on)], &*call);
            if !on_cuda {
                let err = run(true).unwrap_err().to_string();
                assert!(err.contains("CUDA"), "{what}: {err}");
                continue;
            }
            let bits = |y: Array| y.to_vec::<half::f16>().unwrap();
            let before = bits(run(false).unwrap());
            let probed = bits(run(true).unwrap());
            let after = bits(run(false).unwrap());
            assert!(
                probed != before,
                "{what}: the probe left the output unchanged"
            );
            assert!(
                after == before,
                "{what}: the output changed after the probe"
            );
            assert!(
                earlier[i].iter().all(|o| *o != probed),
                "{what}: the same output as an earlier level"
            );
            earlier[i].push(probed);
            checks += 1;
        }
    }
    std::env::set_var(flags::QMV_NOMATH_LEVEL_VAR, "math");
    let err = eval_with_flags(&[(probe, true)], &|| {
        gemv_with(&inputs.x, &inputs.q, None, Schedule::parse("ring").unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("MLXCEL_QMV_NOMATH_LEVEL"), "{err}");
    std::env::remove_var(flags::QMV_NOMATH_LEVEL_VAR);
    flags::reload();
    if on_cuda {
        assert_eq!(checks, 55);
    }
    // Without the POST loop there is nothing to probe: an error, not the shipped kernel timed.
    let err = eval_with_flags(&[(probe, true), ("MLXCEL_QMV_POST", false)], &|| {
        gemv_with(&inputs.x, &inputs.q, None, Schedule::parse("ring").unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("MLXCEL_QMV_POST"), "{err}");
}

/// `MLXCEL_QMV_NORM_LATE` (the folded norm's scale applied to the row sums in the epilogue, x
/// staged as `nw * x`) against the float64 reference of the normalized product, within TOL and
/// within 1.5x the default fold's error plus 1e-4 on the same data: the plain kernel and the
/// gate/up and SiLU kernel with the norm, POST off and on, on Llama-3-8B's qkv and gate/up shapes, group 32 and
/// 128, and a small one; x scaled like a residual stream (x 8) and like an embedding row
/// (x 1/64, where `nw * x` meets fp16's subnormals before the norm scales it up); the default
/// ring, 4 warps x 8 stages and the batched schedule (its own staging function) on the first
/// shape. On the CPU the kernels never run: every call ends in MLX's CUDA error with the flag on.
#[test]
fn late_norm_scale_matches_a_float64_reference_or_is_not_used() {
    let mut r = rng("late_norm_scale_matches_a_float64_reference_or_is_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let eps = 1e-5f32;
    let shapes = [
        (6144, 4096, 64),
        (14336, 4096, 64),
        (1024, 4096, 32),
        (256, 2048, 128),
        (48, 384, 32),
    ];
    let shapes: &[(usize, usize, i32)] = if on_cuda { &shapes } else { &shapes[4..] };
    let (mut checks, mut worst) = (0usize, 0f64);
    for &(n, k, g) in shapes {
        let (q, dense) = weight(&mut r, n, k, g);
        let (qu, du) = weight(&mut r, n, k, g);
        for scale in [1.0f32, 1.0 / 512.0] {
            let (xr, w) = residual_and_norm_weight(&mut r, k);
            let xr = if scale == 1.0 {
                xr
            } else {
                let v = xr.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
                let v: Vec<f32> = v.iter().map(|a| a * scale).collect();
                f16_array(&v, &[1, 1, k as i32])
            };
            let xn = rms_reference(&xr, &w, eps);
            let norm = FoldedNorm { weight: &w, eps };
            let normed = reference(&xn, &dense, n, k);
            let gate_up_norm = silu_mul(&normed, &reference(&xn, &du, n, k));
            let scheds: &[&str] = if (n, k, g) == shapes[0] {
                &["ring", "ring:4:8", "batched"]
            } else {
                &["ring"]
            };
            for &s in scheds {
                let sched = Schedule::parse(s).unwrap();
                let calls: [(&str, Box<GemvCall<'_>>, &[f64]); 2] = [
                    (
                        "norm",
                        Box::new(|| gemv_rms_with(&xr, norm, &q, sched)),
                        &normed,
                    ),
                    (
                        "silu norm",
                        Box::new(|| gemv_silu_mul_rms_with(&xr, norm, &q, &qu, sched)),
                        &gate_up_norm,
                    ),
                ];
                for post in [false, true] {
                    for (what, call, want) in &calls {
                        let case = format!("{what} n={n} k={k} g={g} x{scale} {s} post={post}");
                        let run = |late: bool| {
                            eval_with_flags(
                                &[("MLXCEL_QMV_POST", post), ("MLXCEL_QMV_NORM_LATE", late)],
                                &**call,
                            )
                        };
                        if let Some(e) =
                            against_float64("late norm", "folded norm", &case, want, &run)
                        {
                            worst = worst.max(e);
                            checks += 1;
                        }
                    }
                }
            }
        }
    }
    if on_cuda {
        eprintln!("late norm scale: {checks} cases on CUDA, worst relative RMS {worst:.2e}");
    }
}

/// `tile_rows16` moves each word to its tile's contiguous KiB (checked word by word on every
/// backend); on CUDA the kernels on the tiled words give the same bits as on MLX's layout
/// (the same shared-memory contents, the same arithmetic) for the plain, residual and gate/up
/// kernels and three ring schedules, with per-lane copies (`MLXCEL_QMV_POST` off and on) and with
/// bulk copies (POST off); schedules without
/// the per-16-row ring are refused, and bulk copies of MLX's layout too.
#[test]
fn tiled_weights_give_the_same_bits_or_are_refused() {
    let mut r = rng("tiled_weights_give_the_same_bits_or_are_refused");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    // The permutation: word (row, j) of [N, K / 8] goes to ((row / 16) * T + j / 16) * 256 +
    // (row % 16) * 16 + j % 16, T = K / 128 tiles per row.
    let (n, k) = (48usize, 384usize);
    let (q, _) = weight(&mut r, n, k, 64);
    let t = tile_rows16(&q).unwrap();
    assert_eq!(t.w.shape(), q.w.shape());
    let (a, b) = (q.w.to_vec::<u32>().unwrap(), t.w.to_vec::<u32>().unwrap());
    let (words, tiles) = (k / 8, k / 128);
    for row in 0..n {
        for j in 0..words {
            let at = ((row / 16) * tiles + j / 16) * 256 + (row % 16) * 16 + j % 16;
            assert_eq!(b[at], a[row * words + j], "row {row} word {j}");
        }
    }
    // MLX's ops see MLX's order again (`untiled`): the same words, the same matmul bits.
    assert_eq!(t.untiled().unwrap().to_vec::<u32>().unwrap(), a);
    let (x, _) = input(&mut r, k);
    assert_eq!(
        t.matmul(&x, true).unwrap().to_vec::<half::f16>().unwrap(),
        q.matmul(&x, true).unwrap().to_vec::<half::f16>().unwrap()
    );
    assert!(tile_rows16(&t).is_err(), "tiling twice is refused");
    for bad in ["batched", "ring:8:4:3"] {
        let s = Schedule::parse(bad).unwrap();
        let e = gemv_with(&x, &t, None, s).unwrap_err().to_string();
        assert!(
            e.contains("tiled weights need a ring schedule"),
            "{bad}: {e}"
        );
    }
    let e = gemv_with(&x, &q, None, Schedule::parse("bulk:8:3").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("bulk copies need tiled weights"), "{e}");
    if !on_cuda {
        return;
    }
    let checks = tiled_same_bits(&mut r, &[(false, false), (true, false)]);
    eprintln!("tiled: {checks} bit-identity checks on CUDA");
    assert_eq!(checks, 4 * 6 * 2 + 2 * 6 + 4 * 3 * 2 + 2 * 3);
}

/// `MLXCEL_QMV_OWN_CHUNKS` (POST's lanes read only their own copies) on tiled weights gives the
/// same bits as on MLX's layout (only the copies' source addresses differ), for the plain,
/// residual and gate/up kernels and the three per-lane ring schedules. CUDA only: on the CPU
/// the kernels never run (the float64 test checks the CPU's error path).
#[test]
fn tiled_weights_with_own_chunks_give_the_same_bits() {
    let mut r = rng("tiled_weights_with_own_chunks_give_the_same_bits");
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        return;
    }
    let checks = tiled_same_bits(&mut r, &[(true, true)]);
    eprintln!("tiled with own chunks: {checks} bit-identity checks on CUDA");
    assert_eq!(checks, 4 * 3 * 2 + 2 * 3);
}

/// `MLXCEL_QMV_RING_TABLES`' paired tables (`tile_tables16`: scales and biases interleaved in the
/// tiles' order, copied into the ring with each tile) give the bits of the tiled words with
/// staged tables. On every backend: the pairs read back through `untiled_tables` are the scales
/// and biases to the bit, MLX's dequantize (and on the CPU its matmul) over them gives the bits
/// of MLX's layout, and a launch
/// whose loop cannot read them (OWN_CHUNKS off) is an error naming the flag. On CUDA (POST and
/// OWN_CHUNKS on): the plain, residual, folded-norm and gate/up kernels on Llama-3-8B's layer
/// shapes (K 4096 and down's 14336), group 32 and 128, an LM-head-sized one (two blocks per
/// CTA) and a small one; the three per-lane ring schedules on the first shape, the default ring
/// on the others.
#[test]
fn paired_tables_give_the_same_bits_or_are_refused() {
    let mut r = rng("paired_tables_give_the_same_bits_or_are_refused");
    let bits = |y: Array| y.to_vec::<half::f16>().unwrap();
    let halves = |a: &Array| {
        a.to_vec::<half::f16>()
            .unwrap_or_else(|e| panic!("{:?} {:?}: {e}", a.shape(), a.dtype()))
    };
    common::set_flags(&[("MLXCEL_QMV_POST", true), ("MLXCEL_QMV_OWN_CHUNKS", true)]);
    // Every backend: the reorder's inverse, MLX's matmul, and the refusal.
    for &(n, k, g) in &[(48, 384, 32), (32, 256, 64), (16, 128, 128)] {
        let (q, _) = weight(&mut r, n, k, g);
        let p = tile_tables16(&tile_rows16(&q).unwrap()).unwrap();
        let (s, b) = p.untiled_tables().unwrap();
        assert!(halves(&s) == halves(&q.scales), "scales n={n} k={k} g={g}");
        assert!(halves(&b) == halves(&q.biases), "biases n={n} k={k} g={g}");
        assert!(
            bits(p.dequantize(Dtype::F16).unwrap()) == bits(q.dequantize(Dtype::F16).unwrap()),
            "MLX dequantize n={n} k={k} g={g}"
        );
        // What MLX's ops get is row-contiguous: its CUDA `quantized_matmul` has no kernel for
        // strided scales or biases ("No implementation for problem shape", which sessions 44-59
        // took for a limit of small shapes, and which failed every CUDA prefill), while the CPU
        // takes any strides, so this check is what fails here.
        let w = p.untiled().unwrap();
        for (name, a) in [("words", &*w), ("scales", &*s), ("biases", &*b)] {
            assert!(
                a.is_row_contiguous().unwrap(),
                "untiled {name} n={n} k={k} g={g} strided"
            );
        }
        // MLX's matmul over the untiled arrays: 3 rows and 16 (its matmul kernels on CUDA, as a
        // prefill chunk takes them), the bits of MLX's layout; on an H100 (session 60) the first
        // two shapes passed. On CUDA a group as long as the row (g >= k) makes MLX pick its sm90
        // kernel for any row count but 1, which it compiles at run time against CUDA headers the
        // device payload lacks (`crt/mma.h`); no model has such groups, so that shape checks one
        // row (MLX's GEMV kernel) there.
        let sm90 = KernelBackend::current() == Some(KernelBackend::Cuda) && g as usize >= k;
        for rows in if sm90 { &[1][..] } else { &[3, 16][..] } {
            let rows = *rows;
            let x = f16_array(&randn(&mut r, rows * k), &[rows as i32, k as i32]);
            assert!(
                bits(p.matmul(&x, true).unwrap()) == bits(q.matmul(&x, true).unwrap()),
                "MLX matmul rows={rows} n={n} k={k} g={g}"
            );
        }
        assert!(tile_tables16(&q).is_err(), "pairs of words in MLX's layout");
        let (x1, _) = input(&mut r, k);
        common::set_flags(&[("MLXCEL_QMV_OWN_CHUNKS", false)]);
        let err = gemv_with(&x1, &p, None, Schedule::RING)
            .unwrap_err()
            .to_string();
        common::set_flags(&[("MLXCEL_QMV_OWN_CHUNKS", true)]);
        assert!(err.contains("MLXCEL_QMV_RING_TABLES"), "{err}");
    }
    let mut checks = 0;
    if KernelBackend::current() == Some(KernelBackend::Cuda) {
        // Each shape and schedule is NVRTC builds of its own: all three schedules on the first
        // shape, the default ring on the others (with all three on every shape the test ran
        // past 200 s on the H200, session 44).
        let all: Vec<Schedule> = ["ring", "ring:8:2", "ring:4:8"]
            .iter()
            .map(|s| Schedule::parse(s).unwrap())
            .collect();
        for (i, &(n, k, g)) in [
            (6144, 4096, 64),
            (48, 384, 32),
            (4096, 14336, 64),
            (1024, 2048, 128),
            (32768, 4096, 64),
        ]
        .iter()
        .enumerate()
        {
            let scheds = if i == 0 { &all[..] } else { &all[..1] };
            let (q, _) = weight(&mut r, n, k, g);
            let t = tile_rows16(&q).unwrap();
            let p = tile_tables16(&t).unwrap();
            let (x, _) = input(&mut r, k);
            let (res, _) = input(&mut r, n);
            let (xr, w) = residual_and_norm_weight(&mut r, k);
            let norm = FoldedNorm {
                weight: &w,
                eps: 1e-5,
            };
            for &s in scheds {
                let case = format!("n={n} k={k} g={g} {s}");
                checks += plain_same_bits(&x, &res, (&t, s), (&p, s), &case);
                let want = bits(gemv_rms_with(&xr, norm, &t, s).unwrap());
                let got = bits(gemv_rms_with(&xr, norm, &p, s).unwrap());
                assert!(got == want, "norm n={n} k={k} g={g} {s}");
                checks += 1;
            }
        }
        for (i, &(n, k, g)) in [(14336, 4096, 64), (256, 1024, 32)].iter().enumerate() {
            let (qg, _) = weight(&mut r, n, k, g);
            let (qu, _) = weight(&mut r, n, k, g);
            let (tg, tu) = (tile_rows16(&qg).unwrap(), tile_rows16(&qu).unwrap());
            let (pg, pu) = (tile_tables16(&tg).unwrap(), tile_tables16(&tu).unwrap());
            let (x, _) = input(&mut r, k);
            for &s in if i == 0 { &all[..] } else { &all[..1] } {
                let want = bits(gemv_silu_mul_with(&x, &tg, &tu, s).unwrap());
                let got = bits(gemv_silu_mul_with(&x, &pg, &pu, s).unwrap());
                assert!(got == want, "silu n={n} k={k} g={g} {s}");
                checks += 1;
            }
        }
        eprintln!("paired tables: {checks} bit-identity checks on CUDA");
        assert_eq!(
            checks,
            (3 + 4) * 3 + (3 + 1),
            "7 plain (shape, schedule) x 3, 4 gate/up"
        );
    }
    common::clear_flags(&["MLXCEL_QMV_POST", "MLXCEL_QMV_OWN_CHUNKS"]);
}

/// The plain kernel without and with the residual `res`: `got`'s weight and schedule must give
/// `want`'s bits on x; `case` names the case on failure. Returns the checks made (2).
fn plain_same_bits(
    x: &Array,
    res: &Array,
    want: (&Quantized, Schedule),
    got: (&Quantized, Schedule),
    case: &str,
) -> usize {
    let bits = |y: Array| y.to_vec::<half::f16>().unwrap();
    for rr in [None, Some(res)] {
        let w = bits(gemv_with(x, want.0, rr, want.1).unwrap());
        let g = bits(gemv_with(x, got.0, rr, got.1).unwrap());
        assert!(g == w, "{case} residual={}", rr.is_some());
    }
    2
}

/// Each tiled schedule against the per-lane ring of the same warps and stages on MLX's layout,
/// per mode (`MLXCEL_QMV_POST`, `MLXCEL_QMV_OWN_CHUNKS`): POST's loop reads either layout
/// through per-lane copies; with POST off also bulk copies (one per tile, lane 0; bulk launches
/// never take POST's loop). Returns the bit-identity checks made (CUDA only).
fn tiled_same_bits(r: &mut rand::rngs::StdRng, modes: &[(bool, bool)]) -> usize {
    let bits = |y: Array| y.to_vec::<half::f16>().unwrap();
    let mut checks = 0;
    for &(post, own) in modes {
        common::set_flags(&[("MLXCEL_QMV_POST", post), ("MLXCEL_QMV_OWN_CHUNKS", own)]);
        let names: &[&str] = if post {
            &["ring", "ring:8:2", "ring:4:8"]
        } else {
            &[
                "ring", "ring:8:2", "ring:4:8", "bulk:8:3", "bulk:8:2", "bulk:4:8",
            ]
        };
        let scheds: Vec<Schedule> = names.iter().map(|s| Schedule::parse(s).unwrap()).collect();
        for &(n, k, g) in &[
            (48, 384, 32),
            (6144, 4096, 64),
            (4096, 14336, 64),
            (1024, 2048, 128),
        ] {
            let (q, _) = weight(r, n, k, g);
            let t = tile_rows16(&q).unwrap();
            let (x, _) = input(r, k);
            let (res, _) = input(r, n);
            for &s in &scheds {
                let case = format!("n={n} k={k} g={g} {s} post={post} own={own}");
                checks += plain_same_bits(&x, &res, (&q, s.per_lane()), (&t, s), &case);
            }
        }
        for &(n, k, g) in &[(32, 256, 64), (14336, 4096, 64)] {
            let (qg, _) = weight(r, n, k, g);
            let (qu, _) = weight(r, n, k, g);
            let (tg, tu) = (tile_rows16(&qg).unwrap(), tile_rows16(&qu).unwrap());
            let (x, _) = input(r, k);
            for &s in &scheds {
                let want = bits(gemv_silu_mul_with(&x, &qg, &qu, s.per_lane()).unwrap());
                let got = bits(gemv_silu_mul_with(&x, &tg, &tu, s).unwrap());
                assert!(
                    got == want,
                    "silu n={n} k={k} g={g} {s} post={post} own={own}"
                );
                checks += 1;
            }
        }
    }
    common::clear_flags(&["MLXCEL_QMV_POST", "MLXCEL_QMV_OWN_CHUNKS"]);
    checks
}
