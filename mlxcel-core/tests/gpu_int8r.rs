//! Rotated int8 sides (`int8r`) on the CUDA kernels, `MLXCEL_INT8R_FUSED=1`: the K+V pair
//! launch rotates and quantizes a decode step's vectors (`cuda/int8_encode_kv.cu` with
//! `MLXCEL_INT8_ROT`), and the fused decode kernel reads the side, rotating q for K and the
//! output for V. On the GPU host each is compared with the MLX-ops path on fresh random data:
//! the stored vectors within one int8 step (the warp's Hadamard butterflies and MLX's
//! `hadamard_transform` may round differently, moving a value across a rounding boundary), and
//! the attention output against the dequantized f32 reference (relative RMS < 1e-3, NaN-poisoned
//! outputs). On the CPU (CI) it checks the dispatch: the pair launch is not offered and the
//! rotated-SDPA path is selected.

mod common;

use common::{clear_flags, randn, rel_rms, rng, set_flags};
use mlxcel_core::attention::{attend_with, select_path, AttentionPath};
use mlxcel_core::kv::int8::Int8Side;
use mlxcel_core::kv::side::KvSide;
use mlxcel_core::kv::turbo::rotation::{K_SEED, V_SEED};
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::{Array, Dtype};

fn rotated_pair(d: usize, prefill: &[Array; 2]) -> (Int8Side, Int8Side) {
    let mut k = Int8Side::rotated(d, K_SEED).unwrap();
    let mut v = Int8Side::rotated(d, V_SEED).unwrap();
    k.append(&prefill[0]).unwrap();
    v.append(&prefill[1]).unwrap();
    (k, v)
}

/// The largest |a - b| over one row of the stored (rotated) vectors, in units of that row's
/// int8 step in `b`, and the fraction of elements that differ at all.
fn stored_gap(a: &Int8Side, b: &Int8Side, d: usize) -> (f32, f32) {
    let va = a
        .dense_rotated(Dtype::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let vb = b
        .dense_rotated(Dtype::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(va.len(), vb.len());
    let (mut worst, mut differing) = (0f32, 0usize);
    for (ra, rb) in va.chunks(d).zip(vb.chunks(d)) {
        let step = rb.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        for (x, y) in ra.iter().zip(rb) {
            if x != y {
                differing += 1;
                worst = worst.max((x - y).abs() / step.max(f32::MIN_POSITIVE));
            }
        }
    }
    (worst, differing as f32 / va.len() as f32)
}

#[test]
fn int8r_kernels_match_the_mlx_ops_paths_or_are_not_used() {
    let mut r = rng("int8r_kernels_match_the_mlx_ops_paths_or_are_not_used");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    set_flags(&[("MLXCEL_INT8R_FUSED", true)]);
    let contexts: &[usize] = if on_cuda { &[1, 17, 1000, 4097] } else { &[5] };
    let (mut worst_attn, mut worst_step, mut cases) = (0f32, 0f32, 0);
    for (hq, hkv, d) in [(32usize, 8usize, 128usize), (7, 1, 64), (28, 4, 128)] {
        for &len in contexts {
            let shape = |l: usize| [1, hkv as i32, l as i32, d as i32];
            let rand = |r: &mut rand::rngs::StdRng, l: usize| {
                Array::from_slice(&randn(r, hkv * l * d), &shape(l)).unwrap()
            };
            let prefill = [rand(&mut r, len), rand(&mut r, len)];
            let (xk, xv) = (
                rand(&mut r, 1).astype(Dtype::F16).unwrap(),
                rand(&mut r, 1).astype(Dtype::F16).unwrap(),
            );
            // a: the decode step through the pair launch; b: through MLX ops.
            let (mut ak, mut av) = rotated_pair(d, &prefill);
            let (mut bk, mut bv) = rotated_pair(d, &prefill);
            let launched =
                Int8Side::append_pair_in_place(&mut ak, &mut av, &xk, &xv, None).unwrap();
            assert_eq!(
                launched, on_cuda,
                "the int8r pair launch is offered on CUDA only"
            );
            if !launched {
                ak.append(&xk).unwrap();
                av.append(&xv).unwrap();
            }
            bk.append(&xk).unwrap();
            bv.append(&xv).unwrap();
            for (name, a, b) in [("K", &ak, &bk), ("V", &av, &bv)] {
                let (gap, frac) = stored_gap(a, b, d);
                assert!(
                    gap <= 1.01 && frac <= 0.01,
                    "{hq}:{hkv}:{d} len {len} {name}: stored values differ by {gap} steps in {:.2}% of elements",
                    100.0 * frac
                );
                worst_step = worst_step.max(gap);
            }
            let q = Array::from_slice(&randn(&mut r, hq * d), &[1, hq as i32, 1, d as i32])
                .unwrap()
                .astype(Dtype::F16)
                .unwrap();
            let path = select_path(&q, &ak, &av);
            if !on_cuda {
                assert_eq!(path, AttentionPath::RotatedSdpa);
                continue;
            }
            assert_eq!(path, AttentionPath::FusedDecode, "{hq}:{hkv}:{d}");
            let scale = 1.0 / (d as f32).sqrt();
            let reference = attend_with(
                AttentionPath::DequantSdpa,
                &q.astype(Dtype::F32).unwrap(),
                &ak,
                &av,
                scale,
            )
            .unwrap();
            let fused = attend_with(AttentionPath::FusedDecode, &q, &ak, &av, scale).unwrap();
            let nan = common::has_nan(&fused);
            assert!(!nan, "{hq}:{hkv}:{d} len {len}: unwritten (NaN) outputs");
            let e = rel_rms(&fused, &reference);
            eprintln!("int8r {hq}:{hkv}:{d} len {len}: fused relative RMS {e:.2e}");
            assert!(e < 1e-3, "{hq}:{hkv}:{d} len {len}: relative RMS {e}");
            worst_attn = worst_attn.max(e);
            cases += 1;
        }
    }
    clear_flags(&["MLXCEL_INT8R_FUSED"]);
    if on_cuda {
        eprintln!(
            "int8r: {cases} cases, worst attention relative RMS {worst_attn:.2e}, stored values within {worst_step:.2} steps"
        );
    }
}
