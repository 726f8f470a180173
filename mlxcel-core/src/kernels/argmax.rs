//! The greedy token on CUDA: the index of the largest logit of one row, with MLX's argmax
//! semantics, from a kernel that spreads the row over many CTAs (`cuda/argmax.cu`). MLX's own
//! argmax reduces a row in one CTA, 22.5 us per decode step for Llama-3's 128256 logits on the
//! H200 (session 32). `MLXCEL_FAST_ARGMAX=0`, other backends and other shapes use MLX's
//! argmax, the reference the GPU test (`tests/gpu_argmax.rs`) compares against.

use crate::flags;
use crate::kernels::decode_attention::{argmax_tickets, TICKET_SLOT_WORDS};
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::Result;

/// Threads per CTA (`NT` in `cuda/argmax.cu`).
const THREADS: i32 = 256;
/// Logits per thread before the grid grows: 128256 logits take 63 CTAs.
const PER_THREAD: i32 = 8;

fn source() -> KernelSource {
    KernelSource::new(
        "mlxcel_argmax_token",
        &["x", "tickets", "slot_marker"],
        &["out"],
        include_str!("cuda/argmax.cu"),
    )
}

/// The argmax of `logits` (one row: every axis but the last of size 1; fp16, bf16 or f32) as a
/// `[1]` uint32 array, as `logits.argmax(-1)` reshaped to `[1]` gives it. `None` where the
/// kernel does not apply (the flag off, not CUDA, several rows, another dtype, an empty row):
/// the caller then uses MLX's argmax.
pub fn try_argmax_token(logits: &Array) -> Result<Option<Array>> {
    let shape = logits.shape();
    let n = shape.last().copied().unwrap_or(0);
    let applies = flags::FAST_ARGMAX.enabled()
        && KernelBackend::current() == Some(KernelBackend::Cuda)
        && n > 0
        && shape.iter().rev().skip(1).all(|&d| d == 1)
        && matches!(logits.dtype(), Dtype::F16 | Dtype::BF16 | Dtype::F32);
    if !applies {
        return Ok(None);
    }
    let (tickets, slot) = argmax_tickets()?;
    let ctas = ((n + THREADS * PER_THREAD - 1) / (THREADS * PER_THREAD)).max(1);
    let launch = Launch::new(
        &[logits, &tickets, &slot],
        [ctas * THREADS, 1, 1],
        [THREADS, 1, 1],
    )
    .output(&[1], Dtype::U32)
    .template("SLOT_WORDS", TemplateArg::Int(TICKET_SLOT_WORDS as i32));
    let mut out = cached_by_name(KernelBackend::Cuda, "argmax_token", 0, source)?.call(&launch)?;
    Ok(out.pop())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel names its input dtype (`T_x`), so MLX compiles one module per logits dtype.
    #[test]
    fn the_kernel_is_specialized_per_logits_dtype() {
        let s = source();
        assert!(crate::mlx::kernel::dtype_arg_names(KernelBackend::Cuda, &s)
            .contains(&"T_x".to_string()));
    }
}
