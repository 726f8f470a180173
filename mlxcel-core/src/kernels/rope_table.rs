//! A decode step's RoPE table on CUDA (`cuda/rope_table.cu`): (cos, sin) of every frequency at
//! the step's new position, computed once per step and read by every layer's tensor-core
//! attention launch instead of each launch reducing its own angles
//! ([`flags::ROPE_TABLE`], `RTAB` in `cuda/decode_attention_mma.cu`). Why: past ~106K positions
//! CUDA's `sincosf` takes its slow exact reduction for RoPE's highest frequencies, ~1.6 us of
//! each 128K attention launch's prologue on the H200 (ncu source counters, session 46), 28
//! times per step. The table's values are the ones the launches computed (the same f32 product
//! and `sincosf`), so the outputs are bit-identical either way.

use crate::flags;
use crate::kernels::decode_attention::length_marker;
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::Result;

/// Threads per CTA; one thread per frequency.
const THREADS: i32 = 64;

fn source() -> KernelSource {
    KernelSource::new(
        "mlxcel_rope_table",
        &["inv_freq", "len_marker"],
        &["cs"],
        include_str!("cuda/rope_table.cu"),
    )
}

/// Whether the tensor-core attention kernel reads RoPE from the step's table
/// ([`flags::ROPE_TABLE`]; CUDA only, where that kernel runs).
pub fn enabled() -> bool {
    flags::ROPE_TABLE.enabled() && KernelBackend::current() == Some(KernelBackend::Cuda)
}

/// The table `[dims / 2, 2]` f32 (cos, sin) of `rope` at position `len - 1`, the attention
/// kernel's `RTAB` input. One launch per (spec, length): the layers of a step share the array
/// (cached in the spec), so MLX evaluates it once.
pub fn step_table(rope: &RopeSpec, len: usize) -> Result<Array> {
    rope.cached_step_table(len, || {
        let inv_freq = rope.inv_freq();
        let half = inv_freq.shape()[0];
        let marker = length_marker(len)?;
        let ctas = ((half + THREADS - 1) / THREADS).max(1);
        let launch = Launch::new(
            &[inv_freq, &marker],
            [ctas * THREADS, 1, 1],
            [THREADS, 1, 1],
        )
        .output(&[half, 2], Dtype::F32);
        let mut out =
            cached_by_name(KernelBackend::Cuda, "rope_table", 0, source)?.call(&launch)?;
        Ok(out.pop().expect("one output"))
    })
}
