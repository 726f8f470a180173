//! A decode step's token embedding from one kernel (`MLXCEL_FAST_EMBED=1`,
//! `kernels::embedding`, `cuda/embedding_rows.cu`) against MLX's path (`take` of the codes,
//! scales and biases, then `dequantize`), on fresh random 4-bit tables. On the GPU host every
//! row must be bit-identical for fp16, bf16 and f32 tables, groups of 64 and 32, uint32 and
//! int32 ids, one id (a decode step) and several (repeats, the first and last row). On the CPU
//! (CI) the kernel is never offered.

mod common;

use common::{bits, randn, rng};
use mlxcel_core::kernels::embedding::try_embedding_rows;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::ops::{quantize, Quantized};
use mlxcel_core::{Array, Dtype};
use rand::Rng;

/// MLX's rows: the gathers and the dequantize `layers::Embedding` runs without the kernel.
fn reference(q: &Quantized, ids: &Array) -> Array {
    Quantized {
        w: q.w.take(ids, 0).unwrap(),
        scales: q.scales.take(ids, 0).unwrap(),
        biases: q.biases.take(ids, 0).unwrap(),
        group_size: q.group_size,
        bits: q.bits,
        layout: q.layout,
    }
    .dequantize(q.scales.dtype())
    .unwrap()
}

#[test]
fn embedding_rows_equal_mlx_gather_and_dequantize_or_are_not_offered() {
    let mut r = rng("embedding_rows_equal_mlx_gather_and_dequantize_or_are_not_offered");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    common::set_flags(&[("MLXCEL_FAST_EMBED", true)]);
    let (vocab, k) = (1000i32, 512i32);
    let mut checked = 0;
    for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32] {
        for g in [64, 32] {
            let w = Array::from_slice(&randn(&mut r, (vocab * k) as usize), &[vocab, k])
                .unwrap()
                .astype(dtype)
                .unwrap();
            let q = quantize(&w, g, 4).unwrap();
            let picks: Vec<u32> = (0..5).map(|_| r.gen_range(0..vocab as u32)).collect();
            let id_sets: Vec<Vec<u32>> = vec![
                vec![picks[0]],
                vec![0],
                vec![vocab as u32 - 1],
                vec![
                    picks[1],
                    picks[2],
                    picks[1],
                    0,
                    vocab as u32 - 1,
                    picks[3],
                    picks[4],
                ],
            ];
            for ids in &id_sets {
                for id_dtype in [Dtype::U32, Dtype::I32] {
                    let a = Array::from_slice(ids, &[ids.len() as i32])
                        .unwrap()
                        .astype(id_dtype)
                        .unwrap();
                    let got = try_embedding_rows(&q, &a).unwrap();
                    if !on_cuda {
                        assert!(got.is_none(), "the kernel must not be offered on the CPU");
                        continue;
                    }
                    let got = got.expect("the kernel must apply on CUDA");
                    let want = reference(&q, &a);
                    assert_eq!(got.shape(), want.shape());
                    assert_eq!(got.dtype(), want.dtype());
                    let (gb, wb) = (bits(&got), bits(&want));
                    let diff = gb.iter().zip(&wb).filter(|(x, y)| x != y).count();
                    assert!(
                        diff == 0,
                        "{dtype:?} g{g} ids {ids:?} ({id_dtype:?}): {diff} of {} values differ from MLX's",
                        wb.len()
                    );
                    checked += 1;
                }
            }
        }
    }
    common::clear_flags(&["MLXCEL_FAST_EMBED"]);
    if on_cuda {
        eprintln!("embedding: {checked} id sets bit-identical to MLX's gather and dequantize");
        assert_eq!(checked, 48, "3 dtypes x 2 groups x 4 id sets x 2 id dtypes");
    }
}
