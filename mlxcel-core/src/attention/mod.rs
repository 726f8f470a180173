//! The attention entry point of every KV cache. [`attend`] picks the path in one place;
//! each path stays callable ([`attend_with`]) so parity tests can compare them.
//!
//! | path | when | what |
//! |---|---|---|
//! | `dense` | no quantized side, or int8 | SDPA over the (dequantized) cache |
//! | `rotated-sdpa` | a turbo side, `MLXCEL_ROTATED_SDPA` on (default) | turbo K: rotate q once (`<Rq, Rk> = <q, k>`); turbo V: attend over rotated V and inverse-rotate the output once (`P (V R^T) = (P V) R^T`) |
//! | `dequant-sdpa` | a turbo side, `MLXCEL_ROTATED_SDPA=0` | dequantize every cached vector to the original basis, then SDPA (the exact reference) |
//! | `fused-decode` | CUDA backend, one query position, int8/turbo sides (fp16 ones too with `MLXCEL_FUSED_FP16=1`), `MLXCEL_FUSED_DECODE` on (default) | one kernel reads the packed cache ([`crate::kernels::decode_attention`]) |

use crate::flags;
use crate::kernels::decode_attention::{
    append_formats_fit, fused_decode, fused_decode_rope, fused_decode_rope_append, rope_fits,
    supported, AttnAppend,
};
use crate::kernels::fp16_append::rope_q_after;
use crate::kv::side::{KvSide, FORMAT_FP16};
use crate::mlx::fast::{scaled_dot_product_attention, AttentionMask};
use crate::mlx::kernel::KernelBackend;
use crate::mlx::Array;
use crate::rope::RopeSpec;
use crate::Result;

/// The attention paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionPath {
    DequantSdpa,
    RotatedSdpa,
    FusedDecode,
}

impl AttentionPath {
    pub fn name(self) -> &'static str {
        match self {
            AttentionPath::DequantSdpa => "dequant-sdpa",
            AttentionPath::RotatedSdpa => "rotated-sdpa",
            AttentionPath::FusedDecode => "fused-decode",
        }
    }
}

/// Whether the fused decode kernel can serve `q` over these sides.
pub fn fused_applies(q: &Array, k: &dyn KvSide, v: &dyn KvSide) -> bool {
    if q.ndim() != 4 || q.dim(2) != 1 {
        return false;
    }
    match (k.raw(), v.raw()) {
        (Some(kr), Some(vr)) => {
            let hkv = kr.data.dim(1).max(1) as usize;
            let hq = q.dim(1) as usize;
            hq.is_multiple_of(hkv) && supported(&kr, &vr, q.dim(3) as usize, hq / hkv)
        }
        _ => false,
    }
}

/// Whether both sides store fp16 (no quantized side to read fewer bytes from).
fn both_fp16(k: &dyn KvSide, v: &dyn KvSide) -> bool {
    matches!((k.raw(), v.raw()), (Some(kr), Some(vr)) if kr.format == FORMAT_FP16 && vr.format == FORMAT_FP16)
}

/// The path [`attend`] takes for these sides now. fp16/fp16 caches stay on MLX's SDPA
/// unless `MLXCEL_FUSED_FP16` asks for the fused control kernel.
pub fn select_path(q: &Array, k: &dyn KvSide, v: &dyn KvSide) -> AttentionPath {
    if flags::FUSED_DECODE.enabled()
        && KernelBackend::current() == Some(KernelBackend::Cuda)
        && fused_applies(q, k, v)
        && (flags::FUSED_FP16.enabled() || !both_fp16(k, v))
    {
        return AttentionPath::FusedDecode;
    }
    let rotated = k.rotation().is_some() || v.rotation().is_some();
    if rotated && flags::ROTATED_SDPA.enabled() {
        AttentionPath::RotatedSdpa
    } else {
        AttentionPath::DequantSdpa
    }
}

/// Whether `scale` is the fused kernel's (it bakes in 1/sqrt(head_dim)).
fn kernel_scale(scale: f32, head_dim: usize) -> bool {
    let default_scale = 1.0 / (head_dim as f32).sqrt();
    (scale - default_scale).abs() <= 1e-6 * default_scale
}

/// Attention of `q [B, Hq, L, D]` over the cache sides (causal for the last L keys).
pub fn attend(q: &Array, k: &dyn KvSide, v: &dyn KvSide, scale: f32) -> Result<Array> {
    let mut path = select_path(q, k, v);
    if path == AttentionPath::FusedDecode && !kernel_scale(scale, q.dim(-1) as usize) {
        // The kernel bakes in 1/sqrt(head_dim); other scales take the split path.
        path = if k.rotation().is_some() || v.rotation().is_some() {
            AttentionPath::RotatedSdpa
        } else {
            AttentionPath::DequantSdpa
        };
    }
    attend_with(path, q, k, v, scale)
}

/// Attention of `q` given *before* RoPE, with the rotation done inside the fused kernel,
/// where [`attend`] would take the fused path and the kernel can rotate q
/// ([`rope_fits`]); `None` otherwise (the caller applies MLX's RoPE and calls [`attend`]).
/// Returns `[B, Hq, 1, D]`, or with `flat` `[B, 1, Hq * D]` (the same bytes, declared in
/// the output projection's layout: no reshape node).
pub fn attend_before_rope(
    q: &Array,
    k: &dyn KvSide,
    v: &dyn KvSide,
    scale: f32,
    rope: &RopeSpec,
    flat: bool,
) -> Result<Option<Array>> {
    if !flags::FUSED_ROPE.enabled() {
        return Ok(None);
    }
    if select_path(q, k, v) != AttentionPath::FusedDecode {
        return attend_fp16_after_write(q, k, v, scale, rope, flat);
    }
    let d = q.dim(-1) as usize;
    if !kernel_scale(scale, d) {
        return Ok(None);
    }
    match (k.raw(), v.raw()) {
        (Some(kr), Some(vr)) => {
            let gqa = q.dim(1) as usize / kr.data.dim(1).max(1) as usize;
            if !rope_fits(&kr, &vr, d, gqa, rope) {
                return Ok(None);
            }
            fused_decode_rope(q, &kr, &vr, k.len(), scale, None, Some(rope), flat).map(Some)
        }
        _ => Ok(None),
    }
}

/// [`attend_before_rope`] for a decode step whose launch also writes the step's keys and
/// values into the cache (`MLXCEL_ATTN_APPEND`, [`fused_decode_rope_append`]): `append`
/// holds the reserved position (the sides' lengths do not count it yet) and the new vectors.
/// Returns the output (with `flat`, `[B, 1, Hq * D]`) and the write's token; `None` where
/// the tensor-core kernel would not serve the sides with RoPE inside (the caller then appends
/// and attends apart).
pub fn append_attend_before_rope(
    q: &Array,
    k: &dyn KvSide,
    v: &dyn KvSide,
    scale: f32,
    rope: &RopeSpec,
    flat: bool,
    append: &AttnAppend<'_>,
) -> Result<Option<(Array, Array)>> {
    if !(flags::FUSED_ROPE.enabled()
        && flags::FUSED_DECODE.enabled()
        && KernelBackend::current() == Some(KernelBackend::Cuda))
        || q.ndim() != 4
        || q.dim(2) != 1
    {
        return Ok(None);
    }
    let d = q.dim(-1) as usize;
    if !kernel_scale(scale, d) {
        return Ok(None);
    }
    let (Some(kr), Some(vr)) = (k.raw(), v.raw()) else {
        return Ok(None);
    };
    let (hq, hkv) = (q.dim(1) as usize, kr.data.dim(1).max(1) as usize);
    if !hq.is_multiple_of(hkv) || !append_formats_fit(append.target.format, &kr, &vr) {
        return Ok(None);
    }
    if !rope_fits(&kr, &vr, d, hq / hkv, rope) {
        return Ok(None);
    }
    fused_decode_rope_append(q, &kr, &vr, scale, rope, flat, append).map(Some)
}

/// MLX's SDPA over fp16 sides that an in-place append wrote since their last host wait
/// (`MLXCEL_FP16_INPLACE_APPEND`), with `q` given before RoPE: q is rotated by a launch that
/// takes the write's tokens ([`rope_q_after`]), which orders SDPA after the write inside
/// MLX's CUDA graph. `None` where no such write is pending (the caller's path then waits
/// for nothing) or `q` is not one decode position.
fn attend_fp16_after_write(
    q: &Array,
    k: &dyn KvSide,
    v: &dyn KvSide,
    scale: f32,
    rope: &RopeSpec,
    flat: bool,
) -> Result<Option<Array>> {
    let (kr, vr) = match (k.raw(), v.raw()) {
        (Some(kr), Some(vr)) if kr.format == FORMAT_FP16 && vr.format == FORMAT_FP16 => (kr, vr),
        _ => return Ok(None),
    };
    if (kr.pending.is_none() && vr.pending.is_none()) || q.ndim() != 4 || q.dim(2) != 1 {
        return Ok(None);
    }
    let len = k.len();
    let q = rope_q_after(q, rope, len, [kr.pending, vr.pending])?;
    let keys = kr.data.slice_axis(2, 0, len as i32)?;
    let values = vr.data.slice_axis(2, 0, len as i32)?;
    let o = dense_attention(&q, &keys, &values, scale)?;
    if flat {
        crate::kv::flatten_heads(&o).map(Some)
    } else {
        Ok(Some(o))
    }
}

/// Attention through an explicit path.
pub fn attend_with(
    path: AttentionPath,
    q: &Array,
    k: &dyn KvSide,
    v: &dyn KvSide,
    scale: f32,
) -> Result<Array> {
    let dt = q.dtype();
    match path {
        AttentionPath::FusedDecode => match (k.raw(), v.raw()) {
            (Some(kr), Some(vr)) => fused_decode(q, &kr, &vr, k.len(), scale, None),
            _ => Err(crate::Error::invalid(
                "fused decode",
                "these cache sides expose no raw buffers",
            )),
        },
        AttentionPath::DequantSdpa => dense_attention(q, &k.dense(dt)?, &v.dense(dt)?, scale),
        AttentionPath::RotatedSdpa => {
            let (q, keys) = match k.rotation() {
                Some(r) => (r.forward(q)?, k.dense_rotated(dt)?),
                None => (q.clone(), k.dense(dt)?),
            };
            let values = match v.rotation() {
                Some(_) => v.dense_rotated(dt)?,
                None => v.dense(dt)?,
            };
            let o = dense_attention(&q, &keys, &values, scale)?;
            match v.rotation() {
                Some(r) => r.inverse(&o),
                None => Ok(o),
            }
        }
    }
}

/// Attention of `q [B, Hq, L, D]` over dense `k, v [B, Hkv, S, D]` (S >= L), causal for the
/// last `L` keys. K and V are cast to q's dtype when they are stored in another one.
pub fn dense_attention(q: &Array, k: &Array, v: &Array, scale: f32) -> Result<Array> {
    let (k, v) = if k.dtype() != q.dtype() {
        (k.astype(q.dtype())?, v.astype(q.dtype())?)
    } else {
        (k.clone(), v.clone())
    };
    let mask = if q.dim(2) > 1 {
        AttentionMask::Causal
    } else {
        AttentionMask::None
    };
    scaled_dot_product_attention(q, &k, &v, scale, mask)
}
