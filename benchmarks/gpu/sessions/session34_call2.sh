#!/usr/bin/env bash
# Session 34's second device call (H200, ~9 min; timeout_s 580), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_attention_append, tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session34_call2.sh
# MLXCEL_ATTN_APPEND now default on and for the qkv fold's three formats (turbo4, turbo4-asym,
# int8); its writers load their vector at the kernel's entry (call 1's build loaded it after
# staging a q head). The encoders were split into load + *_vals halves (NVRTC SASS of 25 qkv +
# append builds reordered, the same instructions).
# Prediction: the turbo4 attention call with the append 21.81 -> ~21.3 us in situ; A/Bs
# turbo4-asym and int8 -0.04 to -0.07 ms per step at 32K as turbo4.
# 1. gpu_attention_append: 45 steps bit-identical (3 formats x 5 shapes x 3 steps);
# 2. gpu_qkv_encode: 72 steps bit-identical (the fold, reached with MLXCEL_ATTN_APPEND=0);
# 3. greedy tokens off / on at 1K (turbo4-asym, int8);
# 4. in situ (ncu, two decode steps, L2 kept) at 32K, turbo4 defaults: qkv and attention;
# 5. in-process A/Bs at 32K: turbo4, turbo4-asym, int8;
# 6. the table with this session's defaults: fp16 and turbo4 at 32K and 128K, one run each.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s34c2
BUDGET=${BUDGET:-530}
gpu_test gpu_attention_append 200 "attention append:|differs|panicked"
gpu_test gpu_qkv_encode 150 "qkv encode:|differs|panicked"
e2e_setup "$BUDGET" 90
for kv in turbo4-asym int8; do tokens_ab MLXCEL_ATTN_APPEND "$kv" tok; done
echo "== in situ, defaults"
NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-d" timeout 150 \
  bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|error" | head -3
gzip -f "$R"/insitu-d/ncu-e2e/*.csv 2> /dev/null
for g in qkv attention; do python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-d/ncu-e2e/*.csv.gz --grep "$g" 2>&1 | head -5; done
export TOKENS=128
for kv in turbo4 turbo4-asym int8; do timed 40 "ab-app" "$kv" 32768 MLXCEL_STEP_AB=MLXCEL_ATTN_APPEND; done
export TOKENS=64
for ctx in 32768 131072; do
  timed 45 base fp16 "$ctx"
  timed 45 base turbo4 "$ctx"
done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
