#!/usr/bin/env bash
# Session 36's third device call (H200, ~9.5 min; timeout_s 595), after benchmarks/gpu/stage.sh
# (the default build: jemalloc, submit thread on; no test binaries needed):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session36_call3.sh
# The table with this session's defaults (jemalloc + the submit thread):
# 1. greedy tokens of turbo4 and int8 at 1024 positions with the thread off / on (must match;
#    fp16's vary between identical runs through cuDNN's SDPA, session 24);
# 2. 32K, two rounds of fp16 / turbo4 / turbo4-asym / int8 (order rotated), 128 tokens;
#    prediction: every mode device-bound, turbo4 ~407 tok/s against fp16 ~309 (1.3x by tok/s);
# 3. 4K and 128K, one run per mode (128K: 64 tokens).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s36c3
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_SUBMIT_THREAD turbo4 tok
tokens_ab MLXCEL_SUBMIT_THREAD int8 toki
export TOKENS=128
modes=(fp16 turbo4 turbo4-asym int8)
for round in 1 2; do
  for ((i = 0; i < 4; i++)); do
    timed 35 "r$round" "${modes[$(((i + round) % 4))]}" 32768
  done
done
for kv in fp16 turbo4 turbo4-asym int8; do timed 25 "short" "$kv" 4096; done
export TOKENS=64
for kv in fp16 turbo4 turbo4-asym int8; do timed 40 "long" "$kv" 131072; done
echo "done at t=${SECONDS}s"
