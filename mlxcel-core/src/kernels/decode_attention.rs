//! The fused CUDA decode-attention path: one launch reads the packed cache directly
//! (split over the sequence, all GQA heads of a KV head per CTA, q rotated in the prologue
//! for turbo K), a second merges the splits and applies the inverse V rotation
//! (`cuda/merge_splits.cu`). The split paths in [`crate::attention`] are its exact
//! references.
//!
//! Two kernels read the cache: the tensor-core kernel (`cuda/decode_attention_mma.cu`, v4)
//! for fp16 / int8 / turbo4 / turbo3 / turbo2 sides (the 2- and 3-bit ones unless
//! `MLXCEL_LOWBIT_CUDA=0`), head_dim 64 or 128 and GQA up to 8, and the CUDA-core kernel
//! (`cuda/decode_attention.cu`, v3) for everything else the fused path supports (GQA above 8,
//! other head_dims, ...). `MLXCEL_FUSED_MMA=0` sends
//! every call to v3 for A/B runs.

use crate::flags;
use crate::kernels::rope_table;
use crate::kv::side::{RawSide, FORMAT_FP16, FORMAT_INT8};
use crate::mlx::array::eval_all;
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

const HEADER: &str = include_str!("cuda/decode_attention.cuh");
const BODY: &str = include_str!("cuda/decode_attention.cu");
const MERGE: &str = include_str!("cuda/merge_splits.cu");
const MERGE_WARP: &str = include_str!("cuda/merge_splits_warp.cu");
/// The tensor-core kernel's helpers, its 2- and 3-bit decode (`MLXCEL_LOWBIT_CUDA`) after them.
const MMA_HEADER: &str = concat!(
    include_str!("cuda/decode_attention_mma.cuh"),
    "\n",
    include_str!("cuda/lowbit_decode.cuh")
);
const MMA_BODY: &str = include_str!("cuda/decode_attention_mma.cu");

/// Bytes staged per warp ring slot by the tensor-core kernel: 16 tokens of K and V rows plus
/// their fp16 factors (the formula of `decode_attention_mma.cu`).
fn mma_stage_bytes(kfmt: i32, vfmt: i32, d: usize) -> usize {
    let row = |f: i32| match f {
        FORMAT_FP16 => 2 * d,
        FORMAT_INT8 => d,
        bits => d * bits as usize / 8,
    };
    let aux = |f: i32| if f == FORMAT_FP16 { 0 } else { 32 };
    16 * (row(kfmt) + row(vfmt)) + aux(kfmt) + aux(vfmt)
}

/// Ring depth: enough slots that ~8 KiB per warp are in flight while one is computed
/// (H200: ~36 KB in flight per SM covers HBM latency at full bandwidth), at least 3.
fn mma_stages(stage: usize) -> usize {
    (8192usize.div_ceil(stage) + 1).clamp(3, MMA_MAX_STAGES)
}

/// Dynamic shared memory of the tensor-core kernel with `warps` warps per CTA: q of the
/// group (8 x D f32), then the warp rings, reused after the loop for the warp merge.
fn mma_shared_bytes(stage: usize, stages: usize, d: usize, gqa: usize, warps: usize) -> usize {
    let ring = warps * stages * stage;
    // The warps' partials, maxima and sums, and with `MLXCEL_MMA_COMBINE_W1` their weights and
    // each head's maximum (the kernel asserts that the ring holds them all).
    let merge = 4 * (warps * gqa * d + 3 * warps * 8 + 8);
    8 * d * 4 + ring.max(merge)
}

/// Warps per CTA of the tensor-core kernel: 4, or [`MMA_WIDE_WARPS`] sharing one pair table
/// ([`flags::MMA_WIDE`]).
const MMA_WARPS: usize = 4;
const MMA_WIDE_WARPS: usize = 12;
/// Most dynamic shared memory one CTA may take (H100 / H200: 227 KB).
const MAX_CTA_SHARED: usize = 232_448;

/// Shared-memory pair table of the tensor-core kernel when either side decodes turbo4
/// through it: 256 rows of 256 bytes (`LUT_BYTES` in `cuda/decode_attention_mma.cu`).
const MMA_LUT_BYTES: usize = 256 * 256;
/// SMs of an H200 / H100 SXM.
const SMS: usize = 132;
/// Most tensor-core kernel CTAs per SM: 127 registers x 128 threads allow 4 (MLX's build,
/// ncu); the pair-table build's 137 allow 3, at or above what its shared memory allows.
const MMA_MAX_CTAS_PER_SM: usize = 4;
/// Shared memory an H200 SM gives its CTAs, and what the driver reserves per CTA.
const SM_SHARED_BYTES: usize = 233_472;
const CTA_RESERVED_SHARED: usize = 1024;

/// Tensor-core kernel CTAs aim at one wave: as many CTAs per SM as registers and shared
/// memory allow (4-warp CTAs: 4 without the pair table, 2 with its 64 KiB; 12-warp CTAs at
/// head_dim 128: one, bound by registers, [`flags::MMA_WIDE_ONE_PER_SM`]), on every SM.
fn mma_target_ctas(shared: usize, warps: usize, head_dim: usize) -> usize {
    let by_shared = SM_SHARED_BYTES / (shared + CTA_RESERVED_SHARED);
    let wide_128 = warps == MMA_WIDE_WARPS && head_dim == 128;
    let most = if wide_128 && flags::MMA_WIDE_ONE_PER_SM.enabled() {
        1
    } else {
        MMA_MAX_CTAS_PER_SM
    };
    SMS * by_shared.clamp(1, most)
}

/// Deepest ring from `stages` up to [`MMA_MAX_STAGES`] that keeps as many 4-warp CTAs per SM as
/// `stages` does ([`flags::MMA_DEEP_PLAIN`]): the same splits and tiles per warp, more copies in
/// flight per warp. The boundary layers' fp16-key / int8-value kernel at D = 128 goes from 3 to 4
/// stages (2 CTAs per SM either way); turbo4-asym's and int8's stay at 3 (a fourth stage would
/// cost a CTA per SM).
fn mma_deepest_same_occupancy(stage: usize, stages: usize, d: usize, gqa: usize) -> usize {
    let per_sm = |st: usize| {
        let shared = mma_shared_bytes(stage, st, d, gqa, MMA_WARPS);
        (SM_SHARED_BYTES / (shared + CTA_RESERVED_SHARED)).min(MMA_MAX_CTAS_PER_SM)
    };
    let want = per_sm(stages);
    (stages..=MMA_MAX_STAGES)
        .take_while(|&st| per_sm(st) == want)
        .last()
        .unwrap_or(stages)
}

/// The tensor-core kernel's ring depth, dynamic shared memory (with the pair table where
/// `table`) and warps per CTA for K / V formats `kfmt` / `vfmt`. 12-warp CTAs where the pair
/// table holds occupancy down and they fit, else 4; kernels without the table (fp16, int8,
/// 2- and 3-bit keys) take 12-warp CTAs only with `MLXCEL_MMA_WIDE_PLAIN`. (16-warp CTAs for
/// the symmetric 2- and 3-bit kernels, `MLXCEL_MMA_W16`, measured no faster in session 57 and
/// were removed: `flags::RETIRED`.)
fn mma_launch_shape(
    kfmt: i32,
    vfmt: i32,
    d: usize,
    gqa: usize,
    table: bool,
) -> (usize, usize, usize) {
    let stage = mma_stage_bytes(kfmt, vfmt, d);
    let stages = mma_stages(stage);
    let lut = if table { MMA_LUT_BYTES } else { 0 };
    let wide_plain = !table && flags::MMA_WIDE_PLAIN.enabled();
    let wide = ((table || wide_plain) && flags::MMA_WIDE.enabled())
        .then(|| mma_shared_bytes(stage, stages, d, gqa, MMA_WIDE_WARPS))
        .filter(|base| base + lut <= MAX_CTA_SHARED)
        .map(|base| (stages, base, MMA_WIDE_WARPS));
    let (stages, base, warps) = wide.unwrap_or_else(|| {
        let stages = if !table && flags::MMA_DEEP_PLAIN.enabled() {
            mma_deepest_same_occupancy(stage, stages, d, gqa)
        } else {
            stages
        };
        (
            stages,
            mma_shared_bytes(stage, stages, d, gqa, MMA_WARPS),
            MMA_WARPS,
        )
    });
    (stages, base + lut, warps)
}

/// Deepest ring the stage formula gives ([`mma_stages`]).
const MMA_MAX_STAGES: usize = 6;

/// Which sides of the tensor-core kernel decode through a shared-memory table (the kernel's
/// `LUTK` / `LUTV`): turbo4 K when [`flags::MMA_LUT_K`] is on, turbo4 V only alongside it
/// ([`flags::MMA_LUT_V`]: alone it measured slower); 2- and 3-bit keys with values of the
/// same width through the 2-bit field table with [`flags::MMA_LUT_LOW`] (`LUTK`, serving both
/// sides; `LUTV` stays off).
pub fn mma_luts(k: &RawSide<'_>, v: &RawSide<'_>) -> (bool, bool) {
    mma_luts_for(k.format, v.format)
}

/// [`mma_luts`] for K / V formats `kfmt` / `vfmt`.
fn mma_luts_for(kfmt: i32, vfmt: i32) -> (bool, bool) {
    let lut_k = kfmt == 4 && flags::MMA_LUT_K.enabled();
    let lut_low = matches!(kfmt, 2 | 3) && vfmt == kfmt && flags::MMA_LUT_LOW.enabled();
    (
        lut_k || lut_low,
        lut_k && vfmt == 4 && flags::MMA_LUT_V.enabled(),
    )
}

/// Whether the tensor-core kernel issues each warp's first ring tile right after its own
/// prologue loads ([`flags::MMA_QFIRST1`]): everywhere except fp16 keys with turbo4 values
/// (turbo4-asym's kernel), where it measured slower. In situ at 32K (session 21, medians of
/// 56-64 launches): turbo4 18.02 -> 17.57 us, int8 25.31 -> 23.01, fp16 keys with int8 values
/// (the boundary layers) 31.06 -> 29.31, fp16 keys with turbo4 values 32.08 -> 33.17. Same
/// copies in the same order either way: the outputs are bit-identical.
fn mma_qfirst1(k_format: i32, v_format: i32) -> bool {
    flags::MMA_QFIRST1.enabled() && !(k_format == FORMAT_FP16 && v_format == 4)
}

/// Threads per CTA of the main kernel (fixed in the CUDA source).
const THREADS: i32 = 128;
/// Fewest tokens per split.
const TILE: usize = 64;
/// CTAs the split count aims for: eight per SM of an H100/H200 (132 SMs). Each warp
/// streams tokens with one load in flight, so latency is hidden by many resident warps
/// (v1 aimed at two CTAs per SM and was latency-bound: benchmarks/kernel-notes/NOTES.md).
const TARGET_CTAS: usize = 1056;

/// Inputs of both decode kernels (v3 and v4), in launch order.
const INPUTS: &[&str] = &[
    "q",
    "k_data",
    "k_aux",
    "v_data",
    "v_aux",
    "lut_k",
    "lut_v",
    "rot_k",
    "len_marker",
    "k_dep",
    "v_dep",
    "inv_freq",
    "rot_v",
    "tickets",
    "epoch_marker",
];

fn source() -> KernelSource {
    let mut s = KernelSource::new("mlxcel_decode_attention", INPUTS, &["o_part", "ml"], BODY);
    s.header = HEADER.to_string();
    s
}

/// A split-merge kernel (`merge_splits.cu` or `merge_splits_warp.cu`): same inputs and output.
fn merge_source(name: &str, body: &str) -> KernelSource {
    let mut s = KernelSource::new(name, &["o_part", "ml", "rot_v"], &["out"], body);
    s.header = HEADER.to_string();
    s
}

fn mma_source(shared: usize) -> KernelSource {
    let mut s = KernelSource::new(
        "mlxcel_decode_attention_mma",
        INPUTS,
        &["o_part", "ml", "out"],
        MMA_BODY,
    );
    s.header = format!("{HEADER}\n{MMA_HEADER}");
    s.shared_memory = shared as i32;
    s
}

/// The attention-append kernel's extra inputs, after [`INPUTS`]: the step's keys (before
/// RoPE) and values `[B, Hkv, 1, D]`, and the turbo4 codecs' centroid midpoints (placeholders
/// for fp16 and int8 sides).
const APPEND_INPUTS: &[&str] = &["k_new", "v_new", "k_mids", "v_mids"];

/// The tensor-core kernel that also writes the step's K+V into the cache (`MLXCEL_ATTN_APPEND`:
/// the `MLXCEL_ATTN_APPEND` blocks of `decode_attention_mma.cu`, with the one-warp writers of
/// `turbo_encode.cuh`, `fp16_store.cuh` and `int8_encode.cuh`); its extra output `done` is the
/// write's token.
fn mma_append_source(shared: usize) -> KernelSource {
    let inputs: Vec<&str> = INPUTS.iter().chain(APPEND_INPUTS).copied().collect();
    let mut s = KernelSource::new(
        "mlxcel_decode_attention_mma_app",
        &inputs,
        &["o_part", "ml", "out", "done"],
        MMA_BODY,
    );
    s.header = format!(
        "#define MLXCEL_ATTN_APPEND\n{}\n{}\n{}\n{MMA_HEADER}",
        crate::kernels::turbo_encode::helpers(),
        include_str!("cuda/fp16_store.cuh"),
        include_str!("cuda/int8_encode.cuh")
    );
    s.shared_memory = shared as i32;
    s
}

/// A decode step's K+V append for the attention launch to perform
/// ([`fused_decode_rope_append`]): the reservation (a `PairTarget` of the formats
/// [`append_formats_fit`] names) and the step's keys (before RoPE) and values `[1, Hkv, 1, D]`.
pub struct AttnAppend<'a> {
    pub target: &'a crate::kernels::folded_append::PairTarget,
    pub k_new: &'a Array,
    pub v_new: &'a Array,
}

/// Whether the tensor-core kernel handles this combination: fp16 / int8 / turbo4 sides (and
/// turbo3 / turbo2 with [`flags::LOWBIT_CUDA`]), one rotation group per head (group ==
/// head_dim), GQA <= 8, and a capacity that keeps every 16-token tile of factors 16-byte
/// aligned.
pub fn mma_supported(k: &RawSide<'_>, v: &RawSide<'_>, head_dim: usize, gqa: usize) -> bool {
    let fmt_ok = |r: &RawSide<'_>| {
        let format_ok = match r.format {
            FORMAT_FP16 | FORMAT_INT8 | 4 => true,
            2 | 3 => flags::LOWBIT_CUDA.enabled(),
            _ => false,
        };
        format_ok && r.rotation.is_none_or(|rot| rot.group == head_dim)
    };
    fmt_ok(k)
        && fmt_ok(v)
        && matches!(head_dim, 64 | 128)
        && (1..=8).contains(&gqa)
        && k.capacity == v.capacity
        && k.capacity.is_multiple_of(16)
}

/// Which kernel a call goes to (for logs and benchmarks).
pub fn kernel_name(k: &RawSide<'_>, v: &RawSide<'_>, head_dim: usize, gqa: usize) -> &'static str {
    if flags::FUSED_MMA.enabled() && mma_supported(k, v, head_dim, gqa) {
        "mma-v4"
    } else {
        "cuda-core-v3"
    }
}

/// Whether the fused kernel handles this combination.
pub fn supported(k: &RawSide<'_>, v: &RawSide<'_>, head_dim: usize, gqa: usize) -> bool {
    let fmt_ok = |f: i32| (0..=4).contains(&f);
    fmt_ok(k.format) && fmt_ok(v.format) && matches!(head_dim, 64 | 128) && (1..=8).contains(&gqa)
}

/// Number of sequence splits for a decode step: enough CTAs to fill the GPU, at least
/// one tile of tokens per split.
pub fn num_splits(batch: usize, kv_heads: usize, len: usize) -> usize {
    let by_ctas = TARGET_CTAS.div_ceil((batch * kv_heads).max(1));
    let by_len = len.div_ceil(TILE).max(1);
    by_ctas.min(by_len).max(1)
}

fn group_of(r: &RawSide<'_>, head_dim: usize) -> usize {
    r.rotation.map_or(head_dim.min(128), |rot| rot.group)
}

/// What a cached placeholder array stands for (the key of [`dummy`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Placeholder {
    /// Identity rotation signs of one group size.
    Signs(usize),
    /// An all-zero codebook.
    Lut,
    /// A one-element aux buffer.
    Aux,
    /// The dependency input of a side without an in-place append.
    Dependency,
    /// The backing array of the length markers (see [`length_marker`]).
    Marker,
    /// The arrival counters of the folded split merge (see [`fold_inputs`]).
    Tickets,
    /// The arrival counters of the qkv GEMV's folded cache append ([`qkv_encode_tickets`]).
    QkvTickets,
    /// The accumulators and tickets of the greedy token's argmax (`kernels::argmax`).
    ArgmaxTickets,
    /// The counters of the GEMV grid-barrier probe ([`gemv_barrier_tickets`]).
    GemvBarrier,
    /// The tickets input of a launch that does not fold: the kernel source still names the
    /// buffer as `unsigned int*` outside the `FOLD` branch, so the stub keeps that type.
    TicketsStub,
    /// The marker of one ticket slot (`[slot + 1]`, see [`tickets_and_slot`]).
    Slot(usize),
}

thread_local! {
    /// Placeholder inputs for sides without a codebook, rotation or aux buffer, and the
    /// length markers, built once: an array made from host data on every call costs an
    /// upload (and a managed-memory access from the kernel) on CUDA.
    static DUMMIES: std::cell::RefCell<std::collections::HashMap<Placeholder, Array>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
    /// The last length marker handed out, with its length (see [`length_marker`]).
    static LAST_MARKER: std::cell::RefCell<Option<(usize, Array)>> =
        const { std::cell::RefCell::new(None) };
}

/// The cached length as the kernels read it: a `[len]` view of a zero-filled u8 array. The
/// kernels take `len` from the view's shape (`len_marker_shape[0]`), which MLX passes by
/// value with the launch, so a decode step uploads nothing from the host; the view starts
/// at offset 0 and is row-contiguous, so MLX does not copy it. One backing array per thread,
/// replaced by a larger one (power of two) when a longer cache appears. The last view is
/// kept and handed out again for the same length: within a decode step every layer's two
/// appends and attention call ask for the same length, so one view (one MLX op) serves them
/// all instead of three slices per layer.
pub(crate) fn length_marker(len: usize) -> Result<Array> {
    if let Some(a) = LAST_MARKER.with(|m| {
        m.borrow()
            .as_ref()
            .and_then(|(n, a)| (*n == len).then(|| a.clone()))
    }) {
        return Ok(a);
    }
    let view = marker_view(len)?;
    LAST_MARKER.with(|m| *m.borrow_mut() = Some((len, view.clone())));
    Ok(view)
}

fn marker_view(len: usize) -> Result<Array> {
    let current = DUMMIES.with(|d| d.borrow().get(&Placeholder::Marker).cloned());
    let full = match current {
        Some(a) if a.size() >= len => a,
        _ => {
            let a = Array::zeros(&[len.max(4096).next_power_of_two() as i32], Dtype::U8)?;
            a.eval()?;
            DUMMIES.with(|d| d.borrow_mut().insert(Placeholder::Marker, a.clone()));
            a
        }
    };
    full.slice(&[0], &[len as i32])
}

/// The placeholder cached for `key`, if built.
fn cached(key: Placeholder) -> Option<Array> {
    DUMMIES.with(|d| d.borrow().get(&key).cloned())
}

fn dummy(key: Placeholder, make: impl FnOnce() -> Result<Array>) -> Result<Array> {
    if let Some(a) = cached(key) {
        return Ok(a);
    }
    let a = make()?;
    a.eval()?;
    DUMMIES.with(|d| d.borrow_mut().insert(key, a.clone()));
    Ok(a)
}

fn signs(r: &RawSide<'_>, group: usize) -> Result<Array> {
    match r.rotation {
        Some(rot) => Ok(rot.signs_array().clone()),
        None => dummy(Placeholder::Signs(group), || {
            Array::from_slice(&vec![1f32; 2 * group], &[2, group as i32])
        }),
    }
}

fn lut(r: &RawSide<'_>) -> Result<Array> {
    match r.lut_array {
        Some(a) => Ok(a.clone()),
        None => unused_f32(),
    }
}

/// A small cached all-zero f32 array: the codebook of a side without one, and the stand-in
/// for any f32 input a launch does not read (e.g. `inv_freq` without RoPE).
pub(crate) fn unused_f32() -> Result<Array> {
    dummy(Placeholder::Lut, || Array::from_slice(&[0f32; 16], &[16]))
}

fn aux_or_dummy(r: &RawSide<'_>) -> Result<Array> {
    match r.aux {
        Some(a) => Ok(a.clone()),
        None => dummy(Placeholder::Aux, || {
            Array::from_slice(&[half::f16::ZERO], &[1, 1, 1, 1])
        }),
    }
}

/// The dependency input for a write token (an in-place append the launch must run after),
/// or a placeholder when there is nothing to wait for: kernels take it as an input only so
/// that MLX orders them after that append.
pub(crate) fn wait_for(token: Option<&Array>) -> Result<Array> {
    match token {
        Some(t) => Ok(t.clone()),
        None => dummy(Placeholder::Dependency, || Array::zeros(&[4], Dtype::I32)),
    }
}

/// Ticket slots the folded merge rotates over: calls that may run concurrently (independent
/// calls queued into one CUDA graph, e.g. a benchmark's) must not share one, and MLX commits
/// a graph every ~100 nodes, so more slots than fused calls per graph suffice.
const FOLD_SLOTS: usize = 128;
/// Most (batch x KV head) pairs per call the folded merge takes (the tickets buffer's size).
const FOLD_MAX_BH: usize = 1024;

thread_local! {
    /// Fused calls made so far by this thread (picks each call's ticket slot).
    static FOLD_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The folded merge's inputs: the zero-initialised tickets (reset by each call's last CTA)
/// and this call's slot as the shape of a marker view (`[slot + 1]`, nothing uploaded).
fn fold_inputs() -> Result<(Array, Array)> {
    tickets_and_slot(Placeholder::Tickets)
}

/// The tickets and slot of a qkv GEMV with the cache append folded in
/// (`cuda/qgemv4_qkv_encode.cu`; its own counters, `FOLD_MAX_BH` per slot, at most that many
/// K and V heads), as [`fold_inputs`].
pub(crate) fn qkv_encode_tickets() -> Result<(Array, Array)> {
    tickets_and_slot(Placeholder::QkvTickets)
}

/// The argmax kernel's accumulator and ticket (`cuda/argmax.cu`: words 0-2 of a slot, slots
/// `FOLD_MAX_BH` words apart) and this call's slot, as [`fold_inputs`].
pub(crate) fn argmax_tickets() -> Result<(Array, Array)> {
    tickets_and_slot(Placeholder::ArgmaxTickets)
}

/// The GEMV grid-barrier probe's counters (`MLXCEL_QMV_GBAR_PROBE`; `grid_barrier` in
/// `cuda/qgemv4.cuh`: words 0-1 of a slot, zero between calls) and this call's slot, as
/// [`fold_inputs`].
pub(crate) fn gemv_barrier_tickets() -> Result<(Array, Array)> {
    tickets_and_slot(Placeholder::GemvBarrier)
}

/// Words from one ticket slot to the next in every tickets buffer (`SLOT_WORDS` of
/// `cuda/argmax.cu`).
pub(crate) const TICKET_SLOT_WORDS: usize = FOLD_MAX_BH;

/// Most K plus V heads a folded qkv append takes (its tickets per slot).
pub(crate) const QKV_ENCODE_MAX_HEADS: usize = FOLD_MAX_BH;

fn tickets_and_slot(key: Placeholder) -> Result<(Array, Array)> {
    let tickets = dummy(key, || {
        Array::zeros(&[(FOLD_SLOTS * FOLD_MAX_BH) as i32], Dtype::U32)
    })?;
    let slot = FOLD_CALLS.with(|c| {
        let n = c.get();
        c.set(n.wrapping_add(1));
        n % FOLD_SLOTS
    });
    Ok((tickets, slot_marker(slot)?))
}

/// Slot `slot`'s marker (`[slot + 1]`), an evaluated view built once. Why: a new slice per
/// call was one more MLX op per layer and decode step (the qkv + append launch of every turbo4
/// layer takes a slot), host work in the graph's building and in MLX's encoding for an input
/// whose bytes nobody reads. All slots' views are built and evaluated together at the first
/// call: one eval (a wait for the device) in the first decode step instead of one per slot
/// over the first few.
fn slot_marker(slot: usize) -> Result<Array> {
    if let Some(a) = cached(Placeholder::Slot(slot)) {
        return Ok(a);
    }
    let views = (0..FOLD_SLOTS)
        .map(|s| marker_view(s + 1))
        .collect::<Result<Vec<_>>>()?;
    eval_all(&views.iter().collect::<Vec<_>>())?;
    DUMMIES.with(|d| {
        let mut d = d.borrow_mut();
        for (s, v) in views.iter().enumerate() {
            d.insert(Placeholder::Slot(s), v.clone());
        }
    });
    Ok(views[slot].clone())
}

/// Whether the tensor-core kernel merges the splits itself for this call: the flag and the
/// tickets buffer large enough. The fold keeps its state in registers (no shared-memory
/// scratch) and takes V's rotation from `ROT_V`; [`mma_supported`] already limits V's
/// rotation to one group of the head dim, which the fold's warp arithmetic needs
/// ([`merge_warp_fits`] holds for head dims 64 and 128).
/// Also only for calls of at most [`FOLD_MAX_SPLITS`] splits over fewer than
/// [`FOLD_MAX_CONTEXT`] tokens.
fn fold_fits(b: usize, hkv: usize, len: usize, splits: usize) -> Result<bool> {
    Ok(flags::FOLD_MERGE.enabled()
        && b * hkv <= FOLD_MAX_BH
        && splits <= fold_split_limit()
        && len < fold_max_context()?)
}

/// Most splits the fold takes: [`FOLD_MAX_SPLITS`], or [`FOLD_MAX_SPLITS_2`] with
/// [`flags::FOLD_32`] (the kernel's tail in two rounds, `FT32`).
fn fold_split_limit() -> usize {
    if flags::FOLD_32.enabled() {
        FOLD_MAX_SPLITS_2
    } else {
        FOLD_MAX_SPLITS
    }
}

/// The tensor-core kernel's split count for a call that `splits` would not let fold: cut to
/// [`FOLD_MAX_SPLITS`] where [`flags::FOLD_SPLIT_CAP`] is on, the fold would then apply, and the
/// cut grid still gives [`FOLD_SPLIT_CAP_FILL`] percent of the SMs a CTA (default 90);
/// otherwise `splits`. Why the SM bound: a
/// cut that left SMs idle (e.g. 4 KV heads: 64 CTAs for 132 SMs) trades the merge launch for
/// bandwidth: on an H100 it lost turbo4's 32K call to FOLD_32's 32 splits (ADR 0031).
/// With [`flags::FOLD_32`], where 16 would not fill the SMs, more than 32 splits are cut to 32
/// under the same rule (4 KV heads: 128 CTAs); 8 KV heads still cut to 16.
fn fold_split_cap(b: usize, hkv: usize, len: usize, splits: usize) -> Result<usize> {
    // Every attention call passes here: the common launch (<= 16 splits) returns before the
    // fill variable is looked up.
    if !flags::FOLD_SPLIT_CAP.enabled() || splits <= FOLD_MAX_SPLITS {
        return Ok(splits);
    }
    let fill = fold_split_cap_fill()?;
    // 32 is tried only after 16; without FOLD_32, `fold_fits` refuses it.
    for to in [FOLD_MAX_SPLITS, FOLD_MAX_SPLITS_2] {
        let fills = 100 * b * hkv * to >= fill * SMS;
        if splits > to && fills && fold_fits(b, hkv, len, to)? {
            return Ok(to);
        }
    }
    Ok(splits)
}

/// The share of the SMs (percent) that a cut to [`FOLD_MAX_SPLITS`] splits must still give a
/// CTA for [`fold_split_cap`] to cut: numeric, default [`FOLD_SPLIT_CAP_FILL_DEFAULT`]. Why a
/// variable: 4-KV-head models (Qwen2.5-7B) run 33 splits and a separate merge at D 128; `0`
/// cuts them to 16 folded splits on 64 CTAs, for A/B runs against [`flags::FOLD_32`]'s 32
/// (ADR 0031: faster at 4K-8K on an H100, slower for turbo4 at 32K).
pub const FOLD_SPLIT_CAP_FILL: &str = "MLXCEL_FOLD_SPLIT_CAP_FILL";
pub const FOLD_SPLIT_CAP_FILL_DEFAULT: usize = 90;

/// [`FOLD_SPLIT_CAP_FILL`]'s value, [`FOLD_SPLIT_CAP_FILL_DEFAULT`] when unset; not a whole
/// number from 0 to 100 is an error.
fn fold_split_cap_fill() -> Result<usize> {
    match flags::var(FOLD_SPLIT_CAP_FILL) {
        Some(v) if !v.trim().is_empty() => match v.trim().parse::<usize>() {
            Ok(p) if p <= 100 => Ok(p),
            _ => Err(Error::invalid(
                "fused decode",
                format!("{FOLD_SPLIT_CAP_FILL}={v}: expected a percentage of SMs from 0 to 100"),
            )),
        },
        _ => Ok(FOLD_SPLIT_CAP_FILL_DEFAULT),
    }
}

/// Most splits the fold merges: its one-round-trip tail (`FTAIL_S` in
/// `cuda/decode_attention_mma.cu`; 16 is the H200's split count for 8 KV heads at every
/// context). Beyond it the tail takes three dependent passes: turbo4-asym's 49 splits at 32K
/// cost 0.32 ms of device time per step folded (H200, session 31).
pub const FOLD_MAX_SPLITS: usize = 16;
/// Most splits the fold merges with [`flags::FOLD_32`]: two of the tail's rounds, one split's
/// statistics per lane.
pub const FOLD_MAX_SPLITS_2: usize = 2 * FOLD_MAX_SPLITS;

/// The context length (tokens) from which the fold stops applying: numeric, default
/// [`FOLD_MAX_CONTEXT_DEFAULT`]. Why: the fold trades device time (+0.05 ms per turbo4 step at
/// 4K and 32K, +0.1 at 128K on the H200, session 31) for one MLX node per layer and step
/// (-0.15 to -0.26 ms of host per step); the host saving shortens the step where the host
/// is the slower side, which the device stops being only at long contexts.
pub const FOLD_MAX_CONTEXT: &str = "MLXCEL_FOLD_MAX_CONTEXT";
pub const FOLD_MAX_CONTEXT_DEFAULT: usize = 65536;

/// [`FOLD_MAX_CONTEXT`]'s value, [`FOLD_MAX_CONTEXT_DEFAULT`] when unset; not a number is an
/// error.
fn fold_max_context() -> Result<usize> {
    match flags::var(FOLD_MAX_CONTEXT) {
        Some(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| {
            Error::invalid(
                "fused decode",
                format!("{FOLD_MAX_CONTEXT}={v}: expected a number of tokens"),
            )
        }),
        _ => Ok(FOLD_MAX_CONTEXT_DEFAULT),
    }
}

/// Environment variable of the tensor-core kernel's timing probes ([`TimingProbe`]).
pub const TIMING_PROBE: &str = "MLXCEL_ATTENTION_TIMING_PROBE";

/// A diagnostic build of the tensor-core decode kernel that leaves work out, so that a
/// profiler's kernel time of each variant places the call's fixed time (session 32: ~8 us per
/// call that does not scale with the context, beside ~8 us of streaming at 32K). Why in the
/// shipped kernel: the time of a variant is only comparable in situ, with the same
/// neighbours and the same L2 state as the real call. **Outputs are not attention** with the
/// probes that leave work out; `timeline` keeps the work and prints stamps instead. `mlxcel`
/// warns once when one is set. Off builds the kernel as before (the template constant `PROBE`
/// is 0 and every probe branch is compiled out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingProbe {
    /// The real kernel.
    Off,
    /// No tiles streamed (each warp's tile count forced to 0): launch, prologue, the CTA's
    /// warp merge, the partials' stores and the fold's tail.
    NoTiles,
    /// Returns after the prologue's last barrier (q staged and rotated, the pair table
    /// filled): launch and prologue.
    Prologue,
    /// Returns at entry: the launch and the CTAs' scheduling alone.
    Empty,
    /// The real kernel, with each warp's lane 0 stamping (`%globaltimer`, `clock64`) its entry,
    /// the prologue's barrier, its first tile's wait, the loop's end and the partials' stores,
    /// printed as `MLXCEL_TL` lines on stdout (KV head 0 of batch 0, every 16th context
    /// length) for `benchmarks/gpu/attn_timeline.py`: splits the loop's ramp from its drain.
    /// A folded launch's last CTA (KV head 0) also prints one `MLXCEL_TLF` line: when it knew
    /// it was last and when its merged output was stored, the part of the call the warp lines
    /// end before (session 67).
    /// Outputs are attention; the stamps and the printing add a little time to the call.
    Timeline,
}

impl TimingProbe {
    /// The value of [`TIMING_PROBE`]: `off` (or unset), `no-tiles`, `prologue`, `empty`,
    /// `timeline`.
    pub fn parse(v: &str) -> Result<TimingProbe> {
        match v.trim() {
            "" | "off" | "0" => Ok(TimingProbe::Off),
            "no-tiles" => Ok(TimingProbe::NoTiles),
            "prologue" => Ok(TimingProbe::Prologue),
            "empty" => Ok(TimingProbe::Empty),
            "timeline" => Ok(TimingProbe::Timeline),
            other => Err(Error::invalid(
                "fused decode",
                format!(
                    "{TIMING_PROBE}={other}: expected off, no-tiles, prologue, empty or timeline"
                ),
            )),
        }
    }

    /// The kernel's `PROBE` constant.
    fn code(self) -> i32 {
        match self {
            TimingProbe::Off => 0,
            TimingProbe::NoTiles => 1,
            TimingProbe::Prologue => 2,
            TimingProbe::Empty => 3,
            TimingProbe::Timeline => 4,
        }
    }
}

/// The probe set in [`TIMING_PROBE`] (off when unset); warns once when one is on.
fn timing_probe() -> Result<TimingProbe> {
    let p = match flags::var(TIMING_PROBE) {
        Some(v) => TimingProbe::parse(&v)?,
        None => TimingProbe::Off,
    };
    if p != TimingProbe::Off {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::warn!(
                "{TIMING_PROBE}={p:?}: {}",
                if p == TimingProbe::Timeline {
                    "the decode attention kernel prints per-warp timestamps (MLXCEL_TL lines on stdout)"
                } else {
                    "the decode attention kernel leaves work out for timing; its outputs are not attention"
                }
            )
        });
    }
    Ok(p)
}

fn check_scale(scale: f32, d: usize) -> Result<()> {
    if (scale - 1.0 / (d as f32).sqrt()).abs() > 1e-6 * scale.abs() {
        return Err(Error::invalid(
            "fused decode",
            format!("the kernel uses scale 1/sqrt({d}); got {scale}"),
        ));
    }
    Ok(())
}

/// Splits of the tensor-core kernel in 4-warp CTAs (`shared`: its dynamic shared memory).
pub fn mma_num_splits(batch: usize, kv_heads: usize, len: usize, shared: usize) -> usize {
    mma_num_splits_for(batch, kv_heads, len, shared, MMA_WARPS, 128)
}

/// Splits of the tensor-core kernel in CTAs of `warps` warps at `head_dim`: one wave of CTAs,
/// at least one 16-token tile per warp. The CTA count rounds down to one wave (132 / 8 KV heads with one
/// wide CTA per SM: 16 splits, not 17, whose 136 CTAs would leave 4 for a second wave);
/// with [`flags::MMA_ONE_WAVE`] off, 4-warp CTAs round up (the policy before session 22,
/// which cost turbo4-asym's 3-per-SM kernel a second wave).
pub fn mma_num_splits_for(
    batch: usize,
    kv_heads: usize,
    len: usize,
    shared: usize,
    warps: usize,
    head_dim: usize,
) -> usize {
    let round_up = warps == MMA_WARPS && !flags::MMA_ONE_WAVE.enabled();
    mma_num_splits_rounded(batch, kv_heads, len, shared, warps, head_dim, round_up)
}

/// [`mma_num_splits_for`] with the rounding of the CTA count given: up (`round_up`, which
/// spills a partial second wave wherever the heads do not divide the CTAs of one wave) or
/// down to one wave.
pub fn mma_num_splits_rounded(
    batch: usize,
    kv_heads: usize,
    len: usize,
    shared: usize,
    warps: usize,
    head_dim: usize,
    round_up: bool,
) -> usize {
    let target = mma_target_ctas(shared, warps, head_dim);
    let heads = (batch * kv_heads).max(1);
    let by_ctas = if round_up {
        target.div_ceil(heads)
    } else {
        target / heads
    };
    let by_len = len.div_ceil(16 * warps).max(1);
    by_ctas.min(by_len).max(1)
}

/// Threads per output dimension in the merge kernel (`P` in `cuda/merge_splits.cu`).
const MERGE_THREADS_PER_DIM: usize = 4;
/// Warps per CTA of the warp merge (`P` in `cuda/merge_splits_warp.cu`).
const MERGE_WARP_WARPS: usize = 4;

/// Whether the warp merge serves head dim `d` with rotation groups of `group_v`: each lane
/// owns `d / 32` consecutive dims (a power of two), and a group spans whole lanes or lies
/// inside one.
pub fn merge_warp_fits(d: usize, group_v: usize) -> bool {
    let per_lane = d / 32;
    d.is_multiple_of(32)
        && per_lane.is_power_of_two()
        && group_v.is_power_of_two()
        && group_v <= d
        && (group_v.is_multiple_of(per_lane) || per_lane.is_multiple_of(group_v))
}

/// Most splits the merge kernels take (`MAX_SPLITS` in `cuda/merge_splits.cu` and
/// `cuda/merge_splits_warp.cu`).
const MAX_SPLITS: usize = 2048;

/// Whether a split merge (the fold's, or the warp merge launch) loads V's rotation signs with
/// its partials (`MLXCEL_MERGE_SIGNS_FIRST`, template `MSF`). Only a rotated V has signs to load:
/// plain V keeps one instantiation per shape whatever the flag.
fn merge_signs_first(v: &RawSide<'_>) -> bool {
    v.rotation.is_some() && flags::MERGE_SIGNS_FIRST.enabled()
}

/// The split-merge launch shared by both kernels (`rot_v`: V's rotation signs), writing
/// `out_shape` (the kernel writes `[B, Hq, D]` in memory order whatever shape is declared).
fn merge(
    q: &Array,
    o_part: &Array,
    ml: &Array,
    v: &RawSide<'_>,
    rot_v: &Array,
    d: usize,
    out_shape: &[i32],
) -> Result<Array> {
    let s = q.shape();
    let (b, hq) = (s[0] as usize, s[1] as usize);
    let group_v = group_of(v, d);
    let warp_merge = flags::MERGE_WARP.enabled() && merge_warp_fits(d, group_v);
    let (merge, threads) = if warp_merge {
        let kernel = cached_by_name(KernelBackend::Cuda, "merge_splits_warp", 0, || {
            merge_source("mlxcel_merge_splits_warp", MERGE_WARP)
        })?;
        (kernel, 32 * MERGE_WARP_WARPS)
    } else {
        let kernel = cached_by_name(KernelBackend::Cuda, "merge_splits", 0, || {
            merge_source("mlxcel_merge_splits", MERGE)
        })?;
        (kernel, MERGE_THREADS_PER_DIM * d)
    };
    let launch = Launch::new(
        &[o_part, ml, rot_v],
        [(b * hq * threads) as i32, 1, 1],
        [threads as i32, 1, 1],
    )
    .output(out_shape, q.dtype())
    .template("D", TemplateArg::Int(d as i32))
    .template("GROUP_V", TemplateArg::Int(group_v as i32))
    .template("ROT_V", TemplateArg::Bool(v.rotation.is_some()))
    .template("T_out", TemplateArg::Dtype(q.dtype()));
    // The warp merge reads MSF whatever ROT_V; the block merge does not read it.
    let launch = if warp_merge {
        launch.template("MSF", TemplateArg::Bool(merge_signs_first(v)))
    } else {
        launch
    };
    merge
        .call(&launch)?
        .pop()
        .ok_or_else(|| Error::invalid("fused decode", "no output"))
}

/// Attention of one query position `q [B, Hq, 1, D]` over `len` cached positions.
/// Returns `[B, Hq, 1, D]` in q's dtype. `split_override` fixes the number of splits.
/// Calls go to the tensor-core kernel where [`mma_supported`] (and `MLXCEL_FUSED_MMA` is
/// on), else to the CUDA-core kernel; both write per-split partials that [`merge`] combines.
pub fn fused_decode(
    q: &Array,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    len: usize,
    scale: f32,
    split_override: Option<usize>,
) -> Result<Array> {
    fused_decode_rope(q, k, v, len, scale, split_override, None, false)
}

/// Whether [`fused_decode_rope`] can apply `rope` to q inside the kernel for these sides:
/// the tensor-core kernel serves them and every lane holds whole RoPE pairs.
pub fn rope_fits(
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    head_dim: usize,
    gqa: usize,
    rope: &RopeSpec,
) -> bool {
    flags::FUSED_MMA.enabled()
        && mma_supported(k, v, head_dim, gqa)
        && rope.fits_warp_layout(head_dim)
}

/// [`fused_decode`] for a query before RoPE (`rope` given): the tensor-core kernel rotates
/// q at position `len - 1` in its prologue, one MLX op fewer per layer and step. Fails
/// where [`rope_fits`] does not hold. With `flat` the output is declared `[B, 1, Hq * D]`,
/// the layout the output projection takes (the same kernels and bytes, so the caller's
/// reshape, one MLX node per layer and step, is not needed).
#[allow(clippy::too_many_arguments)]
pub fn fused_decode_rope(
    q: &Array,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    len: usize,
    scale: f32,
    split_override: Option<usize>,
    rope: Option<&RopeSpec>,
    flat: bool,
) -> Result<Array> {
    decode(q, k, v, len, scale, split_override, rope, flat, None).map(|(o, _)| o)
}

/// [`fused_decode_rope`] whose launch also writes the step's keys and values into the cache at
/// `append.target.pos` (`MLXCEL_ATTN_APPEND`): `len` is `pos + 1`, the sides of the target's
/// format ([`append_formats_fit`]) on the tensor-core kernel, and `rope` given. Returns the
/// attention output and the write's token (`KvCache::commit_fused_append`).
pub fn fused_decode_rope_append(
    q: &Array,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    scale: f32,
    rope: &RopeSpec,
    flat: bool,
    append: &AttnAppend<'_>,
) -> Result<(Array, Array)> {
    let t = append.target;
    let shape = vec![1, t.heads, 1, t.head_dim as i32];
    if !append_formats_fit(t.format, k, v)
        || append.k_new.shape() != shape
        || append.v_new.shape() != shape
    {
        return Err(Error::invalid(
            "attention append",
            format!(
                "needs {:?} sides and [1, {}, 1, {}] new vectors, got sides of formats {} and {}, vectors {:?} and {:?}",
                t.format,
                t.heads,
                t.head_dim,
                k.format,
                v.format,
                append.k_new.shape(),
                append.v_new.shape()
            ),
        ));
    }
    let (o, token) = decode(
        q,
        k,
        v,
        t.pos + 1,
        scale,
        None,
        Some(rope),
        flat,
        Some(append),
    )?;
    let token = token.ok_or_else(|| {
        Error::invalid(
            "attention append",
            "the tensor-core kernel does not serve these sides",
        )
    })?;
    Ok((o, token))
}

/// Whether the attention launch writes `format`'s positions into these sides: the formats the
/// qkv GEMV's folded append writes (turbo4 K and V, fp16 K with turbo4 V, int8 K and V without
/// rotation) and the boundary layers' fp16 K with int8 V, as the tensor-core kernel's `KFMT` /
/// `VFMT` and rotations see them.
pub fn append_formats_fit(
    format: crate::kernels::folded_append::PairFormat,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
) -> bool {
    use crate::kernels::folded_append::PairFormat;
    use crate::kv::side::{FORMAT_FP16, FORMAT_INT8};
    let turbo4 = |r: &RawSide<'_>| r.format == 4 && r.rotation.is_some() && r.lut_array.is_some();
    let int8 = |r: &RawSide<'_>| r.format == FORMAT_INT8 && r.rotation.is_none();
    match format {
        PairFormat::Turbo4 => turbo4(k) && turbo4(v),
        PairFormat::Turbo4Asym => k.format == FORMAT_FP16 && turbo4(v),
        PairFormat::Int8 => int8(k) && int8(v),
        PairFormat::Fp16Int8 => k.format == FORMAT_FP16 && int8(v),
    }
}

/// [`fused_decode_rope`], with `append` the launch that writes the step's K+V too (its token
/// is the second value; `None` without `append`).
#[allow(clippy::too_many_arguments)]
fn decode(
    q: &Array,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    len: usize,
    scale: f32,
    split_override: Option<usize>,
    rope: Option<&RopeSpec>,
    flat: bool,
    append: Option<&AttnAppend<'_>>,
) -> Result<(Array, Option<Array>)> {
    let s = q.shape();
    if s.len() != 4 || s[2] != 1 {
        return Err(Error::invalid(
            "fused decode",
            format!("q must be [B, Hq, 1, D], got {s:?}"),
        ));
    }
    let (b, hq, d) = (s[0] as usize, s[1] as usize, s[3] as usize);
    // The merged output's declared shape (the kernels write the same bytes either way).
    let out_shape = if flat {
        vec![b as i32, 1, (hq * d) as i32]
    } else {
        vec![b as i32, hq as i32, 1, d as i32]
    };
    let ks = k.data.shape();
    let hkv = ks[1] as usize;
    if hkv == 0 || hq % hkv != 0 || !supported(k, v, d, hq / hkv) {
        return Err(Error::invalid(
            "fused decode",
            format!("unsupported shape q {s:?}, k {ks:?}"),
        ));
    }
    if len == 0 || len > k.capacity || len > v.capacity {
        return Err(Error::invalid(
            "fused decode",
            format!(
                "len {len} outside the cache capacity {}",
                k.capacity.min(v.capacity)
            ),
        ));
    }
    check_scale(scale, d)?;
    let gqa = hq / hkv;
    let tensor_cores = flags::FUSED_MMA.enabled() && mma_supported(k, v, d, gqa);
    if let Some(r) = rope {
        // rope_fits, with the tensor-core check already made.
        if !(tensor_cores && r.fits_warp_layout(d)) {
            return Err(Error::invalid(
                "fused decode",
                format!(
                    "RoPE ({} dims, traditional {}) cannot run inside the kernel for head_dim {d}",
                    r.dims, r.traditional
                ),
            ));
        }
    }
    // With the step's table (RTAB) the kernel's `inv_freq` input holds it instead.
    let rope_table = rope.is_some() && tensor_cores && rope_table::enabled();
    let inv_freq = match rope {
        Some(r) if rope_table => rope_table::step_table(r, len)?,
        Some(r) => r.inv_freq().clone(),
        None => lut(k)?,
    };
    // The tensor-core kernel's ring depth, dynamic shared memory (with the pair table) and
    // warps per CTA.
    let luts = mma_luts(k, v);
    let table = luts.0 || luts.1;
    let mma_shared = tensor_cores.then(|| mma_launch_shape(k.format, v.format, d, gqa, table));
    let splits = match (split_override, mma_shared) {
        (Some(s), _) => s.max(1),
        (None, Some((_, shared, warps))) => fold_split_cap(
            b,
            hkv,
            len,
            mma_num_splits_for(b, hkv, len, shared, warps, d).max(1),
        )?,
        (None, None) => num_splits(b, hkv, len).max(1),
    };
    let threads = mma_shared.map_or(THREADS, |(_, _, warps)| 32 * warps as i32);
    if splits > MAX_SPLITS {
        return Err(Error::invalid(
            "fused decode",
            format!("{splits} splits, the merge kernel takes at most {MAX_SPLITS}"),
        ));
    }
    let (group_k, group_v) = (group_of(k, d), group_of(v, d));
    let (k_aux, v_aux) = (aux_or_dummy(k)?, aux_or_dummy(v)?);
    let len_marker = length_marker(len)?;
    let rot_v = signs(v, group_v)?;
    // Whether the tensor-core kernel merges the splits itself.
    let fold = mma_shared.is_some() && fold_fits(b, hkv, len, splits)?;
    // Without the fold the kernel reads neither: cached placeholders, no per-call op.
    let (tickets, epoch_marker) = if fold {
        fold_inputs()?
    } else {
        (
            dummy(Placeholder::TicketsStub, || Array::zeros(&[4], Dtype::U32))?,
            len_marker.clone(),
        )
    };
    let (k_dep, v_dep) = (wait_for(k.pending)?, wait_for(v.pending)?);
    let (lut_k, lut_v, rot_k) = (lut(k)?, lut(v)?, signs(k, group_k)?);
    // The tensor-core kernel reads q as stored; the CUDA-core kernel reads f32 [B, Hq, D].
    let q_in = if tensor_cores {
        q.clone()
    } else {
        q.reshape(&[b as i32, hq as i32, d as i32])?
            .astype(Dtype::F32)?
    };
    // Room for the append's inputs too: no reallocation when they join.
    let mut inputs: Vec<&Array> = Vec::with_capacity(INPUTS.len() + APPEND_INPUTS.len());
    inputs.extend([
        &q_in,
        k.data,
        &k_aux,
        v.data,
        &v_aux,
        &lut_k,
        &lut_v,
        &rot_k,
        &len_marker,
        &k_dep,
        &v_dep,
        &inv_freq,
        &rot_v,
        &tickets,
        &epoch_marker,
    ]);
    if let Some(a) = append {
        if !tensor_cores || rope.is_none() {
            return Err(Error::invalid(
                "attention append",
                "needs the tensor-core kernel and RoPE inside it",
            ));
        }
        inputs.extend([a.k_new, a.v_new, &a.target.k.mids, &a.target.v.mids]);
    }
    let launch = Launch::new(
        &inputs,
        [splits as i32 * threads, hkv as i32, b as i32],
        [threads, 1, 1],
    )
    .output(&[b as i32, hq as i32, splits as i32, d as i32], Dtype::F32)
    .output(&[b as i32, hq as i32, splits as i32, 2], Dtype::F32)
    .template("KFMT", TemplateArg::Int(k.format))
    .template("VFMT", TemplateArg::Int(v.format))
    .template("D", TemplateArg::Int(d as i32))
    .template("GQA", TemplateArg::Int(gqa as i32))
    .template("ROT_Q", TemplateArg::Bool(k.rotation.is_some()));
    let (mut parts, token) = if let Some((stages, shared, warps)) = mma_shared {
        let pair = mma_pair(stages);
        // Transposed scores: on request, and always under paired tiles.
        let kt = flags::MMA_KT.enabled() || pair;
        let main = if append.is_some() {
            cached_by_name(
                KernelBackend::Cuda,
                "decode_attention_mma_app",
                shared as u64,
                || mma_append_source(shared),
            )?
        } else {
            cached_by_name(
                KernelBackend::Cuda,
                "decode_attention_mma",
                shared as u64,
                || mma_source(shared),
            )?
        };
        // The merged output `out` is written only by the fold; otherwise a token-sized stub.
        let fold_out = if fold { out_shape.clone() } else { vec![8] };
        let mut launch = launch.output(&fold_out, q.dtype());
        if append.is_some() {
            // The write's token.
            launch = launch.output(&[4], Dtype::I32);
        }
        let mut outs = main.call(
            &launch
                .template("STAGES", TemplateArg::Int(stages as i32))
                .template("WARPS", TemplateArg::Int(warps as i32))
                .template("SWZ", TemplateArg::Bool(flags::MMA_SWIZZLE.enabled()))
                .template("LUTK", TemplateArg::Bool(luts.0))
                .template("LUTV", TemplateArg::Bool(luts.1))
                .template(
                    "LUTI",
                    TemplateArg::Bool(table && flags::MMA_LUT_IMM.enabled()),
                )
                .template("HOIST", TemplateArg::Bool(flags::MMA_HOIST.enabled()))
                .template("RSALL", TemplateArg::Bool(flags::MMA_RSALL.enabled()))
                .template("FTZ", TemplateArg::Bool(flags::MMA_FTZ.enabled()))
                .template("QSWZ", TemplateArg::Bool(flags::MMA_QSWZ.enabled()))
                .template("FILLW", TemplateArg::Bool(flags::MMA_FILLW.enabled()))
                .template("QFIRST", TemplateArg::Bool(flags::MMA_QFIRST.enabled()))
                .template(
                    "QFIRST1",
                    TemplateArg::Bool(mma_qfirst1(k.format, v.format)),
                )
                .template(
                    "QFIRST2",
                    TemplateArg::Bool(pair && flags::MMA_QFIRST2.enabled()),
                )
                .template("FCP1", TemplateArg::Bool(flags::MMA_FCOPY1.enabled()))
                .template("VZ", TemplateArg::Bool(flags::MMA_VZERO.enabled()))
                .template("CW", TemplateArg::Bool(flags::MMA_COMBINE_W1.enabled()))
                .template(
                    "MASKL",
                    TemplateArg::Bool(pair && flags::MMA_MASK_LAST.enabled()),
                )
                .template("VSEL", TemplateArg::Bool(flags::MMA_VSEL.enabled()))
                .template(
                    "LAZY",
                    TemplateArg::Bool(kt && flags::MMA_LAZY_RESCALE.enabled()),
                )
                .template("KT", TemplateArg::Bool(kt))
                .template("PAIR", TemplateArg::Bool(pair))
                .template("LIGHT", TemplateArg::Int(mma_light_tiles(warps)))
                .template("RTAB", TemplateArg::Bool(rope_table))
                .template("ROT_V", TemplateArg::Bool(v.rotation.is_some()))
                .template("ROPE_Q", TemplateArg::Bool(rope.is_some()))
                .template(
                    "TRAD",
                    TemplateArg::Bool(rope.is_some_and(|r| r.traditional)),
                )
                .template("FOLD", TemplateArg::Bool(fold))
                .template(
                    "FTAIL",
                    TemplateArg::Bool(fold && flags::FOLD_TAIL.enabled()),
                )
                // Only launches that need the second round build it: <= 16 splits keep their
                // instantiation.
                .template("FT32", TemplateArg::Bool(fold && splits > FOLD_MAX_SPLITS))
                .template("MSF", TemplateArg::Bool(fold && merge_signs_first(v)))
                .template("PROBE", TemplateArg::Int(timing_probe()?.code())),
        )?;
        let token = if append.is_some() { outs.pop() } else { None };
        let out = outs.pop().expect("three outputs");
        if fold {
            return Ok((out, token));
        }
        (outs, token)
    } else {
        let main = cached_by_name(KernelBackend::Cuda, "decode_attention", 0, source)?;
        let parts = main.call(
            &launch
                .template("GROUP_K", TemplateArg::Int(group_k as i32))
                .template("GROUP_V", TemplateArg::Int(group_v as i32)),
        )?;
        (parts, None)
    };
    let ml = parts.pop().expect("two outputs");
    let o_part = parts.pop().expect("two outputs");
    Ok((merge(q, &o_part, &ml, v, &rot_v, d, &out_shape)?, token))
}

/// Tiles the tensor-core kernel's last split gives up ([`flags::MMA_LIGHT_LAST`]): two per warp
/// of its CTA, about what the step's K+V encode in that split's prologue costs (2.0 us against
/// ~0.8 us per tile and warp at 128K on the H200, session 46); 0 with the flag off.
fn mma_light_tiles(warps: usize) -> i32 {
    if flags::MMA_LIGHT_LAST.enabled() {
        2 * warps as i32
    } else {
        0
    }
}

/// Rings shallower than this keep the one-tile loop under [`flags::MMA_PAIR`]: a pair holds two
/// slots while it computes, leaving `stages - 3` tiles in flight (the one-tile loop leaves
/// `stages - 2`), none at 3 stages (fp16 or int8 keys at D = 128, e.g. turbo4-asym's kernel).
/// Measured faster only with 5 (turbo4, H200 session 25); turbo4-asym's 3-stage kernel ran
/// 5.24 ms per 128K step with pairs on a slow-host machine against 5.02-5.03 without on
/// others (not an A/B: the same call's runs without pairs failed), so it is left out.
pub const MMA_PAIR_MIN_STAGES: usize = 5;

/// Whether the tensor-core kernel with a `stages`-deep ring takes two tiles per loop iteration
/// ([`flags::MMA_PAIR`]): it builds on the hoisted ring addressing and replaces the one-tile
/// loop, so it needs `MLXCEL_MMA_HOIST` on (the kernel asserts it), and a ring of at least
/// [`MMA_PAIR_MIN_STAGES`]; it implies the transposed scores (`KT`).
pub fn mma_pair(stages: usize) -> bool {
    flags::MMA_PAIR.enabled() && flags::MMA_HOIST.enabled() && stages >= MMA_PAIR_MIN_STAGES
}

#[cfg(test)]
mod tests {
    use super::{
        fold_fits, fold_inputs, fold_split_cap, length_marker, mma_deepest_same_occupancy,
        mma_launch_shape, mma_luts_for, mma_num_splits_for, mma_pair, mma_qfirst1, mma_stage_bytes,
        mma_stages, qkv_encode_tickets, TimingProbe, CTA_RESERVED_SHARED, FOLD_MAX_BH,
        FOLD_MAX_CONTEXT, FOLD_MAX_SPLITS, FOLD_MAX_SPLITS_2, FOLD_SLOTS, FOLD_SPLIT_CAP_FILL,
        MMA_MAX_STAGES, MMA_PAIR_MIN_STAGES, MMA_WIDE_WARPS, SM_SHARED_BYTES,
    };
    use crate::flags;
    use crate::kv::side::{FORMAT_FP16, FORMAT_INT8};
    use crate::mlx::Array;

    /// Held by the tests here that set `MLXCEL_*` variables of the fold, so that one test's
    /// `flags::reload` never lands between another's settings and its checks.
    static FOLD_ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// `MLXCEL_FOLD_SPLIT_CAP`: more than 16 splits become 16 below the fold's context limit
    /// where 16 per KV head still give ~90% of the SMs a CTA (8 heads: 128 of 132); never at or
    /// above the limit, never for 4 KV heads (64 CTAs), never more splits than asked for, and
    /// nothing without the fold.
    #[test]
    fn splits_are_cut_to_the_fold_only_where_the_grid_stays_full() {
        let _env = FOLD_ENV.lock().unwrap_or_else(|e| e.into_inner());
        let on = flags::FOLD_SPLIT_CAP.enabled() && flags::FOLD_MERGE.enabled();
        let limit = super::fold_max_context().unwrap();
        let cap = |b, hkv, len, splits| fold_split_cap(b, hkv, len, splits).unwrap();
        assert_eq!(cap(1, 8, 4096, 22), if on { FOLD_MAX_SPLITS } else { 22 });
        assert_eq!(
            cap(1, 8, limit - 1, 33),
            if on { FOLD_MAX_SPLITS } else { 33 }
        );
        assert_eq!(cap(1, 8, limit, 33), 33);
        let four_heads = if on && flags::FOLD_32.enabled() {
            FOLD_MAX_SPLITS_2
        } else {
            33
        };
        assert_eq!(cap(1, 4, 4096, 33), four_heads);
        assert_eq!(cap(2, 4, 4096, 33), if on { FOLD_MAX_SPLITS } else { 33 });
        assert_eq!(cap(1, 8, 4096, 16), 16);
        assert_eq!(cap(1, 8, 4096, 5), 5);
    }

    /// QFIRST1 reaches every tensor-core kernel but turbo4-asym's (fp16 keys, turbo4 values),
    /// where session 21 measured it slower; with `MLXCEL_MMA_QFIRST1=0` none.
    #[test]
    fn first_ring_tile_early_everywhere_but_fp16_keys_with_turbo4_values() {
        let on = flags::MMA_QFIRST1.enabled();
        for (k, v) in [
            (4, 4),
            (FORMAT_INT8, FORMAT_INT8),
            (FORMAT_FP16, FORMAT_INT8),
            (FORMAT_FP16, FORMAT_FP16),
            (4, FORMAT_INT8),
        ] {
            assert_eq!(mma_qfirst1(k, v), on, "k format {k}, v format {v}");
        }
        assert!(!mma_qfirst1(FORMAT_FP16, 4));
    }

    /// `MLXCEL_MMA_DEEP_PLAIN`'s ring: the boundary layers' fp16 K + int8 V at D = 128 gains a
    /// stage at 2 CTAs per SM; turbo4-asym's fp16 K + turbo4 V (3 CTAs per SM) and int8 (4) keep
    /// theirs; a ring already at the most stages stays.
    #[test]
    fn deeper_plain_rings_keep_the_ctas_per_sm() {
        let deepest = |k: i32, v: i32, d: usize| {
            let stage = mma_stage_bytes(k, v, d);
            (
                mma_stages(stage),
                mma_deepest_same_occupancy(stage, mma_stages(stage), d, 4),
            )
        };
        assert_eq!(deepest(FORMAT_FP16, FORMAT_INT8, 128), (3, 4));
        assert_eq!(deepest(FORMAT_FP16, 4, 128), (3, 3));
        assert_eq!(deepest(FORMAT_INT8, FORMAT_INT8, 128), (3, 3));
        assert_eq!(deepest(4, 4, 64).1, MMA_MAX_STAGES);
    }

    /// Paired tiles only where the ring leaves copies in flight during a pair: turbo4's 5-stage
    /// ring (D = 128; 6 at D = 64) takes them under the default flags, the 3-stage rings of fp16
    /// or int8 keys at D = 128 (turbo4-asym, int8, the boundary layers) never do.
    #[test]
    fn paired_tiles_only_with_rings_of_five_stages_or_more() {
        let ring = |k: i32, v: i32, d: usize| mma_stages(mma_stage_bytes(k, v, d));
        assert_eq!(ring(4, 4, 128), 5);
        assert_eq!(ring(4, 4, 64), 6);
        for (k, v) in [
            (FORMAT_FP16, 4),
            (FORMAT_INT8, FORMAT_INT8),
            (FORMAT_FP16, FORMAT_FP16),
            (FORMAT_FP16, FORMAT_INT8),
        ] {
            let stages = ring(k, v, 128);
            assert_eq!(stages, 3, "k format {k}, v format {v}");
            assert!(!mma_pair(stages), "k format {k}, v format {v}");
        }
        let defaults = flags::MMA_PAIR.enabled() && flags::MMA_HOIST.enabled();
        assert_eq!(mma_pair(ring(4, 4, 128)), defaults);
        assert!(!mma_pair(MMA_PAIR_MIN_STAGES - 1));
    }

    /// `MLXCEL_MMA_WIDE_ONE_PER_SM` changes the split count only of D 128 kernels that shared
    /// memory alone would put 2 or more to an SM in 12-warp CTAs: each has a 2- or 3-bit side
    /// and keys that are not fp16. Symmetric turbo2 without the 2-bit field table is one of them:
    /// 16 splits per KV head with the flag (one wave of 128 CTAs), 33 without (264 CTAs of which
    /// one SM holds one); with the table (the default) its shared memory alone allows one. At
    /// D 64 the count stays by shared memory.
    #[test]
    fn wide_ctas_count_one_per_sm_where_shared_memory_allowed_more() {
        let fmts = [FORMAT_FP16, FORMAT_INT8, 4, 3, 2];
        let mut overfilled = Vec::new();
        for k in fmts {
            for v in fmts {
                for (d, gqa) in [64usize, 128]
                    .into_iter()
                    .flat_map(|d| (1..=8).map(move |g| (d, g)))
                {
                    let luts = mma_luts_for(k, v);
                    let (_, shared, warps) = mma_launch_shape(k, v, d, gqa, luts.0 || luts.1);
                    let by_shared = SM_SHARED_BYTES / (shared + CTA_RESERVED_SHARED);
                    if warps == MMA_WIDE_WARPS && by_shared > 1 {
                        overfilled.push((k, v, d));
                    }
                }
            }
        }
        overfilled.dedup();
        for &(k, v, d) in &overfilled {
            let low = |f: i32| matches!(f, 2 | 3);
            assert!(
                (low(k) || low(v)) && k != FORMAT_FP16,
                "k format {k}, v format {v}, d {d}: not a 2- or 3-bit kernel"
            );
        }
        // With the 2-bit field table (the default) symmetric turbo2's 64 KiB table keeps it to
        // one CTA per SM by shared memory; without it shared memory would allow two.
        assert_eq!(
            overfilled.contains(&(2, 2, 128)),
            !flags::MMA_LUT_LOW.enabled(),
            "{overfilled:?}"
        );
        let (_, shared, warps) = mma_launch_shape(2, 2, 128, 4, false);
        if warps == MMA_WIDE_WARPS {
            let want = if flags::MMA_WIDE_ONE_PER_SM.enabled() {
                16
            } else {
                33
            };
            assert_eq!(mma_num_splits_for(1, 8, 131072, shared, warps, 128), want);
        }
        let (_, shared, warps) = mma_launch_shape(2, 2, 64, 4, false);
        if warps == MMA_WIDE_WARPS {
            // 4 per SM by shared memory (clamped), 528 CTAs: 66 splits either way.
            assert_eq!(mma_num_splits_for(1, 8, 131072, shared, warps, 64), 66);
        }
    }

    #[test]
    fn slot_markers_rotate_over_the_slots_and_are_built_once() {
        let first: Vec<Array> = (0..FOLD_SLOTS)
            .map(|_| qkv_encode_tickets().unwrap().1)
            .collect();
        let start = first[0].shape()[0] as usize - 1;
        for (i, m) in first.iter().enumerate() {
            assert_eq!(m.shape(), vec![((start + i) % FOLD_SLOTS + 1) as i32]);
            // Already evaluated: nothing for a decode step's graph to schedule.
            assert_eq!(m.pending_ops().unwrap(), 0);
        }
        // The next round hands out the same arrays (same buffers) in the same order, for both
        // users of the slots.
        for (i, m) in first.iter().enumerate() {
            let again = if i % 2 == 0 {
                qkv_encode_tickets().unwrap().1
            } else {
                fold_inputs().unwrap().1
            };
            assert_eq!(again.shape(), m.shape());
            assert_eq!(again.buffer_id().unwrap(), m.buffer_id().unwrap());
            assert_eq!(again.pending_ops().unwrap(), 0);
        }
    }

    #[test]
    fn length_markers_have_the_length_as_their_shape() {
        for len in [1usize, 17, 4096, 4097, 5000, 17] {
            let m = length_marker(len).unwrap();
            assert_eq!(m.shape(), vec![len as i32]);
            // Reused for the same length, still the right view.
            assert_eq!(length_marker(len).unwrap().shape(), vec![len as i32]);
            assert!(m.to_vec::<u8>().unwrap().iter().all(|&b| b == 0));
        }
    }

    /// `FOLD_MAX_SPLITS` is the kernel's `FTAIL_S`: where mlxcel folds, the kernel's tail takes
    /// its one-round-trip path (two numbers for one limit, held equal here).
    #[test]
    fn fold_split_limit_is_the_kernels_one_round_trip_limit() {
        let decl = format!("constexpr int FTAIL_S = {FOLD_MAX_SPLITS};");
        assert_eq!(super::MMA_BODY.matches(decl.as_str()).count(), 1, "{decl}");
    }

    /// `MLXCEL_FOLD_32`: the fold takes up to 32 splits, 4 KV heads' 33 are cut to 32 (128
    /// CTAs) while 8 heads still cut to 16 and 2 heads (64 CTAs at 32) are left alone; off, 17
    /// splits do not fold. The kernel's tail takes two rounds of its 16 loads, one split's
    /// statistics per lane of a warp.
    #[test]
    fn fold_32_folds_up_to_32_splits_and_cuts_four_heads_to_32() {
        let _env = FOLD_ENV.lock().unwrap_or_else(|e| e.into_inner());
        const {
            assert!(
                FOLD_MAX_SPLITS_2 == 2 * FOLD_MAX_SPLITS,
                "two rounds of the tail"
            );
            assert!(FOLD_MAX_SPLITS_2 <= 32, "one split per lane of a warp");
        }
        let decl = "constexpr int FTAIL_MAX = FT32 ? 2 * FTAIL_S : FTAIL_S;";
        assert_eq!(super::MMA_BODY.matches(decl).count(), 1, "{decl}");
        let vars = [
            flags::FOLD_32.name,
            flags::FOLD_MERGE.name,
            flags::FOLD_SPLIT_CAP.name,
        ];
        for v in vars {
            std::env::set_var(v, "1");
        }
        std::env::remove_var(FOLD_SPLIT_CAP_FILL);
        std::env::remove_var(FOLD_MAX_CONTEXT);
        flags::reload();
        assert!(fold_fits(1, 4, 4096, 22).unwrap());
        assert!(fold_fits(1, 4, 32768, FOLD_MAX_SPLITS_2).unwrap());
        assert!(!fold_fits(1, 4, 32768, FOLD_MAX_SPLITS_2 + 1).unwrap());
        let cap = |b, hkv, len, splits| fold_split_cap(b, hkv, len, splits).unwrap();
        assert_eq!(cap(1, 4, 32768, 33), FOLD_MAX_SPLITS_2);
        assert_eq!(cap(1, 4, 4096, 22), 22, "folds as it is");
        assert_eq!(cap(1, 8, 4096, 33), FOLD_MAX_SPLITS);
        assert_eq!(cap(1, 8, 4096, 22), FOLD_MAX_SPLITS);
        assert_eq!(cap(1, 2, 4096, 66), 66);
        assert_eq!(cap(1, 4, 65536, 33), 33, "at the fold's context limit");
        std::env::set_var(flags::FOLD_32.name, "0");
        flags::reload();
        assert!(!fold_fits(1, 4, 4096, 17).unwrap());
        assert_eq!(cap(1, 4, 32768, 33), 33);
        for v in vars {
            std::env::remove_var(v);
        }
        flags::reload();
    }

    /// `MLXCEL_FOLD_SPLIT_CAP_FILL`: at 0 the cut reaches 4 KV heads (64 CTAs), at 100 not even
    /// 8 (128 of 132 SMs); a value that is not a percentage is an error naming the variable.
    #[test]
    fn split_cap_fill_moves_which_head_counts_are_cut() {
        let _env = FOLD_ENV.lock().unwrap_or_else(|e| e.into_inner());
        let fold = flags::FOLD_MERGE.name;
        let cap_flag = flags::FOLD_SPLIT_CAP.name;
        std::env::set_var(fold, "1");
        std::env::set_var(cap_flag, "1");
        std::env::remove_var(FOLD_MAX_CONTEXT);
        let cap = |b, hkv, len, splits| fold_split_cap(b, hkv, len, splits);
        std::env::set_var(FOLD_SPLIT_CAP_FILL, "0");
        flags::reload();
        assert_eq!(cap(1, 4, 4096, 33).unwrap(), FOLD_MAX_SPLITS);
        assert_eq!(cap(1, 2, 4096, 66).unwrap(), FOLD_MAX_SPLITS);
        assert_eq!(
            cap(1, 4, 65536, 33).unwrap(),
            33,
            "at the fold's context limit"
        );
        std::env::set_var(FOLD_SPLIT_CAP_FILL, "100");
        flags::reload();
        assert_eq!(cap(1, 8, 4096, 22).unwrap(), 22);
        assert_eq!(cap(2, 8, 4096, 22).unwrap(), FOLD_MAX_SPLITS);
        for bad in ["101", "ninety", "-5"] {
            std::env::set_var(FOLD_SPLIT_CAP_FILL, bad);
            flags::reload();
            let err = cap(1, 8, 4096, 22).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{FOLD_SPLIT_CAP_FILL}={bad}")),
                "{err}"
            );
        }
        for v in [FOLD_SPLIT_CAP_FILL, fold, cap_flag, flags::FOLD_32.name] {
            std::env::remove_var(v);
        }
        flags::reload();
        assert_eq!(
            cap(1, 4, 4096, 33).unwrap(),
            FOLD_MAX_SPLITS_2,
            "the default fill never cuts 4 KV heads to 16; FOLD_32 (on by default) cuts them to 32"
        );
    }

    /// The fold applies below `MLXCEL_FOLD_MAX_CONTEXT` tokens (65536 when unset) and up to
    /// 16 splits with `MLXCEL_FOLD_32=0` (32 with it: its own test), never with the flag off; a
    /// limit that is not a number is an error. (Set through the environment: a concurrent
    /// test's `flags::reload` then reads the same.)
    #[test]
    fn fold_applies_below_its_context_limit_and_up_to_16_splits() {
        let _env = FOLD_ENV.lock().unwrap_or_else(|e| e.into_inner());
        let fold = flags::FOLD_MERGE.name;
        std::env::set_var(fold, "1");
        std::env::set_var(flags::FOLD_32.name, "0");
        std::env::remove_var(FOLD_MAX_CONTEXT);
        flags::reload();
        assert!(fold_fits(1, 8, 32768, 16).unwrap());
        assert!(fold_fits(1, 8, 65535, 1).unwrap());
        assert!(!fold_fits(1, 8, 65536, 16).unwrap(), "the default limit");
        assert!(!fold_fits(1, 8, 32768, FOLD_MAX_SPLITS + 1).unwrap());
        assert!(
            !fold_fits(1, FOLD_MAX_BH + 1, 16, 1).unwrap(),
            "too many heads for the tickets"
        );
        std::env::set_var(FOLD_MAX_CONTEXT, "200000");
        flags::reload();
        assert!(fold_fits(1, 8, 131072, 16).unwrap());
        assert!(!fold_fits(1, 8, 200000, 16).unwrap());
        std::env::set_var(FOLD_MAX_CONTEXT, "64K");
        flags::reload();
        let err = fold_fits(1, 8, 16, 1).unwrap_err().to_string();
        assert!(err.contains("MLXCEL_FOLD_MAX_CONTEXT=64K"), "{err}");
        std::env::set_var(fold, "0");
        std::env::remove_var(FOLD_MAX_CONTEXT);
        flags::reload();
        assert!(!fold_fits(1, 8, 16, 1).unwrap());
        std::env::remove_var(fold);
        std::env::remove_var(flags::FOLD_32.name);
        flags::reload();
    }

    /// The timing probes parse from their names (unset or `off` is the kernel), an unknown
    /// name is an error naming the variable, and the kernel has one site per probe.
    #[test]
    fn timing_probes_parse_and_each_has_its_site_in_the_kernel() {
        for (v, p, code) in [
            ("", TimingProbe::Off, 0),
            ("off", TimingProbe::Off, 0),
            ("no-tiles", TimingProbe::NoTiles, 1),
            ("prologue", TimingProbe::Prologue, 2),
            (" empty ", TimingProbe::Empty, 3),
            ("timeline", TimingProbe::Timeline, 4),
        ] {
            assert_eq!(TimingProbe::parse(v).unwrap(), p, "{v:?}");
            assert_eq!(p.code(), code);
        }
        let err = TimingProbe::parse("loop").unwrap_err().to_string();
        assert!(err.contains("MLXCEL_ATTENTION_TIMING_PROBE=loop"), "{err}");
        for site in [
            "if constexpr (PROBE == 3) return;",
            "if constexpr (PROBE == 2) return;",
            "const int count = (PROBE == 0 || TIMELINE) &&",
            "constexpr bool TIMELINE = PROBE == 4;",
            "printf(\"MLXCEL_TL ",
        ] {
            assert_eq!(super::MMA_BODY.matches(site).count(), 1, "{site}");
        }
    }
}
