//! A decode step's token embedding on CUDA in one launch (`cuda/embedding_rows.cu`): the rows
//! of an MLX-affine 4-bit table for the step's ids, dequantized with MLX's arithmetic. MLX's
//! path (three `take`s and a `dequantize`) is four launches per step, 14.5 us in situ on the
//! H200 for 2 KB of codes, but its three gathers run side by side in MLX's graph: the kernel
//! (4.9 us in situ) measured level per decode step (session 34), so it is off by default
//! (`MLXCEL_FAST_EMBED=1` takes it). Other backends, other bit widths and many ids use MLX's
//! ops, the reference the GPU test (`tests/gpu_embedding.rs`) compares against.

use crate::flags;
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::ops::{Quantized, WeightLayout};
use crate::mlx::{Array, Dtype};
use crate::Result;

/// Threads per CTA (`NT` in `cuda/embedding_rows.cu`).
const THREADS: i32 = 256;
/// Most ids per launch: a decode step's (prefill keeps MLX's ops).
const MAX_IDS: i32 = 64;

fn source() -> KernelSource {
    KernelSource::new(
        "mlxcel_embedding_rows",
        &["ids", "w", "scales", "biases"],
        &["out"],
        include_str!("cuda/embedding_rows.cu"),
    )
}

/// Rows `ids` (any shape, any integer dtype, at most [`MAX_IDS`] of them) of the 4-bit table
/// `table` (`[V, K]` in MLX's layout), dequantized: `ids.shape + [K]` in the scales' dtype, the
/// bits MLX's `take` + `dequantize` give. `None` where the kernel does not apply (the flag off,
/// not CUDA, another bit width, layout or shape): the caller then uses MLX's ops.
pub fn try_embedding_rows(table: &Quantized, ids: &Array) -> Result<Option<Array>> {
    let (ws, ss) = (table.w.shape(), table.scales.shape());
    let n: i32 = ids.shape().iter().product();
    let applies = flags::FAST_EMBED.enabled()
        && KernelBackend::current() == Some(KernelBackend::Cuda)
        && table.bits == 4
        && table.layout == WeightLayout::Mlx
        && table.w.dtype() == Dtype::U32
        && ws.len() == 2
        && ss.len() == 2
        && table.biases.shape() == ss
        && table.group_size > 0
        && ss[0] == ws[0]
        && (ws[1] * 8) % table.group_size == 0
        && ss[1] == ws[1] * 8 / table.group_size
        && matches!(table.scales.dtype(), Dtype::F16 | Dtype::BF16 | Dtype::F32)
        && table.biases.dtype() == table.scales.dtype()
        && matches!(
            ids.dtype(),
            Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64
        )
        && (1..=MAX_IDS).contains(&n);
    if !applies {
        return Ok(None);
    }
    let k = ws[1] * 8;
    let flat = ids.reshape(&[n])?;
    let launch = Launch::new(
        &[&flat, &table.w, &table.scales, &table.biases],
        [((ws[1] + THREADS - 1) / THREADS) * THREADS, n, 1],
        [THREADS, 1, 1],
    )
    .output(&[n, k], table.scales.dtype())
    .template("G", TemplateArg::Int(table.group_size));
    let mut out =
        cached_by_name(KernelBackend::Cuda, "embedding_rows", 0, source)?.call(&launch)?;
    let rows = out.pop().expect("one output");
    let mut shape = ids.shape();
    shape.push(k);
    rows.reshape(&shape).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel names the scales' dtype (`T_scales`, also the output's), so MLX compiles one
    /// module per model dtype.
    #[test]
    fn the_kernel_is_specialized_per_table_dtype() {
        let s = source();
        assert!(crate::mlx::kernel::dtype_arg_names(KernelBackend::Cuda, &s)
            .contains(&"T_scales".to_string()));
    }
}
