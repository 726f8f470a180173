#!/usr/bin/env bash
# Session 56, fourth call (H100, ~5 min): a second 128K round of the 2-bit field table
# (MLXCEL_MMA_LUT_LOW) off / on for turbo3 and turbo2, with fp16 beside them, in the reverse
# order of session55_call2.sh's first round (table on first) so that drift does not favour one side.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session56_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s56c4
e2e_setup "${BUDGET:-400}" 90
timed 40 r2 fp16 131072
for kv in turbo2 turbo3; do
  timed 40 r2lut "$kv" 131072 MLXCEL_MMA_LUT_LOW=1
  timed 40 r2 "$kv" 131072 MLXCEL_MMA_LUT_LOW=0
done
finish_call
