#!/usr/bin/env bash
# Session 29's third device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session29_call3.sh
# The table with MLXCEL_QMV_NORM_LATE + MLXCEL_QMV_POST (call 2: turbo4 32K device
# clock 2.590 -> 2.525 ms) against the defaults, fp16 and turbo4 in the same call: two
# interleaved rounds at 32K, then one at 128K with both flags on while time is left.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s29c3
e2e_setup 500 200
for round in 1 2; do
  for kv in fp16 turbo4; do
    if [ "$round" = 1 ]; then
      timed 45 "r$round-base" "$kv" 32768
      timed 45 "r$round-late" "$kv" 32768 MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
    else
      timed 45 "r$round-late" "$kv" 32768 MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
      timed 45 "r$round-base" "$kv" 32768
    fi
  done
done
timed 150 r1-late turbo4 131072 MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
timed 150 r1-late fp16 131072 MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
echo "done at t=${SECONDS}s"
