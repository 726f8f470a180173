//! The in-place int8 cache append on CUDA (`cuda/int8_encode.cu`): a decode step's new
//! position is quantized and written into the cache buffers by one launch, instead of the
//! ~10 MLX ops of [`Int8Side::quantize`](crate::kv::int8::Int8Side::quantize) plus two
//! `slice_update`s (which stay the reference, and the path for multi-position appends, other
//! backends, or `MLXCEL_INPLACE_APPEND=0`). Ordering rules: [`crate::kv::pending`].

use crate::flags;
use crate::kernels::in_place;
use crate::mlx::kernel::{KernelBackend, KernelSource};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

fn source() -> KernelSource {
    KernelSource::new(
        "mlxcel_int8_encode_inplace",
        &["x", "q_buf", "scale_buf", "pos_marker", "after"],
        &["done"],
        include_str!("cuda/int8_encode.cu"),
    )
}

/// The in-place encoder for keys before RoPE: it rotates them itself (`inv_freq` input).
fn source_rope() -> KernelSource {
    let mut spec = source();
    spec.name = "mlxcel_int8_encode_inplace_rope".into();
    spec.inputs.push("inv_freq".into());
    // rope_warp lives with the decode-attention helpers.
    spec.header = format!(
        "#define MLXCEL_ENCODE_ROPE\n{}",
        include_str!("cuda/decode_attention.cuh")
    );
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
    let (xs, qs, ss) = (x.shape(), q_buf.shape(), scale_buf.shape());
    let fits = xs.len() == 4
        && qs.len() == 4
        && ss.len() == 4
        && qs[..2] == xs[..2]
        && qs[3] == xs[3]
        && ss[..3] == qs[..3]
        && ss[3] == 1
        && xs[3] % 32 == 0
        && (32..=256).contains(&xs[3])
        && q_buf.dtype() == Dtype::I8
        && scale_buf.dtype() == Dtype::F16
        && xs[2] > 0
        && pos + xs[2] as usize <= qs[2] as usize;
    if !fits {
        return Err(Error::invalid(
            "int8 encode",
            format!("in place: x {xs:?} into q {qs:?} / scales {ss:?} at {pos}"),
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
    )
}
