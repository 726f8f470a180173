#!/usr/bin/env bash
# Session 71. On an H200: the table (table_if_h200, in $BUDGET seconds). Elsewhere:
# MLXCEL_MERGE_SIGNS_FIRST's step A/Bs (session 71's first call gave its timelines, fold
# merge 1.66 -> 1.38 us at 32K asym, and its fused bit-identity test for turbo4, turbo4-asym
# and turbo3; the test ran out of time before int8), then that test again with more time
# (int8's cases include the warp merge past the fold, which d12bcac's mend fixed).
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=540 bash benchmarks/gpu/sessions/session71_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s71next
e2e_setup "${BUDGET:-540}" 90
have 60 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4-asym 32768
have 60 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4 32768
have 70 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4 131072
have 70 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4-asym 131072
budget_test gpu_fused_decode 240 "merge signs first" merge_signs_first_is_bit_identical
echo "done at t=${SECONDS}s"
