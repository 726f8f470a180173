//! MLX's fused kernels (`mlx::core::fast`): RMSNorm, RoPE and scaled-dot-product
//! attention. These are the building blocks of the models and the reference attention.

use super::array::Array;
use super::ffi::bridge as ffi;
use crate::error::{MlxContext, Result};

/// `x / sqrt(mean(x^2) + eps) * weight` over the last axis.
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let w = weight.unwrap_or(x);
    ffi::rms_norm(x.raw(), w.raw(), weight.is_some(), eps)
        .op("rms_norm")
        .map(Array::from_ptr)
}

/// Where RoPE starts counting positions.
pub enum RopeOffset<'a> {
    /// A host integer (changes the graph each step).
    Int(i32),
    /// A scalar int32 array on the device (no host value needed).
    Array(&'a Array),
}

/// How RoPE gets its frequencies.
pub enum RopeFreqs<'a> {
    /// `base^(-2i/dims)` computed by MLX.
    Base(f32),
    /// Explicit per-pair periods (e.g. Llama-3 rope scaling); length `dims / 2`.
    Custom(&'a Array),
}

/// Rotary position embedding over the first `dims` of the last axis of `x`
/// (shape `[..., seq, head_dim]`). `traditional` rotates adjacent pairs instead of halves.
pub fn rope(
    x: &Array,
    dims: i32,
    traditional: bool,
    freqs: RopeFreqs<'_>,
    scale: f32,
    offset: RopeOffset<'_>,
) -> Result<Array> {
    let out = match (freqs, offset) {
        (RopeFreqs::Base(base), RopeOffset::Int(o)) => {
            ffi::rope(x.raw(), dims, traditional, base, scale, o)
        }
        (RopeFreqs::Base(base), RopeOffset::Array(o)) => {
            ffi::rope_array_offset(x.raw(), dims, traditional, base, scale, o.raw())
        }
        (RopeFreqs::Custom(f), RopeOffset::Int(o)) => {
            let o = Array::scalar(o)?;
            ffi::rope_freqs(x.raw(), dims, traditional, scale, o.raw(), f.raw())
        }
        (RopeFreqs::Custom(f), RopeOffset::Array(o)) => {
            ffi::rope_freqs(x.raw(), dims, traditional, scale, o.raw(), f.raw())
        }
    };
    out.op("rope").map(Array::from_ptr)
}

/// The mask of an attention call.
pub enum AttentionMask<'a> {
    None,
    /// Lower-triangular, aligned to the end of the keys (query i sees keys up to
    /// `kv_len - q_len + i`).
    Causal,
    /// Boolean (true = attend) or additive float mask broadcastable to the scores.
    Array(&'a Array),
}

/// `softmax(q k^T * scale + mask) v` with q `[B, Hq, Lq, D]`, k/v `[B, Hkv, Lk, D]`;
/// `Hq` must be a multiple of `Hkv` (grouped-query attention).
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: AttentionMask<'_>,
) -> Result<Array> {
    let out = match mask {
        AttentionMask::None => ffi::sdpa(q.raw(), k.raw(), v.raw(), scale, ""),
        AttentionMask::Causal => ffi::sdpa(q.raw(), k.raw(), v.raw(), scale, "causal"),
        AttentionMask::Array(m) => ffi::sdpa_masked(q.raw(), k.raw(), v.raw(), scale, m.raw()),
    };
    out.op("scaled_dot_product_attention").map(Array::from_ptr)
}
