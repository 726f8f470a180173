#!/usr/bin/env bash
# Next session's first device call (H200, ~9.5 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session15_call1.sh
# Written after session 14's last device call (NVRTC-checked, CPU-tested; never run on a GPU):
# rotated int8 (int8r) on the CUDA kernels, MLXCEL_INT8R_FUSED=1 (off by default).
# Why: int8 boundary layers took turbo4 at 128K from 1.84-1.87x to 2.14-2.18x of fp16 on the
# H200 (session 14), but on Qwen2.5-Coder-1.5B they raise turbo4-asym's KLD 8.7x (its first
# and last layers' keys have large channels). int8r rotates each vector first (the turbo
# rotation); its quality on Qwen2.5 is in benchmarks/results/2026-11-30-kv-boundary-int8-qwen25.md.
# Prediction: int8r ends run as fast as int8 ends within ~0.05 ms per step (the rotation is
# ~10 warp shuffles in the append, q's rotation and the output's inverse rotation already
# exist for turbo K/V in the same kernels).
# 1. gpu_int8r: the pair launch's stored values within one int8 step of the MLX-ops encoder
#    (<= 1% of elements may differ), the fused decode kernel against the dequantized f32
#    reference (relative RMS < 1e-3), 3 shapes x 4 contexts;
# 2. greedy tokens of turbo4 with int8r ends, MLXCEL_INT8R_FUSED 0 / 1 (different paths with
#    different roundings: the first difference, if any, is printed, not required to be absent);
# 3. two interleaved rounds at 128K and 32K: turbo4 with fp16 / int8 / int8r ends, fp16.
# If 1 holds and int8r ends are as fast as int8 ends: MLXCEL_INT8R_FUSED default on, and an ADR
# 0012 addendum on making int8r the default boundary type (quality from the CPU run).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c1
gpu_test gpu_int8r 150 'int8r:'
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_KV_BOUNDARY_TYPE=int8r"
export BUDGET=${BUDGET:-545}
tokens_ab MLXCEL_INT8R_FUSED turbo4 i8r
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for ctx in ${CTXS:-131072 32768}; do
  need=34; [ "$ctx" -ge 131072 ] || need=22
  for round in 1 2; do ends_round "$round" "$ctx" "$need" "turbo4 fp16" "turbo4 int8" "turbo4 int8r" "fp16 fp16"; done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
