//! Matmul, MLX affine quantization, the Hadamard transform and the fast ops (RMSNorm,
//! RoPE, SDPA) against plain-Rust references on fresh random inputs.

mod common;

use common::{assert_close, assert_rel_norm, f32_matmul_tol, matmul, randn, rng};
use mlxcel_core::mlx::fast::{
    rms_norm, rope, scaled_dot_product_attention, AttentionMask, RopeFreqs, RopeOffset,
};
use mlxcel_core::mlx::ops::quantize;
use mlxcel_core::{Array, Dtype};
use rand::Rng;

#[test]
fn matmul_matches_naive_with_batch_broadcast() {
    let mut r = rng("matmul_matches_naive_with_batch_broadcast");
    let (bt, m, k, n) = (
        3usize,
        r.gen_range(1..20),
        r.gen_range(1..40),
        r.gen_range(1..20),
    );
    let a = randn(&mut r, bt * m * k);
    let b = randn(&mut r, k * n);
    let aa = Array::from_slice(&a, &[bt as i32, m as i32, k as i32]).unwrap();
    let bb = Array::from_slice(&b, &[k as i32, n as i32]).unwrap();
    let got = aa.matmul(&bb).unwrap();
    assert_eq!(got.shape(), vec![bt as i32, m as i32, n as i32]);
    let gv = got.to_vec::<f32>().unwrap();
    for i in 0..bt {
        let want = matmul(&a[i * m * k..(i + 1) * m * k], &b, m, k, n);
        assert_rel_norm(&gv[i * m * n..(i + 1) * m * n], &want, f32_matmul_tol());
    }
    // Inner dimensions k vs k + 1 never match (aa @ aa did when m == k: a flaky check).
    let bad = Array::from_slice(&vec![0f32; (k + 1) * n], &[(k + 1) as i32, n as i32]).unwrap();
    let err = aa.matmul(&bad).unwrap_err().to_string();
    assert!(err.contains("matmul"), "{err}");
}

#[test]
fn affine_quantization_round_trip_and_qmm() {
    let mut r = rng("affine_quantization_round_trip_and_qmm");
    let (out_f, in_f, gs) = (16usize, 128usize, 32usize);
    let w = randn(&mut r, out_f * in_f);
    let wa = Array::from_slice(&w, &[out_f as i32, in_f as i32]).unwrap();
    for bits in [4, 8] {
        let q = quantize(&wa, gs as i32, bits).unwrap();
        assert_eq!(q.w.dtype(), Dtype::U32);
        assert_eq!(
            q.w.shape(),
            vec![out_f as i32, (in_f * bits as usize / 32) as i32]
        );
        assert_eq!(q.scales.shape(), vec![out_f as i32, (in_f / gs) as i32]);
        let deq = q.dequantize(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
        let scales = q.scales.to_f32_vec().unwrap();
        // MLX snaps the bias so that 0 is exact, which can cost up to one full step at
        // the group's edge; on average the error is about a quarter step.
        let mut rel_sum = 0f32;
        for row in 0..out_f {
            for c in 0..in_f {
                let s = scales[row * (in_f / gs) + c / gs].abs();
                let e = (deq[row * in_f + c] - w[row * in_f + c]).abs();
                assert!(
                    e <= s * 1.001 + 1e-4,
                    "bits {bits}: error {e} > one step {s}"
                );
                rel_sum += e / s;
            }
        }
        let mean_rel = rel_sum / (out_f * in_f) as f32;
        assert!(mean_rel < 0.35, "bits {bits}: mean error {mean_rel} steps");
        // quantized_matmul(x, W) == x @ dequantize(W).T
        let x = randn(&mut r, 3 * in_f);
        let xa = Array::from_slice(&x, &[3, in_f as i32]).unwrap();
        let got = q.matmul(&xa, true).unwrap().to_vec::<f32>().unwrap();
        let mut wt = vec![0f32; in_f * out_f];
        for o in 0..out_f {
            for i in 0..in_f {
                wt[i * out_f + o] = deq[o * in_f + i];
            }
        }
        assert_rel_norm(
            &got,
            &matmul(&x, &wt, 3, in_f, out_f),
            f32_matmul_tol().max(1e-4),
        );
    }
    assert!(
        quantize(&wa, 7, 4).is_err(),
        "group size 7 must be rejected"
    );
}

fn walsh_hadamard(x: &[f32]) -> Vec<f32> {
    // Sylvester-ordered H_n x / sqrt(n), by the definition H[i][j] = (-1)^popcount(i & j).
    let n = x.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if (i & j).count_ones() % 2 == 0 {
                        x[j]
                    } else {
                        -x[j]
                    }
                })
                .sum::<f32>()
                / (n as f32).sqrt()
        })
        .collect()
}

#[test]
fn hadamard_transform_matches_definition() {
    let mut r = rng("hadamard_transform_matches_definition");
    for n in [64usize, 128] {
        let x = randn(&mut r, 2 * n);
        let a = Array::from_slice(&x, &[2, n as i32]).unwrap();
        let got = a.hadamard_transform(None).unwrap().to_vec::<f32>().unwrap();
        for row in 0..2 {
            let want = walsh_hadamard(&x[row * n..(row + 1) * n]);
            assert_close(&got[row * n..(row + 1) * n], &want, 1e-4, 1e-4);
        }
        // Orthonormal and self-inverse.
        let back = a
            .hadamard_transform(None)
            .unwrap()
            .hadamard_transform(None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_close(&back, &x, 1e-4, 1e-4);
    }
}

#[test]
fn rms_norm_matches_rust() {
    let mut r = rng("rms_norm_matches_rust");
    let d = 96usize;
    let x = randn(&mut r, 3 * d);
    let w = randn(&mut r, d);
    let eps = 1e-5f32;
    let xa = Array::from_slice(&x, &[3, d as i32]).unwrap();
    let wa = Array::from_slice(&w, &[d as i32]).unwrap();
    let got = rms_norm(&xa, Some(&wa), eps)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let plain = rms_norm(&xa, None, eps).unwrap().to_vec::<f32>().unwrap();
    for row in 0..3 {
        let xs = &x[row * d..(row + 1) * d];
        let inv = 1.0 / (xs.iter().map(|v| v * v).sum::<f32>() / d as f32 + eps).sqrt();
        for i in 0..d {
            let want = xs[i] * inv;
            assert!((plain[row * d + i] - want).abs() < 1e-5);
            assert!((got[row * d + i] - want * w[i]).abs() < 1e-5);
        }
    }
}

/// Shape and parameters of a RoPE reference call over x `[heads, seq, dim]`.
struct RopeCase {
    heads: usize,
    seq: usize,
    dim: usize,
    traditional: bool,
    scale: f32,
    offset: usize,
}

/// Reference RoPE: `theta = (offset + t) * scale / period_i`.
fn rope_ref(x: &[f32], c: &RopeCase, periods: &[f32]) -> Vec<f32> {
    let half = periods.len();
    let mut out = x.to_vec();
    for h in 0..c.heads {
        for t in 0..c.seq {
            let base = (h * c.seq + t) * c.dim;
            for (i, period) in periods.iter().enumerate() {
                let theta = (c.offset + t) as f32 * c.scale / period;
                let (s, co) = theta.sin_cos();
                let (a, b) = if c.traditional {
                    (2 * i, 2 * i + 1)
                } else {
                    (i, i + half)
                };
                out[base + a] = x[base + a] * co - x[base + b] * s;
                out[base + b] = x[base + a] * s + x[base + b] * co;
            }
        }
    }
    out
}

#[test]
fn rope_matches_reference_all_variants() {
    let mut r = rng("rope_matches_reference_all_variants");
    let (heads, seq, dim) = (2usize, 5usize, 64usize);
    let base = 10000f32;
    let x = randn(&mut r, heads * seq * dim);
    let xa = Array::from_slice(&x, &[1, heads as i32, seq as i32, dim as i32]).unwrap();
    let periods: Vec<f32> = (0..dim / 2)
        .map(|i| base.powf(2.0 * i as f32 / dim as f32))
        .collect();
    let offset = r.gen_range(0..1000usize);
    for traditional in [false, true] {
        let case = RopeCase {
            heads,
            seq,
            dim,
            traditional,
            scale: 1.0,
            offset,
        };
        let want = rope_ref(&x, &case, &periods);
        let int_off = rope(
            &xa,
            dim as i32,
            traditional,
            RopeFreqs::Base(base),
            1.0,
            RopeOffset::Int(offset as i32),
        )
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
        assert_close(&int_off, &want, 2e-3, 1e-3);
        let off = Array::scalar(offset as i32).unwrap();
        let arr_off = rope(
            &xa,
            dim as i32,
            traditional,
            RopeFreqs::Base(base),
            1.0,
            RopeOffset::Array(&off),
        )
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
        assert_close(&arr_off, &want, 2e-3, 1e-3);
    }
    // Custom (e.g. Llama-3-scaled) periods and a position scale.
    let custom: Vec<f32> = periods
        .iter()
        .map(|p| p * (1.0 + 3.0 * (r.gen::<f32>())))
        .collect();
    let fa = Array::from_slice(&custom, &[(dim / 2) as i32]).unwrap();
    let case = RopeCase {
        heads,
        seq,
        dim,
        traditional: false,
        scale: 0.5,
        offset,
    };
    let want = rope_ref(&x, &case, &custom);
    let got = rope(
        &xa,
        dim as i32,
        false,
        RopeFreqs::Custom(&fa),
        0.5,
        RopeOffset::Int(offset as i32),
    )
    .unwrap()
    .to_vec::<f32>()
    .unwrap();
    assert_close(&got, &want, 2e-3, 1e-3);
}

/// Shapes of a naive attention call: q `[hq, lq, d]`, k/v `[hkv, lk, d]`.
#[derive(Clone, Copy)]
struct AttnShape {
    hq: usize,
    hkv: usize,
    lq: usize,
    lk: usize,
    d: usize,
    scale: f32,
}

/// Naive attention with GQA by head groups; `causal` aligns the last query with the last
/// key; `mask` (true = attend) is `[lq, lk]`.
fn attention_ref(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    sh: &AttnShape,
    causal: bool,
    mask: Option<&[bool]>,
) -> Vec<f32> {
    let AttnShape {
        hq,
        hkv,
        lq,
        lk,
        d,
        scale,
    } = *sh;
    let mut out = vec![0f32; hq * lq * d];
    for h in 0..hq {
        let kh = h / (hq / hkv);
        for i in 0..lq {
            let mut s: Vec<f32> = (0..lk)
                .map(|j| {
                    let visible =
                        (!causal || j + lq <= lk + i) && mask.is_none_or(|m| m[i * lk + j]);
                    if !visible {
                        return f32::NEG_INFINITY;
                    }
                    (0..d)
                        .map(|c| q[(h * lq + i) * d + c] * k[(kh * lk + j) * d + c])
                        .sum::<f32>()
                        * scale
                })
                .collect();
            let mx = s.iter().cloned().fold(f32::MIN, f32::max);
            let z: f32 = s
                .iter_mut()
                .map(|x| {
                    *x = (*x - mx).exp();
                    *x
                })
                .sum();
            for c in 0..d {
                out[(h * lq + i) * d + c] =
                    (0..lk).map(|j| s[j] / z * v[(kh * lk + j) * d + c]).sum();
            }
        }
    }
    out
}

#[test]
fn sdpa_matches_reference_gqa_causal_and_masked() {
    let mut r = rng("sdpa_matches_reference_gqa_causal_and_masked");
    let (hq, hkv, d) = (8usize, 2usize, 64usize);
    let scale = 1.0 / (d as f32).sqrt();
    for (lq, lk) in [(1usize, 37usize), (5, 5), (4, 19)] {
        let q = randn(&mut r, hq * lq * d);
        let k = randn(&mut r, hkv * lk * d);
        let v = randn(&mut r, hkv * lk * d);
        let qa = Array::from_slice(&q, &[1, hq as i32, lq as i32, d as i32]).unwrap();
        let ka = Array::from_slice(&k, &[1, hkv as i32, lk as i32, d as i32]).unwrap();
        let va = Array::from_slice(&v, &[1, hkv as i32, lk as i32, d as i32]).unwrap();
        let sh = AttnShape {
            hq,
            hkv,
            lq,
            lk,
            d,
            scale,
        };
        let none = scaled_dot_product_attention(&qa, &ka, &va, scale, AttentionMask::None).unwrap();
        assert_close(
            &none.to_vec::<f32>().unwrap(),
            &attention_ref(&q, &k, &v, &sh, false, None),
            1e-4,
            1e-3,
        );
        let causal =
            scaled_dot_product_attention(&qa, &ka, &va, scale, AttentionMask::Causal).unwrap();
        assert_close(
            &causal.to_vec::<f32>().unwrap(),
            &attention_ref(&q, &k, &v, &sh, true, None),
            1e-4,
            1e-3,
        );
        // A random boolean mask that keeps at least the first key visible.
        let m: Vec<bool> = (0..lq * lk)
            .map(|i| i % lk == 0 || r.gen::<bool>())
            .collect();
        let ma = Array::from_slice(&m, &[lq as i32, lk as i32]).unwrap();
        let masked =
            scaled_dot_product_attention(&qa, &ka, &va, scale, AttentionMask::Array(&ma)).unwrap();
        assert_close(
            &masked.to_vec::<f32>().unwrap(),
            &attention_ref(&q, &k, &v, &sh, false, Some(&m)),
            1e-4,
            1e-3,
        );
    }
    // Hq not a multiple of Hkv is an error, not an abort.
    let q = Array::zeros(&[1, 3, 1, 64], Dtype::F32).unwrap();
    let k = Array::zeros(&[1, 2, 4, 64], Dtype::F32).unwrap();
    assert!(
        scaled_dot_product_attention(&q, &k, &k, 1.0, AttentionMask::None)
            .and_then(|o| o.eval())
            .is_err()
    );
}
