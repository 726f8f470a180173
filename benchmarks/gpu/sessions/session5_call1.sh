#!/usr/bin/env bash
# Ran as session 5, device call 1 (results: benchmarks/results/2026-11-29-h200-session5.md).
# One device call for the levers of branch next/rope-fold (RoPE inside the kernels, K+V in
# one encode launch, split merge folded into the attention launch), after
# benchmarks/gpu/stage.sh on that branch:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/next_levers_check.sh
# 1. correctness: gpu_fused_rope, gpu_fused_decode (parity incl. the in-place and encoder
#    tests), gpu_quantized_gemv; 2. end to end at 4K and 128K with every lever on, then each
#    switched off alone (A/B within this call), two samples of the defaults at 4K.
set -uo pipefail
export TOKENS=128 SKIP_BENCH=1
TESTS="gpu_fused_rope gpu_fused_decode gpu_quantized_gemv" MLXCEL_PARITY_MODES=fp16,int8,turbo4-asym,turbo4,turbo3 \
  MODES="fp16 turbo4 int8 turbo4-asym" RUN_TAG=on bash benchmarks/gpu/fused_decode_run.sh 4096
for off in MLXCEL_FUSED_ROPE MLXCEL_FUSED_KV_APPEND MLXCEL_FOLD_MERGE; do
  echo "== $off=0"
  env "$off=0" TESTS=none MODES="turbo4" RUN_TAG="no-$off" bash benchmarks/gpu/fused_decode_run.sh 4096
done
echo "== repeat"
TESTS=none MODES="turbo4 fp16" RUN_TAG=on2 bash benchmarks/gpu/fused_decode_run.sh 4096
TESTS=none MODES="fp16 turbo4 int8" RUN_TAG=on128k bash benchmarks/gpu/fused_decode_run.sh 131072
