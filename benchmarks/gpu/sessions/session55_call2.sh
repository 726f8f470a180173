#!/usr/bin/env bash
# Session 55: the end-to-end half of session54_call8.sh (~6 min): turbo3 / turbo2 at 128K and 32K
# with the 2-bit field table (MLXCEL_MMA_LUT_LOW) off / on, turbo2 at 32K with
# MLXCEL_MMA_WIDE_ONE_PER_SM=0, fp16 beside each context (device clock, same card).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session55_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s55c2
e2e_setup "${BUDGET:-480}" 90
for kv in turbo3 turbo2; do
  timed 40 r1 "$kv" 131072 MLXCEL_MMA_LUT_LOW=0
  timed 40 r1lut "$kv" 131072 MLXCEL_MMA_LUT_LOW=1
done
timed 40 r1 fp16 131072
for kv in turbo3 turbo2; do
  TOKENS=128 timed 25 r1 "$kv" 32768 MLXCEL_MMA_LUT_LOW=0
  TOKENS=128 timed 25 r1lut "$kv" 32768 MLXCEL_MMA_LUT_LOW=1
done
TOKENS=128 timed 25 r1wide0 turbo2 32768 MLXCEL_MMA_WIDE_ONE_PER_SM=0
TOKENS=128 timed 25 r1 fp16 32768
finish_call
