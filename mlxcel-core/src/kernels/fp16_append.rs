//! In-place decode-step appends of fp16 caches on CUDA (`MLXCEL_FP16_INPLACE_APPEND`): a
//! layer's new key (rotated by RoPE in the launch) and value written straight into both
//! sides' buffers by one launch (`cuda/fp16_append_kv.cu`), instead of MLX's rope and a
//! `slice_update` per side; and RoPE of the step's queries by a launch that takes that
//! write's token ([`rope_q_after`]), so that MLX's SDPA runs after the write.
//!
//! Why: `slice_update` writes into the cache buffer only when nothing else holds it as MLX
//! encodes the op. In the pipelined decode loop the previous step's attention often still
//! holds it, and MLX then copies the layer's whole cache (268 MB per side at 128K for
//! Llama-3-8B). On the H200 (session 23) 27-30% of fp16's 128K appends copied; writing them
//! in place took fp16's 128K step from 9.33 to 6.19 ms of device time (ADR 0013).

use crate::flags;
use crate::kernels::in_place::{buffer_fits, order_inputs, write_pair, PAIR_ORDER_INPUTS};
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

/// Whether decode-step appends of fp16 sides with vectors of `head_dim` values (stored as
/// `dtype`) take [`append_kv_into`]: the flag on, the CUDA backend, fp16 storage, a
/// head_dim the warp layout takes (a multiple of 32, at most 256).
pub fn applies(head_dim: usize, dtype: Dtype) -> bool {
    flags::FP16_INPLACE_APPEND.enabled()
        && dtype == Dtype::F16
        && head_dim.is_multiple_of(32)
        && (32..=256).contains(&head_dim)
        && KernelBackend::current() == Some(KernelBackend::Cuda)
}

fn source() -> KernelSource {
    pair_source("mlxcel_fp16_append_kv", &["v_buf"], header())
}

/// [`source`] with int8 values (`MLXCEL_V_INT8`): the turbo modes' fp16-key / int8-value
/// boundary layers.
fn source_int8() -> KernelSource {
    pair_source(
        "mlxcel_fp16_int8_kv",
        &["v_q", "v_scale"],
        format!(
            "#define MLXCEL_V_INT8\n{}\n{}",
            header(),
            include_str!("cuda/int8_encode.cuh")
        ),
    )
}

/// `cuda/fp16_append_kv.cu` as kernel `name`, with the value buffers `values` after the keys'
/// and `header` in front.
fn pair_source(name: &str, values: &[&str], header: String) -> KernelSource {
    let inputs: Vec<&str> = ["xk", "xv", "k_buf"]
        .into_iter()
        .chain(values.iter().copied())
        .chain(PAIR_ORDER_INPUTS)
        .collect();
    let mut spec = KernelSource::new(
        name,
        &inputs,
        &["done"],
        include_str!("cuda/fp16_append_kv.cu"),
    );
    spec.header = header;
    spec
}

/// What the launches include: RoPE of a warp's vector (`decode_attention.cuh`), loading it
/// (`kv_pair.cuh`), storing it (`fp16_store.cuh`).
fn header() -> String {
    crate::kernels::in_place::warp_header(include_str!("cuda/fp16_store.cuh"))
}

fn q_source() -> KernelSource {
    let mut spec = KernelSource::new(
        "mlxcel_rope_q_after",
        &["q", "inv_freq", "pos_marker", "k_after", "v_after"],
        &["out"],
        include_str!("cuda/rope_q_after.cu"),
    );
    spec.header = header();
    spec
}

/// RoPE of queries `q [B, H, L, D]` (the last `L` of `len` cached positions) by a launch
/// that takes the last in-place writes' tokens `afters` as inputs (`cuda/rope_q_after.cu`);
/// the result has q's shape and dtype. Why: MLX's CUDA graphs order a node after the nodes
/// that produced its inputs' buffers, and an in-place cache write produces only its token, so
/// MLX's SDPA over the cache would not wait for the write (nor would an MLX `depends` node,
/// which launches nothing). SDPA reads these queries, so it runs after this launch and hence
/// after the write; the launch replaces MLX's rope on q (no node added, no host wait).
pub fn rope_q_after(
    q: &Array,
    rope: &RopeSpec,
    len: usize,
    afters: [Option<&Array>; 2],
) -> Result<Array> {
    let s = q.shape();
    let fits = s.len() == 4
        && s[2] >= 1
        && len >= s[2] as usize
        && rope.fits_warp_layout(s[3] as usize)
        && (32..=256).contains(&s[3]);
    if !fits {
        return Err(Error::invalid(
            "rope q",
            format!(
                "needs q [B, H, L, D] with L <= len ({len}) and a head_dim RoPE's warp layout takes; got {s:?}"
            ),
        ));
    }
    // The ordering inputs of a write at the last position (`len - 1`; len >= L >= 1).
    let (marker, afters) = order_inputs(len - 1, &afters)?;
    let rows = s[0] * s[1] * s[2];
    let launch = Launch::new(
        &[q, rope.inv_freq(), &marker, &afters[0], &afters[1]],
        [rows * 32, 1, 1],
        [128, 1, 1],
    )
    .output(&s, q.dtype())
    .template("D", TemplateArg::Int(s[3]))
    .template("TRAD", TemplateArg::Bool(rope.traditional));
    cached_by_name(KernelBackend::Cuda, "rope_q_after", 0, q_source)?
        .call(&launch)?
        .pop()
        .ok_or_else(|| Error::invalid("rope q", "no output"))
}

/// The value buffers of an fp16-key in-place append (`[B, H, cap, D]`, aux `[B, H, cap, 1]`).
pub enum ValueBuffers<'a> {
    /// fp16 values (the fp16 mode).
    Fp16(&'a Array),
    /// int8 values and their fp16 absmax scales, quantized as the int8 encoders do (the turbo
    /// modes' boundary layers, `fp16+int8`).
    Int8 { q: &'a Array, scale: &'a Array },
}

/// Writes keys `xk` (`[B, H, L, D]`, before RoPE when `rope` is given) as fp16 into `k_buf`
/// (`[B, H, cap, D]` fp16) and values `xv` (of xk's shape) into the value buffers `v`, at
/// `pos..pos+L`, in place, after the sides' previous writes (`afters`), by one launch
/// (`cuda/fp16_append_kv.cu`). Returns the token of both writes.
pub fn append_kv_into(
    xk: &Array,
    xv: &Array,
    k_buf: &Array,
    v: ValueBuffers<'_>,
    pos: usize,
    afters: [Option<&Array>; 2],
    rope: Option<&RopeSpec>,
) -> Result<Array> {
    let xs = xk.shape();
    let d = xs.get(3).copied().unwrap_or(0);
    // The key buffer, then the value buffers (no allocation: this runs per layer and step).
    let (fp16_buffers, int8_buffers);
    let (name, src, buffers, values_fit): (_, fn() -> KernelSource, &[&Array], _) = match v {
        ValueBuffers::Fp16(b) => {
            fp16_buffers = [k_buf, b];
            let fits = buffer_fits(&xs, b, d, Dtype::F16, pos);
            ("fp16_append_kv", source, &fp16_buffers, fits)
        }
        ValueBuffers::Int8 { q, scale } => {
            int8_buffers = [k_buf, q, scale];
            let fits = buffer_fits(&xs, q, d, Dtype::I8, pos)
                && buffer_fits(&xs, scale, 1, Dtype::F16, pos);
            ("fp16_int8_kv", source_int8, &int8_buffers, fits)
        }
    };
    if !(buffer_fits(&xs, k_buf, d, Dtype::F16, pos) && values_fit) {
        let vs: Vec<_> = buffers[1..]
            .iter()
            .map(|b| (b.shape(), b.dtype()))
            .collect();
        return Err(Error::invalid(
            "fp16 append",
            format!(
                "K and V in place: x {xs:?} / {:?} into k {:?} {:?} / values {vs:?} at {pos}",
                xv.shape(),
                k_buf.shape(),
                k_buf.dtype(),
            ),
        ));
    }
    write_pair(name, src, xk, xv, buffers, pos, afters, rope, &[])
}
#[cfg(test)]
mod tests {
    use super::*;

    /// The in-place path is CUDA-only and fp16-only; on any other backend (CI's CPU) every
    /// append keeps `slice_update`, whatever the shape.
    #[test]
    fn applies_only_to_fp16_on_cuda_with_a_warp_head_dim() {
        let cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
        assert_eq!(
            applies(128, Dtype::F16),
            cuda && flags::FP16_INPLACE_APPEND.enabled()
        );
        assert!(!applies(128, Dtype::BF16));
        assert!(!applies(100, Dtype::F16));
        assert!(!applies(512, Dtype::F16));
    }

    /// Shapes the launches cannot take are errors naming what was expected, before any
    /// kernel is built.
    #[test]
    fn bad_shapes_are_errors() {
        let rope = RopeSpec::new(64, false, 10000.0, None).unwrap();
        let q = Array::zeros(&[1, 4, 3, 64], Dtype::F16).unwrap();
        // Three query positions cannot be the last positions of a 2-position cache.
        let e = rope_q_after(&q, &rope, 2, [None, None]).unwrap_err();
        assert!(e.to_string().contains("L <= len"), "{e}");
        // A head_dim other than RoPE's.
        let q = Array::zeros(&[1, 4, 1, 128], Dtype::F16).unwrap();
        assert!(rope_q_after(&q, &rope, 5, [None, None]).is_err());
        // A buffer of another dtype or too short for the position.
        let x = Array::zeros(&[1, 2, 1, 64], Dtype::F16).unwrap();
        let buf = Array::zeros(&[1, 2, 8, 64], Dtype::F16).unwrap();
        let f32_buf = Array::zeros(&[1, 2, 8, 64], Dtype::F32).unwrap();
        let e = append_kv_into(
            &x,
            &x,
            &buf,
            ValueBuffers::Fp16(&f32_buf),
            3,
            [None, None],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("in place"), "{e}");
        assert!(append_kv_into(
            &x,
            &x,
            &buf,
            ValueBuffers::Fp16(&buf),
            8,
            [None, None],
            None
        )
        .is_err());
        let q8 = Array::zeros(&[1, 2, 8, 64], Dtype::I8).unwrap();
        let sc = Array::zeros(&[1, 2, 8, 1], Dtype::F16).unwrap();
        let int8 = |scale| ValueBuffers::Int8 { q: &q8, scale };
        assert!(append_kv_into(&x, &x, &buf, int8(&buf), 3, [None, None], None).is_err());
        assert!(append_kv_into(&x, &x, &buf, int8(&sc), 8, [None, None], None).is_err());
    }
}
