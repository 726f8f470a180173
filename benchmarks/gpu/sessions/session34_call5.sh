#!/usr/bin/env bash
# Session 34's fifth device call (H200, ~6 min; timeout_s 420), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_attention_append, tests/gpu_embedding):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session34_call5.sh
# 1. MLXCEL_ATTN_APPEND's writer warps skip RoPE and the rotation of their padding q head
#    (zeros either way). Prediction: the turbo4 attention call 21.39 -> ~21.1 us in situ.
# 2. MLXCEL_FAST_EMBED (new, on): the step's token embedding from one kernel instead of MLX's
#    three gathers and a dequantize (~14 us in situ). Prediction: the kernel ~2-3 us, device
#    -0.010 to -0.015 ms per step in every mode.
# Steps: gpu_attention_append (60 steps bit-identical), gpu_embedding (48 id sets equal to MLX's
# path: the bits depend on the compilers fusing `scale * q + bias` alike); greedy tokens at 1K
# off / on (turbo4); in situ at 32K (turbo4 defaults): attention and the embedding kernel;
# in-process A/Bs at 32K (turbo4, fp16).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s34c5
BUDGET=${BUDGET:-370}
gpu_test gpu_attention_append 200 "attention append:|differs|panicked"
gpu_test gpu_embedding 90 "embedding:|differ|panicked"
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_FAST_EMBED turbo4 tok
echo "== in situ, defaults"
NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-d" timeout 150 \
  bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|error" | head -3
gzip -f "$R"/insitu-d/ncu-e2e/*.csv 2> /dev/null
for g in attention embedding gather dequant; do python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-d/ncu-e2e/*.csv.gz --grep "$g" 2>&1 | head -4; done
export TOKENS=128
for kv in turbo4 fp16; do timed 40 "ab-embed" "$kv" 32768 MLXCEL_STEP_AB=MLXCEL_FAST_EMBED; done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
