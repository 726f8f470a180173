#!/usr/bin/env bash
# Session 57, fourth call (H200, ~6 min): is the 2-bit field table (MLXCEL_MMA_LUT_LOW, on by
# default since session 56 on H100 figures, ADR 0025) a gain on the H200 too? Call 2 of this
# session put turbo2's 128K launch at 59 us on the H200 (bench attention) against 47 us on the
# H100 in session 56, and turbo2's 128K step (3.03 ms) at turbo4's (3.04).
# - ncu durations (medians of 5 iterations' launches) of turbo2 / turbo3 with the table 0 / 1 and
#   turbo4 beside them, at 32K and 128K;
# - end to end at 128K: turbo2 and turbo3 with the table 0 / 1 (device clock).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session57_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s57c4
e2e_setup "${BUDGET:-420}" 90
export SWEEP_CTXS=32768,131072
for m in turbo2 turbo3; do
  for v in 1 0; do
    SWEEP_MODE=$m ncu_sweep "$m-lut$v" MLXCEL_MMA_LUT_LOW=$v
    echo "sweep $m lut=$v t=${SECONDS}s"
  done
done
SWEEP_MODE=turbo4 ncu_sweep turbo4
sweep_medians turbo2-lut1 turbo2-lut0 turbo3-lut1 turbo3-lut0 turbo4
for kv in turbo2 turbo3; do
  timed 40 r1lut1 "$kv" 131072 MLXCEL_MMA_LUT_LOW=1
  timed 40 r1lut0 "$kv" 131072 MLXCEL_MMA_LUT_LOW=0
done
finish_call
