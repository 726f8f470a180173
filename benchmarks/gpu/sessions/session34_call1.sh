#!/usr/bin/env bash
# Session 34's first device call (H200, ~7 min; timeout_s 480), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_attention_append):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session34_call1.sh
# MLXCEL_ATTN_APPEND (new, off): the step's turbo4 K+V encoded by the attention launch (the
# CTA whose split holds the new position, in its prologue) instead of the qkv GEMV's tail.
# Prediction: the qkv + append launch 11.3 -> ~8.6 us in situ (its encode tail gone), the
# attention call +0 to +1 us; device time per turbo4 step -0.04 to -0.08 ms at 32K.
# 1. gpu_attention_append: 15 steps, output and cache bytes bit-identical to the separate
#    append + attention (a failure stops the call);
# 2. greedy tokens off / on at 1K (turbo4);
# 3. in situ (ncu, two decode steps, L2 kept) at 32K with the flag on: qkv and attention;
# 4. in-process A/Bs (MLXCEL_STEP_AB) at 32K (twice) and 128K, turbo4.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s34c1
BUDGET=${BUDGET:-420}
gpu_test gpu_attention_append 150 "attention append:|differs|panicked"
if ! grep -q "test result: ok" "$R/test-gpu_attention_append.txt"; then
  tail -30 "$R/test-gpu_attention_append.txt"; echo "parity failed: stopping"; exit 1
fi
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_ATTN_APPEND turbo4 tok
echo "== in situ, attention append on"
MLXCEL_ATTN_APPEND=1 NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-a1" timeout 150 \
  bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|error" | head -3
gzip -f "$R"/insitu-a1/ncu-e2e/*.csv 2> /dev/null
for g in qkv attention; do python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-a1/ncu-e2e/*.csv.gz --grep "$g" 2>&1 | head -5; done
export TOKENS=128
for i in 1 2; do timed 40 "ab$i-app" turbo4 32768 MLXCEL_STEP_AB=MLXCEL_ATTN_APPEND; done
timed 60 ab3-app turbo4 131072 MLXCEL_STEP_AB=MLXCEL_ATTN_APPEND
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
