#!/usr/bin/env bash
# Session 40's fourth device call (H200, ~3 min; timeout_s 420), after benchmarks/gpu/stage.sh
# (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session40_call4.sh
# Call 2: staging x through the folded norm cost gate/up 4.5 us in situ, the head 19.6, qkv 1.2;
# the unnormed o_proj and down (8 KB / 28 KB of x per CTA) < 0.5. MLXCEL_QMV_NOMATH_LEVEL=xplain
# (new) stages x in the norm kernels as the unnormed ones do (no norm weight, no x^2 sums).
# Prediction: if the norm's extra loads (its weight, 8 KB per CTA, the same lines for every CTA)
# and sums are the cost, xplain's gate/up lands near the prologue level's 18.4 us and the head near
# 63.7; if x's own loads are, near the tables level's 22.9 and 83.3.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s40c4
RUN_TIMEOUT=60 step_ab ab-xplain-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=xplain
insitu_env xplain MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=xplain
insitu_env tables MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
gpu_test gpu_quantized_gemv 120 "nomath" nomath_probe
echo "done at t=${SECONDS}s"
