#!/usr/bin/env bash
# Session 55: the first half of session54_call8.sh (devices came back for short spells only, and a
# call taken back mid-run returns nothing): correctness of the 2-bit field table
# (MLXCEL_MMA_LUT_LOW) and `bench attention` with it off / on, ~4-5 min. Same binaries (2227f29)
# and the same predictions as session54_call8.sh; the end-to-end half is session55_call2.sh.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session55_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s55c1
BUDGET=${BUDGET:-330}
budget_test gpu_fused_decode 30 "mma-v4|panicked" tensor_core_kernel
budget_test gpu_fused_decode 120 "2-bit field table:|panicked" low_bit_field_table
(export MLXCEL_MMA_LUT_LOW=1 MLXCEL_PARITY_MODES=turbo3,turbo2; budget_test gpu_fused_decode 150 "fused decode|worst|panicked" fused_decode_matches)
BENCH_MODES=turbo3,turbo2 CTXS=4096,32768,131072 bench_ab MLXCEL_MMA_LUT_LOW lutlow
echo "done at t=${SECONDS}s"
