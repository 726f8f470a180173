#!/usr/bin/env bash
# Session 40's third device call (H200, ~5 min; timeout_s 480; the flag and its kernel are in
# ed8a5c2, removed after this call), after benchmarks/gpu/stage.sh
# (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session40_call3.sh
# Call 2 found the folded norm's x staging costing gate/up 4.5 us of its 26.3 in situ (the
# prologue probe level against the tables level), the head 19.6, qkv 1.2, the unnormed o_proj
# and down < 0.5. MLXCEL_QMV_SILU_R32 (new, off): gate/up with 32 rows of each projection per CTA
# (448 CTAs, one wave at 4 per SM, x staged once per 32 rows; capped at 64 registers).
# Prediction: gate/up 26.3 -> 22-23.5 us in situ (half the x staging, no partial second wave),
# -0.09 to -0.13 ms per step at 32K and 128K; bit-identical (its GPU test) so fp16 4K gains too.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s40c3
gpu_test gpu_quantized_gemv 150 "two row blocks|panicked" silu_two_row_blocks
RUN_TIMEOUT=60 step_ab ab-r32-32k MLXCEL_QMV_SILU_R32 turbo4 32768
insitu_env r32 MLXCEL_QMV_SILU_R32=1
RUN_TIMEOUT=60 step_ab ab-r32-128k MLXCEL_QMV_SILU_R32 turbo4 131072
RUN_TIMEOUT=60 step_ab ab-r32-4k-fp16 MLXCEL_QMV_SILU_R32 fp16 4096
RUN_TIMEOUT=60 step_ab ab-r32-32k-fp16 MLXCEL_QMV_SILU_R32 fp16 32768
echo "done at t=${SECONDS}s"
