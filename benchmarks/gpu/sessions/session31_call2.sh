#!/usr/bin/env bash
# Session 31's second device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session31_call2.sh
# The fold's new tail (MLXCEL_FOLD_TAIL, written in session 31, never run on a GPU): one
# acquire-release ticket without fences and the last CTA's merge in one round trip.
# 1. The fold's bit-identity test (180 checks) with the new tail.
# 2. bench attention, turbo4 at 4K / 32K / 128K: the separate merge against the fold, with
#    the old tail (MLXCEL_FOLD_TAIL=0) and the new one (per-call time of attention + merge).
# 3. In situ at 32K, three interleaved rounds: turbo4 (separate merge), turbo4 + fold (new
#    tail), turbo4 + fold (old tail); one fp16 run; then 128K: turbo4 and turbo4 + fold.
# Prediction: the new tail saves 1.5-2.5 us per layer of the fold's +4 us (device per 32K
# step: fold old 2.63, new 2.56-2.59 ms; separate 2.52); not bit-different.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s31c2
gpu_test gpu_fused_decode 200 "fold" folded_merge
MLXCEL_FOLD_TAIL=0 bench_ab MLXCEL_FOLD_MERGE foldold
bench_ab MLXCEL_FOLD_MERGE fold
e2e_setup 540 120
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
interleaved 32768 45 "base turbo4" "fold turbo4 MLXCEL_FOLD_MERGE=1" "foldold turbo4 MLXCEL_FOLD_MERGE=1 MLXCEL_FOLD_TAIL=0"
timed 45 r1-base fp16 32768
FILL=random-kv timed 50 r1-base turbo4 131072
FILL=random-kv timed 50 r1-fold turbo4 131072 MLXCEL_FOLD_MERGE=1
echo "done at t=${SECONDS}s"
