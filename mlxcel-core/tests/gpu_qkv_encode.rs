//! The qkv GEMV with a decode step's K+V cache append folded in (turbo4, turbo4-asym, int8;
//! `MLXCEL_QKV_ENCODE`, `cuda/qgemv4_qkv_encode.cu`) against the same projection and the
//! separate in-place append (`turbo_encode_kv.cu`, `turbo_encode_kv_asym.cu`,
//! `int8_encode_kv.cu`), on fresh random data. On the GPU host the three projection parts
//! and every cache position written (turbo codes and norms, fp16 keys, int8 values and
//! scales) must be bit-identical over three consecutive steps (the arrival counters are
//! reused and reset by each call), for Llama-3-8B's heads at head_dim 128 and a GQA-7
//! head_dim-64 shape, with RoPE in both layouts, with `MLXCEL_QKV_ENC_TAIL` off and on, and
//! with `MLXCEL_QKV_CLUSTER` off and on (the head gathered in thread-block clusters).
//! On the CPU (CI) the fold is never offered and the cache is left as it was.

mod common;

use common::{f16_array, randn, rng, split_cache as cache, stored_bits as stored};
use mlxcel_core::kernels::quantized_gemv::{
    parts_plan, try_gemv_parts, try_gemv_parts_encode, FoldedNorm,
};
use mlxcel_core::kv::KvCache;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::ops::quantize;
use mlxcel_core::rope::RopeSpec;

#[test]
fn folded_append_writes_what_the_separate_append_writes_or_is_not_offered() {
    let mut r = rng("folded_append_writes_what_the_separate_append_writes_or_is_not_offered");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    // The fold, not the attention launch, takes the append (MLXCEL_ATTN_APPEND declines it).
    common::set_flags(&[("MLXCEL_QKV_ENCODE", true), ("MLXCEL_ATTN_APPEND", false)]);
    let eps = 1e-5f32;
    let k_in = 2048usize;
    let prefill = 5;
    let mut steps_checked = 0;
    // (mode, q heads, KV heads, head_dim, group, RoPE traditional)
    let cases = [
        ("turbo4", 32, 8, 128usize, 64, false),
        ("turbo4", 28, 4, 64, 32, true),
        ("turbo4-asym", 32, 8, 128, 64, false),
        ("turbo4-asym", 28, 4, 64, 32, true),
        ("int8", 32, 8, 128, 64, false),
        ("int8", 28, 4, 64, 32, true),
    ];
    // `MLXCEL_QKV_ENC_TAIL` off and on (the tables from shared memory, the ticket without
    // fences), each with `MLXCEL_QKV_CLUSTER` off and on (clusters instead of the ticket), and
    // the shipped tail with `MLXCEL_QMV_ALIGN128` off for the folded append only (its dynamic
    // shared memory 48 bytes past a line, the reference projection's on one): the same bits
    // every way.
    let variants = [
        (false, false, true),
        (false, true, true),
        (true, false, true),
        (true, true, true),
        (true, false, false),
    ];
    for (&(mode, nq, nkv, d, g, trad), (etail, cluster, align)) in cases
        .iter()
        .flat_map(|c| variants.iter().map(move |&v| (c, v)))
    {
        common::set_flags(&[
            ("MLXCEL_QKV_ENC_TAIL", etail),
            ("MLXCEL_QKV_CLUSTER", cluster),
        ]);
        let pre = [1, nkv as i32, prefill, d as i32];
        let pk = f16_array(&randn(&mut r, nkv * prefill as usize * d), &pre);
        let pv = f16_array(&randn(&mut r, nkv * prefill as usize * d), &pre);
        let (mut a, mut b) = (cache(mode, d, &pk, &pv), cache(mode, d, &pk, &pv));
        let rope = RopeSpec::new(d as i32, trad, 500000.0, None).unwrap();
        let kv_shape = [1, nkv as i32, 1, d as i32];
        let shapes = [[1, nq as i32, 1, d as i32], kv_shape, kv_shape];
        if !on_cuda {
            let target = a.fused_append_target(kv_shape, &rope).unwrap();
            assert!(
                target.is_none(),
                "the folded append must not be offered on the CPU"
            );
            assert_eq!(
                a.len(),
                prefill as usize,
                "an unused target appends nothing"
            );
            continue;
        }
        let n = (nq + 2 * nkv) * d;
        let w = f16_array(
            &randn(&mut r, n * k_in)
                .iter()
                .map(|v| v * 0.02)
                .collect::<Vec<_>>(),
            &[n as i32, k_in as i32],
        );
        let q = quantize(&w, g, 4).unwrap();
        let nw = f16_array(
            &randn(&mut r, k_in)
                .iter()
                .map(|v| 1.0 + 0.3 * v)
                .collect::<Vec<_>>(),
            &[k_in as i32],
        );
        let norm = FoldedNorm { weight: &nw, eps };
        for step in 0..3 {
            let xs: Vec<f32> = randn(&mut r, k_in).iter().map(|v| v * 8.0).collect();
            let x = f16_array(&xs, &[1, 1, k_in as i32]);
            let target = a
                .fused_append_target(kv_shape, &rope)
                .unwrap()
                .expect("the folded append must be offered on CUDA");
            assert_eq!(target.pos, prefill as usize + step);
            let plan = parts_plan(&x, &q, shapes.each_ref().map(|s| &s[..]))
                .expect("the qkv parts must apply on CUDA");
            common::set_flags(&[("MLXCEL_QMV_ALIGN128", align)]);
            let encoded = try_gemv_parts_encode(&x, Some(norm), &q, &plan, &target, Some(&rope));
            common::clear_flags(&["MLXCEL_QMV_ALIGN128"]);
            let (parts, token) = encoded.unwrap().expect("the folded append must apply");
            a.commit_fused_append(token).unwrap();
            // The reference: the same projection, then the in-place pair append.
            let plain = try_gemv_parts(&x, Some(norm), &q, &plan)
                .unwrap()
                .expect("the folded norm applies");
            b.append_rope(&plain[1], &plain[2], &rope).unwrap();
            for (i, (p, want)) in parts.iter().zip(&plain).enumerate() {
                assert!(
                    p.to_vec::<half::f16>().unwrap() == want.to_vec::<half::f16>().unwrap(),
                    "{mode} {nq}:{nkv}:{d} etail={etail} cluster={cluster} align={align} step {step}: part {i} differs"
                );
            }
            let len = (prefill as usize + step + 1) as i32;
            assert_eq!((a.len(), b.len()), (len as usize, len as usize));
            for (name, sa, sb) in [("K", &a.k, &b.k), ("V", &a.v, &b.v)] {
                let (ca, na) = stored(sa.as_ref(), len);
                let (cb, nb) = stored(sb.as_ref(), len);
                let diff = ca.iter().zip(&cb).filter(|(x, y)| x != y).count();
                assert!(
                    diff == 0 && ca.len() == cb.len() && na == nb,
                    "{mode} {nq}:{nkv}:{d} etail={etail} cluster={cluster} align={align} step {step}: {name} differs from the separate append ({diff} data elements, aux equal: {})",
                    na == nb
                );
            }
            steps_checked += 1;
        }
    }
    common::clear_flags(&[
        "MLXCEL_QKV_ENCODE",
        "MLXCEL_QKV_ENC_TAIL",
        "MLXCEL_QKV_CLUSTER",
        "MLXCEL_ATTN_APPEND",
    ]);
    if on_cuda {
        eprintln!("qkv encode: {steps_checked} steps bit-identical to the projection and the separate append");
        assert_eq!(steps_checked, 90, "6 cases x 5 variants x 3 steps");
    }
}
