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
use crate::mlx::ops::{stack, Quantized, WeightLayout};
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

const HEADER: &str = include_str!("cuda/qgemv4.cuh");
const MMA_HEADER: &str = include_str!("cuda/decode_attention_mma.cuh");

/// Tiles each warp of the batched schedule loads before it computes (16 B per lane and row
/// each).
const TILES_IN_FLIGHT: i32 = 4;
/// Largest K: x is staged in shared memory as fp16 (K * 2 bytes; with the kernels' static
/// shared memory within the 48 KiB a launch gets without opting in to more; K = 24576 failed
/// to launch on the H200 with the batched schedule).
const MAX_K: usize = 20 * 1024;

/// Environment variable that overrides the GEMV schedule ([`Schedule::current`]).
pub const SCHEDULE_VAR: &str = "MLXCEL_QMV_SCHEDULE";

/// How a GEMV kernel moves its weights; every schedule computes the same tiles in the same
/// per-lane order, so outputs are bit-identical across schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Warps per CTA (each takes every `warps`-th 128-value tile of K).
    pub warps: i32,
    /// Ring stages per warp (1 KiB each, `cp.async`-filled); 0 = the batched schedule
    /// (`TILES_IN_FLIGHT` tiles' loads in registers, then their math).
    pub stages: i32,
    /// Ring only: at most this many CTAs, each owning several 16-row blocks with x staged
    /// once and the ring running across blocks (`ring_blocks` in qgemv4.cuh); 0 = one CTA
    /// per 16 rows.
    pub grid: i32,
    /// Ring only, one CTA per 16 rows, weights in [`WeightLayout::Rows16Tiles`]: each tile
    /// fills its ring slot by one bulk copy (`BULK` in qgemv4.cuh's `ring_rows16`; printed
    /// and parsed as `bulk:WARPS:STAGES`).
    pub bulk: bool,
}

impl Schedule {
    /// The batched schedule (session 4's kernel): 8 warps, 4 tiles in registers.
    pub const BATCHED: Schedule = Schedule {
        warps: 8,
        stages: 0,
        grid: 0,
        bulk: false,
    };
    /// The ring schedule decode steps use by default (`MLXCEL_QMV_RING`): 8 warps, 3 stages
    /// (two 1-KiB tiles in flight per warp while it computes on the third). Why 3: in situ at
    /// 32K (session 21, ncu medians of 56-64 launches per kernel, turbo4) ring:8:3 against
    /// ring:8:4 ran the qkv GEMV + append in 12.58 against 13.49 us and gate/up + SiLU in 27.26
    /// against 27.87 us, the others level (o_proj 7.17 / 7.20, down 14.56 / 14.53, head 110.4
    /// / 110.4); deeper rings were slower (qkv + append 14.56 at 5 stages, 14.59 at 6). ring:8:4
    /// was session 9's choice, made on standalone times. ADR 0004, addendum of session 21.
    pub const RING: Schedule = Schedule {
        warps: 8,
        stages: 3,
        grid: 0,
        bulk: false,
    };

    /// The schedule decode steps use: `MLXCEL_QMV_SCHEDULE` if set (any form
    /// [`Schedule::parse`] takes; a benchmark knob), else [`Schedule::RING`] unless
    /// `MLXCEL_QMV_RING=0`. A schedule that does not parse is an error, not a fallback.
    pub fn current() -> Result<Schedule> {
        match flags::var(SCHEDULE_VAR) {
            Some(s) if !s.trim().is_empty() => Schedule::parse(s.trim())
                .map_err(|e| Error::invalid("quantized gemv", format!("{SCHEDULE_VAR}: {e}"))),
            _ if flags::QMV_RING.enabled() => Ok(Schedule::RING),
            _ => Ok(Schedule::BATCHED),
        }
    }

    /// Parses `batched`, `batched:WARPS`, `ring`, `ring:WARPS:STAGES` (e.g. `ring:4:8`),
    /// `ring:WARPS:STAGES:GRID` (at most GRID CTAs, each owning several 16-row blocks) or
    /// `bulk:WARPS:STAGES` (the ring filled by bulk copies; tiled weights only): every form
    /// [`Schedule`]'s `Display` prints.
    pub fn parse(s: &str) -> Result<Schedule> {
        let bad = || {
            Error::invalid(
                "gemv schedule",
                format!(
                    "{s:?}: expected batched[:WARPS], ring, ring:WARPS:STAGES[:GRID] or bulk:WARPS:STAGES (WARPS 1-16, STAGES 2-16, GRID 1-65535)"
                ),
            )
        };
        let num = |v: &str, range| spec_field(v, range).ok_or_else(bad);
        match s.split(':').collect::<Vec<_>>().as_slice() {
            ["batched"] => Ok(Schedule::BATCHED),
            ["batched", w] => Ok(Schedule {
                warps: num(w, 1..=16)?,
                ..Schedule::BATCHED
            }),
            ["ring"] => Ok(Schedule::RING),
            ["ring", w, st, grid @ ..] if grid.len() <= 1 => Ok(Schedule {
                warps: num(w, 1..=16)?,
                stages: num(st, 2..=16)?,
                grid: grid.first().map_or(Ok(0), |g| num(g, 1..=65535))?,
                bulk: false,
            }),
            ["bulk", w, st] => Ok(Schedule {
                warps: num(w, 1..=16)?,
                stages: num(st, 2..=16)?,
                grid: 0,
                bulk: true,
            }),
            _ => Err(bad()),
        }
    }

    /// The same schedule with per-lane copies: a `bulk:` schedule's `ring:` counterpart (the
    /// one whose outputs it must reproduce bit for bit).
    pub fn per_lane(self) -> Schedule {
        Schedule {
            bulk: false,
            ..self
        }
    }

    /// Whether this schedule reads weights in [`WeightLayout::Rows16Tiles`]: the ring with one
    /// CTA per 16 rows (`ring_rows16`, `ring_rows16_post`); the batched schedule and capped ring
    /// grids index MLX's layout.
    pub fn reads_tiled(self) -> bool {
        self.stages > 0 && !self.multi_block()
    }

    /// Whether CTAs own several 16-row blocks (a capped ring grid).
    fn multi_block(&self) -> bool {
        self.stages > 0 && self.grid > 0
    }

    /// CTAs of a launch over `n` rows.
    fn ctas(&self, n: usize) -> i32 {
        let blocks = (n / 16) as i32;
        if self.multi_block() {
            blocks.min(self.grid)
        } else {
            blocks
        }
    }

    /// Dynamic shared memory of one CTA for a K-wide weight of group `group` and `mats`
    /// matrices (2 for gate/up): x in pair order, and for the ring the (scale, bias) tables
    /// (rows padded to `sb_stride` in qgemv4.cuh) and the stages.
    fn shared_bytes(&self, k: usize, group: usize, mats: usize) -> usize {
        if self.stages == 0 {
            return 2 * k;
        }
        // A multi-block CTA stages the next block's table while the current one is in use.
        let tables = if self.multi_block() { 2 } else { 1 };
        2 * k
            + tables * table_bytes(k, group, mats)
            + self.warps as usize * self.stages as usize * 1024
    }

    /// [`Schedule::shared_bytes`] of a ring launch over paired tables (`RT`): x and the ring,
    /// whose slots each hold a tile's 1 KiB of words and its 32 lanes' 8 bytes of (scale, bias)
    /// pairs; no tables.
    fn paired_shared_bytes(&self, k: usize) -> usize {
        2 * k + self.warps as usize * self.stages as usize * (1024 + 256)
    }
}

/// Shared memory of one 16-row block's (scale, bias) tables of `mats` matrices: rows padded to
/// `sb_stride` pairs (qgemv4.cuh), 4 bytes a pair.
pub(crate) fn table_bytes(k: usize, group: usize, mats: usize) -> usize {
    let sb_stride = (k / group).div_ceil(32) * 32 + 4;
    mats * 16 * sb_stride * 4
}

/// One numeric field of a `NAME:A:B...` kernel spec (schedules, `gemv_probe`'s probes): the
/// number if it parses and lies in `range`.
pub(crate) fn spec_field(v: &str, range: std::ops::RangeInclusive<i32>) -> Option<i32> {
    v.parse::<i32>().ok().filter(|n| range.contains(n))
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.bulk {
            return write!(f, "bulk:{}:{}", self.warps, self.stages);
        }
        match (self.stages, self.grid) {
            (0, _) => write!(f, "batched:{}", self.warps),
            (_, 0) => write!(f, "ring:{}:{}", self.warps, self.stages),
            _ => write!(f, "ring:{}:{}:{}", self.warps, self.stages, self.grid),
        }
    }
}

/// A GEMV kernel's source: `body` after the shared headers, with the launch's dynamic
/// shared memory.
pub(crate) fn gemv_source(
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    body: &str,
    shared: usize,
) -> KernelSource {
    let mut s = KernelSource::new(name, inputs, outputs, body);
    s.header = format!("{MMA_HEADER}\n{HEADER}");
    s.shared_memory = shared as i32;
    s
}

const PLAIN_INPUTS: &[&str] = &["x", "w", "scales", "biases", "r", "nw"];

fn plain_source(shared: usize) -> KernelSource {
    let body = concat!(
        include_str!("cuda/qgemv4_store.cu"),
        include_str!("cuda/qgemv4.cu")
    );
    gemv_source("mlxcel_qgemv4", PLAIN_INPUTS, &["y"], body, shared)
}

/// The plain kernel with [`flags::QMV_GBAR_PROBE`]'s grid barrier (`MLXCEL_QMV_GATE` in
/// `cuda/qgemv4.cu`) and its counters' two inputs.
fn gbar_source(shared: usize) -> KernelSource {
    let body = concat!(
        "#define MLXCEL_QMV_GATE 1\n",
        include_str!("cuda/qgemv4_store.cu"),
        include_str!("cuda/qgemv4.cu")
    );
    let inputs: Vec<&str> = PLAIN_INPUTS
        .iter()
        .copied()
        .chain(["gbar", "gbar_slot"])
        .collect();
    gemv_source("mlxcel_qgemv4_gbar", &inputs, &["y"], body, shared)
}

/// The plain kernel with the stacked qkv projection's three outputs ([`try_gemv_parts`]).
fn qkv_source(shared: usize) -> KernelSource {
    let body = concat!(
        include_str!("cuda/qgemv4_store_qkv.cu"),
        include_str!("cuda/qgemv4.cu")
    );
    gemv_source(
        "mlxcel_qgemv4_qkv",
        PLAIN_INPUTS,
        &["y", "yk", "yv"],
        body,
        shared,
    )
}

/// The qkv kernel with a turbo4, turbo4-asym or int8 K+V cache append folded into its tail
/// ([`try_gemv_parts_encode`], `cuda/qgemv4_qkv_encode.cu`).
fn qkv_encode_source(shared: usize) -> KernelSource {
    let body = concat!(
        include_str!("cuda/qgemv4_store_qkv.cu"),
        include_str!("cuda/qgemv4_qkv_encode_pre.cu"),
        include_str!("cuda/qgemv4.cu"),
        include_str!("cuda/qgemv4_qkv_encode.cu")
    );
    let inputs: Vec<&str> = PLAIN_INPUTS
        .iter()
        .copied()
        .chain(crate::kernels::turbo_encode::pair_append_inputs())
        .chain(["tickets", "slot_marker"])
        .collect();
    let outputs = ["y", "yk", "yv", "done"];
    let mut s = gemv_source("mlxcel_qgemv4_qkv_enc", &inputs, &outputs, body, shared);
    s.header = format!(
        "{}\n{}\n{}\n{}",
        crate::kernels::turbo_encode::helpers(),
        include_str!("cuda/fp16_store.cuh"),
        include_str!("cuda/int8_encode.cuh"),
        s.header
    );
    s
}

/// [`qkv_encode_source`] launched in clusters of `n` CTAs (one head of D = 16 n rows:
/// `MLXCEL_QKV_CLUSTER`): MLX's generated signature gains `__cluster_dims__(n, 1, 1)`
/// ([`KernelSource::with_signature_attribute`]), so the kernel launches in clusters of `n` CTAs
/// along x without a launch attribute, under its own name.
fn qkv_encode_source_clustered(shared: usize, n: usize) -> KernelSource {
    qkv_encode_source(shared)
        .with_signature_attribute(&format!("_cl{n}"), &format!("__cluster_dims__({n}, 1, 1)"))
}
fn qkv_encode_source_cl8(shared: usize) -> KernelSource {
    qkv_encode_source_clustered(shared, 8)
}
fn qkv_encode_source_cl4(shared: usize) -> KernelSource {
    qkv_encode_source_clustered(shared, 4)
}

fn silu_source(shared: usize) -> KernelSource {
    let inputs = ["x", "wg", "sg", "bg", "wu", "su", "bu", "nw"];
    gemv_source(
        "mlxcel_qgemv4_silu",
        &inputs,
        &["y"],
        include_str!("cuda/qgemv4_silu.cu"),
        shared,
    )
}

/// (N, K) of `q` if the kernels take it: 4-bit, a group size of 32, 64 or 128, fp16 scales
/// and biases, N a multiple of 16 and K of 128 (at most [`MAX_K`]).
pub(crate) fn weight_shape(q: &Quantized) -> Option<(usize, usize)> {
    let ws = q.w.shape();
    if ws.len() != 2 || q.bits != 4 || !matches!(q.group_size, 32 | 64 | 128) {
        return None;
    }
    let (n, k) = (ws[0] as usize, ws[1] as usize * 8);
    // Paired tables (tile_tables16) hold two halves per group and row.
    let per_group = if q.layout == WeightLayout::Rows16TilesPairs {
        2
    } else {
        1
    };
    let ok = q.w.dtype() == Dtype::U32
        && q.scales.dtype() == Dtype::F16
        && q.biases.dtype() == Dtype::F16
        && q.scales.shape() == [n as i32, (per_group * k / q.group_size as usize) as i32]
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
            launch_plain(x, q, r, None, n, k, Schedule::current()?).map(Some)
        }
        _ => Ok(None),
    }
}

/// The model layers' entry for the SwiGLU half ([`gemv_silu_mul`]), checked once; `None`
/// where the kernel does not apply.
pub fn try_gemv_silu_mul(x: &Array, gate: &Quantized, up: &Quantized) -> Result<Option<Array>> {
    match plan_silu(x, gate, up) {
        Some((n, k)) => launch_silu(x, gate, up, None, n, k, Schedule::current()?).map(Some),
        None => Ok(None),
    }
}

/// An RMSNorm folded into a GEMV's x staging: `rms_norm(x, weight, eps)` with MLX's
/// roundings (`stage_x_rms` in `cuda/qgemv4.cuh`).
#[derive(Clone, Copy)]
pub struct FoldedNorm<'a> {
    /// The norm's weight, fp16 with K elements.
    pub weight: &'a Array,
    pub eps: f32,
}

/// (N, K) and the schedule of a GEMV with a folded norm where it applies: `MLXCEL_FUSED_NORM`
/// on (checked first: with the flag off, the default, a decode step's projections pay
/// nothing here before their plain GEMV), the kernel's `plan` (N, K), the weight fp16 [K],
/// and a schedule with one CTA per 16 rows (a capped grid stages x once per CTA for several
/// blocks and has no NORM variant).
fn norm_plan(
    norm: &FoldedNorm<'_>,
    plan: impl FnOnce() -> Option<(usize, usize)>,
) -> Result<Option<(usize, usize, Schedule)>> {
    if !flags::FUSED_NORM.enabled() {
        return Ok(None);
    }
    let Some((n, k)) = plan() else {
        return Ok(None);
    };
    if norm.weight.dtype() != Dtype::F16 || norm.weight.size() != k || !norm.eps.is_finite() {
        return Ok(None);
    }
    let sched = Schedule::current()?;
    Ok((!sched.multi_block()).then_some((n, k, sched)))
}

/// `rms_norm(x) @ W^T` for one row of x (the residual stream) in one launch where the kernel
/// and [`FoldedNorm`] apply (see [`flags::FUSED_NORM`]); `None` where not (the caller
/// normalizes and calls [`try_gemv`]).
pub fn try_gemv_rms(x: &Array, norm: FoldedNorm<'_>, q: &Quantized) -> Result<Option<Array>> {
    norm_plan(&norm, || plan(x, q))?
        .map(|(n, k, sched)| launch_plain(x, q, None, Some(norm), n, k, sched))
        .transpose()
}

/// [`try_gemv_silu_mul`] of `rms_norm(x)` in one launch, as [`try_gemv_rms`].
pub fn try_gemv_silu_mul_rms(
    x: &Array,
    norm: FoldedNorm<'_>,
    gate: &Quantized,
    up: &Quantized,
) -> Result<Option<Array>> {
    norm_plan(&norm, || plan_silu(x, gate, up))?
        .map(|(n, k, sched)| launch_silu(x, gate, up, Some(norm), n, k, sched))
        .transpose()
}

/// `rms_norm(x) @ W^T` through the folded norm with an explicit schedule, whatever
/// `MLXCEL_FUSED_NORM` says (tests and benchmarks). A capped-grid schedule is an error.
pub fn gemv_rms_with(
    x: &Array,
    norm: FoldedNorm<'_>,
    q: &Quantized,
    sched: Schedule,
) -> Result<Array> {
    let (n, k) = checked(x, q, "gemv")?;
    check_norm(&norm, k, sched)?;
    launch_plain(x, q, None, Some(norm), n, k, sched)
}

/// [`gemv_silu_mul_with`] of `rms_norm(x)`, as [`gemv_rms_with`].
pub fn gemv_silu_mul_rms_with(
    x: &Array,
    norm: FoldedNorm<'_>,
    gate: &Quantized,
    up: &Quantized,
    sched: Schedule,
) -> Result<Array> {
    let (n, k) = checked_pair(x, gate, up)?;
    check_norm(&norm, k, sched)?;
    launch_silu(x, gate, up, Some(norm), n, k, sched)
}

fn check_norm(norm: &FoldedNorm<'_>, k: usize, sched: Schedule) -> Result<()> {
    if norm.weight.dtype() != Dtype::F16 || norm.weight.size() != k {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "norm weight {:?} {:?}, expected {k} f16 values",
                norm.weight.shape(),
                norm.weight.dtype()
            ),
        ));
    }
    if sched.multi_block() {
        return Err(Error::invalid(
            "quantized gemv",
            format!("schedule {sched}: a folded norm needs one CTA per 16 rows"),
        ));
    }
    Ok(())
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
    gemv_with(x, q, None, Schedule::current()?)
}

/// `x @ W^T + r` (r fp16 with N elements, e.g. the residual stream) in one launch.
pub fn gemv_add(x: &Array, q: &Quantized, r: &Array) -> Result<Array> {
    gemv_with(x, q, Some(r), Schedule::current()?)
}

/// Whether [`gemv_add`] takes this call.
pub fn applies_add(x: &Array, q: &Quantized, r: &Array) -> bool {
    plan(x, q).is_some_and(|(n, _)| residual_fits(x, n, r))
}

/// [`gemv`] (`r` None) or [`gemv_add`] with an explicit schedule (benchmarks and tests).
pub fn gemv_with(x: &Array, q: &Quantized, r: Option<&Array>, sched: Schedule) -> Result<Array> {
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
    launch_plain(x, q, r, None, n, k, sched)
}

/// `q` with its packed words reordered into [`WeightLayout::Rows16Tiles`]: each 16-row x
/// 128-value tile of the ring schedule is 1 KiB of contiguous memory, so that a warp's copy
/// instruction reads 512 contiguous bytes (`TILED` in `cuda/qgemv4.cuh`'s `ring_rows16`).
/// Words `[N, K / 8]` viewed as `[N / 16, 16, K / 128, 16]`, axes 1 and 2 swapped; scales and
/// biases keep MLX's layout. MLX's ops read the result through [`Quantized::untiled`].
pub fn tile_rows16(q: &Quantized) -> Result<Quantized> {
    let (n, k) = reorder_shape(q, WeightLayout::Mlx, "tile_rows16")?;
    let (n, k) = (n as i32, k as i32);
    let w =
        q.w.reshape(&[n / 16, 16, k / 128, 16])?
            .transpose(&[0, 2, 1, 3])?
            .contiguous()?
            .reshape(&[n, k / 8])?;
    Ok(Quantized {
        w,
        scales: q.scales.clone(),
        biases: q.biases.clone(),
        group_size: q.group_size,
        bits: q.bits,
        layout: WeightLayout::Rows16Tiles,
    })
}

/// (N, K) of a weight the kernels take in layout `from`, which the load-time reorder `what`
/// starts from; else the error naming the weight and what was expected.
fn reorder_shape(q: &Quantized, from: WeightLayout, what: &str) -> Result<(usize, usize)> {
    weight_shape(q).filter(|_| q.layout == from).ok_or_else(|| {
        Error::invalid(
            "quantized gemv",
            format!(
                "{what}: a {}-bit weight {:?} (group {}, layout {:?}) is not one the kernels take in layout {from:?}",
                q.bits,
                q.w.shape(),
                q.group_size,
                q.layout
            ),
        )
    })
}

/// `q` (tiled words, [`tile_rows16`]) with its scales and biases interleaved as (scale, bias)
/// pairs in the same tiles' order ([`WeightLayout::Rows16TilesPairs`]): row block b's tile t
/// holds its 16 rows x 128 / group groups of pairs at pair (b K / 128 + t) 16 (128 / group), group
/// g's rows r and r + 8 (r < 8) as pairs (8 g + r) 2 and (8 g + r) 2 + 1, so that a lane of
/// POST's OWN loop copies its rows' 8 bytes with each tile (`RT` in `cuda/qgemv4.cuh`). `scales`
/// holds the pairs as `[N, 2 K / group]` fp16 and `biases` is the same array (no extra memory).
/// MLX's ops read them through [`Quantized::untiled_tables`].
pub fn tile_tables16(q: &Quantized) -> Result<Quantized> {
    let (n, k) = reorder_shape(q, WeightLayout::Rows16Tiles, "tile_tables16")?;
    let (n, k, g) = (n as i32, k as i32, q.group_size);
    let (tiles, ng) = (k / 128, 128 / g);
    let pairs = stack(&[&q.scales, &q.biases], -1)?
        .reshape(&[n / 16, 2, 8, tiles, ng, 2])?
        .transpose(&[0, 3, 4, 2, 1, 5])?
        .contiguous()?
        .reshape(&[n, 2 * k / g])?;
    Ok(Quantized {
        w: q.w.clone(),
        scales: pairs.clone(),
        biases: pairs,
        group_size: q.group_size,
        bits: q.bits,
        layout: WeightLayout::Rows16TilesPairs,
    })
}

/// Whether a weight [`tile_rows16`] tiled at load should also get [`tile_tables16`]'s pairs:
/// [`flags::QMV_RING_TABLES`] on and the loop that reads them ([`ring_tables`]) the current
/// schedule's.
pub fn pairs_at_load(q: &Quantized) -> bool {
    flags::QMV_RING_TABLES.enabled()
        && q.layout == WeightLayout::Rows16Tiles
        && Schedule::current().is_ok_and(ring_tables)
        && weight_shape(q).is_some()
}

/// Whether `sched`'s launches can read paired tables: POST's loop ([`post_loop`]) with
/// [`flags::QMV_OWN_CHUNKS`] (the loop whose lanes copy their own pairs) on the ring with one
/// CTA per 16 rows.
fn ring_tables(sched: Schedule) -> bool {
    post_loop(sched) && flags::QMV_OWN_CHUNKS.enabled() && sched.reads_tiled()
}

/// Whether a decode step's GEMVs should read `q` tiled: `MLXCEL_QMV_TILED` on (the
/// default), the CUDA backend, the GEMV kernels on (`MLXCEL_FUSED_QMV`: without them every
/// decode step's matmuls would reorder the weights back to MLX's layout), a GEMV schedule that
/// reads tiled weights (an override such as `MLXCEL_QMV_SCHEDULE=batched` keeps MLX's layout
/// instead of failing at the first GEMV; one that does not parse fails there), and a weight in
/// MLX's layout that the kernels take (what [`tile_rows16`] needs).
pub fn tiles_at_load(q: &Quantized) -> bool {
    flags::QMV_TILED.enabled()
        && flags::FUSED_QMV.enabled()
        && KernelBackend::current() == Some(KernelBackend::Cuda)
        && Schedule::current().is_ok_and(Schedule::reads_tiled)
        && q.layout == WeightLayout::Mlx
        && weight_shape(q).is_some()
}

/// Whether `sched` reads weights of `q`'s layout: tiled weights only through the ring with
/// one CTA per 16 rows (`ring_rows16`, or `ring_rows16_post` with `MLXCEL_QMV_POST`), and a
/// `bulk:` schedule, which copies whole tiles, only tiled weights (its launches leave POST's
/// loop off: bulk copies fill `ring_rows16`'s slots).
fn check_layout(q: &Quantized, sched: Schedule) -> Result<()> {
    let tiled = q.layout.tiled_words();
    if q.layout == WeightLayout::Rows16TilesPairs && !ring_tables(sched) {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "schedule {sched}: weights with paired tables (MLXCEL_QMV_RING_TABLES at load) need POST's loop with MLXCEL_QMV_OWN_CHUNKS on a ring schedule (load with MLXCEL_QMV_RING_TABLES=0 to run others)"
            ),
        ));
    }
    if tiled && !sched.reads_tiled() {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "schedule {sched}: tiled weights need a ring schedule with one CTA per 16 rows (MLXCEL_QMV_TILED, on by default on CUDA, stores them tiled; 0 keeps MLX's layout)"
            ),
        ));
    }
    if sched.bulk && !tiled {
        return Err(Error::invalid(
            "quantized gemv",
            format!("schedule {sched}: bulk copies need tiled weights (tile_rows16)"),
        ));
    }
    Ok(())
}

/// The plain kernel's launch for a checked call (N, K).
fn launch_plain(
    x: &Array,
    q: &Quantized,
    r: Option<&Array>,
    norm: Option<FoldedNorm<'_>>,
    n: usize,
    k: usize,
    sched: Schedule,
) -> Result<Array> {
    let gbar = if r.is_some() && norm.is_none() && gbar_fits(q, n, k, sched) {
        Some(crate::kernels::decode_attention::gemv_barrier_tickets()?)
    } else {
        None
    };
    let (launch, shared) = plain_launch(x, q, r, norm, n, k, sched, row_blocks(n, sched))?;
    match &gbar {
        Some((words, slot)) => launch_gbar(launch, shared, words, slot),
        None => one(run("qgemv4", shared, plain_source, &launch)?),
    }
}

/// Most CTAs a launch may have for [`flags::QMV_GBAR_PROBE`]'s grid barrier, which needs every
/// CTA resident at once: two per SM of the H200's 132. Sized for the H200, where the probe is
/// meant to run; Llama-3-8B's o_proj and down_proj launch 256.
pub const GBAR_MAX_CTAS: usize = 264;

/// Whether a residual-adding launch (o_proj, down_proj) takes [`flags::QMV_GBAR_PROBE`]'s
/// barrier: the flag on, the ring with one CTA per 16 rows in MLX's weight layout (the
/// prologue the barrier sits in), at most [`GBAR_MAX_CTAS`] CTAs, and CTAs small enough that
/// two fit on an SM (at most 8 warps, whose builds take 48-70 registers, and at most half an
/// SM's shared memory): a grid that could not be resident at once would never be released.
fn gbar_fits(q: &Quantized, n: usize, k: usize, sched: Schedule) -> bool {
    flags::QMV_GBAR_PROBE.enabled()
        && sched.stages > 0
        && !sched.multi_block()
        && !sched.bulk
        && sched.warps <= 8
        && sched.shared_bytes(k, q.group_size as usize, 1) <= MAX_SHARED / 2
        && q.layout == WeightLayout::Mlx
        && sched.ctas(n) as usize <= GBAR_MAX_CTAS
}

/// `launch` (the plain kernel's) with [`flags::QMV_GBAR_PROBE`]'s grid barrier: the barrier's
/// counters (one slot of a zeroed buffer, rotated per call as the folded merge's tickets) as
/// two more inputs, and its place (`MLXCEL_QMV_GBAR_AT`: `copies`, the default, or `start`).
/// A place that does not parse is an error, not a fallback.
fn launch_gbar<'a>(
    mut launch: Launch<'a>,
    shared: SharedMemory,
    words: &'a Array,
    slot: &'a Array,
) -> Result<Array> {
    let start = match flags::var(flags::QMV_GBAR_AT_VAR).as_deref().map(str::trim) {
        None | Some("copies") => false,
        Some("start") => true,
        Some(other) => {
            return Err(Error::invalid(
                "quantized gemv",
                format!(
                    "{}: {other:?}, expected copies or start",
                    flags::QMV_GBAR_AT_VAR
                ),
            ))
        }
    };
    launch.inputs.extend([words, slot]);
    let launch = launch
        .template("GBAR_START", TemplateArg::Bool(start))
        .template(
            "GBAR_SLOT_WORDS",
            TemplateArg::Int(crate::kernels::decode_attention::TICKET_SLOT_WORDS as i32),
        );
    one(run("qgemv4_gbar", shared, gbar_source, &launch)?)
}

/// The output of a one-output launch.
fn one(outputs: Vec<Array>) -> Result<Array> {
    let [y] = exactly(outputs, "one")?;
    Ok(y)
}

/// A launch's `N` outputs as an array; `what` names the launch in the error.
fn exactly<const N: usize>(outputs: Vec<Array>, what: &str) -> Result<[Array; N]> {
    outputs.try_into().map_err(|v: Vec<Array>| {
        Error::invalid(
            "quantized gemv",
            format!("{what}: {} outputs, expected {N}", v.len()),
        )
    })
}

/// Fewest rows at which a plain launch runs two 16-row blocks per CTA
/// ([`flags::QMV_PAIR_BLOCKS`]): Llama-3-8B's largest layer GEMV, gate/up's 14336 rows, is a
/// gate/up launch; the plain launches this large are the LM heads (32K-152K rows).
pub const PAIR_BLOCKS_MIN_ROWS: usize = 32768;

/// Whether `sched`'s launches take POST's loop (`MLXCEL_QMV_POST`): bulk copies fill
/// `ring_rows16`'s slots only, so POST's loop takes per-lane copies, of either layout.
fn post_loop(sched: Schedule) -> bool {
    flags::QMV_POST.enabled() && !sched.bulk
}

/// 16-row blocks per CTA of a plain launch over `n` rows: 2 with [`flags::QMV_PAIR_BLOCKS`] on,
/// POST's loop ([`post_loop`]) on the ring with one block per CTA (not a capped grid), at least
/// [`PAIR_BLOCKS_MIN_ROWS`] rows and a whole number of 32-row pairs; else 1.
fn row_blocks(n: usize, sched: Schedule) -> usize {
    let pairs = flags::QMV_PAIR_BLOCKS.enabled()
        && post_loop(sched)
        && sched.stages > 0
        && !sched.multi_block()
        && n >= PAIR_BLOCKS_MIN_ROWS
        && n.is_multiple_of(32);
    if pairs {
        2
    } else {
        1
    }
}

/// The plain kernel's [`Launch`] (one output, `x`'s shape with N last) over `rb` 16-row blocks
/// per CTA ([`row_blocks`]) and its shared memory, or [`launch`]'s error.
#[allow(clippy::too_many_arguments)]
fn plain_launch<'a>(
    x: &'a Array,
    q: &'a Quantized,
    r: Option<&'a Array>,
    norm: Option<FoldedNorm<'a>>,
    n: usize,
    k: usize,
    sched: Schedule,
    rb: usize,
) -> Result<(Launch<'a>, SharedMemory)> {
    let inputs = [
        x,
        &q.w,
        &q.scales,
        &q.biases,
        r.unwrap_or(x),
        norm.map_or(x, |m| m.weight),
    ];
    let (launch, shared) = launch(&inputs, x, n, k, q, 1, rb, sched)?;
    let launch = launch.template("RESID", TemplateArg::Bool(r.is_some()));
    Ok((with_norm(launch, norm), shared))
}

/// A GEMV whose N output rows go to three arrays ([`try_gemv_parts`]): the stacked qkv
/// projection of a decode step, checked by [`parts_plan`].
pub struct PartsPlan<'s> {
    n: usize,
    k: usize,
    /// Each output's shape; their sizes add up to N.
    shapes: [&'s [i32]; 3],
}

/// The [`PartsPlan`] of `x @ W^T` written as three arrays of `shapes` (row `i` of the
/// product is element `i` of the parts in order, e.g. q, k, v as `[B, H, 1, D]`), where that
/// applies: `MLXCEL_QKV_PARTS` on, the kernel's [`plan`], and sizes that add up to N. `None`
/// where not (the caller splits the one output itself).
pub fn parts_plan<'s>(x: &Array, q: &Quantized, shapes: [&'s [i32]; 3]) -> Option<PartsPlan<'s>> {
    if !flags::QKV_PARTS.enabled() {
        return None;
    }
    let (n, k) = plan(x, q)?;
    let sizes = shapes.map(|s| s.iter().map(|&d| d as i64).product::<i64>());
    (sizes.iter().all(|&s| s > 0) && sizes.iter().sum::<i64>() == n as i64).then_some(PartsPlan {
        n,
        k,
        shapes,
    })
}

/// `x @ W^T` (`rms_norm(x) @ W^T` with `norm`: the input is then the residual stream, as in
/// [`try_gemv_rms`]) as the three arrays of `plan`, in one launch. With `norm`, `None` where
/// the fold does not apply ([`flags::FUSED_NORM`] off, or a capped-grid schedule): the
/// caller normalizes and calls again without it.
pub fn try_gemv_parts(
    x: &Array,
    norm: Option<FoldedNorm<'_>>,
    q: &Quantized,
    plan: &PartsPlan<'_>,
) -> Result<Option<[Array; 3]>> {
    let Some(sched) = parts_schedule(norm, plan)? else {
        return Ok(None);
    };
    let (launch, shared) = parts_launch(x, norm, q, plan, sched)?;
    let parts = exactly(run("qgemv4_qkv", shared, qkv_source, &launch)?, "parts")?;
    Ok(Some(parts))
}

/// The schedule of a parts launch: with `norm`, the folded norm's ([`norm_plan`]; `None`
/// where the fold does not apply), else the current one.
fn parts_schedule(norm: Option<FoldedNorm<'_>>, plan: &PartsPlan<'_>) -> Result<Option<Schedule>> {
    match norm {
        Some(m) => Ok(norm_plan(&m, || Some((plan.n, plan.k)))?.map(|(_, _, sched)| sched)),
        None => Schedule::current().map(Some),
    }
}

/// The plain kernel's launch with `plan`'s three outputs and their `NQ` / `NK` (the qkv
/// kernels; x checked), and its shared memory.
fn parts_launch<'a>(
    x: &'a Array,
    norm: Option<FoldedNorm<'a>>,
    q: &'a Quantized,
    plan: &PartsPlan<'_>,
    sched: Schedule,
) -> Result<(Launch<'a>, SharedMemory)> {
    if x.dtype() != Dtype::F16 || x.size() != plan.k {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "parts: x {:?} {:?}, expected {} f16 values",
                x.shape(),
                x.dtype(),
                plan.k
            ),
        ));
    }
    let (mut launch, shared) = plain_launch(x, q, None, norm, plan.n, plan.k, sched, 1)?;
    launch.outputs = plan
        .shapes
        .iter()
        .map(|s| (s.to_vec(), Dtype::F16))
        .collect();
    let rows = plan.shapes.map(|s| s.iter().product::<i32>());
    let launch = launch
        .template("NQ", TemplateArg::Int(rows[0]))
        .template("NK", TemplateArg::Int(rows[1]));
    Ok((launch, shared))
}

/// [`try_gemv_parts`] with the decode step's K+V cache append folded into the same launch
/// (`MLXCEL_QKV_ENCODE`; `cuda/qgemv4_qkv_encode.cu`): k and v (parts 1 and 2, each
/// `[1, heads, 1, head_dim]` of `target`) are also written into `target`'s cache buffers at
/// its position in the target's format (turbo4, turbo4-asym's fp16 keys, int8), the keys
/// rotated by `rope` first. Returns the three parts and the write's
/// token (`[4]` int32, for the cache's [`crate::kv::pending::PendingWrite`]). `None` where
/// it does not apply (the flag off, parts that are not the target's heads, a capped-grid
/// schedule, a RoPE the encoder's warp layout cannot take, or with `norm` where the fold
/// does not apply): the caller then runs the projection and the append apart, and the
/// target's position stays unwritten.
pub fn try_gemv_parts_encode(
    x: &Array,
    norm: Option<FoldedNorm<'_>>,
    q: &Quantized,
    plan: &PartsPlan<'_>,
    target: &crate::kernels::folded_append::PairTarget,
    rope: Option<&crate::rope::RopeSpec>,
) -> Result<Option<([Array; 3], Array)>> {
    use crate::kernels::decode_attention::{qkv_encode_tickets, QKV_ENCODE_MAX_HEADS};
    use crate::kernels::in_place::{inv_freq_input, order_inputs};
    let kv_shape = [1, target.heads, 1, target.head_dim as i32];
    let applies = flags::QKV_ENCODE.enabled()
        && target.format != crate::kernels::folded_append::PairFormat::Fp16Int8
        && plan.shapes[1] == kv_shape
        && plan.shapes[2] == kv_shape
        && plan.shapes[0].first() == Some(&1)
        // The kernel writes both sides at head * capacity + pos with K's capacity.
        && target.k.data.shape()[..3] == target.v.data.shape()[..3]
        && 2 * target.heads as usize <= QKV_ENCODE_MAX_HEADS
        && rope.is_none_or(|r| r.fits_warp_layout(target.head_dim));
    if !applies {
        return Ok(None);
    }
    let sched = match parts_schedule(norm, plan)? {
        Some(s) if !s.multi_block() => s,
        _ => return Ok(None),
    };
    let (k, v) = (&target.k, &target.v);
    let (marker, afters) = order_inputs(target.pos, &[k.after.as_ref(), v.after.as_ref()])?;
    let inv_freq = inv_freq_input(rope)?;
    let (tickets, slot) = qkv_encode_tickets()?;
    // Clusters of one head's CTAs (MLXCEL_QKV_CLUSTER) where the GPU has them (sm_90+).
    let cluster_gpu = flags::QKV_CLUSTER.enabled()
        && crate::mlx::device::gpu_compute_capability_major().is_some_and(|m| m >= 9);
    let (name, source, clustered): (&'static str, fn(usize) -> KernelSource, bool) =
        match (cluster_gpu, target.head_dim) {
            (true, 128) => ("qgemv4_qkv_enc_cl8", qkv_encode_source_cl8, true),
            (true, 64) => ("qgemv4_qkv_enc_cl4", qkv_encode_source_cl4, true),
            _ => ("qgemv4_qkv_enc", qkv_encode_source, false),
        };
    let (mut launch, shared) = parts_launch(x, norm, q, plan, sched)?;
    let shared = shared.with_encoder(target.head_dim);
    launch.inputs.extend([
        &k.mids, &k.lut, &k.signs, &v.mids, &v.lut, &v.signs, &k.data, &k.aux, &v.data, &v.aux,
        &marker, &afters[0], &afters[1], &inv_freq, &tickets, &slot,
    ]);
    launch.outputs.push((vec![4], Dtype::I32));
    let launch = launch
        .template("D", TemplateArg::Int(target.head_dim as i32))
        .template("ROPE", TemplateArg::Bool(rope.is_some()))
        .template(
            "TRAD",
            TemplateArg::Bool(rope.is_some_and(|r| r.traditional)),
        )
        .template("KVFMT", TemplateArg::Int(target.format as i32))
        .template("TICKETS", TemplateArg::Int(QKV_ENCODE_MAX_HEADS as i32))
        .template("ETAIL", TemplateArg::Bool(flags::QKV_ENC_TAIL.enabled()))
        .template("CLUSTER", TemplateArg::Bool(clustered));
    let [yq, yk, yv, token] = exactly(run(name, shared, source, &launch)?, "parts + encode")?;
    Ok(Some(([yq, yk, yv], token)))
}

/// The launch shared by both kernels over `mats` matrices of N x K (2 for gate/up; `q` the
/// first, for its group size and layout): CTAs of `sched.warps` warps, one per `rb` 16-row
/// blocks of output rows (at most `sched.grid` with a capped ring grid, each owning several),
/// and the dynamic shared memory it needs (also its `SMEM` argument). A schedule that cannot
/// read `q`'s layout is an error ([`check_layout`]).
#[allow(clippy::too_many_arguments)]
fn launch<'a>(
    inputs: &[&'a Array],
    x: &Array,
    n: usize,
    k: usize,
    q: &Quantized,
    mats: usize,
    rb: usize,
    sched: Schedule,
) -> Result<(Launch<'a>, SharedMemory)> {
    check_layout(q, sched)?;
    let (group, tiled) = (q.group_size, q.layout.tiled_words());
    let pairs = q.layout == WeightLayout::Rows16TilesPairs;
    let post = post_loop(sched);
    if flags::QMV_NOMATH_PROBE.enabled() && !post {
        // The probe lives in the POST loop: without it the launch would time the shipped kernel.
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "{} needs the POST GEMV loop (MLXCEL_QMV_POST on, not a bulk schedule)",
                flags::QMV_NOMATH_PROBE.name
            ),
        ));
    }
    let bytes = if pairs {
        sched.paired_shared_bytes(k)
    } else {
        sched.shared_bytes(k, group as usize, mats * rb)
    };
    let shared = SharedMemory::gemv(bytes, sched.warps, group, post);
    let launch = Launch::new(
        inputs,
        [sched.ctas(n) / rb as i32 * sched.warps * 32, 1, 1],
        [sched.warps * 32, 1, 1],
    )
    .output(&out_shape(x, n), Dtype::F16)
    .template("G", TemplateArg::Int(group))
    .template("NW", TemplateArg::Int(sched.warps))
    .template("S", TemplateArg::Int(sched.stages))
    .template("U", TemplateArg::Int(TILES_IN_FLIGHT))
    .template("MB", TemplateArg::Bool(sched.multi_block()))
    .template("EARLY", TemplateArg::Bool(flags::QMV_EARLY.enabled()))
    .template("POST", TemplateArg::Bool(post))
    .template("TILED", TemplateArg::Bool(tiled))
    .template(
        "OWNC",
        TemplateArg::Bool(post && flags::QMV_OWN_CHUNKS.enabled()),
    )
    .template("BULK", TemplateArg::Bool(sched.bulk))
    .template("RT", TemplateArg::Bool(pairs))
    .template(
        "XSF",
        TemplateArg::Bool(post && flags::QMV_XSUM_STAGE.enabled()),
    )
    .template("RB", TemplateArg::Int(rb as i32))
    .template("SMEM", smem_arg(shared.dynamic));
    Ok((launch, shared))
}

/// The `SMEM` template argument: the launch's dynamic shared memory in bytes. MLX raises a
/// kernel's shared-memory limit above 48 KB only when it first loads the kernel, and it
/// keys kernels by their text and template arguments; without SMEM, o_proj (K = 4096, 45 KB
/// with the ring) and down_proj (K = 14336, 75 KB) share one kernel, and down_proj's launch
/// fails (`cuGraphAddKernelNode ... invalid argument`, H200, session 9).
pub(crate) fn smem_arg(shared: usize) -> TemplateArg {
    TemplateArg::Int(shared as i32)
}

/// Most shared memory, static and dynamic together, one CTA may use on sm_90 (227 KiB).
const MAX_SHARED: usize = 227 * 1024;

/// Shared memory a CTA may use without opting in: static plus dynamic (CUDA's default
/// `MAX_DYNAMIC_SHARED_SIZE_BYTES` is this less the kernel's static shared memory).
const DEFAULT_SHARED: usize = 48 * 1024;

/// MLX's custom CUDA kernels opt in to more dynamic shared memory only when a launch asks
/// for more than this (`custom_kernel.cpp`: `smem > 48000`), and then for exactly that.
const MLX_OPT_IN_ABOVE: usize = 48_000;

/// One GEMV launch's shared memory: the `dynamic` bytes its layout uses
/// ([`Schedule::shared_bytes`]) and a bound on its build's static `__shared__` arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedMemory {
    pub dynamic: usize,
    pub static_bound: usize,
}

impl SharedMemory {
    /// The plain, gate/up and probe kernels of `warps` warps: their reduction scratch (at most
    /// 64 floats per warp in `red` / `red2` / `nred`, and with `BULK` one mbarrier per warp and
    /// stage, 64 bytes a warp at 8 stages) within 256 bytes a warp plus 256; with `post` (the
    /// POST loop's per-group sums of x, `xsum` in qgemv4.cuh) 20480 / group float2.
    /// `benchmarks/gpu/nvrtc_check.py` checks this bound against ptxas's count for every build.
    pub(crate) fn gemv(dynamic: usize, warps: i32, group: i32, post: bool) -> Self {
        let xsum = if post { 20480 / group as usize * 8 } else { 0 };
        SharedMemory {
            dynamic,
            static_bound: 256 * warps as usize + 256 + xsum,
        }
    }

    /// Adds the qkv + append kernel's tables (`qgemv4_qkv_encode*.cu`: the encoder's
    /// constants, 2.5 head_dim + 32 floats, x's head in fp16 and the ticket's flag).
    fn with_encoder(self, head_dim: usize) -> Self {
        let tables = 4 * (5 * head_dim / 2 + 32) + 2 * head_dim + 16;
        SharedMemory {
            static_bound: self.static_bound + tables,
            ..self
        }
    }

    /// The dynamic shared memory to ask MLX for. A launch whose static and dynamic shared
    /// memory together pass [`DEFAULT_SHARED`] needs MLX to opt the kernel in, which MLX does
    /// only above [`MLX_OPT_IN_ABOVE`]: such a launch asks for one byte more than that (the
    /// bytes past `dynamic` stay unused). Why: with `MLXCEL_QMV_POST`'s `xsum` (up to 5 KiB
    /// static) a ring of 32 KiB stages at K = 2048 or 4096 asked for 45-47 KB and every launch
    /// failed (`cuGraphAddKernelNode ... invalid argument`, H200, sessions 28 and 30).
    pub(crate) fn request(&self) -> usize {
        if self.dynamic <= MLX_OPT_IN_ABOVE && self.dynamic + self.static_bound > DEFAULT_SHARED {
            MLX_OPT_IN_ABOVE + 1
        } else {
            self.dynamic
        }
    }
}

/// Calls the kernel `name` built for `shared` (one build per requested size); returns its
/// outputs.
pub(crate) fn run(
    name: &'static str,
    shared: SharedMemory,
    source: fn(usize) -> KernelSource,
    launch: &Launch<'_>,
) -> Result<Vec<Array>> {
    let request = shared.request();
    let total = request + shared.static_bound;
    if total > MAX_SHARED {
        return Err(Error::invalid(
            "quantized gemv",
            format!("{name}: {total} bytes of shared memory per CTA (at most {MAX_SHARED}); use fewer warps or stages"),
        ));
    }
    // MLXCEL_QMV_NOMATH_PROBE's builds: their own name (MLX keys kernels by name and text),
    // header defines and cache slot, per level.
    let level = if flags::QMV_NOMATH_PROBE.enabled() {
        Some(NomathLevel::current()?)
    } else {
        None
    };
    // MLXCEL_QMV_ALIGN128 off: the old 16-byte placement of dynamic shared memory, its own name
    // and cache slot.
    let align16 = !flags::QMV_ALIGN128.enabled();
    let variant = request as u64
        | level.map_or(0, NomathLevel::variant)
        | (u64::from(align16) << ALIGN16_BIT);
    cached_by_name(KernelBackend::Cuda, name, variant, || {
        let mut s = source(request);
        if let Some(level) = level {
            s.name = format!("{}_{}", s.name, level.suffix());
            s.header = format!("{}{}", level.defines(request), s.header);
        }
        if align16 {
            s.name = format!("{}_al16", s.name);
            s.header = format!("#define MLXCEL_QMV_DYN_ALIGN 16\n{}", s.header);
        }
        s
    })?
    .call(launch)
}

/// [`run`]'s cache-variant bit of the builds with `MLXCEL_QMV_ALIGN128` off (below
/// [`NomathLevel::variant`]'s levels at bit 56; shared-memory requests stay far below it).
const ALIGN16_BIT: u32 = 55;

/// The dynamic plus padded shared memory of [`NomathLevel`]'s deeper builds: over 233472 / 5 - 1024
/// bytes with their static arrays, under 48 KiB.
const PROBE_SHARED: usize = 46592;

/// [`flags::QMV_NOMATH_PROBE`]'s levels (`MLXCEL_QMV_NOMATH_LEVEL`) as (name, kernel-name suffix);
/// level i's number in `cuda/qgemv4.cuh` (`MLXCEL_QMV_PROBE_LEVEL`, 0 being the shipped kernels)
/// is i + 1. `loop` (the default): each tile's arithmetic dropped; `tables`: also the prologue's
/// scale tables and POST's per-group x sums; `nwx`: `tables` with the norm's weight read from x's
/// address (whether its own loads cost); `xplain`: `tables` with x staged as the kernels without
/// the folded norm stage it; `prologue`: also x's staging (the copies, waits, slot reads and the
/// reduction remain); `nosums`: `tables` without the norm's sums of squares and their shuffles;
/// `partials`: `xplain` plus what a consumer of a producer-written `nw * x` and per-16-row partial
/// sums of x^2 would add (one float per 16 values, summed into the late scale); `xtwice`: `xplain`
/// with each thread's first two chunks of x loaded twice. Why: with the arithmetic gone gate/up still took
/// 23.9 us in situ (session 40) against the bench's bare ring's 17.6; the levels between say
/// which part of the rest the prologue holds. The last three keep the arithmetic and drop one
/// piece of the prologue: `nosb` stores a constant (scale, bias) in place of the tables (their
/// loads gone), `noxsum` zeroes POST's per-group x sums instead of computing them, `noprep` both:
/// what moving each out of the prologue could save at most (session 44).
const NOMATH_LEVELS: [(&str, &str); 11] = [
    ("loop", "nomath"),
    ("tables", "notables"),
    ("nwx", "nwx"),
    ("xplain", "xplain"),
    ("prologue", "nopro"),
    ("nosums", "nosums"),
    ("partials", "partials"),
    ("xtwice", "xtwice"),
    ("nosb", "nosb"),
    ("noxsum", "noxsum"),
    ("noprep", "noprep"),
];

/// The [`NOMATH_LEVELS`] that keep the tile arithmetic (`nosb` and after): they build with the
/// shipped kernels' registers, so they take no shared-memory padding.
const FIRST_MATH_LEVEL: usize = 9;

/// A [`NOMATH_LEVELS`] level by its number (1 = `loop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NomathLevel(usize);

impl NomathLevel {
    /// The level the environment names; a value that does not parse is an error, not a fallback.
    fn current() -> Result<Self> {
        let v = flags::var(flags::QMV_NOMATH_LEVEL_VAR);
        let name = v.as_deref().map_or("loop", str::trim);
        match NOMATH_LEVELS.iter().position(|(n, _)| *n == name) {
            Some(i) => Ok(Self(i + 1)),
            None => {
                let names = NOMATH_LEVELS.map(|(n, _)| n);
                Err(Error::invalid(
                    "quantized gemv",
                    format!(
                        "{}: {name:?}, expected {} or {}",
                        flags::QMV_NOMATH_LEVEL_VAR,
                        names[..names.len() - 1].join(", "),
                        names[names.len() - 1]
                    ),
                ))
            }
        }
    }

    /// The level's kernel-name suffix.
    fn suffix(self) -> &'static str {
        NOMATH_LEVELS[self.0 - 1].1
    }

    /// The level's defines, ahead of the kernel's header, for a launch of `request` bytes of
    /// dynamic shared memory. The levels from `tables` to `xtwice` build with 32-56 registers
    /// against the shipped 54-64, which would let 5-6 CTAs share an SM where the shipped builds
    /// run 4; below [`PROBE_SHARED`] bytes they pad their shared memory up to it, so that at most
    /// 4 fit (228 KiB per SM, 1 KiB of it reserved per CTA) and stay under 48 KiB.
    fn defines(self, request: usize) -> String {
        let mut d = format!("#define MLXCEL_QMV_PROBE_LEVEL {}\n", self.0);
        if self.0 > 1 && self.0 < FIRST_MATH_LEVEL && request < PROBE_SHARED {
            d.push_str(&format!(
                "#define MLXCEL_QMV_PROBE_PAD {}\n",
                PROBE_SHARED - request
            ));
        }
        d
    }

    /// The level's cache variant in [`run`] (shared-memory requests stay far below it).
    fn variant(self) -> u64 {
        (self.0 as u64) << 56
    }
}

/// `silu(x @ Wg^T) * (x @ Wu^T)` for one row of x -> `[..., N]` fp16, in one launch.
pub fn gemv_silu_mul(x: &Array, gate: &Quantized, up: &Quantized) -> Result<Array> {
    gemv_silu_mul_with(x, gate, up, Schedule::current()?)
}

/// [`gemv_silu_mul`] with an explicit schedule (benchmarks and tests).
pub fn gemv_silu_mul_with(
    x: &Array,
    gate: &Quantized,
    up: &Quantized,
    sched: Schedule,
) -> Result<Array> {
    let (n, k) = checked_pair(x, gate, up)?;
    launch_silu(x, gate, up, None, n, k, sched)
}

/// (N, K) of a gate/up pair the kernel takes, or the error saying why not.
fn checked_pair(x: &Array, gate: &Quantized, up: &Quantized) -> Result<(usize, usize)> {
    let (n, k) = checked(x, gate, "gate")?;
    if checked(x, up, "up")? != (n, k)
        || up.group_size != gate.group_size
        || up.layout != gate.layout
    {
        return Err(Error::invalid(
            "quantized gemv",
            format!(
                "gate {:?} and up {:?} projections differ",
                gate.w.shape(),
                up.w.shape()
            ),
        ));
    }
    Ok((n, k))
}

/// The gate/up kernel's launch for a checked call (N, K).
fn launch_silu(
    x: &Array,
    gate: &Quantized,
    up: &Quantized,
    norm: Option<FoldedNorm<'_>>,
    n: usize,
    k: usize,
    sched: Schedule,
) -> Result<Array> {
    let inputs = [
        x,
        &gate.w,
        &gate.scales,
        &gate.biases,
        &up.w,
        &up.scales,
        &up.biases,
        norm.map_or(x, |m| m.weight),
    ];
    let (launch, shared) = launch(&inputs, x, n, k, gate, 2, 1, sched)?;
    one(run(
        "qgemv4_silu",
        shared,
        silu_source,
        &with_norm(launch, norm),
    )?)
}

/// The folded norm's template arguments (`NORM`, `LATE` where `MLXCEL_QMV_NORM_LATE` applies
/// its scale in the epilogue, and `EPS` as its f32 bits).
fn with_norm<'a>(launch: Launch<'a>, norm: Option<FoldedNorm<'_>>) -> Launch<'a> {
    launch
        .template("NORM", TemplateArg::Bool(norm.is_some()))
        .template(
            "LATE",
            TemplateArg::Bool(norm.is_some() && flags::QMV_NORM_LATE.enabled()),
        )
        .template(
            "EPS",
            TemplateArg::Int(norm.map_or(0, |m| m.eps.to_bits() as i32)),
        )
}

#[cfg(test)]
mod tests {
    use super::{
        qkv_encode_source, qkv_encode_source_cl4, qkv_encode_source_cl8, Schedule, SharedMemory,
    };

    #[test]
    fn schedules_parse_print_and_refuse_what_does_not_exist() {
        assert_eq!(Schedule::parse("batched").unwrap(), Schedule::BATCHED);
        assert_eq!(Schedule::parse("ring").unwrap(), Schedule::RING);
        let s = Schedule::parse("ring:4:8").unwrap();
        assert_eq!((s.warps, s.stages), (4, 8));
        // Every schedule parses back from what it prints (tests pass schedules to
        // MLXCEL_QMV_SCHEDULE that way).
        for s in [
            s,
            Schedule::BATCHED,
            Schedule::RING,
            Schedule::parse("batched:4").unwrap(),
            Schedule::parse("ring:8:4:264").unwrap(),
            Schedule::parse("bulk:8:3").unwrap(),
        ] {
            assert_eq!(Schedule::parse(&s.to_string()).unwrap(), s, "{s}");
        }
        for bad in [
            "",
            "ring:0:4",
            "ring:17:4",
            "ring:8:1",
            "ring:8",
            "ring:a:4",
            "batched:0",
            "batched:8:2",
            "bulk:8:3:264",
            "bulk:8",
            "fast",
        ] {
            let e = Schedule::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected batched[:WARPS], ring"), "{bad:?}: {e}");
        }
    }

    /// The schedules `tiles_at_load` tiles weights for (`MLXCEL_QMV_TILED`, on by default on
    /// CUDA) are exactly those `check_layout` lets read tiled weights: the ring with one CTA per
    /// 16 rows and the bulk schedules; a batched or capped-grid override keeps MLX's layout.
    #[test]
    fn only_per_16_row_ring_schedules_read_tiled_weights() {
        for (s, tiled) in [
            ("ring", true),
            ("ring:8:2", true),
            ("ring:4:8", true),
            ("bulk:8:3", true),
            ("batched", false),
            ("batched:4", false),
            ("ring:8:4:264", false),
        ] {
            assert_eq!(Schedule::parse(s).unwrap().reads_tiled(), tiled, "{s}");
        }
    }

    #[test]
    fn launches_past_48_kib_with_static_memory_ask_mlx_to_opt_in() {
        let ring48 = Schedule::parse("ring:4:8").unwrap();
        // Gate/up at K = 2048, group 32, 4 warps x 8 stages with POST: 45568 dynamic bytes
        // and up to 5.9 KB static (xsum 5120) pass 48 KiB; the launch asks for 48001 so that
        // MLX opts in (sessions 28 and 30 failed here).
        let silu = SharedMemory::gemv(ring48.shared_bytes(2048, 32, 2), 4, 32, true);
        assert_eq!(silu.dynamic, 4096 + 2 * 16 * 68 * 4 + 32768);
        assert_eq!(silu.request(), 48_001);
        // Without POST the static scratch fits: the request is the layout's.
        let silu_off = SharedMemory::gemv(silu.dynamic, 4, 32, false);
        assert_eq!(silu_off.request(), silu.dynamic);
        // The default ring's launches at K = 4096, group 64, keep their request with POST
        // (41472 + 2304 + 2560 for gate/up), also the qkv + append kernel at head_dim 128.
        for (mats, enc) in [(2, None), (1, None), (1, Some(128))] {
            let m = SharedMemory::gemv(Schedule::RING.shared_bytes(4096, 64, mats), 8, 64, true);
            let m = enc.map_or(m, |d| m.with_encoder(d));
            assert_eq!(m.request(), m.dynamic, "mats {mats} encoder {enc:?}");
        }
        // qkv + append at ring:8:4 (session 28's failure): 45312 + 2304 + 2560 + 1680.
        let enc = SharedMemory::gemv(
            Schedule::parse("ring:8:4")
                .unwrap()
                .shared_bytes(4096, 64, 1),
            8,
            64,
            true,
        )
        .with_encoder(128);
        assert_eq!(enc.static_bound, 2304 + 2560 + 1680);
        assert_eq!(enc.request(), 48_001);
        // Above MLX's threshold MLX opts in by itself.
        let down = SharedMemory::gemv(Schedule::RING.shared_bytes(14336, 64, 1), 8, 64, true);
        assert_eq!(down.request(), down.dynamic);
    }

    #[test]
    fn shared_memory_counts_x_the_scale_tables_and_the_ring() {
        // Batched: x only, 2 bytes per value.
        assert_eq!(Schedule::BATCHED.shared_bytes(4096, 64, 1), 8192);
        // Ring 8:4 at K = 4096, group 64: x 8192 bytes, 16 rows of (scale, bias) pairs (4
        // bytes each; K / G = 64 rounded up to 32s, plus 4: 68 per row), 8 warps x 4 KiB.
        let ring84 = Schedule::parse("ring:8:4").unwrap();
        assert_eq!(
            ring84.shared_bytes(4096, 64, 1),
            8192 + 16 * 68 * 4 + 8 * 4 * 1024
        );
        // The default ring (8 warps, 3 stages): 8 warps x 3 KiB.
        assert_eq!(
            Schedule::RING.shared_bytes(4096, 64, 1),
            8192 + 16 * 68 * 4 + 8 * 3 * 1024
        );
        // Gate/up stages two scale tables.
        assert_eq!(
            ring84.shared_bytes(4096, 64, 2),
            8192 + 2 * 16 * 68 * 4 + 32768
        );
        // K = 14336, group 64: 224 groups -> 228 pairs per row; over 48 KB (needs MLX's
        // opt-in, hence the SMEM template argument).
        let down = Schedule::RING.shared_bytes(14336, 64, 1);
        assert_eq!(down, 28672 + 16 * 228 * 4 + 24576);
        assert!(down > 48_000);
        // A capped grid double-buffers the scale tables.
        let capped = Schedule::parse("ring:8:4:264").unwrap();
        assert_eq!(
            capped.shared_bytes(4096, 64, 2),
            8192 + 2 * 2 * 16 * 68 * 4 + 32768
        );
        // K / G not a multiple of 32 is rounded up before the pad: 20 -> 32 + 4.
        assert_eq!(
            Schedule::RING.shared_bytes(2560, 128, 1),
            5120 + 16 * 36 * 4 + 24576
        );
    }

    /// The clustered qkv + append kernels (`MLXCEL_QKV_CLUSTER`) are the same text as the
    /// ticket kernel under their own names (MLX and mlxcel cache kernels by name), with a header
    /// that ends by giving MLX's generated `__global__` signature the head's cluster size.
    #[test]
    fn clustered_qkv_append_kernels_differ_only_by_name_and_cluster_size() {
        let plain = qkv_encode_source(4096);
        for (src, n) in [
            (qkv_encode_source_cl8(4096), 8),
            (qkv_encode_source_cl4(4096), 4),
        ] {
            assert_eq!(src.name, format!("{}_cl{n}", plain.name));
            assert_eq!(src.source, plain.source);
            assert_eq!((&src.inputs, &src.outputs), (&plain.inputs, &plain.outputs));
            assert_eq!(src.shared_memory, plain.shared_memory);
            let tail = src.header.strip_prefix(plain.header.as_str()).unwrap();
            assert!(
                tail.trim_end().ends_with(&format!(
                    "#define __global__ __location__(global) __cluster_dims__({n}, 1, 1)"
                )) && tail.contains("#undef __global__"),
                "{tail}"
            );
        }
        // The body reads the cluster's size and traps when it is not the head's D / 16.
        assert!(plain.source.contains("%%cluster_nctarank") && plain.source.contains("__trap()"));
    }
}
