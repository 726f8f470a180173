//! The fused turbo cache encoder on CUDA (`cuda/turbo_encode.cu`): one launch per append
//! instead of the ~15 MLX ops of [`TurboCodec::encode`], which stays the reference (and the
//! path on every other backend, or with `MLXCEL_FUSED_ENCODE=0`). turbo4, turbo3 and turbo2
//! (the 2- and 3-bit codecs unless `MLXCEL_LOWBIT_CUDA=0`; byte-exact on an H100, session 54).
//! Why: end to end on the H200 the per-op cost of the op-by-op encoder (~0.2 ms per side,
//! layer and decode step) outweighed what the fused attention kernel saves at 4K-32K.

use crate::flags;
use crate::kernels::in_place::{buffer_fits, PAIR_ORDER_INPUTS};
use crate::kv::turbo::codec::{Encoded, TurboCodec};
use crate::kv::turbo::pack::packed_bytes;
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

const BODY: &str = include_str!("cuda/turbo_encode.cu");

/// The warp-level helpers (Walsh-Hadamard, RoPE) and the one-vector encoder.
pub(crate) fn helpers() -> String {
    crate::kernels::in_place::warp_header(include_str!("cuda/turbo_encode.cuh"))
}

fn source() -> KernelSource {
    let mut spec = KernelSource::new(
        "mlxcel_turbo_encode",
        &["x", "mids", "lut", "signs"],
        &["packed", "norms"],
        BODY,
    );
    spec.header = helpers();
    spec
}

fn source_in_place() -> KernelSource {
    let mut spec = KernelSource::new(
        "mlxcel_turbo_encode_inplace",
        &[
            "x",
            "mids",
            "lut",
            "signs",
            "packed_buf",
            "norms_buf",
            "pos_marker",
            "after",
        ],
        &["done"],
        BODY,
    );
    spec.header = format!("#define MLXCEL_ENCODE_INPLACE\n{}", helpers());
    spec
}

/// The in-place encoder for keys before RoPE: it rotates them itself (`inv_freq` input).
fn source_in_place_rope() -> KernelSource {
    let mut spec = source_in_place();
    spec.name = "mlxcel_turbo_encode_inplace_rope".into();
    spec.inputs.push("inv_freq".into());
    spec.header = format!("#define MLXCEL_ENCODE_ROPE\n{}", spec.header);
    spec
}

/// The codecs the kernel encodes: 4-bit (2- and 3-bit with [`flags::LOWBIT_CUDA`]), one
/// rotation group per head of 64 or 128.
fn codec_fits(codec: &TurboCodec) -> bool {
    let bits_ok = match codec.bits {
        4 => true,
        2 | 3 => flags::LOWBIT_CUDA.enabled(),
        _ => false,
    };
    bits_ok && codec.group() == codec.head_dim && matches!(codec.head_dim, 64 | 128)
}

/// The kernels' `BITS` template argument for this codec.
fn bits_arg(codec: &TurboCodec) -> (&'static str, TemplateArg) {
    ("BITS", TemplateArg::Int(codec.bits as i32))
}

/// Whether appends with this codec on this backend take the fused encoder.
pub fn applies(codec: &TurboCodec) -> bool {
    flags::FUSED_ENCODE.enabled()
        && codec_fits(codec)
        && KernelBackend::current() == Some(KernelBackend::Cuda)
}

/// Whether decode-step appends with this codec encode in place ([`fused_encode_into`]).
pub fn applies_in_place(codec: &TurboCodec) -> bool {
    flags::INPLACE_APPEND.enabled() && applies(codec)
}

/// Whether the in-place encoders can write `x [B, H, L, head_dim]` (shape `xs`) with this
/// codec into one side's buffers `packed [B, H, cap, head_dim * bits / 8]` (u8) and
/// `norms [B, H, cap, 1]` (f16) at positions `pos..pos+L`.
pub(crate) fn side_fits(
    codec: &TurboCodec,
    xs: &[i32],
    packed: &Array,
    norms: &Array,
    pos: usize,
) -> bool {
    let d = codec.head_dim as i32;
    codec_fits(codec)
        && xs.get(3) == Some(&d)
        && buffer_fits(
            xs,
            packed,
            packed_bytes(codec.bits, codec.head_dim) as i32,
            Dtype::U8,
            pos,
        )
        && buffer_fits(xs, norms, 1, Dtype::F16, pos)
}

/// Encodes `x [B, H, L, head_dim]` like [`fused_encode`], writing the codes and norms into
/// the cache buffers `packed [B, H, cap, head_dim/2]` (u8) and `norms [B, H, cap, 1]` (f16)
/// at positions `pos..pos+L`, in place (see [`crate::kv::pending`] for the rules
/// that make this safe). `after` is the token of the previous in-place write to these
/// buffers, if any: this launch takes it as an input, so the tokens form a chain and a
/// reader that depends on the last one runs after all of them. Returns this launch's token
/// (`[4]` int32).
pub fn fused_encode_into(
    codec: &TurboCodec,
    x: &Array,
    packed: &Array,
    norms: &Array,
    pos: usize,
    after: Option<&Array>,
    rope: Option<&RopeSpec>,
) -> Result<Array> {
    let (xs, ps, ns) = (x.shape(), packed.shape(), norms.shape());
    let d = codec.head_dim;
    if !side_fits(codec, &xs, packed, norms, pos) {
        return Err(Error::invalid(
            "fused turbo encode",
            format!(
                "in place: x {xs:?} into packed {ps:?} / norms {ns:?} at {pos} ({} bits, head_dim {d})",
                codec.bits
            ),
        ));
    }
    if rope.is_some_and(|r| !r.fits_warp_layout(d)) {
        return Err(Error::invalid(
            "fused turbo encode",
            format!("RoPE cannot run inside the encoder for head_dim {d}"),
        ));
    }
    let (name, src): (&'static str, fn() -> KernelSource) = match rope {
        Some(_) => ("turbo_encode_inplace_rope", source_in_place_rope),
        None => ("turbo_encode_inplace", source_in_place),
    };
    crate::kernels::in_place::write(
        name,
        src,
        &[
            x,
            codec.midpoints(),
            codec.lut16(),
            codec.rotation.signs_array(),
            packed,
            norms,
        ],
        (xs[0] * xs[1] * xs[2]) as usize,
        d,
        pos,
        after,
        rope,
        &[bits_arg(codec)],
    )
}

/// The inputs of a K+V append after the new keys and values, in the order the pair kernels
/// take them: both sides' codecs and buffers, then the ordering inputs
/// ([`PAIR_ORDER_INPUTS`]) (`turbo_encode_kv.cu`; the qkv GEMV's folded append,
/// `qgemv4_qkv_encode.cu`, takes them after its own).
pub(crate) fn pair_append_inputs() -> impl Iterator<Item = &'static str> {
    [
        "k_mids", "k_lut", "k_signs", "v_mids", "v_lut", "v_signs", "k_packed", "k_norms",
        "v_packed", "v_norms",
    ]
    .into_iter()
    .chain(PAIR_ORDER_INPUTS)
}

fn source_kv() -> KernelSource {
    let inputs: Vec<&str> = ["xk", "xv"]
        .into_iter()
        .chain(pair_append_inputs())
        .collect();
    let mut spec = KernelSource::new(
        "mlxcel_turbo_encode_kv",
        &inputs,
        &["done"],
        include_str!("cuda/turbo_encode_kv.cu"),
    );
    spec.header = helpers();
    spec
}

/// One side's cache buffers and codec for [`fused_encode_kv_into`].
pub struct SideBuffers<'a> {
    pub codec: &'a TurboCodec,
    pub packed: &'a Array,
    pub norms: &'a Array,
    /// The side's previous write token.
    pub after: Option<&'a Array>,
}

/// A decode step's keys `xk` and values `xv` (`[B, H, L, D]`, one shape) encoded by one
/// launch into both sides' buffers at `pos..pos+L` (`cuda/turbo_encode_kv.cu`): one MLX
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
    let d = k.codec.head_dim;
    let (xs, ps) = (xk.shape(), k.packed.shape());
    let fits = side_fits(k.codec, &xs, k.packed, k.norms, pos)
        && side_fits(v.codec, &xs, v.packed, v.norms, pos)
        && v.codec.head_dim == d
        && v.codec.bits == k.codec.bits
        && v.packed.shape() == ps;
    if !fits {
        return Err(Error::invalid(
            "fused turbo encode",
            format!(
                "K and V in place: x {xs:?} / {:?} into packed {ps:?} / {:?} at {pos}",
                xv.shape(),
                v.packed.shape()
            ),
        ));
    }
    crate::kernels::in_place::write_pair(
        "turbo_encode_kv",
        source_kv,
        xk,
        xv,
        &[
            k.codec.midpoints(),
            k.codec.lut16(),
            k.codec.rotation.signs_array(),
            v.codec.midpoints(),
            v.codec.lut16(),
            v.codec.rotation.signs_array(),
            k.packed,
            k.norms,
            v.packed,
            v.norms,
        ],
        pos,
        [k.after, v.after],
        rope,
        &[bits_arg(k.codec)],
    )
}

fn source_kv_asym() -> KernelSource {
    let inputs: Vec<&str> = [
        "xk", "xv", "v_mids", "v_lut", "v_signs", "k_buf", "v_packed", "v_norms",
    ]
    .into_iter()
    .chain(PAIR_ORDER_INPUTS)
    .collect();
    let mut spec = KernelSource::new(
        "mlxcel_turbo_encode_kv_asym",
        &inputs,
        &["done"],
        include_str!("cuda/turbo_encode_kv_asym.cu"),
    );
    spec.header = format!("{}\n{}", helpers(), include_str!("cuda/fp16_store.cuh"));
    spec
}

/// A turbo4-asym decode step in one launch (`cuda/turbo_encode_kv_asym.cu`): the keys `xk`
/// (`[B, H, L, D]`) stored as fp16 into `k_buf [B, H, cap, D]` (rotated by `rope` first
/// when given) and the values `xv` encoded into the turbo4 side `v`, both at `pos..pos+L`,
/// in place. One MLX node per layer and step instead of three (rope, `slice_update`, value
/// encoder). `k_after` is the key side's previous write token. Returns the token of both
/// writes.
pub fn fused_append_asym_into(
    xk: &Array,
    xv: &Array,
    k_buf: &Array,
    k_after: Option<&Array>,
    v: SideBuffers<'_>,
    pos: usize,
    rope: Option<&RopeSpec>,
) -> Result<Array> {
    let d = v.codec.head_dim;
    let xs = xk.shape();
    let fits = side_fits(v.codec, &xs, v.packed, v.norms, pos)
        && buffer_fits(&xs, k_buf, d as i32, Dtype::F16, pos);
    if !fits {
        return Err(Error::invalid(
            "fused turbo encode",
            format!(
                "asym K and V in place: x {xs:?} / {:?} into k {:?} {:?} / packed {:?} at {pos}",
                xv.shape(),
                k_buf.shape(),
                k_buf.dtype(),
                v.packed.shape()
            ),
        ));
    }
    crate::kernels::in_place::write_pair(
        "turbo_encode_kv_asym",
        source_kv_asym,
        xk,
        xv,
        &[
            v.codec.midpoints(),
            v.codec.lut16(),
            v.codec.rotation.signs_array(),
            k_buf,
            v.packed,
            v.norms,
        ],
        pos,
        [k_after, v.after],
        rope,
        &[bits_arg(v.codec)],
    )
}

/// Encodes `x [.., head_dim]` like [`TurboCodec::encode`] (same codes up to rounding at
/// exact midpoints, norms within fp16 rounding), in one launch. Errors (not a fallback)
/// when the kernel does not apply: callers check [`applies`].
pub fn fused_encode(codec: &TurboCodec, x: &Array) -> Result<Encoded> {
    let shape = x.shape();
    let d = codec.head_dim;
    if !codec_fits(codec) || shape.last().copied() != Some(d as i32) {
        return Err(Error::invalid(
            "fused turbo encode",
            format!(
                "needs 4 bits (2 or 3 with MLXCEL_LOWBIT_CUDA), head_dim 64/128 = group; got {} bits, x {shape:?}",
                codec.bits
            ),
        ));
    }
    let rows: usize = shape[..shape.len() - 1]
        .iter()
        .map(|&s| s as usize)
        .product();
    let mut packed_shape = shape[..shape.len() - 1].to_vec();
    let mut norm_shape = packed_shape.clone();
    packed_shape.push(packed_bytes(codec.bits, d) as i32);
    norm_shape.push(1);
    if rows == 0 {
        return Err(Error::invalid("fused turbo encode", "no vectors"));
    }
    let launch = Launch::new(
        &[
            x,
            codec.midpoints(),
            codec.lut16(),
            codec.rotation.signs_array(),
        ],
        [(rows * 32) as i32, 1, 1],
        [128, 1, 1],
    )
    .output(&packed_shape, Dtype::U8)
    .output(&norm_shape, Dtype::F16)
    .template("D", TemplateArg::Int(d as i32));
    let (bits_name, bits) = bits_arg(codec);
    let launch = launch.template(bits_name, bits);
    let kernel = cached_by_name(KernelBackend::Cuda, "turbo_encode", 0, source)?;
    let mut out = kernel.call(&launch)?;
    let norms = out.pop().expect("two outputs");
    let packed = out.pop().expect("two outputs");
    Ok(Encoded { packed, norms })
}
