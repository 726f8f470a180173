//! One-token 4-bit GEMV on CUDA (`cuda/qgemv4.cu`, `cuda/qgemv4_silu.cu`): `x W^T` for an
//! MLX-affine 4-bit weight, and the SwiGLU half `silu(x Wg^T) * (x Wu^T)` in one launch.
//!
//! Why: in an end-to-end decode step of a Llama-3-8B 4-bit model on the H200, MLX's
//! `quantized_matmul` (its qmv kernel) read the weights at ~0.86 TB/s and took 5.25 of the
//! 7.5 ms of kernel time per token (ncu, `benchmarks/gpu/ncu_e2e.sh`), so the KV cache's
//! share of a step, the part a compressed cache can shrink, was small. These kernels unpack
//! on the CUDA cores and multiply on the tensor cores with fp32 accumulation.
//!
//! `MLXCEL_FUSED_QMV=0` sends every call to MLX's `quantized_matmul` (the reference; also
//! the path for other backends, other bit widths, bf16, and more than one token).

use crate::flags;
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::ops::Quantized;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

const HEADER: &str = include_str!("cuda/qgemv4.cuh");
const MMA_HEADER: &str = include_str!("cuda/decode_attention_mma.cuh");

/// Warps per CTA (each takes every NW-th 128-value tile of K).
const WARPS: i32 = 8;
/// Tiles each warp loads before it computes (16 B per lane and row each).
const TILES_IN_FLIGHT: i32 = 4;
/// Largest K: x is staged in shared memory as fp16 (K * 2 bytes; with the kernels' static
/// shared memory within the 48 KiB a launch gets without opting in to more; K = 24576 failed
/// to launch on the H200).
const MAX_K: usize = 20 * 1024;

fn plain_source(shared: usize) -> KernelSource {
    let mut s = KernelSource::new(
        "mlxcel_qgemv4",
        &["x", "w", "scales", "biases", "r"],
        &["y"],
        include_str!("cuda/qgemv4.cu"),
    );
    s.header = format!("{MMA_HEADER}\n{HEADER}");
    s.shared_memory = shared as i32;
    s
}

fn silu_source(shared: usize) -> KernelSource {
    let mut s = KernelSource::new(
        "mlxcel_qgemv4_silu",
        &["x", "wg", "sg", "bg", "wu", "su", "bu"],
        &["y"],
        include_str!("cuda/qgemv4_silu.cu"),
    );
    s.header = format!("{MMA_HEADER}\n{HEADER}");
    s.shared_memory = shared as i32;
    s
}

/// (N, K) of `q` if the kernels take it: 4-bit, a group size of 32, 64 or 128, fp16 scales
/// and biases, N a multiple of 16 and K of 128 (at most [`MAX_K`]).
fn weight_shape(q: &Quantized) -> Option<(usize, usize)> {
    let ws = q.w.shape();
    if ws.len() != 2 || q.bits != 4 || !matches!(q.group_size, 32 | 64 | 128) {
        return None;
    }
    let (n, k) = (ws[0] as usize, ws[1] as usize * 8);
    let ok = q.w.dtype() == Dtype::U32
        && q.scales.dtype() == Dtype::F16
        && q.biases.dtype() == Dtype::F16
        && q.scales.shape() == [n as i32, (k / q.group_size as usize) as i32]
        && q.biases.shape() == q.scales.shape()
        && n.is_multiple_of(16)
        && k.is_multiple_of(128)
        && k <= MAX_K;
    ok.then_some((n, k))
}

/// (N, K) when `x @ W^T` of this call goes to the kernel: CUDA backend, `MLXCEL_FUSED_QMV`
/// on, one fp16 row of x (a decode step), and a weight [`weight_shape`] accepts.
fn plan(x: &Array, q: &Quantized) -> Option<(usize, usize)> {
    if !flags::FUSED_QMV.enabled()
        || x.dtype() != Dtype::F16
        || KernelBackend::current() != Some(KernelBackend::Cuda)
    {
        return None;
    }
    weight_shape(q).filter(|&(_, k)| k > 0 && x.size() == k)
}

/// [`plan`] for a gate/up pair: both weights of one shape and group size.
fn plan_silu(x: &Array, gate: &Quantized, up: &Quantized) -> Option<(usize, usize)> {
    plan(x, gate).filter(|&nk| weight_shape(up) == Some(nk) && up.group_size == gate.group_size)
}

/// Whether a residual `r` fits the output of an (N-row) GEMV of `x`.
fn residual_fits(x: &Array, n: usize, r: &Array) -> bool {
    r.dtype() == Dtype::F16 && r.size() == n && r.shape() == out_shape(x, n)
}

/// Whether `x @ W^T` of this call goes to the kernel ([`plan`]).
pub fn applies(x: &Array, q: &Quantized) -> bool {
    plan(x, q).is_some()
}

/// Whether [`gemv_silu_mul`] takes this gate/up pair.
pub fn applies_silu(x: &Array, gate: &Quantized, up: &Quantized) -> bool {
    plan_silu(x, gate, up).is_some()
}

/// The model layers' entry: `x @ W^T` (`+ r`) through the kernel where it applies, checked
/// once; `None` where it does not (the caller uses MLX).
pub fn try_gemv(x: &Array, q: &Quantized, r: Option<&Array>) -> Result<Option<Array>> {
    match plan(x, q) {
        Some((n, k)) if r.is_none_or(|r| residual_fits(x, n, r)) => {
            launch_plain(x, q, r, n, k).map(Some)
        }
        _ => Ok(None),
    }
}

/// The model layers' entry for the SwiGLU half ([`gemv_silu_mul`]), checked once; `None`
/// where the kernel does not apply.
pub fn try_gemv_silu_mul(x: &Array, gate: &Quantized, up: &Quantized) -> Result<Option<Array>> {
    match plan_silu(x, gate, up) {
        Some((n, k)) => launch_silu(x, gate, up, n, k).map(Some),
        None => Ok(None),
    }
}

fn out_shape(x: &Array, n: usize) -> Vec<i32> {
    let mut s = x.shape();
    if let Some(last) = s.last_mut() {
        *last = n as i32;
    }
    s
}

fn checked(x: &Array, q: &Quantized, what: &str) -> Result<(usize, usize)> {
    match weight_shape(q) {
        Some((n, k)) if x.dtype() == Dtype::F16 && x.size() == k => Ok((n, k)),
        _ => Err(Error::invalid(
            "quantized gemv",
            format!(
                "{what}: x {:?} {:?} with a {}-bit weight {:?} (group {}) is not supported",
                x.shape(),
                x.dtype(),
                q.bits,
                q.w.shape(),
                q.group_size
            ),
        )),
    }
}

/// `x @ W^T` for one row of x (`[..., K]` with one row in all) -> `[..., N]` fp16.
pub fn gemv(x: &Array, q: &Quantized) -> Result<Array> {
    gemv_impl(x, q, None)
}

/// `x @ W^T + r` (r fp16 with N elements, e.g. the residual stream) in one launch.
pub fn gemv_add(x: &Array, q: &Quantized, r: &Array) -> Result<Array> {
    gemv_impl(x, q, Some(r))
}

/// Whether [`gemv_add`] takes this call.
pub fn applies_add(x: &Array, q: &Quantized, r: &Array) -> bool {
    plan(x, q).is_some_and(|(n, _)| residual_fits(x, n, r))
}

fn gemv_impl(x: &Array, q: &Quantized, r: Option<&Array>) -> Result<Array> {
    let (n, k) = checked(x, q, "gemv")?;
    if let Some(r) = r {
        if r.dtype() != Dtype::F16 || r.shape() != out_shape(x, n) {
            return Err(Error::invalid(
                "quantized gemv",
                format!(
                    "residual {:?} {:?}, expected {:?} f16",
                    r.shape(),
                    r.dtype(),
                    out_shape(x, n)
                ),
            ));
        }
    }
    launch_plain(x, q, r, n, k)
}

/// The plain kernel's launch for a checked call (N, K).
fn launch_plain(x: &Array, q: &Quantized, r: Option<&Array>, n: usize, k: usize) -> Result<Array> {
    let launch = launch(
        &[x, &q.w, &q.scales, &q.biases, r.unwrap_or(x)],
        x,
        n,
        q.group_size,
    )
    .template("RESID", TemplateArg::Bool(r.is_some()));
    run("qgemv4", 2 * k, plain_source, &launch)
}

/// The launch shared by both kernels: one CTA of [`WARPS`] warps per 16 output rows.
fn launch<'a>(inputs: &[&'a Array], x: &Array, n: usize, group: i32) -> Launch<'a> {
    Launch::new(
        inputs,
        [(n / 16) as i32 * WARPS * 32, 1, 1],
        [WARPS * 32, 1, 1],
    )
    .output(&out_shape(x, n), Dtype::F16)
    .template("G", TemplateArg::Int(group))
    .template("NW", TemplateArg::Int(WARPS))
    .template("U", TemplateArg::Int(TILES_IN_FLIGHT))
}

/// Calls the kernel `name` built for `shared` bytes of staged x (one build per size).
fn run(
    name: &'static str,
    shared: usize,
    source: fn(usize) -> KernelSource,
    launch: &Launch<'_>,
) -> Result<Array> {
    cached_by_name(KernelBackend::Cuda, name, shared as u64, || source(shared))?
        .call(launch)?
        .pop()
        .ok_or_else(|| Error::invalid("quantized gemv", "no output"))
}

/// `silu(x @ Wg^T) * (x @ Wu^T)` for one row of x -> `[..., N]` fp16, in one launch.
pub fn gemv_silu_mul(x: &Array, gate: &Quantized, up: &Quantized) -> Result<Array> {
    let (n, k) = checked(x, gate, "gate")?;
    if checked(x, up, "up")? != (n, k) || up.group_size != gate.group_size {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "gate {:?} and up {:?} projections differ",
                gate.w.shape(),
                up.w.shape()
            ),
        ));
    }
    launch_silu(x, gate, up, n, k)
}

/// The gate/up kernel's launch for a checked call (N, K).
fn launch_silu(x: &Array, gate: &Quantized, up: &Quantized, n: usize, k: usize) -> Result<Array> {
    let inputs = [
        x,
        &gate.w,
        &gate.scales,
        &gate.biases,
        &up.w,
        &up.scales,
        &up.biases,
    ];
    run(
        "qgemv4_silu",
        2 * k,
        silu_source,
        &launch(&inputs, x, n, gate.group_size),
    )
}
