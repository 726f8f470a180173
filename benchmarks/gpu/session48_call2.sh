#!/usr/bin/env bash
# Session 48, second device call (H200, ~6 min): the ring's early tiles with paired loops.
# QFIRST1 (one tile before the prologue's barrier) was measured in session 21, before the paired
# loop, whose first wait needs two tiles. MLXCEL_MMA_QFIRST2 (new: two tiles early) and
# MLXCEL_MMA_QFIRST (existing: all STAGES - 1 early) as step A/Bs for turbo4 at 128K and 32K
# (prediction for QFIRST2: -0.01 to -0.04 ms per step, the first pair ~1-2 us earlier in each of
# 28 launches), the timeline at 32K with QFIRST2 (first pair landed vs the barrier), then both
# bit-identity tests of QFIRST2 (the attention launch: GQA 1-8, D 64/128, lengths 1-4097; the
# attention append: short prefills where the new position is among a warp's first tiles).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session48_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s48c2
step_ab ab-qfirst2 MLXCEL_MMA_QFIRST2 turbo4 131072
step_ab ab-qfirst2 MLXCEL_MMA_QFIRST2 turbo4 32768
step_ab ab-qfirst MLXCEL_MMA_QFIRST turbo4 131072
step_ab ab-qfirst MLXCEL_MMA_QFIRST turbo4 32768
timeline tl-qfirst2 turbo4 32768 MLXCEL_MMA_QFIRST2=1
timeline tl-default turbo4 32768
gpu_test gpu_fused_decode 200 "bit-identity checks" first_two_ring_tiles
gpu_test gpu_attention_append 200 "steps" first_two_ring_tiles
finish_call
