#!/usr/bin/env bash
# Session 44, call 3 (H200, ~8 min; timeout_s 560), staged as call 2.
# Call 2: MLXCEL_QMV_RING_TABLES took the in-situ kernels of a turbo4 32K step 2.459 -> 2.278 ms
# and its device ms 2.29 -> 2.15 (two runs each), greedy tokens equal; but its bit-identity test
# stopped at a to_vec in its backend-independent part (the message was not kept).
# Here: that test alone (its message kept), then the table with it on: one round each of
# fp16 / turbo4 / turbo4-asym / int8 at 32K, 128K and 4K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s44c3
gpu_test gpu_quantized_gemv 150 "checks" paired
BUDGET=${BUDGET:-520}
e2e_setup "$BUDGET" 90
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_QMV_RING_TABLES=1"
TOKENS=128 config_rounds 32768 30 "1" fp16 turbo4 turbo4-asym int8
config_rounds 131072 40 "1" fp16 turbo4 turbo4-asym int8
config_rounds 4096 16 "1" fp16 turbo4 turbo4-asym int8
finish_call
