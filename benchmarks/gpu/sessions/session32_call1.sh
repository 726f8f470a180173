#!/usr/bin/env bash
# Session 32's first device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session32_call1.sh
# In-process A/Bs (MLXCEL_STEP_AB, blocks of 8 steps, 128 tokens: 49 / 48 steps per arm) of
# bit-identical flags that trade host time for device time, at 32K:
#   MLXCEL_KERNEL_PRIMITIVE_CACHE (host), MLXCEL_QKV_ENCODE (the append folded into the qkv
#   GEMV: -28 launches), MLXCEL_QKV_PARTS, MLXCEL_MERGE_WARP (device);
# the fold's context limit: turbo4 at 48K and 64K with the limit lifted (MLXCEL_FOLD_MAX_CONTEXT
# = 1000000) and the fold A/B'd, to place MLXCEL_FOLD_MAX_CONTEXT's default (65536 since
# session 31) where the fold stops paying on this machine;
# then the 128K row of the table in one call: fp16, turbo4, turbo4-asym (one run each).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s32c1
e2e_setup 540 90
export TOKENS=128
for flag in MLXCEL_KERNEL_PRIMITIVE_CACHE MLXCEL_QKV_ENCODE MLXCEL_QKV_PARTS MLXCEL_MERGE_WARP; do
  timed 40 "ab-${flag#MLXCEL_}" turbo4 32768 "MLXCEL_STEP_AB=$flag"
done
for ctx in 49152 65536; do
  timed 45 ab-fold turbo4 "$ctx" MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE MLXCEL_FOLD_MAX_CONTEXT=1000000
done
export TOKENS=64
timed 50 base fp16 131072
timed 50 base turbo4 131072
timed 50 base turbo4-asym 131072
for f in "$R"/ab-*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
