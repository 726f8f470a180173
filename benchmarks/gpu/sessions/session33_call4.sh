#!/usr/bin/env bash
# Session 33's fourth device call (H200, ~7 min; timeout_s 480), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_argmax):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call4.sh
# MLXCEL_FAST_ARGMAX (new, off): the greedy token from mlxcel's many-CTA argmax kernel instead
# of MLX's one-CTA argmax (22.5 us per step in situ, session 32). Prediction: the kernel ~3-4
# us in situ, -0.018 ms of device time per step in every mode.
# 1. gpu_argmax: 144 rows (6 lengths x 8 cases x fp16/bf16/f32) equal to MLX's argmax;
# 2. in situ (ncu, two decode steps, L2 kept) at 32K with the flag on: the kernel's time;
# 3. in-process A/Bs (MLXCEL_STEP_AB) at 32K, turbo4 and fp16;
# 4. the table with this session's defaults (MLXCEL_QKV_CLUSTER on): fp16 and turbo4 at 32K
#    and 128K, one run each, interleaved by context.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c4
BUDGET=${BUDGET:-420}
gpu_test gpu_argmax 120 "argmax:|panicked"
echo "== in situ, fast argmax on"
MLXCEL_FAST_ARGMAX=1 NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-a1" timeout 150 \
  bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|argmax|arg_reduce|error" | head -5
gzip -f "$R"/insitu-a1/ncu-e2e/*.csv 2> /dev/null
python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-a1/ncu-e2e/*.csv.gz --grep arg 2>&1 | head -4
e2e_setup "$BUDGET" 90
export TOKENS=128
for kv in turbo4 fp16; do timed 40 ab-argmax "$kv" 32768 MLXCEL_STEP_AB=MLXCEL_FAST_ARGMAX; done
export TOKENS=64
for ctx in 32768 131072; do
  timed 45 base fp16 "$ctx"
  timed 45 base turbo4 "$ctx"
done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
