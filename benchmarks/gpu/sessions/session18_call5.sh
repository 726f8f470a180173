#!/usr/bin/env bash
# Session 18's fifth device call (H200, ~7 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session18_call5.sh
# The turbo4 attention call's prologue (call 4: a third of the stall samples at 32K; ~9 us
# per call that does not scale with the context):
#   MLXCEL_MMA_QSWZ: q's staging swizzled (the fragment reads had every lane of a phase in
#     one bank group: ~7% of the samples). NVRTC SASS: the loop 381 -> 393 instructions per
#     tile (ptxas moved registers), so 128K may lose what 32K gains.
#   MLXCEL_MMA_EARLY: the ring's first copies before the prologue (call 3's single ncu launch
#     had it slower, within the spread). With QSWZ: 385 instructions per tile.
# Prediction: QSWZ -1 us per call; EARLY -0.5 to -1 us; at 128K +-1 us from the loop.
# 1. bit identity of both against the default (gpu_fused_decode);
# 2. ncu durations of every launch at 4K, 32K, 128K (bench attention, 5 iterations), for
#    default / QSWZ / EARLY / both: medians per context;
# 3. the fastest configuration at 32K + 128K (if not the default) against the default, end
#    to end, turbo4, two interleaved rounds at 32K and 128K.
# (Rewritten after the call with the e2e_run.sh helpers it led to (ncu_sweep, sweep_medians,
# sweep_best, ab_if_faster): the same commands. Since then MLXCEL_MMA_EARLY is gone
# and the test is swizzled_q_staging_is_bit_identical (QSWZ only).)
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c5
gpu_test gpu_fused_decode 150 "bit-identity checks" swizzled_q_and_early
declare -A CFG=([default]="MLXCEL_MMA_QSWZ=0 MLXCEL_MMA_EARLY=0" [qswz]="MLXCEL_MMA_QSWZ=1 MLXCEL_MMA_EARLY=0"
  [early]="MLXCEL_MMA_QSWZ=0 MLXCEL_MMA_EARLY=1" [both]="MLXCEL_MMA_QSWZ=1 MLXCEL_MMA_EARLY=1")
best=$(sweep_best default "${CFG[default]}" qswz "${CFG[qswz]}" early "${CFG[early]}" both "${CFG[both]}")
e2e_setup 540 80
ab_if_faster "$best" "${CFG[$best]}" "${CFG[default]}"
finish_call
