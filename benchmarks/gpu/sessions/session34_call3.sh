#!/usr/bin/env bash
# Session 34's third device call (H200, ~8 min; timeout_s 540), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_attention_append):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session34_call3.sh
# MLXCEL_ATTN_APPEND (default on since call 2) now also writes the turbo modes' boundary
# layers (fp16 keys, int8 values) instead of their separate append launch (fp16_append_kv.cu,
# ~3.3 us per layer in situ, session 32). Prediction: turbo4 -0.01 ms per step at 32K against
# call 2's build (4 launches fewer, the 4-warp appending CTA ~+0.5 us).
# 1. gpu_attention_append: 60 steps bit-identical (4 formats x 5 shapes x 3 steps);
# 2. greedy tokens off / on at 1K (turbo4: its boundary layers take the new path);
# 3. in situ (ncu) at 32K, turbo4 defaults: the boundary layers' kernels;
# 4. in-process A/B at 32K, turbo4 (the flag moves all 32 layers' appends);
# 5. the 32K row: fp16 and turbo4 twice (interleaved), turbo4-asym and int8 once.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s34c3
BUDGET=${BUDGET:-480}
gpu_test gpu_attention_append 200 "attention append:|differs|panicked"
if ! grep -q "test result: ok" "$R/test-gpu_attention_append.txt"; then
  tail -30 "$R/test-gpu_attention_append.txt"; echo "parity failed: stopping"; exit 1
fi
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_ATTN_APPEND turbo4 tok
echo "== in situ, defaults"
NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-d" timeout 150 \
  bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|error" | head -3
gzip -f "$R"/insitu-d/ncu-e2e/*.csv 2> /dev/null
for g in qkv attention append merge; do python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-d/ncu-e2e/*.csv.gz --grep "$g" 2>&1 | head -5; done
export TOKENS=128
timed 40 "ab-app" turbo4 32768 MLXCEL_STEP_AB=MLXCEL_ATTN_APPEND
export TOKENS=64
for round in 1 2; do
  if ((round == 1)); then order="fp16 turbo4 turbo4-asym int8"; else order="turbo4 fp16"; fi
  for kv in $order; do timed 40 "r$round" "$kv" 32768; done
done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
