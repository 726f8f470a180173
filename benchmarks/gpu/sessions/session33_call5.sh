#!/usr/bin/env bash
# Session 33's fifth device call (H200, ~3 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_argmax):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call5.sh
# Call 4: MLXCEL_FAST_ARGMAX's kernel 4.61 us in situ, device -0.020 / -0.013 ms per step, but
# gpu_argmax failed on NaN: MLX 0.32.4 returns the first NaN's index (the kernel skipped NaNs).
# Fixed (NaN is the largest key); the logits passed without a reshape (one MLX op fewer).
# 1. gpu_argmax: 180 rows equal to MLX's argmax (NaN first, NaN at 0, all -inf with and
#    without a NaN, ties, signed zeros, inf);
# 2. in-process A/Bs at 32K (turbo4, fp16: host and device) and 128K (turbo4).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c5
BUDGET=${BUDGET:-240}
gpu_test gpu_argmax 120 "argmax:|panicked|left|right"
e2e_setup "$BUDGET" 90
export TOKENS=128
for kv in turbo4 fp16; do timed 40 ab-argmax "$kv" 32768 MLXCEL_STEP_AB=MLXCEL_FAST_ARGMAX; done
timed 50 ab-argmax turbo4 131072 MLXCEL_STEP_AB=MLXCEL_FAST_ARGMAX
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
