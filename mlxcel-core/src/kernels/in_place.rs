//! The launch shared by the in-place cache writers (`turbo_encode`, `int8_encode`): one warp
//! per new head vector, the new positions written straight into the cache buffers, ordered
//! by a position marker and the previous write's token ([`crate::kv::pending`] has the rules).

use std::borrow::Cow;

use crate::kernels::decode_attention::{length_marker, unused_f32, wait_for};
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

/// Whether `x [B, H, L, _]` (shape `xs`, L > 0) can be written in place at `pos..pos+L`
/// into a cache buffer `buf [B, H, cap, width]` of `dtype`: the shape check every in-place
/// writer makes for each buffer it writes.
pub(crate) fn buffer_fits(xs: &[i32], buf: &Array, width: i32, dtype: Dtype, pos: usize) -> bool {
    let bs = buf.shape();
    xs.len() == 4
        && bs.len() == 4
        && bs[..2] == xs[..2]
        && bs[3] == width
        && buf.dtype() == dtype
        && xs[2] > 0
        && pos + xs[2] as usize <= bs[2] as usize
}

/// The header of a kernel that handles one head vector per warp: RoPE and the
/// Walsh-Hadamard transform of a warp's vector (`decode_attention.cuh`), loading it
/// (`kv_pair.cuh`), then `own` (the writer's encoder or store helpers).
pub(crate) fn warp_header(own: &str) -> String {
    format!(
        "{}\n{}\n{}",
        include_str!("cuda/decode_attention.cuh"),
        include_str!("cuda/kv_pair.cuh"),
        own
    )
}

/// The names of a K+V writer's ordering inputs, after its data and buffers (the order
/// [`write_pair`] passes them): the position marker, the sides' previous tokens, and RoPE's
/// inverse frequencies.
pub(crate) const PAIR_ORDER_INPUTS: [&str; 4] = ["pos_marker", "k_after", "v_after", "inv_freq"];

/// A writer's ordering inputs for a write at `pos`: the position marker
/// (`pos_marker_shape[0] - 1` is `pos`) and one input per side ordering it after that
/// side's previous write (`afters`; a placeholder where there is none).
pub(crate) fn order_inputs(pos: usize, afters: &[Option<&Array>]) -> Result<(Array, Vec<Array>)> {
    let marker = length_marker(pos + 1)?;
    let afters = afters
        .iter()
        .map(|a| wait_for(*a))
        .collect::<Result<Vec<Array>>>()?;
    Ok((marker, afters))
}

/// RoPE's inverse frequencies for a writer kernel, or without `rope` a cached f32 placeholder
/// (the kernel then does not read it).
pub(crate) fn inv_freq_input(rope: Option<&RopeSpec>) -> Result<Cow<'_, Array>> {
    Ok(match rope {
        Some(r) => Cow::Borrowed(r.inv_freq()),
        None => Cow::Owned(unused_f32()?),
    })
}

/// Queues kernel `name` (built by `source`) over `rows` head vectors of `head_dim`, writing
/// at positions `pos..` after the write whose token is `after`. `inputs` are the kernel's
/// inputs before its two ordering inputs, `pos_marker` (`pos_marker_shape[0] - 1` is `pos`)
/// and `after` (the previous token, or a placeholder). Returns this write's token. With
/// `rope`, the kernel (a `*_rope` variant) also takes `inv_freq` after the ordering inputs
/// and the template `TRAD`, and rotates the keys itself. `templates`: the kernel's own
/// template arguments besides `D` and `TRAD`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    name: &'static str,
    source: fn() -> KernelSource,
    inputs: &[&Array],
    rows: usize,
    head_dim: usize,
    pos: usize,
    after: Option<&Array>,
    rope: Option<&RopeSpec>,
    templates: &[(&str, TemplateArg)],
) -> Result<Array> {
    let inv_freq = rope.map(|r| r.inv_freq());
    let trad = rope.map(|r| ("TRAD", TemplateArg::Bool(r.traditional)));
    write_sides(
        name,
        source,
        inputs,
        rows,
        head_dim,
        pos,
        &[after],
        inv_freq.as_slice(),
        &[templates, trad.as_slice()],
    )
}

/// [`write`] for a launch that writes several sides' buffers (e.g. K and V together): one
/// ordering input per side in `afters` (each side's previous token), then the `tail`
/// inputs, and extra `templates` (groups of them, so callers add theirs without building a
/// list per launch). Returns the token every written side records. The token
/// is a `[4]` int32 output: outputs of 8 bytes or less would come from MLX's managed-memory
/// pool.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_sides(
    name: &'static str,
    source: fn() -> KernelSource,
    inputs: &[&Array],
    rows: usize,
    head_dim: usize,
    pos: usize,
    afters: &[Option<&Array>],
    tail: &[&Array],
    templates: &[&[(&str, TemplateArg)]],
) -> Result<Array> {
    let (marker, afters) = order_inputs(pos, afters)?;
    let mut all = inputs.to_vec();
    all.push(&marker);
    all.extend(afters.iter());
    all.extend_from_slice(tail);
    let mut launch = Launch::new(&all, [(rows * 32) as i32, 1, 1], [128, 1, 1])
        .output(&[4], Dtype::I32)
        .template("D", TemplateArg::Int(head_dim as i32));
    for (n, arg) in templates.iter().copied().flatten() {
        launch = launch.template(n, *arg);
    }
    cached_by_name(KernelBackend::Cuda, name, 0, source)?
        .call(&launch)?
        .pop()
        .ok_or_else(|| Error::invalid(name, "no output"))
}

/// [`write_sides`] for a launch that writes a key side and a value side at once (kernels
/// `*_kv`: warps `[0, rows)` keys, `[rows, 2 rows)` values, rows = B * H * L of the shared
/// `[B, H, L, D]` shape of `xk` and `xv`), with the inputs `xk`, `xv`, then `buffers`, the
/// two sides' previous tokens, `inv_freq`, and the templates `ROPE`, `TRAD` and `templates`. The checks
/// every pair writer needs are made here: one shape for K and V, and with `rope` a head_dim
/// its warp layout takes. Without `rope` the kernel does not read `inv_freq`: a cached f32
/// placeholder stands in.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_pair(
    name: &'static str,
    source: fn() -> KernelSource,
    xk: &Array,
    xv: &Array,
    buffers: &[&Array],
    pos: usize,
    afters: [Option<&Array>; 2],
    rope: Option<&RopeSpec>,
    templates: &[(&str, TemplateArg)],
) -> Result<Array> {
    let xs = xk.shape();
    if xs.len() != 4
        || xv.shape() != xs
        || rope.is_some_and(|r| !r.fits_warp_layout(xs[3] as usize))
    {
        return Err(Error::invalid(
            name,
            format!(
                "K and V need one [B, H, L, D] shape (and RoPE a head_dim it fits): k {xs:?}, v {:?}",
                xv.shape()
            ),
        ));
    }
    let inv_freq = inv_freq_input(rope)?;
    let mut inputs = vec![xk, xv];
    inputs.extend_from_slice(buffers);
    write_sides(
        name,
        source,
        &inputs,
        2 * (xs[0] * xs[1] * xs[2]) as usize,
        xs[3] as usize,
        pos,
        &afters,
        &[&inv_freq],
        &[
            &[
                ("ROPE", TemplateArg::Bool(rope.is_some())),
                (
                    "TRAD",
                    TemplateArg::Bool(rope.is_some_and(|r| r.traditional)),
                ),
            ],
            templates,
        ],
    )
}
