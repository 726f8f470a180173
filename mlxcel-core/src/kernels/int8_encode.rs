//! The in-place int8 cache append on CUDA (`cuda/int8_encode.cu`): a decode step's new
//! position is quantized and written into the cache buffers by one launch, instead of the
//! ~10 MLX ops of [`Int8Side::quantize`](crate::kv::int8::Int8Side::quantize) plus two
//! `slice_update`s (which stay the reference, and the path for multi-position appends, other
//! backends, or `MLXCEL_INPLACE_APPEND=0`). Ordering rules: [`crate::kv::pending`].

use crate::flags;
use crate::kernels::in_place::{self, buffer_fits};
use crate::mlx::kernel::{KernelBackend, KernelSource};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

/// The encoders' helpers: one warp's int8 encoding (`cuda/int8_encode.cuh`) after the
/// decode-attention helpers it uses (`rope_warp`) and the K+V launches' warp layout.
fn helpers() -> String {
    crate::kernels::in_place::warp_header(include_str!("cuda/int8_encode.cuh"))
}

fn source() -> KernelSource {
    let mut spec = KernelSource::new(
        "mlxcel_int8_encode_inplace",
        &["x", "q_buf", "scale_buf", "pos_marker", "after"],
        &["done"],
        include_str!("cuda/int8_encode.cu"),
    );
    spec.header = helpers();
    spec
}

/// The in-place encoder for keys before RoPE: it rotates them itself (`inv_freq` input).
fn source_rope() -> KernelSource {
    let mut spec = source();
    spec.name = "mlxcel_int8_encode_inplace_rope".into();
    spec.inputs.push("inv_freq".into());
    spec.header = format!("#define MLXCEL_ENCODE_ROPE\n{}", helpers());
    spec
}

fn source_kv() -> KernelSource {
    let inputs: Vec<&str> = [
        "xk", "xv", "k_q", "k_scale", "v_q", "v_scale", "k_signs", "v_signs",
    ]
    .into_iter()
    .chain(in_place::PAIR_ORDER_INPUTS)
    .collect();
    let mut spec = KernelSource::new(
        "mlxcel_int8_encode_kv",
        &inputs,
        &["done"],
        include_str!("cuda/int8_encode_kv.cu"),
    );
    spec.header = helpers();
    spec
}

/// The K+V launch for rotated int8 sides (`int8r`): each vector is rotated by its side's
/// signs before it is quantized.
fn source_kv_rot() -> KernelSource {
    let mut spec = source_kv();
    spec.name = "mlxcel_int8_encode_kv_rot".into();
    spec.header = format!("#define MLXCEL_INT8_ROT\n{}", helpers());
    spec
}

/// Whether decode-step appends of `head_dim` vectors write in place on this backend.
pub fn applies_in_place(head_dim: usize) -> bool {
    flags::INPLACE_APPEND.enabled()
        && head_dim.is_multiple_of(32)
        && (32..=256).contains(&head_dim)
        && KernelBackend::current() == Some(KernelBackend::Cuda)
}

/// Quantizes `x [B, H, L, D]` like `Int8Side::quantize` and writes q and the scales into
/// `q_buf [B, H, cap, D]` (int8) and `scale_buf [B, H, cap, 1]` (fp16) at `pos..pos+L`, in
/// place, after the write whose token is `after`. Returns this write's token.
pub fn encode_into(
    x: &Array,
    q_buf: &Array,
    scale_buf: &Array,
    pos: usize,
    after: Option<&Array>,
    rope: Option<&RopeSpec>,
) -> Result<Array> {
    let xs = x.shape();
    let fits = side_fits(&xs, q_buf, scale_buf, pos);
    if !fits {
        return Err(Error::invalid(
            "int8 encode",
            format!(
                "in place: x {xs:?} into q {:?} / scales {:?} at {pos}",
                q_buf.shape(),
                scale_buf.shape()
            ),
        ));
    }
    if rope.is_some_and(|r| !r.fits_warp_layout(xs[3] as usize)) {
        return Err(Error::invalid(
            "int8 encode",
            format!("RoPE cannot run inside the encoder for head_dim {}", xs[3]),
        ));
    }
    let (name, src): (&'static str, fn() -> KernelSource) = match rope {
        Some(_) => ("int8_encode_inplace_rope", source_rope),
        None => ("int8_encode_inplace", source),
    };
    in_place::write(
        name,
        src,
        &[x, q_buf, scale_buf],
        (xs[0] * xs[1] * xs[2]) as usize,
        xs[3] as usize,
        pos,
        after,
        rope,
        &[],
    )
}

/// Whether `x [B, H, L, D]` can be written in place into one side's buffers `q_buf
/// [B, H, cap, D]` (int8) and `scale_buf [B, H, cap, 1]` (fp16) at `pos..pos+L`.
fn side_fits(xs: &[i32], q_buf: &Array, scale_buf: &Array, pos: usize) -> bool {
    let d = xs.get(3).copied().unwrap_or(0);
    d % 32 == 0
        && (32..=256).contains(&d)
        && buffer_fits(xs, q_buf, d, Dtype::I8, pos)
        && buffer_fits(xs, scale_buf, 1, Dtype::F16, pos)
}

/// One int8 side's cache buffers for [`fused_encode_kv_into`].
pub struct SideBuffers<'a> {
    pub q: &'a Array,
    pub scale: &'a Array,
    /// The side's previous write token.
    pub after: Option<&'a Array>,
    /// An `int8r` side's rotation signs (`[2, D]` f32, `Rotation::signs_array`; one group of
    /// D), or `None` for plain int8. Both sides of a launch are rotated or neither is.
    pub signs: Option<&'a Array>,
}

/// A decode step's keys `xk` and values `xv` (`[B, H, L, D]`, one shape) quantized by one
/// launch into both int8 sides' buffers at `pos..pos+L` (`cuda/int8_encode_kv.cu`): one MLX
/// node per layer and step instead of two. With `rope`, xk is the key before RoPE. Returns
/// the token of both writes (each side records it as its last write).
pub fn fused_encode_kv_into(
    xk: &Array,
    xv: &Array,
    k: SideBuffers<'_>,
    v: SideBuffers<'_>,
    pos: usize,
    rope: Option<&RopeSpec>,
) -> Result<Array> {
    let xs = xk.shape();
    let d = xs.get(3).copied().unwrap_or(0);
    let signs_fit =
        |s: Option<&Array>| s.is_none_or(|a| a.shape() == [2, d] && a.dtype() == Dtype::F32);
    let fits = side_fits(&xs, k.q, k.scale, pos)
        && side_fits(&xs, v.q, v.scale, pos)
        && v.q.shape() == k.q.shape()
        && k.signs.is_some() == v.signs.is_some()
        && signs_fit(k.signs)
        && signs_fit(v.signs);
    if !fits {
        return Err(Error::invalid(
            "int8 encode",
            format!(
                "K and V in place: x {xs:?} / {:?} into q {:?} / {:?} at {pos} (rotation signs {:?} / {:?})",
                xv.shape(),
                k.q.shape(),
                v.q.shape(),
                k.signs.map(|a| a.shape()),
                v.signs.map(|a| a.shape()),
            ),
        ));
    }
    let placeholder;
    let (name, src, ks, vs): (_, fn() -> KernelSource, _, _) = match (k.signs, v.signs) {
        (Some(ks), Some(vs)) => ("int8_encode_kv_rot", source_kv_rot, ks, vs),
        _ => {
            placeholder = crate::kernels::decode_attention::unused_f32()?;
            ("int8_encode_kv", source_kv, &placeholder, &placeholder)
        }
    };
    in_place::write_pair(
        name,
        src,
        xk,
        xv,
        &[k.q, k.scale, v.q, v.scale, ks, vs],
        pos,
        [k.after, v.after],
        rope,
        &[],
    )
}
