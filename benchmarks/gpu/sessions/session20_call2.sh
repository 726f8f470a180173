#!/usr/bin/env bash
# Session 20's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session20_call2.sh
# Call 1's source counters: the o_proj GEMV spent 28% of its stall samples on x's first load,
# which left behind the ring's first weight copies (3 KiB per warp: the whole matrix in flight
# across the GPU); the turbo4 attention call at 4K spent 9% on the loop's first tile wait and
# 10% on q's loads. Two orderings, both bit-identical by construction, written after call 1:
# - MLXCEL_QMV_EARLY (redefined): x's loads (and the folded norm weight's) and the scale loads
#   leave before the ring's first copies, held in registers, stored after them;
# - MLXCEL_MMA_QFIRST: each warp's first ring copies leave right after its own prologue loads
#   (q, RoPE's frequencies, the rotation's signs, or the fill's codebook) instead of after the
#   prologue's barrier.
# Predictions: EARLY -0.5 to -1.5 us per GEMV launch (o_proj and down most: x waited behind
# the copies); QFIRST -0.3 to -1 us per attention call (at most the first tile's exposed wait).
# 1. bit identity: gpu_quantized_gemv's EARLY test (50 checks; ~3 min of JIT compiles, in the
#    background while 2-3 run) and gpu_fused_decode's QFIRST test (48 checks);
# 2. ncu sweeps of the turbo4 call (every launch, medians) at 4K, 32K, 128K: default, QFIRST;
# 3. in-situ kernel times at 32K (ncu_e2e.sh, turbo4, 2 steps): both off, both on.
# The end-to-end A/B is call 3 (session20_call3.sh).
# CPU dry run: NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c2
bg_test gemv gpu_quantized_gemv 330 "early GEMV prologue|worst" early_prologue_loads
gpu_test gpu_fused_decode 150 "bit-identity checks" ring_copies_after_the_prologue
sweep_best default MLXCEL_MMA_QFIRST=0 qfirst MLXCEL_MMA_QFIRST=1
bg_wait
insitu_flags MLXCEL_QMV_EARLY MLXCEL_MMA_QFIRST
finish_call
