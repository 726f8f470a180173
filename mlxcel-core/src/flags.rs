//! Every `MLXCEL_*` run-time switch in one place.
//!
//! Fast paths are on by default; setting a flag to `0` (or `false`/`off`) turns its path
//! off and makes the exact reference path run instead, for A/B comparisons.
//!
//! A flag's value is read from the environment at its first use in the process and kept.
//! Why: on CUDA a decode step consults flags ~45 times per layer (path choices in the GEMV,
//! cache-append, attention and kernel-launch code; counted from the code), ~1400 times per
//! step of the 8B model, and a `std::env::var` lookup (a lock, a scan of the environment, a
//! `String`) costs 80-140 ns on this project's CPU machine against ~4 ns for a kept value:
//! 0.1-0.2 ms of host time per step on a decode loop that is host-bound at 4K-32K. Code
//! that changes a variable after start-up (tests flipping paths in one process) calls
//! [`reload`] afterwards.

use crate::error::{Error, Result};
use crate::kv::mode::BoundaryLayers;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

/// One boolean switch.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub name: &'static str,
    pub default: bool,
    pub doc: &'static str,
    /// Its entry in [`VALUES`] (unique per flag; a test checks [`ALL`]).
    slot: usize,
}

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
/// Room for the boolean flags' kept values.
const SLOTS: usize = 80;
static VALUES: [AtomicU8; SLOTS] = [const { AtomicU8::new(UNREAD) }; SLOTS];
/// Kept values of the non-boolean variables read through [`var`], by name (`None`: unset).
type KeptVars = HashMap<&'static str, Option<Arc<str>>>;
static VARS: RwLock<Option<KeptVars>> = RwLock::new(None);

impl Flag {
    /// The current value: the environment's if set, else the default (read once, see the
    /// module documentation).
    pub fn enabled(&self) -> bool {
        let kept = &VALUES[self.slot];
        match kept.load(Ordering::Relaxed) {
            ON => true,
            OFF => false,
            _ => {
                let v = self.read_env();
                kept.store(if v { ON } else { OFF }, Ordering::Relaxed);
                v
            }
        }
    }

    /// Overrides the kept value until the next [`reload`] (in-process A/B of a flag across
    /// decode steps: `MLXCEL_STEP_AB` in mlxcel-models' generate).
    pub fn set_kept(&self, on: bool) {
        VALUES[self.slot].store(if on { ON } else { OFF }, Ordering::Relaxed);
    }

    /// Whether the environment sets this flag (to anything), as opposed to its default
    /// applying: for a default that depends on the backend (`SUBMIT_THREAD`).
    pub fn is_set(&self) -> bool {
        std::env::var_os(self.name).is_some()
    }

    /// The value as the environment says it now.
    fn read_env(&self) -> bool {
        match std::env::var(self.name) {
            Ok(v) => !OFF_WORDS.contains(&v.trim().to_ascii_lowercase().as_str()),
            Err(_) => self.default,
        }
    }
}

/// The flag named `name` (e.g. `MLXCEL_FOLD_MERGE`), if it is one of [`ALL`].
pub fn find(name: &str) -> Option<Flag> {
    ALL.iter().find(|f| f.name == name).copied()
}

/// The flags read only while the weights load (their layouts: [`QMV_TILED`],
/// [`QMV_RING_TABLES`]): switching them later changes nothing, so an A/B must use separate runs.
pub const LOAD_TIME: [Flag; 2] = [QMV_TILED, QMV_RING_TABLES];

/// Forgets every kept value, so the next use of each flag (and of [`var`]) reads the
/// environment again. For code that sets `MLXCEL_*` variables after start-up.
pub fn reload() {
    for v in &VALUES {
        v.store(UNREAD, Ordering::Relaxed);
    }
    *VARS.write().unwrap_or_else(|e| e.into_inner()) = None;
}

/// A non-boolean `MLXCEL_*` variable read on the decode path (e.g. the GEMV schedule
/// override), kept like the flags: `None` when unset or not valid Unicode.
pub fn var(name: &'static str) -> Option<Arc<str>> {
    if let Some(kept) = VARS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(name))
    {
        return kept.clone();
    }
    let v: Option<Arc<str>> = std::env::var(name).ok().map(Arc::from);
    VARS.write()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(name, v.clone());
    v
}

/// Attention over turbo caches in the rotated basis (rotate q once for turbo K, inverse-
/// rotate the output once for turbo V) instead of dequantizing every cached vector back
/// to the original basis (`dequant-sdpa`).
pub const ROTATED_SDPA: Flag = Flag {
    name: "MLXCEL_ROTATED_SDPA",
    default: true,
    doc: "attention in the rotated basis for turbo K/V (0 = dequantize to the original basis, then SDPA)",
    slot: 0,
};

/// The fused CUDA decode-attention kernel (one query position, reads the packed cache
/// directly). Only on the CUDA backend; elsewhere, or when 0, the split paths run.
pub const FUSED_DECODE: Flag = Flag {
    name: "MLXCEL_FUSED_DECODE",
    default: true,
    doc: "fused CUDA decode attention over the packed cache (0 = split paths: rotated-sdpa / dequant-sdpa)",
    slot: 1,
};

/// fp16 K and V caches also take the fused decode kernel (the control kernel of the issue).
/// Off by default: MLX's fp16 SDPA was faster on the H200 per layer (0.64x-0.87x for the
/// fused fp16 kernel, 4K-128K) and end to end at 4K (135.8 vs 128.5 tok/s), so fp16 caches
/// use SDPA; ADR 0002.
pub const FUSED_FP16: Flag = Flag {
    name: "MLXCEL_FUSED_FP16",
    default: false,
    doc: "fp16 caches also take the fused decode kernel (1 = the control kernel; default: MLX SDPA, measured faster)",
    slot: 2,
};

/// The tensor-core fused decode kernel (v4: fp16 / int8 / turbo4 sides, GQA <= 8). When 0,
/// fused calls go to the CUDA-core kernel (v3), which covers every fused format.
pub const FUSED_MMA: Flag = Flag {
    name: "MLXCEL_FUSED_MMA",
    default: true,
    doc: "tensor-core fused decode kernel for fp16/int8/turbo4 caches (0 = the CUDA-core fused kernel)",
    slot: 3,
};

/// The fused turbo4 cache encoder on CUDA (one launch per append). When 0, appends use the
/// op-by-op reference encoder.
pub const FUSED_ENCODE: Flag = Flag {
    name: "MLXCEL_FUSED_ENCODE",
    default: true,
    doc: "fused CUDA turbo4 cache encoder (0 = the op-by-op MLX encoder)",
    slot: 4,
};

/// Decode-step appends of turbo4 and int8 sides on CUDA encode straight into the cache
/// buffers (one launch per side, no `slice_update`s); the fused decode kernel is ordered
/// after them through explicit dependency inputs (`kv::pending`). When 0, appends encode
/// into new arrays and `slice_update` them in (two more MLX ops per side, layer and step).
pub const INPLACE_APPEND: Flag = Flag {
    name: "MLXCEL_INPLACE_APPEND",
    default: true,
    doc: "turbo4/int8 decode-step appends write the cache buffers in place on CUDA (0 = encode, then slice_update)",
    slot: 5,
};

/// Pipelined greedy decoding: the next step's graph is built and queued (argmax on the
/// device, `async_eval`) before the current token is read back, so host graph building
/// overlaps device execution. When 0, every step evaluates, copies the logits to the host
/// and samples there (the reference loop; also what non-greedy sampling always uses).
pub const PIPELINED_DECODE: Flag = Flag {
    name: "MLXCEL_PIPELINED_DECODE",
    default: true,
    doc: "greedy decode queues step t+1 before reading token t (0 = one synchronous step at a time, host argmax)",
    slot: 6,
};

/// The pipelined greedy loop hands each step's `async_eval` to a second thread
/// (`mlx::submit`) and builds the next step meanwhile, so a step's host cost is the larger
/// of graph building and MLX's submit instead of their sum. 0: both on the loop's thread
/// (the reference). By default only on a GPU backend: on the CPU backend the cores compute
/// the step and a second submitting thread only competes for them (SmolLM2-135M on this
/// project's 2-core machine: 13-14 tok/s with it, 15-16 without); setting the variable to 1
/// turns it on there too. Off by itself while the build profile counts a step's ops (that
/// count walks graphs the worker may be encoding). ADR 0015 has the measurements.
pub const SUBMIT_THREAD: Flag = Flag {
    name: "MLXCEL_SUBMIT_THREAD",
    default: true,
    doc: "on a GPU, the pipelined greedy loop submits each step (MLX async_eval) on a second thread while it builds the next (0 = one thread; 1 also on the CPU backend)",
    slot: 54,
};

/// Device-side timestamps of every pipelined decode step (`kernels::device_clock`): probes
/// record the GPU's nanosecond timer when the step's first CUDA graph starts, at its input
/// token and at its output token; `--profile` reports the device time inside a step and
/// between steps, and the JSON stats carry every step's host and device timestamps. This
/// is what found the pipelined loop waiting a whole extra step per token (session 6). A
/// diagnostic: off by default (three one-thread nodes per step); CUDA only.
pub const DEVICE_CLOCK: Flag = Flag {
    name: "MLXCEL_DEVICE_CLOCK",
    default: false,
    doc: "record device timestamps at the start and end of each pipelined decode step (1 = on; CUDA only, for --profile and its JSON timeline)",
    slot: 7,
};

/// Host time of building each decode step's graph, split by part of the model
/// (`build_profile`); `--profile` prints the steady per-step means. A diagnostic, off by
/// default (two clock reads per part and layer).
pub const BUILD_PROFILE: Flag = Flag {
    name: "MLXCEL_BUILD_PROFILE",
    default: false,
    doc:
        "time the host's graph building of each decode step per model part (1 = on; for --profile)",
    slot: 8,
};

/// The one-token 4-bit GEMV kernels on CUDA (`kernels::quantized_gemv`): projections of a
/// decode step, and the MLP's gate/up pair with its SiLU product in one launch. When 0,
/// every projection goes through MLX's `quantized_matmul` (and the MLP through separate
/// SiLU and multiply ops).
pub const FUSED_QMV: Flag = Flag {
    name: "MLXCEL_FUSED_QMV",
    default: true,
    doc:
        "4-bit one-token GEMV kernels on CUDA, incl. fused gate/up+SiLU (0 = MLX quantized_matmul)",
    slot: 9,
};

/// The GEMV kernels' ring schedule (`kernels::quantized_gemv::Schedule`): each warp streams
/// its weight tiles through a ring of shared-memory stages filled by `cp.async`, so several
/// tiles stay in flight without holding registers (46-53 instead of 86-89: twice the CTAs
/// per SM). When 0, the batched schedule: four tiles' loads in registers, then their math.
/// Both give bit-identical outputs.
pub const QMV_RING: Flag = Flag {
    name: "MLXCEL_QMV_RING",
    default: true,
    doc: "GEMV kernels stream weights through a cp.async shared-memory ring (0 = batched loads in registers)",
    slot: 10,
};

/// The GEMV kernels' ring schedule issues its prologue's loads first (`EARLY` in
/// `cuda/qgemv4.cuh`): x's loads (with the folded RMSNorm, its weight's too) and the scale and
/// bias loads leave before the ring's first weight copies, held in registers, and are stored
/// to shared memory after them. Why: ncu's source counters on the o_proj GEMV (session 20,
/// call 1) put 28% of its stall samples on x's first load, which otherwise left behind 3 KiB
/// of weight copies per warp (the whole matrix in flight across the GPU) and waited for them.
/// Same values in the same places: bit-identical outputs (50 checks on the H200,
/// `early_prologue_loads_are_bit_identical_or_are_not_used`). Measured (session 20): in situ
/// at 32K (turbo4, ncu medians of 2 steps) gate/up + SiLU 29.46 -> 27.52 us, down 15.76 ->
/// 14.43, qkv + append 14.27 -> 13.47, o_proj 8.29 -> 7.20; the GEMVs per step 2.231 -> 2.065
/// ms; device time per step (two interleaved rounds) turbo4 2.88 -> 2.72 ms at 32K and 4.32
/// -> 4.18 ms at 128K, fp16 4.16 -> 3.68 ms at 32K; one round at 4K: turbo4-asym 2.54 -> 2.36,
/// fp16 2.80 -> 2.51. (Session 19's EARLY, the scale loads before x's staging but both after
/// the copies, measured no faster.) Default on; 0 = the copies first.
pub const QMV_EARLY: Flag = Flag {
    name: "MLXCEL_QMV_EARLY",
    default: true,
    doc: "GEMV ring kernels issue x's and the scales' loads before the first weight copies (0 = copies first)",
    slot: 36,
};

/// The GEMV ring kernels apply each quantization group's scale and bias after the mma, in
/// fp32 (`ring_rows16_post` in `cuda/qgemv4.cuh`): a 4-bit code goes to the tensor cores as the
/// exact fp16 1024 + n (or 1024 + 16 n) of one LOP3, and per group and row
/// y += s (C_even + C_odd / 16 - E) + b D with D = sum x and E = 1024 D_even + 64 D_odd. Why:
/// ncu (session 26) found the layer GEMVs issue-bound, gate/up at 4.31 thread-instructions per
/// weight with 62% of issue slots busy at 54% of DRAM; NVRTC SASS per 2048-weight tile: the
/// gate/up kernel 215 -> 139 instructions, o_proj / down 179 -> 133, qkv with its append 179 ->
/// 134 (no per-weight HSUB2 / HFMA2, no runtime division in the ring's bookkeeping). Not bit-identical to the
/// default kernels (they round s n + b to fp16 per weight; here the products are exact): the
/// GPU tests bound it against float64. Ring schedules with one CTA per 16 rows only (a capped
/// grid or the batched schedule keep their loops). Session 27 (H200): within the test's bounds
/// (float64 reference, 7 of 8 shapes before its time limit, e.g. gate/up + SiLU 3.3e-4 against
/// the default's 2.1e-4) but no faster in situ (turbo4 at 32K, ncu, per launch: gate/up 27.1 ->
/// 27.5 us, the others level): the GEMVs are not issue-bound after all. Session 28 found the
/// folded norm's prologue holding it back; session 29, with `MLXCEL_QMV_NORM_LATE` on (in situ,
/// turbo4 at 32K, ncu): gate/up 26.53 -> 26.27 us, head 104.74 -> 102.72, down 14.69 -> 14.32,
/// the step's kernels 2.827 -> 2.803 ms; its float64 test passed all 50 cases (worst 5.73e-4).
/// Default on since session 29; 0 = scales applied per weight before the mma. Known failure
/// (session 28, not understood): with the non-default `MLXCEL_QMV_SCHEDULE=ring:8:4` a decode
/// step failed in `cuGraphAddKernelNode` (invalid argument); set 0 there.
pub const QMV_POST: Flag = Flag {
    name: "MLXCEL_QMV_POST",
    default: true,
    doc: "GEMV ring kernels apply scales and biases per group after the mma, in fp32 (0 = per weight before the mma)",
    slot: 46,
};

/// The folded RMSNorm's scale applied late (`LATE` in `cuda/qgemv4.cuh`): the GEMV kernels that
/// fold a norm stage `nw * x` (one fp16 rounding) in one pass over x, keep each warp's sum of
/// squares, and multiply the row sums by n = rsqrt(mean(x^2) + eps) in the epilogue, where the
/// reduction's barrier already is, instead of summing x^2 across the CTA (a barrier) and then
/// staging `nw * fp16(x n)` in a second pass before the first tile can be used. Why: session
/// 28's source counters put 40-54% of the folded gate/up kernel's warp samples in that
/// prologue, and with `MLXCEL_QMV_POST` the fold cost 4 us per gate/up launch (bench: 21.95
/// without the norm, 25.90 with it). Same n to the bit; the staged values round differently
/// (MLX's rms_norm rounds x n to fp16 first), so not bit-identical: the GPU test bounds it
/// against float64, where it is the more accurate (one rounding fewer: 56 cases on the H200,
/// session 29, e.g. gate/up + SiLU 3.45e-4 against the fold's 4.46e-4). Session 29 (H200, ncu,
/// turbo4 at 32K in situ): gate/up + SiLU 27.30 -> 26.53 us, head 108.08 -> 104.74, the step's
/// kernels 2.860 -> 2.827 ms (2.803 with `MLXCEL_QMV_POST`); end to end with both, device time
/// per step turbo4 2.578 -> 2.525 ms, fp16 3.308 -> 3.260 ms (two rounds). Default on; 0 = the
/// scale applied to x while staging it.
pub const QMV_NORM_LATE: Flag = Flag {
    name: "MLXCEL_QMV_NORM_LATE",
    default: true,
    doc: "GEMV kernels with a folded RMSNorm apply its scale to the row sums in the epilogue (0 = to x while staging it)",
    slot: 48,
};

/// Decode GEMV weights reordered once at load into `WeightLayout::Rows16Tiles` (CUDA only;
/// `quantized_gemv::tile_rows16`; only where the GEMV kernels, `MLXCEL_FUSED_QMV`, and their
/// schedule read that layout): each 16-row x 128-value tile 1 KiB of contiguous memory, read
/// by the ring kernels with the same per-lane copies (bit-identical, `MLXCEL_QMV_POST`'s loop
/// too) or, with `MLXCEL_QMV_SCHEDULE=bulk:8:3`, one bulk copy per tile (POST's loop off).
/// Prefill's matmuls read them through `Quantized::untiled` (a reorder per call). Why: a ring copy of MLX's
/// layout writes 8 rows' 64-byte pieces; of the tiled layout, one 512-byte run. Session 27
/// measured it level before POST and before `MLXCEL_QMV_ALIGN128`. Session 42 (H200, with
/// both): ncu's shared wavefronts of the gate/up GEMV 3.55 M -> 2.96 M (excess 1.10 M -> 0.52
/// M), in situ gate/up 23.84 -> 22.78 us, down 14.24 -> 13.81, o_proj 7.07 -> 6.88, head 99.8
/// -> 95.0 per launch; turbo4 32K device time per step 2.385 / 2.388 -> 2.331 / 2.359 ms (two
/// rounds each, separate runs); 192 greedy tokens equal. Prefill's reorders were not timed (an
/// estimate: ~2 ms per prefill chunk of the 8B model, a read and a write of its 4.5 GB of
/// weights at the copy roofline). Default on (ADR 0018); 0 keeps MLX's layout.
pub const QMV_TILED: Flag = Flag {
    name: "MLXCEL_QMV_TILED",
    default: true,
    doc: "decode GEMV weights stored tiled at load: one 512-byte run per ring copy (0 = MLX's layout; CUDA only)",
    slot: 47,
};

/// POST's GEMV loop with each lane reading back only the 16 bytes it copied (`OWN` in
/// `ring_rows16_post`, `cuda/qgemv4.cuh`): step s feeds the mma word s of the lane's own chunk,
/// and the mma's 8 B columns are split by quantization group (a column carries x only for the
/// lanes of its group, zeros for the others), so each lane's C fragment holds its own group's
/// sums and the tile needs one per-group epilogue instead of one per group, no cross-lane slot
/// reads and no `__syncwarp` around the ring. Why: the shipped loop spent ~168 SASS
/// instructions per 1 KiB tile (session 42's gate/up source counters) against the ~250 issue
/// slots an SM has per KiB at the copy roofline, and the LM head issued in 79% of its cycles
/// (session 43: its tile arithmetic costs 26 us per launch over the arithmetic-free probe).
/// NVRTC: the gate/up loop ~134 -> 109 SASS instructions per tile. Session 43 (H200): ncu in
/// situ (turbo4 32K, us per launch) gate/up 22.85 -> 21.70, down 13.79 -> 13.47, qkv 8.48 ->
/// 8.13, o_proj 6.93 -> 7.01, head 95.90 -> 90.18, kernel time per step 2.532 -> 2.471 ms;
/// `MLXCEL_STEP_AB` in one run, device time per turbo4 step 2.353 -> 2.304 ms at 32K and 3.409
/// -> 3.361 at 128K. Its float64 test passed all 50 cases (worst 5.34e-4, POST's 4.95e-4 on
/// that case) and its tiled bit-identity test 30 checks. Other summation order than POST's (not
/// bit-identical). Default on; 0 = POST's loop with cross-lane slot reads.
pub const QMV_OWN_CHUNKS: Flag = Flag {
    name: "MLXCEL_QMV_OWN_CHUNKS",
    default: true,
    doc: "POST GEMV loop: each lane reads only its own copies, the mma's columns split by quantization group (0 = cross-lane reads; CUDA only)",
    slot: 58,
};

/// Plain GEMV launches of at least `quantized_gemv::PAIR_BLOCKS_MIN_ROWS` rows (the LM head)
/// run two 16-row blocks per CTA (`RB` in `cuda/qgemv4.cu`): x, the folded norm and POST's
/// per-group sums of x are staged once per 32 rows instead of per 16, and the grid has half the
/// CTAs (4008 for Llama-3's 128256-row head, ~7.6 waves of the H200's 528 resident CTAs). Why:
/// the head's 8016 CTAs each run 4 tiles per warp, and 66% of its warp samples sat in that
/// per-CTA prologue (session 43, ncu source counters with `MLXCEL_QMV_OWN_CHUNKS`). The same
/// tiles through the same loop with the same per-row order of sums: bit-identical outputs.
/// Only with POST's loop (`MLXCEL_QMV_POST`) on a per-lane ring with one block per CTA.
/// Session 43 (H200, with `MLXCEL_QMV_OWN_CHUNKS`): in situ the head 90.18 -> 78.82 us per
/// launch (turbo4 32K; separate runs), `MLXCEL_STEP_AB` in one run device time per turbo4 step
/// 2.311 -> 2.275 ms at 32K; 54 bit-identity checks (the five kernels on five shapes and two
/// schedules, the tiled plain and norm kernels) passed. Default on; 0 = one block per CTA.
pub const QMV_PAIR_BLOCKS: Flag = Flag {
    name: "MLXCEL_QMV_PAIR_BLOCKS",
    default: true,
    doc: "plain GEMV launches of at least 32768 rows (the LM head) run two 16-row blocks per CTA (0 = one; CUDA only)",
    slot: 59,
};

/// Weights whose words are tiled at load (`MLXCEL_QMV_TILED`) also get their (scale, bias)
/// pairs reordered into the same tiles' order (`quantized_gemv::tile_tables16`), and POST's OWN
/// loop copies each tile's pairs into the ring with its words (`RT` in `cuda/qgemv4.cuh`)
/// instead of staging the 16 rows' tables in every CTA's prologue. Why: probe level `nosb`
/// (constant tables, their loads gone, the arithmetic kept) ran a turbo4 32K decode step 0.231
/// ms faster on the H200 (session 44, `MLXCEL_STEP_AB`): the tables' DRAM round trip, behind the
/// whole GPU's first ring copies, held every CTA's prologue barrier. A load-time layout (as
/// `MLXCEL_QMV_TILED`): A/B it by separate runs. Its weights need the OWN loop
/// (`MLXCEL_QMV_POST` and `MLXCEL_QMV_OWN_CHUNKS` on): a launch without it is an error, not a
/// silent reorder. Same pairs, same arithmetic: bit-identical to off by construction. MLX's ops
/// (prefill) read the pairs through `Quantized::untiled_tables`. Measured (session 44, H200,
/// turbo4 32K): kernel time per step in situ 2.459 -> 2.278 ms; device ms per step 2.319 / 2.263
/// (off) against 2.121 / 2.184 (on), two separate runs each, all four runs' 128 greedy tokens
/// equal. Its bit-identity test (`paired_tables_give_the_same_bits_or_are_refused`) passes on
/// the CPU (the reorder's inverse, MLX's ops, the refusal) and on the H200 (25 CUDA checks,
/// session 45). Default on; 0 = the tables staged per CTA (the weights loaded as before).
pub const QMV_RING_TABLES: Flag = Flag {
    name: "MLXCEL_QMV_RING_TABLES",
    default: true,
    doc: "GEMV scale tables reordered at load to ride the ring with their tiles (needs the tiled words, POST and OWN_CHUNKS; CUDA only)",
    slot: 60,
};

/// POST's per-group sums of x (`xsum` in `cuda/qgemv4.cuh`: the sum of x over each quantization
/// group and its offsets' share, which the loop's epilogue needs) are formed while x is staged
/// (`XSF`: the 16-byte staging paths with `MLXCEL_QMV_EARLY`, `store_post8`), with x's chunks
/// stored in POST's order there, instead of in a second pass over x after the prologue's barrier
/// (each warp over its own tiles' chunks: shared loads, a rewrite of each chunk, shuffles). Why:
/// probe level `noxsum` (the sums zeroed, the arithmetic kept) ran the kernels of a turbo4 32K
/// step 0.072 ms faster in situ on the H200 (session 44). Same sums in the same order (the
/// same xor shuffles over a group's lanes) and the same chunks in shared memory: bit-identical
/// to off. Measured (session 45, H200, `MLXCEL_STEP_AB`, turbo4 32K): 2.162 -> 2.130 ms of
/// device time per step. Default on; 0 = the second pass.
pub const QMV_XSUM_STAGE: Flag = Flag {
    name: "MLXCEL_QMV_XSUM_STAGE",
    default: true,
    doc: "POST GEMV loop: per-group sums of x formed while x is staged, not in a second pass (CUDA only)",
    slot: 61,
};

/// A measuring probe (off): the o_proj and down_proj GEMVs (the residual-adding launches of
/// at most [`crate::kernels::quantized_gemv::GBAR_MAX_CTAS`] CTAs) run a grid-wide barrier in
/// their prologue, after their first weight copies and before x's loads
/// (`mlxcel_qmv::grid_barrier` in `cuda/qgemv4.cuh`), or before anything with
/// `MLXCEL_QMV_GBAR_AT=start`. Outputs are unchanged. Why: fusing a GEMV with the launch
/// before it (the split merge into o_proj; down_proj into the next layer's qkv) trades that
/// launch for such a barrier; its in-situ cost (`MLXCEL_STEP_AB=MLXCEL_QMV_GBAR_PROBE`, device
/// clock) decides whether the fusions can pay (NOTES, "Next lever (after session 37)").
/// Measured (session 38, H200): +2.6-2.7 us per launch after the copies, +1.9 at the start,
/// about a launch boundary's cost: fusions through a grid barrier cannot pay much (ADR 0016).
pub const QMV_GBAR_PROBE: Flag = Flag {
    name: "MLXCEL_QMV_GBAR_PROBE",
    default: false,
    doc: "measuring probe: o_proj / down_proj GEMVs run a grid-wide barrier in their prologue (1 = on; outputs unchanged)",
    slot: 55,
};

/// The GEMV kernels' dynamic shared memory on a 128-byte boundary (`MLXCEL_QMV_DYN_ALIGN` in
/// `cuda/qgemv4.cu` and `cuda/qgemv4_silu.cu`; off: the 16 bytes the declaration asked for
/// before, built under names ending `_al16`). Dynamic shared memory starts where the kernel's
/// static arrays end; the folded norm's `nred` (8 floats) left it 32 bytes past a 128-byte line
/// (48 in the qkv + encode kernel), and every ring copy's shared writes then straddled lines.
/// Why: session 41's probes put the folded norm's ~0.2 ms per decode step (session 40) exactly on
/// the builds whose static arrays were not a multiple of 128 bytes (ncu: 17.4 shared wavefronts
/// per cp.async against 12.8). Same instructions but the base offset: bit-identical outputs
/// (GPU tests, H200: 50 checks on the five kernels, 90 qkv + encode steps). Measured (session 41,
/// H200, device ms per step, off -> on): turbo4 32K 2.486 -> 2.420, 128K 3.561 -> 3.491, fp16 32K
/// 3.262 -> 3.214 (ADR 0017). Default on; 0 = the old placement, for A/B.
pub const QMV_ALIGN128: Flag = Flag {
    name: "MLXCEL_QMV_ALIGN128",
    default: true,
    doc:
        "GEMV kernels place dynamic shared memory on a 128-byte boundary (0 = 16 bytes, as before)",
    slot: 57,
};

/// A measuring probe (off; **wrong outputs**): the POST GEMV kernels keep their prologue, their
/// ring's copies, waits and slot reads, but skip each tile's arithmetic (`MLXCEL_QMV_PROBE_LEVEL` in
/// `cuda/qgemv4.cuh`, built under its own kernel names). Why: in `bench gemv` the bare ring ran
/// gate/up at 17.6 us against the shipped 26.0 (session 28), while in situ neither deeper rings
/// nor an earlier start per warp (session 39) sped the GEMVs up; timed in a decode step
/// (`MLXCEL_STEP_AB=MLXCEL_QMV_NOMATH_PROBE`, device clock), the probe says whether the copy
/// pattern itself or the arithmetic beside it holds the GEMVs there. Never for generation.
/// Measured (session 40, H200, turbo4 32K): -0.18 ms per step (the arithmetic); with
/// [`QMV_NOMATH_LEVEL_VAR`] `prologue` -0.53 (the copies alone near the copy roofline), and the
/// folded norm's share of x's staging ~0.2 ms of it (levels `xplain` against `tables`).
pub const QMV_NOMATH_PROBE: Flag = Flag {
    name: "MLXCEL_QMV_NOMATH_PROBE",
    default: false,
    doc: "measuring probe, WRONG OUTPUTS: POST GEMVs skip their per-tile arithmetic (1 = on; timing only)",
    slot: 56,
};

/// How much [`QMV_NOMATH_PROBE`] drops: `loop` (default: each tile's arithmetic), `tables` (also
/// the prologue's scale tables and POST's per-group x sums), `xplain` (`tables` with x staged
/// without the folded norm), `nwx` (`tables` with the norm's weight read from x's address),
/// `prologue` (also x's staging), `nosums` (`tables` without the norm's sums of squares),
/// `partials` (`xplain` plus a consumer's share of producer-written partial sums of squares),
/// `xtwice` (`xplain` with each thread's first two chunks of x loaded twice), or, with the tile
/// arithmetic kept, `nosb` (constant scale tables: their loads gone), `noxsum` (POST's per-group
/// x sums zeroed, not computed) or `noprep` (both).
pub const QMV_NOMATH_LEVEL_VAR: &str = "MLXCEL_QMV_NOMATH_LEVEL";

/// Where [`QMV_GBAR_PROBE`]'s barrier sits: `copies` (default: after the first weight copies,
/// where a fused kernel needs it) or `start` (before anything: the barrier's bare cost).
pub const QMV_GBAR_AT_VAR: &str = "MLXCEL_QMV_GBAR_AT";

/// The tensor-core decode-attention kernel's bank swizzle (`SWZ` in
/// decode_attention_mma.cu): its cp.async ring stores each tile's 16-byte chunks permuted
/// within their 128-byte line, so a warp's reads of V (and of K rows of 128 bytes or more)
/// fall in different shared-memory banks (ncu at 128K: 4.6-way conflicts on average). Pure
/// layout: outputs are bit-identical with 0. Session 10: parity suite passed with it on
/// (fp16 / int8 / turbo4 / turbo4-asym, 140 cases); `bench attention` at 128K turbo4 81.1
/// vs 87.9 us, int8 87.3 vs 95.6 us (on vs off); ncu load conflicts 4.6-way -> 2.5-way.
pub const MMA_SWIZZLE: Flag = Flag {
    name: "MLXCEL_MMA_SWIZZLE",
    default: true,
    doc: "tensor-core decode attention stores its ring tiles bank-swizzled (0 = as in memory)",
    slot: 11,
};

/// The tensor-core decode attention decodes turbo4 K codes through a 64 KiB shared-memory
/// table of all code pairs (one prmt + one shared load per two elements) instead of byte
/// permutes over a register codebook (~4 ALU instructions per two elements). ncu (session
/// 10, turbo4 at 128K): ALU pipe 68% -> 42% busy, DRAM 42% -> 50%, kernel 70.1 -> 59.1 us;
/// device time per decode step at 128K -0.61 ms. The fp16 bits are the same either way
/// (bit-identity GPU test). ADR 0008.
pub const MMA_LUT_K: Flag = Flag {
    name: "MLXCEL_MMA_LUT_K",
    default: true,
    doc: "tensor-core decode attention decodes turbo4 K through a shared-memory pair table (0 = register byte permutes)",
    slot: 12,
};

/// As [`MMA_LUT_K`], for turbo4 V (the two tokens' nibbles are interleaved first). Only
/// together with the K table: with fp16 K (turbo4-asym) the table's 64 KiB halve the CTAs
/// per SM of a kernel that streams at ~85% of copy, and it measured slower (128K: 112.8 ->
/// 141.8 us per call).
pub const MMA_LUT_V: Flag = Flag {
    name: "MLXCEL_MMA_LUT_V",
    default: true,
    doc: "with the K table on, tensor-core decode attention also decodes turbo4 V through it (0 = register byte permutes)",
    slot: 13,
};

/// The 64 KiB pair table's lookups address it through the load's immediate offset (`LUTI`):
/// the table sits at the start of the kernel's dynamic shared memory, whose shared-window
/// address is 1024 on sm_80 and later when a kernel has no static shared memory, so a lookup
/// is one prmt and one `ld.shared [r + 1024]`. NVRTC otherwise keeps the table's address in
/// a register and adds it before every load: the default build's main loop has 498
/// instructions per 16-token tile, 427 with this (NVRTC, turbo4 D=128, GQA 4). The kernel
/// traps if its dynamic shared memory starts elsewhere. Session 12 (H200): 144 pair-table
/// checks bit-identical, ncu turbo4 at 128K 58.9 -> 55.4 us, `bench attention` 76.2 -> 71.4
/// us (ADR 0008). 0 adds the table address per lookup.
pub const MMA_LUT_IMM: Flag = Flag {
    name: "MLXCEL_MMA_LUT_IMM",
    default: true,
    doc: "turbo4 pair-table lookups use an immediate shared-memory offset instead of a per-lookup add (0 = add the table address per lookup)",
    slot: 15,
};

/// Later CUDA launches of a custom-kernel instantiation (same template arguments, input and
/// output dtypes, grid, threadgroup, init value) put their output arrays on the `CustomKernel`
/// primitive MLX built at the first such launch, instead of calling MLX's kernel function,
/// which regenerates the kernel text (signature, constants, an 8 KiB+ string) every time.
/// Why: a decode step makes ~6 custom-kernel calls per layer, and turbo4's attention and
/// KV-append graph building cost 13 and 8 us per layer against fp16's 4 and 3 (session 8).
/// Session 11 (H200): 36 launches bit-identical to MLX-built ones; at 4K the time inside
/// MLX's custom-kernel API fell 0.841 -> 0.379 ms per step (turbo4) and 0.510 -> 0.186
/// (fp16), graph building 1.78 -> 1.44 and 1.36 -> 1.03 ms. 0 goes back to MLX's kernel
/// function on every launch.
pub const KERNEL_PRIMITIVE_CACHE: Flag = Flag {
    name: "MLXCEL_KERNEL_PRIMITIVE_CACHE",
    default: true,
    doc: "later CUDA custom-kernel launches reuse the primitive MLX built at the first (0 = MLX regenerates the kernel text per launch)",
    slot: 16,
};

/// Each CUDA custom-kernel instantiation compiled once per machine, not once per process:
/// mlxcel compiles MLX's own kernel text with NVRTC and writes the image into MLX's PTX
/// cache under the module name MLX looks up (`cpp/kernel_disk_cache.h`), which MLX reads but
/// never writes for custom kernels. Without it every process spent ~16 s in NVRTC before its
/// second decode token (H100, session 62). When 0, mlxcel writes nothing (files already
/// there are still read by MLX: clear `$MLX_PTX_CACHE_DIR` or `<temp>/mlx` for a cold A/B).
pub const KERNEL_DISK_CACHE: Flag = Flag {
    name: "MLXCEL_KERNEL_DISK_CACHE",
    default: true,
    doc: "CUDA custom kernels compiled once per machine into MLX's PTX cache (0 = MLX compiles each in every process)",
    slot: 78,
};

/// CUDA kernel text handed to MLX as `#include`s of files written once per content
/// (`mlx::kernel::include_stubs`) instead of inline: MLX rebuilds and hashes the text it is
/// given on every launch. When 0, the full (compacted) text goes inline.
pub const KERNEL_FILES: Flag = Flag {
    name: "MLXCEL_KERNEL_FILES",
    default: true,
    doc: "CUDA kernels reach MLX as #include stubs of content-hashed files (0 = full text inline, costlier launches)",
    slot: 17,
};

/// RoPE inside the fused kernels of a decode step: the in-place int8/turbo4 encoders rotate
/// the new key and the tensor-core attention kernel rotates the query, instead of MLX's
/// rope op on each (two MLX ops per layer and step). When 0, MLX's rope runs first.
pub const FUSED_ROPE: Flag = Flag {
    name: "MLXCEL_FUSED_ROPE",
    default: true,
    doc:
        "RoPE applied inside the fused encoder/attention kernels on CUDA (0 = MLX's rope op first)",
    slot: 18,
};

/// The decode-step K and V appends of a turbo4 or int8 cache in one launch on CUDA (one MLX
/// node per layer and step instead of two), and of a turbo4-asym cache (fp16 keys rotated
/// and stored by the same launch: one node instead of rope, `slice_update` and the value
/// encoder). When 0, each side appends on its own.
pub const FUSED_KV_APPEND: Flag = Flag {
    name: "MLXCEL_FUSED_KV_APPEND",
    default: true,
    doc:
        "turbo4 / int8 K and V decode-step appends in one launch on CUDA (0 = one launch per side)",
    slot: 19,
};

/// The tensor-core decode kernel merges its splits itself (the last CTA of each KV head)
/// instead of a second launch (`merge_splits.cu`): one MLX node per layer and step fewer.
/// Fold v2 (sessions 5-7) was slower: its lone merging CTA (a block barrier per
/// Walsh-Hadamard stage, heads one after another) cost more device time than the separate
/// launch (ncu, turbo4 at 4K: 564 us of attention per step against 300 + 175 us for kernel +
/// merge; +0.25 ms per step at 32K), ADR 0005. Fold v3 (session 18): one warp per query head
/// with the warp merge's arithmetic in registers, bit-identical to the separate
/// `merge_splits_warp.cu` (the separate merge takes 4.13 us per call in situ at 32K: ncu,
/// session 18). Also slower (H200, session 18, call 3): the turbo4 call 20.58 -> 27.30 us in
/// situ at 32K against the 4.13 us merge it saves; device time per step 2.99 -> 3.11 ms at
/// 32K, 4.45 -> 4.63 ms at 128K (two interleaved rounds each). The inverse V
/// rotation follows the side's rotation (`ROT_V`), so rotated int8 (int8r) values fold too;
/// that combination is NVRTC-compiled only (the H200 checks covered turbo4, turbo4-asym,
/// int8 and fp16).
/// Default on since session 31, with [`FOLD_TAIL`]'s one-round-trip tail and only where that
/// tail applies and the step is likely host-bound (`fold_fits` in
/// kernels/decode_attention.rs: at most 16 splits, contexts below `MLXCEL_FOLD_MAX_CONTEXT`,
/// 65536 by default). In-process A/B on the H200 (`MLXCEL_STEP_AB`, blocks of 8 steps, 49
/// steps per arm), turbo4: host per step -0.19 / -0.20 / -0.26 / -0.21 ms at 4K and 32K (x3),
/// device +0.05 to +0.09 ms, so the step (the larger of the two) 2.47 -> 2.28 ms at 4K and
/// 2.72 -> 2.58, 3.77 -> 3.51, 2.69 -> 2.58 ms at 32K; at 128K host -0.15, device +0.10
/// (3.77 -> 3.75: even; device-bound where the host is faster), hence the limit.
/// turbo4-asym (49 splits at 32K, the three-pass tail) lost 0.32 ms of device time, hence the
/// split limit. 0 = the separate merge kernel everywhere.
pub const FOLD_MERGE: Flag = Flag {
    name: "MLXCEL_FOLD_MERGE",
    default: true,
    doc: "the tensor-core decode kernel merges its splits in the same launch where <= 16 splits and below MLXCEL_FOLD_MAX_CONTEXT tokens (0 = separate merge kernel)",
    slot: 20,
};

/// With [`FOLD_MERGE`]: a tensor-core launch that would take more splits than the fold merges
/// (16) is cut to 16 so that it folds, where the context is below the fold's limit and 16 splits
/// still give ~90% of the SMs a CTA (`fold_split_cap` in kernels/decode_attention.rs). Which
/// launches: kernels that fit two CTAs per SM with 8 KV heads, i.e. symmetric turbo2 at head_dim
/// 64 (Llama-3.2-1B's shape: 33 splits at long contexts, 22 at 4K). Why: its calls were the
/// slowest of the issue's microbenchmark at D 64 and 4K (H100, session 63, ncu: 14.5 us with
/// the separate merge against 9.2-9.8 for the other folded modes; every call also builds and
/// encodes a second node). The same kernel folds for 16 splits everywhere else; the splits change
/// the summation order (parity, not bit identity). 0 = the splits by occupancy alone.
pub const FOLD_SPLIT_CAP: Flag = Flag {
    name: "MLXCEL_FOLD_SPLIT_CAP",
    default: true,
    doc: "with MLXCEL_FOLD_MERGE: launches of more than 16 splits below MLXCEL_FOLD_MAX_CONTEXT cut to 16 so they fold, where 16 still fill ~90% of the SMs (symmetric turbo2 at head_dim 64; 0 = splits by occupancy)",
    slot: 14,
};

/// With [`FOLD_MERGE`]: the fold also takes launches of 17-32 splits (`FT32` in
/// `cuda/decode_attention_mma.cu`: the partials in two rounds of 16 loads, same order, same
/// bits as the separate merge), and [`FOLD_SPLIT_CAP`] cuts more than 32 to 32 where 16 would
/// leave SMs idle. Why: 4 KV heads at D 128 (Qwen2.5-7B, 28 / 4) run 22 splits at 4K and 33
/// beyond on one wave of 12-warp CTAs, each call with a separate merge launch (its kernel and
/// the host's node); cutting them to 16 folded splits instead leaves half the SMs idle.
/// On since session 65 (ADR 0031; H100, 28:4:128, ncu): -0.7 to -1.5 us of kernel time per call
/// at 4K-32K for turbo4, turbo4-asym and int8 with the L2 kept as in a decode step (-1.4 to -2.4
/// flushed; turbo4 at 32K 19.81 -> 18.40 us), -0.07 to -0.36 ms of host per Qwen2.5-7B step;
/// bit-identical to the separate merge at the same split count (252 checks at up to 24 splits).
/// 0 = at most 16 splits fold, as before.
pub const FOLD_32: Flag = Flag {
    name: "MLXCEL_FOLD_32",
    default: true,
    doc: "with MLXCEL_FOLD_MERGE: the fold takes up to 32 splits (two rounds of loads in its tail), and launches of more than 32 splits that 16 would not fill cut to 32 (4 KV heads at head_dim 128; 0 = at most 16)",
    slot: 28,
};

/// The split merge (the fold's, in the tensor-core kernel, and `merge_splits_warp.cu`'s launch)
/// loads V's rotation signs with its partials instead of where the inverse rotation uses them
/// (`mlxcel_fd::merge_signs` in `cuda/decode_attention.cuh`). Why: read there, they add two
/// dependent global round trips after the partials' one (NVRTC sm_90 SASS, session 70: s2 after
/// the split weights' shuffles, s1 after the Walsh-Hadamard shuffles), on the critical path of
/// the last CTA of each KV head (the fold) or of the merge launch; the session 69 timeline put
/// the fold's merge at 1.2-1.7 us per 32K call. The same signs in the same operations:
/// bit-identical. Changes only rotated-V formats (turbo values, int8r). Session 71 (H100,
/// d12bcac): 224 bit-identity checks (fold tails of 16 and 24 splits, warp merge at 47 and 300,
/// turbo4/asym/turbo3/int8, D 64 and 128); the fold's merge at 32K turbo4-asym 1.66 -> 1.38 us
/// (timeline medians of 96 launches); `MLXCEL_STEP_AB` device ms per step, off -> on: asym 32K
/// 2.873 -> 2.865, turbo4 32K 2.554 -> 2.542, turbo4 128K 3.707 -> 3.693, asym 128K 5.599 ->
/// 5.594. 0 = the signs read where the inverse rotation uses them.
pub const MERGE_SIGNS_FIRST: Flag = Flag {
    name: "MLXCEL_MERGE_SIGNS_FIRST",
    default: true,
    doc: "split merges (fold and merge launch): V's rotation signs loaded with the partials (bit-identical; 0 = loaded where used)",
    slot: 29,
};

/// With [`FOLD_MERGE`]: the fold's tail as one acquire-release ticket without fences, and the
/// last CTA's merge in one round trip (each lane loads its split's statistics and every split's
/// partial at once; at most 16 splits, the H200's count for 8 KV heads at any context). Why:
/// the fold cost 0.11 ms per 32K step more than the separate merge kernel (session 30, +4 us
/// per layer), and its tail is a latency chain: a fence in every CTA, the ticket, a second fence
/// in the last CTA, then three dependent L2 round trips (the splits' maxima, the denominator's
/// sums, the partials). Same operations in the same order: bit-identical to the separate merge.
/// On the H200 (session 31): the fold's 180 bit-identity checks pass with it; device time per
/// turbo4 step with the fold at 32K 2.632-2.638 ms (old tail) -> 2.579-2.621 (new), against
/// 2.525-2.530 for the separate merge (three interleaved rounds); 128K 3.737 against 3.653.
/// 0 = the fenced ticket and the three passes.
pub const FOLD_TAIL: Flag = Flag {
    name: "MLXCEL_FOLD_TAIL",
    default: true,
    doc: "with MLXCEL_FOLD_MERGE: the fold's ticket without fences and its merge in one round trip (0 = fenced ticket, three passes)",
    slot: 49,
};

/// The qkv GEMV with the K+V append folded in (`MLXCEL_QKV_ENCODE`) runs in thread-block
/// clusters of one K or V head's D / 16 CTAs (`CLUSTER` in `cuda/qgemv4_qkv_encode.cu`; sm_90
/// and later, else the ticket): each CTA sends its 16 rows into the head's first CTA's shared
/// memory (`st.async`, completing on an mbarrier there), and that CTA encodes once they have
/// landed, instead of a device-scope ticket and a read of the head back from L2. Why: the
/// append's serial tail cost 2.85 us per layer over the plain qkv GEMV in situ at 32K (session
/// 32). Same values into the
/// same encode: the cache bytes are bit-identical. On the H200 (session 33): `gpu_qkv_encode`
/// 72 steps bit-identical with it off and on; in situ at 32K the launch only 11.36 -> 11.28 us
/// (so the ticket and the read-back are not where the tail goes), but the device time per step
/// fell in all six in-process A/Bs (`MLXCEL_STEP_AB`): turbo4 at 32K 2.596 -> 2.579, 2.580 ->
/// 2.551 and 2.600 -> 2.555 ms, turbo4-asym 2.910 -> 2.881, int8 2.760 -> 2.731, turbo4 at 128K
/// 3.675 -> 3.654; host level (-0.07 to +0.08 ms, both signs). Those runs gathered through a
/// cluster barrier, whose release arrive compiles to `MEMBAR.ALL.GPU`; the `st.async` tail has
/// no fence: 72 steps bit-identical again, turbo4 at 32K 2.558 -> 2.541 and 2.563 -> 2.544 ms
/// against the ticket (the same range: the fence did not show). Default on; 0 = the ticket (the
/// reference path).
pub const QKV_CLUSTER: Flag = Flag {
    name: "MLXCEL_QKV_CLUSTER",
    default: true,
    doc: "qkv GEMV + folded K/V append in thread-block clusters of one head's CTAs, the head gathered through distributed shared memory (sm_90+; 0 = the head ticket and an L2 read)",
    slot: 50,
};

/// The pipelined greedy loop takes each token from mlxcel's argmax kernel on CUDA
/// (`kernels::argmax`, `cuda/argmax.cu`: many CTAs, one packed atomicMax each, the last CTA
/// writes the index) instead of MLX's argmax, which reduces the row in one CTA: 22.5 us per
/// step for Llama-3's 128256 logits in situ on the H200 (session 32). The same token as MLX's
/// for every input (the first NaN, else the largest value, ties to the lowest index). On the
/// H200 (session 33): `gpu_argmax` 180 rows equal to MLX's argmax (fp16, bf16, f32; ties, signed
/// zeros, NaN, inf); the kernel 4.61 us in situ (63 CTAs) against MLX's 22.7; device time per
/// step in in-process A/Bs -0.020 and -0.015 ms (turbo4 32K), -0.013 and -0.016 (fp16 32K),
/// -0.019 (turbo4 128K); host level. Default on; 0 = MLX's argmax.
pub const FAST_ARGMAX: Flag = Flag {
    name: "MLXCEL_FAST_ARGMAX",
    default: true,
    doc: "greedy decode on CUDA: the token from mlxcel's many-CTA argmax kernel (0 = MLX's argmax, one CTA per row)",
    slot: 51,
};

/// A decode step's K+V append done by the fused attention launch itself
/// (`cuda/decode_attention_mma.cu`, `MLXCEL_ATTN_APPEND` blocks): the stacked qkv GEMV writes
/// plain k and v, and the attention CTA whose split holds the new position writes them into
/// the cache in its prologue (idle q-staging warps, before the barrier after which its ring
/// copies the new position's tile). Why: the qkv GEMV's folded append (`MLXCEL_QKV_ENCODE`)
/// ends its launch with the encode, ~2.8 us per layer in situ at 32K (session 32) on the
/// step's critical path; inside the attention call it overlaps the other splits' streaming.
/// The same cache bytes and outputs (gpu_attention_append, 60 steps). Measured (H200, session
/// 34, in-process A/Bs against the fold at 32K): device time per step turbo4 -0.067 ms
/// (-0.075 with the boundary layers' pairs too), turbo4-asym -0.083, int8 -0.089; turbo4 at
/// 128K -0.059; in situ the qkv launch 11.28 -> 8.6 us and the attention call ~21.0 -> 21.4
/// us. Default on for turbo4, turbo4-asym, int8 and the boundary layers' fp16-K / int8-V pairs
/// (ADR 0014); 0 = the qkv GEMV's folded append (and the boundary layers' own append launch).
pub const ATTN_APPEND: Flag = Flag {
    name: "MLXCEL_ATTN_APPEND",
    default: true,
    doc: "decode on CUDA (turbo4, turbo4-asym, int8, fp16+int8 boundary layers): the new position's K+V written by the fused attention launch (0 = by the qkv GEMV's folded append or the boundary layers' append launch)",
    slot: 52,
};

/// A decode step's token embedding from one kernel (`kernels::embedding`,
/// `cuda/embedding_rows.cu`) instead of MLX's three gathers and a dequantize, for MLX-affine
/// 4-bit tables; the same bits as MLX's path (gpu_embedding, 48 id sets on the H200). Measured
/// level (session 34): in situ the four MLX kernels sum to 14.5 us and the kernel takes 4.9, but
/// the three gathers run side by side in MLX's graph, and the in-process A/Bs moved device time
/// per step by -0.003 ms (turbo4 and fp16 at 32K), host -0.025 (turbo4) and +0.25 (fp16). Off;
/// 1 takes the kernel.
pub const FAST_EMBED: Flag = Flag {
    name: "MLXCEL_FAST_EMBED",
    default: false,
    doc: "decode on CUDA: the token embedding of a 4-bit table from one kernel (measured level on the H200; 1 = the kernel, default MLX's take + dequantize)",
    slot: 53,
};

/// Lift MLX's per-CUDA-graph input byte limit (`MLX_MAX_MB_PER_BUFFER`) when the KV cache
/// is compressed (`mlx::graph_limits`). Off by default: three interleaved rounds at 128K with
/// the device clock (session 15) made turbo4's step 0.19 ms longer lifted (5.44 against
/// 5.25 ms device span, 0.29 ms of idle between steps against 0.02); ADR 0007. 1 lifts.
pub const LIFT_GRAPH_BYTES: Flag = Flag {
    name: "MLXCEL_LIFT_GRAPH_BYTES",
    default: false,
    doc: "compressed KV caches on CUDA: lift MLX's per-graph byte limit (MLX_MAX_MB_PER_BUFFER) (1 = lift; off by default: slower in session 15's interleaved A/B, ADR 0007)",
    slot: 21,
};

/// The split merge on warps (`merge_splits_warp.cu`): each warp computes the split weights
/// itself and the inverse rotation runs on shuffles, so one block barrier remains instead of
/// ten; the same operations in the same order as `merge_splits.cu`, so bit-identical.
/// Why: the merge took 6.2 us per call in situ at every context (ncu, session 11), 174-221
/// us per decode step of the 8B model, for ~0.5 MB of partials: latency of dependent
/// phases, not bytes. Session 12 (H200, ncu, turbo4 at 32K): 6.0-6.2 -> 4.4-4.5 us per
/// call. 0 runs `merge_splits.cu`.
pub const MERGE_WARP: Flag = Flag {
    name: "MLXCEL_MERGE_WARP",
    default: true,
    doc: "the fused decode's split merge on warps with one block barrier, bit-identical (0 = merge_splits.cu)",
    slot: 22,
};

/// A decode step's RMSNorms folded into the one-token GEMV that reads their output (the
/// stacked qkv projection, the gate/up kernel, the LM head): the kernel stages
/// `rms_norm(x, w, eps)` instead of x (`stage_x_rms` in `cuda/qgemv4.cuh`), with MLX's
/// roundings. Why: two MLX nodes and launches per layer plus the final norm (65 per step of
/// the 8B model, ~270 us of rms_norm kernels at 128K in session 11's ncu), on a decode
/// loop whose host spends ~5-7 us inside MLX's `async_eval` per node at 32K (session 12).
/// Session 13 (H200): outputs identical to MLX's norm + the kernel (relative RMS 0.0 in
/// all 9 shape/schedule cases), greedy tokens identical, turbo4 at 32K 302 -> 315 tok/s
/// (medians of 3, submit 1.97 -> 1.62 ms per step). (Session 5's first version, a second
/// pass over x in every CTA of the batched schedule, cost +14 us per call and was
/// reverted; ADR 0005.) 0 runs MLX's `rms_norm` first.
pub const FUSED_NORM: Flag = Flag {
    name: "MLXCEL_FUSED_NORM",
    default: true,
    doc: "decode-step RMSNorms folded into the next 4-bit GEMV's x staging on CUDA (0 = MLX's rms_norm, then the GEMV)",
    slot: 23,
};

/// The stacked qkv GEMV of a decode step writes q, k and v as three output arrays of their
/// head shapes (`[B, H, 1, D]`) instead of one row that MLX then reshapes and splits. Why:
/// the reshape and the split are two MLX nodes per layer (64 per step of the 8B model) that
/// move no data but each pass through MLX's graph building and `async_eval`. Only the
/// kernel's store differs (`cuda/qgemv4_store_qkv.cu`). Session 13 (H200): 16 launches
/// bit-identical to the split of one output, greedy tokens identical; no end-to-end change
/// showed through that machine's host spread (ADR 0011). 0 = one output, then MLX's reshape
/// and split.
pub const QKV_PARTS: Flag = Flag {
    name: "MLXCEL_QKV_PARTS",
    default: true,
    doc: "the stacked qkv GEMV on CUDA writes q, k and v as three outputs (0 = one output, then MLX's reshape and split)",
    slot: 24,
};

/// A decode step's turbo4, turbo4-asym or int8 K+V cache append folded into the stacked qkv
/// GEMV (`cuda/qgemv4_qkv_encode.cu`): the last CTA of each K and V head writes it into the
/// cache buffers, so the separate in-place append launch and its MLX node go (one per
/// compressed layer). The writes are those of the separate launches (`turbo_row`,
/// `fp16_row`, `int8_row`) on the same fp16 k and v: on the H200 (session 14, call 1) the
/// parts and every stored position were bit-identical over 18 steps and greedy tokens matched
/// in all three modes; the device span per step was equal or lower (32K: turbo4 -0.01 ms,
/// turbo4-asym -0.05 ms, int8 -0.01 ms; ADR 0011 addendum). 0 = the separate append.
pub const QKV_ENCODE: Flag = Flag {
    name: "MLXCEL_QKV_ENCODE",
    default: true,
    doc: "turbo4 / turbo4-asym / int8 decode-step K+V appends folded into the qkv GEMV on CUDA (0 = the separate append launch)",
    slot: 25,
};

/// Rotated int8 sides (`int8r`) on the CUDA kernels: a decode step's K+V append rotates and
/// quantizes in the int8 pair launch (`cuda/int8_encode_kv.cu` with `MLXCEL_INT8_ROT`), and
/// the fused decode kernel reads the side, rotating q for K and the output for V as it does
/// for turbo sides. On the H200 (session 15, `session15_call1.sh`): stored values equal to
/// the MLX-ops encoder's, attention within 3.4e-4 relative RMS of the f32 reference (12
/// cases), greedy tokens equal to the unfused path's; turbo4 with int8r ends ran as fast as
/// with int8 ends (128K: 4.25 ms device span per step for both). 0 = int8r encoded by MLX
/// ops and attended by the rotated-SDPA path (correct, slow on long caches; the path of every
/// other backend).
pub const INT8R_FUSED: Flag = Flag {
    name: "MLXCEL_INT8R_FUSED",
    default: true,
    doc: "int8r (rotated int8) caches on the CUDA encoders and fused decode kernel (0 = MLX-ops encode and the rotated-SDPA path)",
    slot: 26,
};

/// The tensor-core decode kernel's cp.async copies with their addressing set up once
/// (`HOIST` in `cuda/decode_attention_mma.cu`): per-lane global pointers that advance by one
/// tile stride and a slot pointer instead of `i % STAGES`. ncu found the kernel issue-bound
/// (session 14: 3.43 cycles per issued instruction, dependent-latency stalls first); NVRTC's
/// SASS of the turbo4 D=128 loop falls from 427 to 404 instructions per tile. On the H200
/// (session 15, `session15_call3.sh`): bit-identical outputs (144 checks), ncu at 128K 52.5
/// -> 50.8 us per call, `bench attention` 66.8 -> 63.9 us at 128K. 0 = the per-tile
/// addressing.
pub const MMA_HOIST: Flag = Flag {
    name: "MLXCEL_MMA_HOIST",
    default: true,
    doc: "tensor-core decode kernel: copy addressing hoisted out of the tile loop (0 = per-tile addressing)",
    slot: 27,
};

/// The tensor-core decode kernel rescales o every tile (`RSALL` in
/// `cuda/decode_attention_mma.cu`) instead of after a warp vote on whether any running max
/// grew: alpha is exp2(0) = 1 exactly where it did not, so the outputs are bit-identical, and
/// the loop body stays one basic block for ptxas to schedule, at 4 * D / 16 FMUL per tile
/// (NVRTC SASS of the turbo4 D=128 GQA-4 loop: 404 -> 398 instructions per tile). On the H200
/// (session 16, call 5): 192 bit-identity checks passed (48 with it on), `bench attention`
/// turbo4 at 128K 65.8 -> 63.4 us per call (one A/B pair). 0 = the vote and its branch.
pub const MMA_RSALL: Flag = Flag {
    name: "MLXCEL_MMA_RSALL",
    default: true,
    doc: "tensor-core decode kernel: o rescaled every tile without the warp vote (0 = vote, rescale only when a max grew)",
    slot: 30,
};

/// The tensor-core decode kernel in CTAs of 12 warps instead of 4 where its 64-KiB turbo4
/// pair table is on (`WARPS` in `cuda/decode_attention_mma.cu`). Why: the table is per CTA,
/// so shared memory holds 2 CTAs of 4 warps per SM (8 warps, 2 per scheduler), and ncu found
/// the kernel stalled on dependent instructions at that occupancy (3.46-3.50 cycles per
/// issued instruction). One CTA of 12 warps shares one table: 12 warps per SM (turbo4 D=128:
/// 196 KB of shared memory, 52K registers). Each warp's tiles and the warp merge's order
/// change, so outputs differ in rounding only. On the H200 (session 17, call 1): parity 35
/// turbo4 cases, worst relative RMS 5.62e-4; ncu at 128K 50.66 -> 49.79 us (eligible warps
/// per scheduler 0.86 -> 1.20); end to end turbo4 device time per step 4.60 -> 4.46 ms at
/// 128K and 2.96 -> 2.93 ms at 32K (two interleaved rounds each). Default on; 0 = 4 warps.
pub const MMA_WIDE: Flag = Flag {
    name: "MLXCEL_MMA_WIDE",
    default: true,
    doc: "tensor-core decode kernel: 12-warp CTAs sharing one turbo4 pair table (0 = 4-warp CTAs, a table each)",
    slot: 31,
};

/// The tensor-core decode kernel stages q in shared memory with its 16-byte chunks swizzled
/// (`QSWZ` in `cuda/decode_attention_mma.cu`) so that the reads of q's MMA fragments are
/// free of bank conflicts. Why: the kernel's fixed time per call (ncu over contexts, session
/// 18: 8.96 us at 1K, 19.39 us at 32K, 48.7 us at 128K; ~9 us that does not scale with the
/// context) is mostly its prologue, a third of the stall samples at 32K; ~7% sat on these
/// reads (every lane of a phase in one group of 4 banks). Bit-identical outputs (144 checks on
/// the H200). Measured (session 18, call 5): ncu medians of 18 launches, turbo4 D=128, 10.43
/// -> 9.25 us per call at 4K, 19.78 -> 18.54 at 32K, 50.43 -> 49.14 at 128K; turbo4 device
/// time per step 2.96 -> 2.92 ms at 32K and 4.44 -> 4.40 ms at 128K (two interleaved rounds
/// each). Default on; 0 = q staged row by row.
pub const MMA_QSWZ: Flag = Flag {
    name: "MLXCEL_MMA_QSWZ",
    default: true,
    doc: "tensor-core decode kernel: q staged with a bank swizzle (0 = plain rows)",
    slot: 34,
};

/// The tensor-core decode kernel fills its turbo4 pair table on warps 8-11 of a 12-warp
/// CTA, which stage no q head, instead of on warps 0-3 after their q heads, and loads the
/// codebook's 8 magnitudes before its first store (`FILLW` in `cuda/decode_attention_mma.cu`).
/// Why: the fill ran serially after q on warps 0-3 while warps 8-11 waited at the barrier, and
/// its loads could not move above its stores (4 rounds of load latency); ncu's source counters
/// at 32K (session 18) put ~9% of the stall samples in it. Same table bytes: bit-identical
/// outputs (48 checks on the H200). NVRTC SASS (turbo4 D=128, the defaults): ptxas moved the
/// loop 393 -> 397 instructions per tile. Measured (session 19, call 1): ncu medians of 18
/// launches, turbo4 D=128, 9.31 -> 8.26 us per call at 4K, 18.77 -> 17.62 at 32K, 49.18 ->
/// 48.16 at 128K (48.90 -> 47.14 with the L2 kept between launches); turbo4 device time per
/// step 2.88 -> 2.83 ms at 32K and 4.42 -> 4.33 ms at 128K (two interleaved rounds each).
/// Default on; 0 = the fill on warps 0-3.
pub const MMA_FILLW: Flag = Flag {
    name: "MLXCEL_MMA_FILLW",
    default: true,
    doc: "tensor-core decode kernel: the pair table filled by the warps without a q head (0 = warps 0-3)",
    slot: 35,
};

/// The tensor-core decode kernel issues each warp's first ring copies right after its own
/// prologue loads (q, RoPE's frequencies, the rotation's signs, or the pair table's
/// codebook) instead of after the prologue's barrier (`QFIRST` in
/// `cuda/decode_attention_mma.cu`). Why: ncu's source counters at 4K (session 20) put ~9% of
/// the call's stall samples on the loop's first wait for a tile and ~10% on q's loads; issuing
/// the copies before q's loads (session 18's EARLY) was slower, since q then waited behind
/// them. Same copies into the same slots: bit-identical outputs (48 checks on the H200,
/// `ring_copies_after_the_prologue_loads_are_bit_identical`). Measured (session 20, ncu
/// medians of 18 launches, turbo4 D=128): 8.24 -> 7.92 us per call at 4K, 17.55 -> 18.18 at
/// 32K (17.62 -> 18.29 in a second pair of sweeps), 47.63 -> 46.42 at 128K; in situ at 32K
/// 18.02 -> 19.26 us. Slower at 32K: off; 1 turns it on. At 32K
/// its source samples put 18% of the stalls at the prologue's barrier (2.7% without it): the
/// warps reach it later, having issued their copies first, while the loop's first wait for
/// a tile fell from 82 samples to 5.
pub const MMA_QFIRST: Flag = Flag {
    name: "MLXCEL_MMA_QFIRST",
    default: false,
    doc: "tensor-core decode kernel: the ring's first copies issued after each warp's prologue loads (1 = on; slower at 32K)",
    slot: 37,
};

/// `MLXCEL_MMA_QFIRST` with only the ring's first tile issued early; the rest follow the
/// prologue's barrier (`QFIRST1` in `cuda/decode_attention_mma.cu`). Why: with all tiles
/// early, ncu's source samples at 32K (session 20) showed the loop's first wait gone (82 -> 5
/// samples) but the barrier's wait grown (45 -> 324): the warps reached it late from issuing
/// four tiles of copies. Same copies into the same slots in the same order: bit-identical by
/// construction (`first_ring_tile_after_the_prologue_loads_is_bit_identical`: 48 checks on
/// the H200, session 21). Measured (session 21, ncu medians of 18 launches, turbo4 D=128):
/// 8.16 -> 8.08 us per call at 4K, 17.57 -> 17.47 at 32K, 48.02 -> 46.90 at 128K; in situ at
/// 32K (medians of 56 launches) 18.02 -> 17.57 us; int8 25.31 -> 23.01, fp16 keys with int8
/// values 31.06 -> 29.31, but fp16 keys with turbo4 values (turbo4-asym) 32.08 -> 33.17. Default
/// on for every kernel but that one (`mma_qfirst1` in kernels/decode_attention.rs); 0 = every
/// ring copy after the prologue's barrier.
pub const MMA_QFIRST1: Flag = Flag {
    name: "MLXCEL_MMA_QFIRST1",
    default: true,
    doc: "tensor-core decode kernel: the ring's first tile issued after each warp's prologue loads, except for fp16 keys with turbo4 values (0 = after the barrier everywhere)",
    slot: 39,
};

/// The tensor-core kernel's 4-warp CTAs take the split count rounded down to one wave, as the
/// wide CTAs do, instead of up (`mma_num_splits_for` in kernels/decode_attention.rs). Why: the
/// rounding only matters where the CTAs per SM are odd, and there rounding up spills a second
/// wave. turbo4-asym's kernel (fp16 keys, turbo4 values, 65.9 KB of shared memory) fits 3
/// CTAs per SM, 396 on an H200: with 8 KV heads 49.5 splits per head became 50, i.e. 400
/// CTAs, whose last 4 start only when 4 others finish and then stream a whole split alone.
/// Every other shipped kernel fits an even number per SM (132 x 2 or x 4 CTAs divide by 8)
/// and is unchanged. Rounding down leaves 4 of the 396 slots idle and gives each split 2%
/// more tokens. Measured on the H200 (session 22, call 2): in situ at 32K (ncu, medians of 56
/// launches) 34.24 -> 28.14 us per call; turbo4-asym's device time per step at 128K 5.53 /
/// 5.54 -> 5.07 / 5.04 ms (two interleaved rounds); parity 35 cases, worst relative RMS
/// 4.07e-4. (`bench attention`, whose back-to-back launches fill the idle SMs of one call's
/// tail with the next call's CTAs, does not see it: 102.5 -> 103.7 us at 128K.) Default on;
/// 0 = 4-warp counts rounded up.
pub const MMA_ONE_WAVE: Flag = Flag {
    name: "MLXCEL_MMA_ONE_WAVE",
    default: true,
    doc: "tensor-core decode kernel: 4-warp CTAs round the split count down to one wave (turbo4-asym's kernel 50 -> 49 splits; 0 = round up, a second wave of 4 CTAs)",
    slot: 40,
};

/// Decode-step K+V appends of fp16 caches on CUDA (the fp16 mode, and fp16/fp16 boundary
/// layers) write both sides' buffers in place in one launch (`cuda/fp16_append_kv.cu`,
/// RoPE inside), and MLX's SDPA runs after that write because its queries come from a RoPE
/// launch that takes the write's token (`cuda/rope_q_after.cu`; MLX's CUDA graphs order
/// nodes by the buffers they read, and an MLX `depends` node launches nothing), not after a
/// host wait. Why: MLX's `slice_update` copies a layer's whole cache
/// when the previous step's attention still holds the buffer as the op is encoded, which the
/// pipelined loop makes common: on the H200 (session 23, call 1) 2186 of 8000 fp16 appends
/// at 128K copied 268 MB each. With the flag (call 3, two interleaved rounds) fp16's device
/// time per step went 9.33 -> 6.19 ms at 128K and 3.68 -> 3.31 ms at 32K; turbo4's boundary
/// layers (call 4) 3.86 -> 3.81 ms at 128K. Not bit-identical to MLX's rope (f32 rotation,
/// one rounding; ADR 0013). 0 = MLX's rope and a `slice_update` per side (the reference path).
pub const FP16_INPLACE_APPEND: Flag = Flag {
    name: "MLXCEL_FP16_INPLACE_APPEND",
    default: true,
    doc: "fp16 caches' decode-step K+V appends written in place by one launch on CUDA (0 = rope + slice_update per side, which MLX turns into a whole-cache copy when the buffer is still held)",
    slot: 41,
};

/// The qkv GEMV with the K+V append folded in (`MLXCEL_QKV_ENCODE`) copies the encoder's
/// tables (rotation signs, centroid midpoints and centroids, RoPE's inverse frequencies) into
/// shared memory with cp.async at its start (`cuda/qgemv4_qkv_encode_pre.cu`), and a head's
/// CTAs take their ticket with one acquire-release atomic instead of two fences around a plain
/// one (`ETAIL` in `cuda/qgemv4_qkv_encode.cu`). Why: the encode is the serial tail of a head's
/// last CTA, where each global read is a round trip (the centroid of each code depends on the
/// code) and each fence waits for the CTA's stores; in situ at 32K (session 24) the launch took
/// 12.64 us against 8.91 for the same GEMV without the append. Same values, same arithmetic:
/// the cache bytes are bit-identical. On the H200 (session 25, call 1): `gpu_qkv_encode` 36
/// steps bit-identical with the flag off and on; in situ at 32K (ncu medians of 56 launches)
/// 12.54 -> 11.87 us per launch, kernel time per step 2.864 -> 2.846 ms; turbo4's greedy
/// tokens equal; device time per step (two interleaved rounds at 32K, one at 128K) turbo4
/// 2.59 -> 2.57 ms at 32K and 3.78 -> 3.78 at 128K, turbo4-asym 2.92 -> 2.90 and 5.03 -> 5.03.
/// A small gain, never slower: default on; 0 = the tables from global memory, the fenced ticket.
pub const QKV_ENC_TAIL: Flag = Flag {
    name: "MLXCEL_QKV_ENC_TAIL",
    default: true,
    doc: "qkv GEMV + folded K/V append: encoder tables in shared memory, the head ticket without fences (0 = tables from global memory, fenced ticket)",
    slot: 42,
};

/// The tensor-core decode kernel computes each tile's scores transposed, S^T = K q^T, with the
/// decoded K rows as the mma's A operand and q as B (`KT` in `cuda/decode_attention_mma.cu`),
/// and turns P into P^T's B fragment with `movmatrix`. Why: with q as A, its rows 8..15 (no
/// head) are zero and ptxas rebuilds the four-register A operand around them in the loop; the
/// kernel is issue-bound (ncu at 128K, session 25: 66% of cycles issuing, DRAM at 63%). NVRTC
/// SASS of the turbo4 D=128 GQA-4 loop (12 warps): 401 -> 364 instructions per tile, 24 -> 16
/// mmas, 133 -> 118 registers. Not bit-identical (the softmax sums a head's weights in another
/// order). On the H200 (session 25, call 3): 125 cases within 5.06e-4 of the split reference
/// (111 bit-identical to the kernel without it), the parity suite with it on 140 cases
/// within 5.10e-4, turbo4's greedy tokens equal; ncu medians of 18 launches 8.13 -> 8.21 us at
/// 4K, 17.60 -> 17.39 at 32K, 46.99 -> 46.64 at 128K; device time per step equal within
/// 0.01 ms (turbo4 and turbo4-asym, 32K and 128K). Alone it stays off: [`MMA_PAIR`], on by
/// default, builds on it and turns it on; 1 turns it on without PAIR.
pub const MMA_KT: Flag = Flag {
    name: "MLXCEL_MMA_KT",
    default: false,
    doc: "tensor-core decode kernel: scores computed transposed (K as the mma's A operand) without MLXCEL_MMA_PAIR, 1 = on (PAIR, the default, implies it)",
    slot: 43,
};

/// With [`MMA_KT`]'s transposed scores (this flag implies it), each warp of the tensor-core
/// decode kernel takes two of its tiles per loop iteration and runs one softmax update over
/// their 32 tokens (`PAIR` in `cuda/decode_attention_mma.cu`). Why: KT cut the loop's
/// instructions by 9% but the 128K call only by 0.7% (H200, session 25: ncu medians 46.99 ->
/// 46.64 us): the warps wait on each tile's dependent chain (lookups, the S mma chain, the max
/// across lanes, the exponentials) at 3 warps per scheduler. Two tiles give two independent
/// chains to interleave and halve the reductions, alpha exponentials and o rescales per token
/// (NVRTC SASS, turbo4 D=128 GQA 4: 667 instructions per pair against 366 per tile, 128
/// registers). Needs `MLXCEL_MMA_HOIST` (otherwise off), and applies
/// only to rings of 5 or more stages (turbo4's kernels; `MMA_PAIR_MIN_STAGES` in
/// `kernels/decode_attention.rs`: 3-stage rings would have no copy in flight during a pair). Not
/// bit-identical to the kernel without it: P is rounded to fp16 against the maximum of 32
/// tokens instead of 16. On the H200 (session 25, call 5): 125 cases within 5.38e-4 of the
/// split reference (the kernel without it: within 1.9e-4 of it), turbo4's greedy tokens equal;
/// ncu medians of 18 launches 8.10 -> 8.10 us at 4K, 17.52 -> 17.22 at 32K, 47.04 -> 44.10
/// at 128K (call 4, another machine: 43.89 at 128K); turbo4's device time per step at 128K
/// 3.70-3.71 ms with it (calls 4-5) against 3.77-3.78 without (calls 1 and 3). Default on;
/// 0 = one tile per iteration (with `MLXCEL_MMA_KT=0`, the kernel measured before session 25).
pub const MMA_PAIR: Flag = Flag {
    name: "MLXCEL_MMA_PAIR",
    default: true,
    doc: "tensor-core decode kernel: two tiles per loop iteration, one softmax update, in MLXCEL_MMA_KT's layout (0 = one tile per iteration)",
    slot: 44,
};

/// The tensor-core decode kernel sizes its splits for `2 x warps` more tiles than the sequence
/// holds (`LIGHT` in `cuda/decode_attention_mma.cu`), so the last split, the one holding the
/// step's position, gets between that many and that many + splits - 1 fewer tiles than the
/// others. Why: with [`ATTN_APPEND`] that split's CTA also encodes and writes the step's key
/// and value before its barrier; the timeline probe (H200, session 46, turbo4 at 128K: 16
/// splits of 513 tiles, the last 498) put its first tile 2.0 us after the other splits' and its
/// end 1.2 us after theirs, so it set the end of every launch. The kernels with and without the
/// append split alike (their outputs stay bit-identical to each other); against the flag off
/// the tiles' order within the splits changes, so its test holds it to the parity bound.
/// Measured (H200, session 46): `MLXCEL_STEP_AB`, turbo4 device ms per step, off -> on, 3.163
/// -> 3.144 at 128K and 2.105 -> 2.097 at 32K (call 2); with it on, the timeline's last split
/// ended within 0.1 us of the others (43.19 us against 43.00-43.18); the append kernel stayed
/// bit-identical to the separate append (60 steps, call 2); `lighter_last_split_matches_the_reference`
/// 125 cases, worst relative RMS 5.54e-4 against the f32 reference (call 3).
/// Default on; 0 = equal splits.
pub const MMA_LIGHT_LAST: Flag = Flag {
    name: "MLXCEL_MMA_LIGHT_LAST",
    default: true,
    doc: "tensor-core decode kernel: the last split (which also writes the step's K and V) gets 2 x warps fewer tiles (0 = equal splits)",
    slot: 62,
};

/// The tensor-core decode kernel reads RoPE's cos and sin at the step's position from a table
/// computed once per step (`kernels::rope_table`, `RTAB` in `cuda/decode_attention_mma.cu`)
/// instead of each launch computing them for q and the appended key. Why: past ~106K positions
/// CUDA's `sincosf` leaves its fast range reduction for the slow exact one on RoPE's highest
/// frequencies (theta = pos * inv_freq above 105615): ncu's source counters of a 128K turbo4
/// attention launch (H200, session 46) put ~150 of its prologue's 490 stall samples there, ~1.6
/// us of a 47 us launch, in each of a step's 28 launches. The table holds the values the
/// launches computed (the same f32 product and `sincosf`): bit-identical outputs (H200, session
/// 47: 48 steps of `rope_table_keeps_the_attention_launches_bit_identical`, up to 131K
/// positions; greedy tokens equal session 46's in every mode and context). Measured
/// (`MLXCEL_STEP_AB`, device ms per step, off -> on): turbo4 3.193 -> 3.171 at 128K, 2.092 ->
/// 2.098 at 32K; turbo4-asym 4.553 -> 4.446 at 128K, 2.396 -> 2.377 at 32K; ncu, one 128K turbo4
/// launch in situ: 47.33 -> 46.34 us (ADR 0022). Default on; 0 = each launch computes its own.
pub const ROPE_TABLE: Flag = Flag {
    name: "MLXCEL_ROPE_TABLE",
    default: true,
    doc: "tensor-core decode kernel: RoPE's cos/sin read from a table computed once per step (bit-identical; 0 = computed in each launch)",
    slot: 64,
};

/// With [`MMA_QFIRST1`] and paired tiles ([`MMA_PAIR`]), each warp of the tensor-core decode
/// kernel issues its first *two* ring tiles right after its own prologue loads instead of one
/// (`QFIRST2` in `cuda/decode_attention_mma.cu`). Why: `QFIRST1` was measured before the
/// paired loop existed (session 21); the pair's first wait needs tiles 0 and 1, so every warp
/// still waited for a copy issued at the prologue's barrier (timeline, H200 session 46, turbo4
/// at 32K: barrier ~2.1 us after entry, first pair ~4.1 us). Same copies into the same slots in
/// the same order: bit-identical outputs. Off until measured; 1 turns it on.
pub const MMA_QFIRST2: Flag = Flag {
    name: "MLXCEL_MMA_QFIRST2",
    default: false,
    doc: "tensor-core decode kernel with paired tiles: the ring's first two tiles issued after each warp's prologue loads (bit-identical; 1 = on)",
    slot: 66,
};

/// The tensor-core decode kernel's ring refill copies both sides' factor rows (turbo4 or int8 keys
/// and values: 32 bytes each, adjacent in a slot) with one predicated copy on lanes 0-3 against a
/// bound computed once, instead of one copy per side that each rebuild their bound (`FCP1` in
/// `cuda/decode_attention_mma.cu`). Why: the kernel's paired loop is partly issue-bound (H200,
/// session 47: 61% of cycles issuing, 1.12 eligible warps per scheduler); NVRTC SASS of turbo4's
/// pair loop (D 128, GQA 4): 633 -> 619 instructions per pair. The same chunks into the same bytes:
/// bit-identical. On since session 51 with the other four pair-loop trims (measured together: ADR
/// 0023). 0 turns it off.
pub const MMA_FCOPY1: Flag = Flag {
    name: "MLXCEL_MMA_FCOPY1",
    default: true,
    doc: "tensor-core decode kernel: the ring refill's factor rows in one copy (bit-identical; 0 = off)",
    slot: 67,
};

/// The tensor-core decode kernel's transposed-score softmax (the paired loop's) zeroes a masked
/// token's V factor where it masks the token's scores, and folds the factors into the weights
/// without a compare and a select per weight (`VZ` in `cuda/decode_attention_mma.cu`). Why: the
/// select only kept a masked token's factor (a never-written slot may hold NaN) out of the weights;
/// NVRTC SASS of turbo4's pair loop (D 128, GQA 4): 633 -> 621 instructions per pair.
/// Bit-identical: weights and factors are >= 0, so a zero weight gives +0 either way (only a stored
/// factor of +inf with a zero weight would differ: NaN against 0). On since session 51 with the
/// other four pair-loop trims (measured together: ADR 0023). 0 turns it off.
pub const MMA_VZERO: Flag = Flag {
    name: "MLXCEL_MMA_VZERO",
    default: true,
    doc: "tensor-core decode kernel: masked tokens' V factors zeroed instead of a select per softmax weight (bit-identical; 0 = off)",
    slot: 68,
};

/// The tensor-core decode kernel's combine of its warps computes each warp's weight per head
/// (`exp2f(m_w - M)`) once, into shared memory behind one more barrier, instead of in every
/// output of the head (`CW` in `cuda/decode_attention_mma.cu`: D outputs per head, each with
/// the warps' maximum and exponentials). Why: the timeline (H200, session 46) put ~2 us between
/// the slowest warp's loop end and the CTA's end at 32K and 128K alike, DRAM idle, with the
/// combine's barrier and short-scoreboard stalls in it. The same weights from the same
/// arguments, summed in the same order: bit-identical. Off until measured; 1 turns it on.
pub const MMA_COMBINE_W1: Flag = Flag {
    name: "MLXCEL_MMA_COMBINE_W1",
    default: false,
    doc: "tensor-core decode kernel: the warps' combine weights computed once per warp and head (bit-identical; 1 = on)",
    slot: 69,
};

/// With [`MMA_WIDE`], the tensor-core decode kernels without the turbo4 pair table (fp16 or int8
/// keys: the turbo modes' boundary layers with fp16 keys and int8 values, turbo4-asym's fp16 keys
/// with turbo4 values, int8) also run CTAs of 12 warps where their ring fits (one CTA per SM)
/// instead of CTAs of 4 (two or three per SM). Why: the boundary layers' 4-warp launch at 128K runs
/// at 86% of the copy roofline with its CTAs ending 88 to 106 us apart (H200, session 46's
/// timeline), 2 CTAs of 4 warps per SM; 12 warps per SM put half as many more bytes in flight
/// there, and one CTA per SM halves the CTAs that each pay the prologue and the combine. Each
/// warp's tiles change, so outputs differ from 4-warp CTAs in rounding only. On since session 51:
/// H200 step A/B at 128K turbo4 3.131 -> 3.099 ms per step (the boundary layers); with the trims,
/// the issue table's turbo4-asym went 4.44 -> 4.31 ms and int8 3.82 -> 3.65 ms per 128K step
/// against session 47. 0 turns it off.
pub const MMA_WIDE_PLAIN: Flag = Flag {
    name: "MLXCEL_MMA_WIDE_PLAIN",
    default: true,
    doc: "tensor-core decode kernels without the pair table (fp16 or int8 keys) in 12-warp CTAs where they fit (rounding differs; 0 = off)",
    slot: 70,
};

/// The tensor-core decode kernels without the turbo4 pair table, in 4-warp CTAs, take the
/// deepest ring (up to 6 stages) that keeps their CTAs per SM (`mma_deepest_same_occupancy` in
/// kernels/decode_attention.rs): the turbo modes' boundary layers (fp16 keys, int8 values, D 128)
/// go from 3 to 4 stages at 2 CTAs per SM. Why: that launch runs at 86% of the copy roofline at
/// 128K with its CTAs ending 88 to 106 us apart (H200, session 46's timeline), the sign of warps
/// waiting on latency with ~1.5 tiles in flight each. The same splits, tiles and arithmetic:
/// bit-identical. Off until measured on the H200; 1 turns it on.
pub const MMA_DEEP_PLAIN: Flag = Flag {
    name: "MLXCEL_MMA_DEEP_PLAIN",
    default: false,
    doc: "tensor-core decode kernels without the pair table: the deepest ring that keeps their CTAs per SM (bit-identical; 1 = on)",
    slot: 71,
};

/// The tensor-core decode kernel's transposed-score softmax (turbo4's paired loop) keeps each
/// head's reference maximum until a score passes it by more than 4 (log2 units, a weight of 16),
/// rescaling the outputs and sums only then, decided per warp by one vote (`LAZY` in
/// `cuda/decode_attention_mma.cu`). Why: the loop is issue-bound (H200, session 47: an instruction
/// issued on 61% of cycles, ~38 of a 128K launch's 46 us); the eager update pays 32 multiplies of
/// o, two exponentials and two maxima per pair of tiles, and a warp's later maxima rarely pass its
/// first tokens' by that much. NVRTC SASS of the pair loop (D 128, GQA 4): 633 -> 596 instructions
/// per pair where no rescale is due (638 with it). Exact in real arithmetic; rounding differs (P is
/// packed to fp16 against another maximum), so it is held to the parity bound. On since session 51
/// with the other four pair-loop trims (measured together: ADR 0023). 0 turns it off.
pub const MMA_LAZY_RESCALE: Flag = Flag {
    name: "MLXCEL_MMA_LAZY_RESCALE",
    default: true,
    doc: "tensor-core decode kernel: the softmax rescales only when a score passes the running max by 2^4 (rounding differs; 0 = off)",
    slot: 72,
};

/// The tensor-core decode kernel's paired loop (turbo4) runs its pairs without the masks of
/// positions past the sequence, and leaves the sequence's partial last tile (with the tile before
/// it where a warp's count is even) to the masked one-tile path (`MASKL` in
/// `cuda/decode_attention_mma.cu`). Why: only a sequence's last tile can hold such positions, yet
/// every pair paid 8 selects of scores, the compares and a select per softmax weight; NVRTC SASS of
/// the pair loop (D 128, GQA 4): 633 -> 600 instructions per pair. The values are the same wherever
/// a token is inside the sequence, but the last two tiles' softmax updates are split, so rounding
/// differs there: held to the parity bound. On since session 51 with the other four pair-loop trims
/// (measured together: ADR 0023). 0 turns it off.
pub const MMA_MASK_LAST: Flag = Flag {
    name: "MLXCEL_MMA_MASK_LAST",
    default: true,
    doc: "tensor-core decode kernel: the paired loop masks only the sequence's last tile (rounding differs there; 0 = off)",
    slot: 73,
};

/// The tensor-core decode kernel's pair-table V decode interleaves two tokens' nibbles with two bit
/// selects (a shift and one LOP3 each, inline PTX) instead of masked ors (`decode8x2_t4_lut`'s
/// `SEL` in `cuda/decode_attention_mma.cuh`). Why: ptxas made 4 LOP3 and 2 shifts of each
/// interleave; NVRTC SASS of turbo4's pair loop (D 128, GQA 4): 633 -> 617 instructions per pair.
/// The same bits: bit-identical. On since session 51 with the other four pair-loop trims (measured
/// together: ADR 0023). 0 turns it off.
pub const MMA_VSEL: Flag = Flag {
    name: "MLXCEL_MMA_VSEL",
    default: true,
    doc: "tensor-core decode kernel: the pair table's V nibble interleave by bit selects (bit-identical; 0 = off)",
    slot: 74,
};

/// The CUDA kernels of the 4-bit turbo path also serve 2- and 3-bit turbo sides (turbo3-asym,
/// turbo2-asym, turbo3, turbo2): the tensor-core decode kernel (`KFMT` / `VFMT` 2 and 3 in
/// `cuda/decode_attention_mma.cu`: codes become fp16 mma operands by byte permutes over a
/// 4-entry table in two registers, `decode_pairs2` in `cuda/lowbit_decode.cuh`, the sign plane of
/// 3-bit sides applied after) and the fused encoders, in place too (`turbo_low_vals` in
/// `cuda/turbo_encode.cuh`). Off (0), they take the CUDA-core kernel (v3) and the op-by-op MLX
/// encoder (~15 ops per side, layer and step), slower than fp16. Why on: measured on an H100
/// in session 54 (`benchmarks/results/2026-12-05-h100-session54.md`, ADR 0024). The GPU tests
/// pass: the encoders are byte-exact against the reference at 4/3/2 bits, the in-place appends
/// match, and the parity bound holds (worst relative RMS 4.63e-4 for the asym modes, 6.99e-4 for
/// turbo3/turbo2, bound 1e-3). `bench attention` at 128K: turbo3-asym 283.2 -> 123.3 us
/// (0.64x -> 1.50x of MLX's fp16 SDPA), turbo3 333.0 -> 75.9 us (2.44x). End to end at 128K
/// every 2- and 3-bit mode decodes faster than fp16 (turbo3-asym 1.39x, turbo3 1.82x, turbo2
/// 1.91x); at 32K turbo3-asym went 0.63x -> 1.29x (device time per step).
pub const LOWBIT_CUDA: Flag = Flag {
    name: "MLXCEL_LOWBIT_CUDA",
    default: true,
    doc: "CUDA tensor-core decode and fused encoders for 2- and 3-bit turbo sides (turbo3/turbo2, -asym too); 0 = the CUDA-core kernel and MLX-op encoder (slower than fp16)",
    slot: 75,
};

/// The tensor-core kernel's 12-warp CTAs at head_dim 128 count one per SM when the split count
/// is sized to one wave (`mma_target_ctas` in kernels/decode_attention.rs), whatever their
/// shared memory would allow. Why: registers bound them. A 12-warp CTA of 81 or more registers
/// a thread takes 384 x 88 = 33,792 of an SM's 65,536, so a second cannot be resident, and
/// every D 128 build NVRTC compiles for sm_90 uses 121-159. Sized by shared memory alone, the
/// D 128 kernels with a 2- or 3-bit side and keys that are not fp16 counted 2 per SM:
/// symmetric turbo2 (82 KB) took 33 splits per KV head, 264 CTAs, two waves where one was
/// meant. Kernels whose sides are fp16, int8 or 4-bit, and fp16 keys with any values, need
/// more than half an SM's shared memory in 12-warp CTAs: unchanged (a unit test in
/// kernels/decode_attention.rs enumerates the formats). At head_dim 64 the count stays by
/// shared memory: there the builds use 79-101 registers (turbo2's 79 let two CTAs in, turbo3's
/// 84-98 one), which a constant cannot follow. Measured on an H100 (session 56, with the 2-bit
/// field table off): symmetric turbo2 at 32K 385.2 tok/s with it, 348.8 without. With the
/// table on (`MLXCEL_MMA_LUT_LOW`, the default) the symmetric turbo3 / turbo2 kernels' 64 KiB
/// table already keeps them to one CTA per SM, so this now changes only builds with the table
/// off. 0 = CTAs per SM from shared memory alone.
pub const MMA_WIDE_ONE_PER_SM: Flag = Flag {
    name: "MLXCEL_MMA_WIDE_ONE_PER_SM",
    default: true,
    doc: "tensor-core decode kernel: 12-warp CTAs at head_dim 128 count one per SM when sizing the splits to one wave (registers bound them; symmetric turbo2: 33 -> 16 splits; 0 = by shared memory alone)",
    slot: 76,
};

/// The tensor-core kernel decodes symmetric turbo3 / turbo2 sides (2- or 3-bit keys and values
/// of the same width) through a shared-memory table of 2-bit field bytes (`fill_lut2` and
/// `decode_pairs2_lut` in `cuda/lowbit_decode.cuh`; 64 KiB, K's and V's entries 16 times per
/// row) instead of byte permutes in registers: one address permute and one 8-byte load per two
/// element pairs instead of ~7.5 instructions. Why: on an H100 (session 54) symmetric turbo3
/// and turbo2 attention ran at 47% and 33% of the copy roofline at 128K, their loop 1081 / 807
/// SASS instructions per pair of tiles against turbo4's 582 (NVRTC, D 128, GQA 4). The entries
/// come from the same permutes: on an H100 (session 56) 45 bit-identity checks passed (turbo3,
/// turbo2, turbo3-asym; D 64 and 128; GQA 4 and 7) and the parity suite with it on (70 cases,
/// worst 6.71e-4). Attention at 128K (Llama-3-8B layer): turbo3 78.0 -> 58.5 us, turbo2
/// 63.3 -> 47.0 us; end to end at 128K (two rounds, same card) turbo3 230.4 -> 261.4 tok/s,
/// turbo2 250.9 -> 281.1 (fp16 126.2), at 32K turbo3 362.9 -> 387.3, turbo2 385.2 -> 399.4
/// (ADR 0025). Default on; 0 = the register permutes.
pub const MMA_LUT_LOW: Flag = Flag {
    name: "MLXCEL_MMA_LUT_LOW",
    default: true,
    doc: "tensor-core decode kernel: symmetric turbo3 / turbo2 sides decode through a shared-memory table of 2-bit field bytes (0 = byte permutes in registers)",
    slot: 77,
};

/// The tensor-core decode kernel's softmax computes exp2 with denormal results flushed to zero
/// (`FTZ` in `cuda/decode_attention_mma.cu`): CUDA's exp2f wraps the hardware exponential in
/// a range check and two predicated multiplies so that results below 2^-126 stay denormal,
/// three instructions for each of a tile's five exponentials. Weights that small cannot reach
/// the output (P is packed to fp16, whose smallest subnormal is 2^-24, and the running sums
/// hold a term >= 1), so the outputs are the same wherever no weight is that small. Why: the
/// kernel is issue-bound (ncu, sessions 14-17); NVRTC SASS of the turbo4 D=128 GQA-4 loop with
/// 12-warp CTAs: 399 -> 384 instructions per tile. On the H200 (session 17, call 2): 288
/// bit-identity checks (turbo4, turbo4-asym, int8, fp16), greedy tokens equal, ncu at 128K
/// 49.12 -> 48.54 us, turbo4 device time per step 4.42 -> 4.41 ms at 128K and 2.96 -> 2.91 ms
/// at 32K (two interleaved rounds each). A small gain: default on; 0 = exp2f.
pub const MMA_FTZ: Flag = Flag {
    name: "MLXCEL_MMA_FTZ",
    default: true,
    doc: "tensor-core decode kernel: softmax exp2 with denormals flushed (0 = exp2f with its denormal fix-up)",
    slot: 32,
};

/// Boundary layers in turbo modes (`N` at each end, or `FIRST,LAST`; see
/// [`kv_boundary_layers`]).
pub const KV_BOUNDARY_LAYERS: &str = "MLXCEL_KV_BOUNDARY_LAYERS";

/// The layers kept as boundary layers in turbo modes as `MLXCEL_KV_BOUNDARY_LAYERS` sets them;
/// `None` when unset (each mode's default, `kv::mode::default_boundary_layers`). A value that
/// does not parse is an error rather than the default: the boundary layers change the cache's
/// quality and size.
pub fn kv_boundary_layers() -> Result<Option<BoundaryLayers>> {
    parsed_var(KV_BOUNDARY_LAYERS, BoundaryLayers::parse)
}

/// The value of the variable `name` through `parse`: `None` when unset or empty, an error
/// naming the variable (and `parse`'s message, which names the value) when it does not parse.
fn parsed_var<T>(
    name: &'static str,
    parse: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Option<T>> {
    let v = match std::env::var(name) {
        Ok(v) => v,
        Err(std::env::VarError::NotPresent) => return Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => v.to_string_lossy().into_owned(),
    };
    if v.trim().is_empty() {
        return Ok(None);
    }
    parse(&v).map(Some).map_err(|e| Error::invalid(name, e))
}

/// [`parsed_var`] of a whole number.
fn whole_number_var(name: &'static str) -> Result<Option<u64>> {
    parsed_var(name, |v| {
        v.trim()
            .parse()
            .map_err(|_| format!("expected a whole number (e.g. 2), got {v:?}"))
    })
}

/// The boundary layers' cache mode in turbo modes (e.g. `fp16+turbo4`, `fp16+int8`, `fp16`,
/// `int8r`; see `kv::mode::check_boundary_mode`). Read by the CLI when `--kv-boundary-type` is
/// not given; unset, each mode takes `kv::mode::default_boundary_mode`.
pub const KV_BOUNDARY_TYPE: &str = "MLXCEL_KV_BOUNDARY_TYPE";

/// Offset added to the turbo rotation seeds (numeric, default 0): lets experiments measure
/// how much a result depends on the particular random rotation.
pub const TURBO_SEED: &str = "MLXCEL_TURBO_SEED";

/// The value of `MLXCEL_TURBO_SEED`, or 0; an error when it is set to something other than a
/// whole number (the seed changes every turbo cache's rotation, so it is never guessed).
pub fn turbo_seed_offset() -> Result<u64> {
    Ok(whole_number_var(TURBO_SEED)?.unwrap_or(0))
}

/// Decode steps to capture for `ncu --profile-from-start off` (`first,count`, e.g. `8,2`):
/// the generation loop calls `cuProfilerStart` before building step `first` and
/// `cuProfilerStop` after step `first + count - 1` is queued. Unset: no profiler calls.
pub const CUDA_PROFILE_STEPS: &str = "MLXCEL_CUDA_PROFILE_STEPS";

/// The `(first, count)` of `MLXCEL_CUDA_PROFILE_STEPS`, if set and valid.
pub fn cuda_profile_steps() -> Option<(usize, usize)> {
    let v = std::env::var(CUDA_PROFILE_STEPS).ok()?;
    let (a, b) = v.trim().split_once(',')?;
    let (first, count) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (count > 0).then_some((first, count))
}

/// The `MLXCEL_*` variables other than the boolean flags of [`ALL`]: read at run time by
/// mlxcel ([`var`] and direct reads), by its build script (`MLXCEL_MLX_BACKEND`,
/// `MLXCEL_CACHE_DIR`, `MLXCEL_OPENBLAS`: set for a build, often still exported when the
/// binary runs), by its GPU tests and by the `benchmarks/gpu` scripts. With [`ALL`], what
/// [`unread_vars`] accepts; a test checks that every `MLXCEL_*` name in the sources is one of
/// the two.
pub const OTHER_VARS: &[&str] = &[
    // Declared in mlxcel-core, by the code that reads them.
    crate::kernels::decode_attention::TIMING_PROBE,
    crate::kernels::decode_attention::FOLD_MAX_CONTEXT,
    crate::kernels::decode_attention::FOLD_SPLIT_CAP_FILL,
    crate::kernels::quantized_gemv::SCHEDULE_VAR,
    CUDA_PROFILE_STEPS,
    KV_BOUNDARY_LAYERS,
    KV_BOUNDARY_TYPE,
    QMV_GBAR_AT_VAR,
    QMV_NOMATH_LEVEL_VAR,
    TURBO_SEED,
    // Read by crates built on this one (mlxcel-models' STEP_AB and STEP_AB_BLOCK, the CLI's
    // host_profile::ENV and `serve --api-key`'s MLXCEL_API_KEY), by the build script, by tests
    // and by the benchmark scripts.
    "MLXCEL_API_KEY",
    "MLXCEL_BIN",
    "MLXCEL_CACHE_DIR",
    "MLXCEL_HOST_PROFILE",
    "MLXCEL_KERNEL_DIR",
    "MLXCEL_LOG",
    "MLXCEL_MLX_BACKEND",
    "MLXCEL_OPENBLAS",
    "MLXCEL_PARITY_FLAGS",
    "MLXCEL_PARITY_MODES",
    "MLXCEL_QWEN25_05B_GGUF",
    "MLXCEL_SMOLLM2_GGUF",
    "MLXCEL_STEP_AB",
    "MLXCEL_STEP_AB_BLOCK",
    "MLXCEL_TEST_SEED",
];

/// Flags that were measured on the H200, found no faster than the default, and removed with
/// their kernel code (name, what it did and what it measured). Why keep the names: an A/B
/// script or a shell that still sets one should hear that it now changes nothing, rather than
/// silently run the default. The full measurements are in `benchmarks/kernel-notes/NOTES.md`
/// and the session results.
pub const RETIRED: &[(&str, &str)] = &[
    (
        "MLXCEL_MMA_LUT_ONE",
        "one 32-KiB pair table for K and V; session 11: 128K 80.9 vs 80.3 us per call, slower at 4K/32K; removed in session 50",
    ),
    (
        "MLXCEL_MMA_PIPE",
        "the next tile's K phase beside this tile's V phase; session 15: ncu 128K 50.8 -> 54.8 us per call; removed in session 50",
    ),
    (
        "MLXCEL_MMA_SACC2",
        "q K^T in two accumulator chains; session 17: 128K 64.9 -> 68.4 us per call; removed in session 50",
    ),
    (
        "MLXCEL_MMA_WIDE16",
        "16-warp CTAs; session 18: 128K step 4.41 -> 4.40 ms, 32K 2.91 -> 2.93; removed in session 50",
    ),
    (
        "MLXCEL_MMA_REFILL_EARLY",
        "the ring refilled before each tile's wait; session 26: 128K 43.78 -> 44.72 us per call; removed in session 50",
    ),
    (
        "MLXCEL_MMA_COMBINE_SWZ",
        "the CTA combine's partials stored without bank conflicts; session 46: 128K step 3.134 -> 3.130 ms, 32K 2.152 -> 2.159; removed in session 50",
    ),
    (
        "MLXCEL_QMV_RFIRST",
        "the residual-adding GEMVs' residual loaded in the prologue; session 21 in situ at 32K: o_proj 7.23 -> 7.78 us, down 14.53 -> 14.69; removed in session 50",
    ),
    (
        "MLXCEL_MMA_QFIRST_ASYM",
        "turbo4-asym's first ring copies before the prologue's barrier; session 47: 128K step 4.379 -> 4.393 ms, 32K 2.387 -> 2.373; removed in session 50",
    ),
    (
        "MLXCEL_MMA_W16",
        "symmetric turbo3 / turbo2 at head_dim 128 in 16-warp CTAs; session 57 (H200): 128K step turbo2 3.028 -> 3.050 ms, turbo3 3.259 -> 3.249, bench attention at 32K 28-32 -> 36-43 us; removed in session 57",
    ),
];

/// One line per `MLXCEL_*` name in `names` that mlxcel does not read: a retired flag (with
/// what it was) or an unknown name (with the closest known one, if any is close), so that a
/// typo in an A/B switch does not silently measure the default twice. Other names are ignored.
pub fn unread_vars<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Vec<String> {
    let known = || ALL.iter().map(|f| f.name).chain(OTHER_VARS.iter().copied());
    let mut out = Vec::new();
    for name in names {
        let name = name.as_ref();
        if !name.starts_with("MLXCEL_") || known().any(|k| k == name) {
            continue;
        }
        if let Some((_, why)) = RETIRED.iter().find(|(n, _)| *n == name) {
            out.push(format!(
                "{name} is set but no longer exists ({why}); it changes nothing"
            ));
            continue;
        }
        // A suggestion only within a third of the name's own part (one edit at least, three
        // at most): a short unknown name is about as close to many names as to any one.
        let room = (name.len() - "MLXCEL_".len()).div_ceil(3).clamp(1, 3);
        let closest = known()
            .map(|k| (strsim::levenshtein(name, k), k))
            .min()
            .filter(|(dist, _)| *dist <= room);
        out.push(match closest {
            Some((_, k)) => {
                format!("{name} is set but mlxcel does not read it (did you mean {k}?)")
            }
            None => {
                format!("{name} is set but mlxcel does not read it (`mlxcel info` lists the flags)")
            }
        });
    }
    out
}

/// The values a boolean flag reads as off; any other value reads as on.
const OFF_WORDS: [&str; 4] = ["0", "false", "off", "no"];
/// The values a boolean flag reads as on without a warning.
const ON_WORDS: [&str; 4] = ["1", "true", "on", "yes"];

/// A warning for each boolean flag of [`ALL`] among `vars` (name, value) whose value is neither
/// an on word nor an off word (e.g. `MLXCEL_FUSED_DECODE=disable`, which reads as on): an A/B
/// would otherwise measure the default on both sides without a word.
pub fn unclear_flag_values<N: AsRef<str>, V: AsRef<str>>(
    vars: impl IntoIterator<Item = (N, V)>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in vars {
        let (name, value) = (name.as_ref(), value.as_ref());
        if find(name).is_none() {
            continue;
        }
        let word = value.trim().to_ascii_lowercase();
        if !OFF_WORDS.contains(&word.as_str()) && !ON_WORDS.contains(&word.as_str()) {
            out.push(format!(
                "{name}={value:?} reads as on: a switch takes 1/true/on/yes or 0/false/off/no"
            ));
        }
    }
    out
}

/// [`unclear_flag_values`] over the process environment.
pub fn unclear_env_flag_values() -> Vec<String> {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect();
    vars.sort();
    unclear_flag_values(vars)
}

/// [`unread_vars`] over the process environment.
pub fn unread_env_vars() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    names.sort();
    unread_vars(names)
}

/// All boolean flags, for `--help` texts and `mlxcel info`.
pub const ALL: &[Flag] = &[
    ROTATED_SDPA,
    FUSED_DECODE,
    FUSED_FP16,
    FUSED_MMA,
    FUSED_ENCODE,
    INPLACE_APPEND,
    PIPELINED_DECODE,
    SUBMIT_THREAD,
    DEVICE_CLOCK,
    BUILD_PROFILE,
    FUSED_QMV,
    QMV_RING,
    MMA_SWIZZLE,
    MMA_LUT_K,
    MMA_LUT_V,
    MMA_LUT_IMM,
    KERNEL_PRIMITIVE_CACHE,
    KERNEL_DISK_CACHE,
    KERNEL_FILES,
    FUSED_ROPE,
    FUSED_KV_APPEND,
    FOLD_MERGE,
    FOLD_SPLIT_CAP,
    FOLD_32,
    LIFT_GRAPH_BYTES,
    MERGE_WARP,
    FUSED_NORM,
    QKV_PARTS,
    QKV_ENCODE,
    INT8R_FUSED,
    MMA_HOIST,
    MMA_RSALL,
    MMA_WIDE,
    MMA_FTZ,
    MMA_QSWZ,
    MMA_FILLW,
    QMV_EARLY,
    MMA_QFIRST,
    MMA_QFIRST1,
    MMA_ONE_WAVE,
    FP16_INPLACE_APPEND,
    QKV_ENC_TAIL,
    MMA_KT,
    MMA_PAIR,
    MMA_LIGHT_LAST,
    ROPE_TABLE,
    MMA_QFIRST2,
    MMA_FCOPY1,
    MMA_VZERO,
    MMA_COMBINE_W1,
    MMA_WIDE_PLAIN,
    MMA_DEEP_PLAIN,
    MMA_LAZY_RESCALE,
    MMA_MASK_LAST,
    MMA_VSEL,
    LOWBIT_CUDA,
    MMA_WIDE_ONE_PER_SM,
    MMA_LUT_LOW,
    QMV_POST,
    QMV_TILED,
    QMV_OWN_CHUNKS,
    QMV_PAIR_BLOCKS,
    QMV_RING_TABLES,
    QMV_XSUM_STAGE,
    QMV_GBAR_PROBE,
    QMV_NOMATH_PROBE,
    QMV_ALIGN128,
    QMV_NORM_LATE,
    FOLD_TAIL,
    MERGE_SIGNS_FIRST,
    QKV_CLUSTER,
    FAST_ARGMAX,
    ATTN_APPEND,
    FAST_EMBED,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag has its own slot: two flags sharing one would return each other's value.
    #[test]
    fn every_flag_is_listed_and_has_its_own_slot() {
        let declared = include_str!("flags.rs")
            .matches(concat!(": Flag = ", "Flag {"))
            .count();
        assert_eq!(ALL.len(), declared, "ALL must list every flag");
        let mut seen = [false; SLOTS];
        for f in ALL {
            // The last slot belongs to `values_are_kept_until_reload`.
            assert!(
                f.slot < SLOTS - 1,
                "{}: slot {} >= {}",
                f.name,
                f.slot,
                SLOTS - 1
            );
            assert!(!seen[f.slot], "{}: slot {} taken twice", f.name, f.slot);
            seen[f.slot] = true;
        }
    }

    /// Known names pass; a retired flag says what it was; a typo names the closest flag; a
    /// name far from every known one points at `mlxcel info`; non-mlxcel names are ignored.
    #[test]
    fn unclear_switch_values_are_named_and_clear_ones_are_not() {
        let out = unclear_flag_values([
            ("MLXCEL_FUSED_DECODE", "disable"),
            ("MLXCEL_FOLD_MERGE", " Off "),
            ("MLXCEL_MMA_FTZ", "YES"),
            ("MLXCEL_KV_BOUNDARY_LAYERS", "abc"),
            ("PATH", "/bin"),
            ("MLXCEL_INPLACE_APPEND", ""),
        ]);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            out[0].starts_with("MLXCEL_FUSED_DECODE=\"disable\" reads as on"),
            "{out:?}"
        );
        assert!(
            out[1].starts_with("MLXCEL_INPLACE_APPEND=\"\" reads as on"),
            "{out:?}"
        );
    }

    #[test]
    fn numeric_variables_refuse_what_is_not_a_whole_number() {
        // Process-wide environment: names only this test sets.
        let name = "MLXCEL_TEST_WHOLE_NUMBER_VAR";
        std::env::set_var(name, " 3 ");
        assert_eq!(whole_number_var(name).unwrap(), Some(3));
        std::env::set_var(name, "");
        assert_eq!(whole_number_var(name).unwrap(), None);
        std::env::set_var(name, "two");
        let e = whole_number_var(name).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("\"two\""), "{e}");
        std::env::remove_var(name);
        assert_eq!(whole_number_var(name).unwrap(), None);
    }

    #[test]
    fn unread_vars_are_named_with_the_reason() {
        let out = unread_vars([
            "MLXCEL_FUSED_DECODE",
            "MLXCEL_STEP_AB",
            "PATH",
            "MLXCEL_MMA_PIPE",
            "MLXCEL_FUSED_DECOD",
            "MLXCEL_SOMETHING_ELSE_ENTIRELY",
            "MLXCEL_TL",
        ]);
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(
            out[0].starts_with("MLXCEL_MMA_PIPE is set but no longer exists ("),
            "{}",
            out[0]
        );
        assert!(out[0].contains("session 15"), "{}", out[0]);
        assert!(
            out[1].contains("did you mean MLXCEL_FUSED_DECODE?"),
            "{}",
            out[1]
        );
        assert!(
            out[2].contains("`mlxcel info` lists the flags"),
            "{}",
            out[2]
        );
        // Two letters, three edits from MLXCEL_BIN: too short a name for a suggestion.
        assert!(
            out[3].contains("`mlxcel info` lists the flags"),
            "{}",
            out[3]
        );
    }

    /// A retired name is not also a live flag or variable (it would both work and warn).
    #[test]
    fn retired_names_are_not_live() {
        for (name, why) in RETIRED {
            assert!(find(name).is_none(), "{name} is retired and a flag");
            assert!(
                !OTHER_VARS.contains(name),
                "{name} is retired and a variable"
            );
            assert!(name.starts_with("MLXCEL_") && !why.is_empty());
        }
    }

    /// Every `MLXCEL_*` name in the workspace's Rust sources is a flag, one of [`OTHER_VARS`],
    /// a retired flag, or one of the few names that are not run-time variables (set by the
    /// build script for `env!`, or made up by tests). Why: a variable added without an entry
    /// would make every run that sets it warn that it is not read.
    #[test]
    fn every_name_in_the_sources_is_known() {
        const NOT_RUNTIME: &[&str] = &[
            // Set by build.rs for env!.
            "MLXCEL_MLX_LINKED_FROM",
            "MLXCEL_MLX_PINNED_VERSION",
            // The timeline probe's output tags (`MLXCEL_TL ...` warp lines, `MLXCEL_TLF ...`
            // fold lines), not variables.
            "MLXCEL_TL",
            "MLXCEL_TLF",
            // Made up by tests.
            "MLXCEL_NO_SUCH_FLAG",
            "MLXCEL_TEST_KEPT_FLAG",
            "MLXCEL_TEST_KEPT_VAR",
            "MLXCEL_TEST_WHOLE_NUMBER_VAR",
            "MLXCEL_FUSED_DECOD",
            "MLXCEL_SOMETHING_ELSE_ENTIRELY",
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for krate in ["mlxcel-core", "mlxcel-models", "mlxcel-cli"] {
            let mut dirs = vec![root.join(krate)];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(&dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        files.push(path);
                    }
                }
            }
        }
        assert!(files.len() > 20, "found only {} source files", files.len());
        let mut unknown = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            // Names inside string literals: a quote, then MLXCEL_ and [A-Z0-9_]+.
            for (at, _) in text.match_indices("\"MLXCEL_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || *ch == '_')
                    .collect();
                if name.ends_with('_') {
                    continue; // a prefix in prose or a format string, not a name
                }
                let listed = find(&name).is_some()
                    || OTHER_VARS.contains(&name.as_str())
                    || RETIRED.iter().any(|(n, _)| *n == name)
                    || NOT_RUNTIME.contains(&name.as_str());
                if !listed {
                    unknown.push(format!("{} in {}", name, file.display()));
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "add to OTHER_VARS (or ALL): {unknown:?}"
        );
    }

    /// Values are kept after the first read and read again after `reload`.
    #[test]
    fn values_are_kept_until_reload() {
        let flag = Flag {
            name: "MLXCEL_TEST_KEPT_FLAG",
            default: true,
            doc: "",
            slot: SLOTS - 1,
        };
        const VAR: &str = "MLXCEL_TEST_KEPT_VAR";
        std::env::remove_var(flag.name);
        std::env::remove_var(VAR);
        reload();
        assert!(flag.enabled());
        assert_eq!(var(VAR), None);
        std::env::set_var(flag.name, "off");
        std::env::set_var(VAR, "ring:4:4");
        assert!(flag.enabled(), "kept until reload");
        assert_eq!(var(VAR), None, "kept until reload");
        reload();
        assert!(!flag.enabled());
        assert_eq!(var(VAR).as_deref(), Some("ring:4:4"));
        std::env::remove_var(flag.name);
        std::env::remove_var(VAR);
        reload();
        assert!(flag.enabled());
    }
}
