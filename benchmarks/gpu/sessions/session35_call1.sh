#!/usr/bin/env bash
# Session 35's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_attention_append, tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session35_call1.sh
# 1. The review mend of session 34's D1 (the four pair targets reserve through one helper,
#    `PairTarget::reserve`; host code only, GPU-only path): gpu_attention_append (60 steps)
#    and gpu_qkv_encode (72 steps) must stay bit-identical.
# 2. The merge fold at 128K (off there by default: MLXCEL_FOLD_MAX_CONTEXT=65536) in one
#    process: MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE with the limit lifted (the fold and the separate
#    merge give the same bits). Prediction (session 31's 3.770 -> 3.753 ms step, session 32's
#    +0.03 ms of device at 48-64K): device +0.00 to +0.04 ms, host -0.1 to -0.2 ms.
# 3. The 32K row, three interleaved rounds of fp16 and turbo4 (session 34 had one run per cell).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s35c1
BUDGET=${BUDGET:-530}
gpu_test gpu_attention_append 200 "attention append:|differs|panicked"
gpu_test gpu_qkv_encode 200 "steps|differs|panicked"
e2e_setup "$BUDGET" 90
export TOKENS=128
timed 60 "ab-fold" turbo4 131072 MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE MLXCEL_FOLD_MAX_CONTEXT=1000000
export TOKENS=64
interleaved 32768 35 "fp16 fp16" "turbo4 turbo4"
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
