#!/usr/bin/env bash
# Session 38's third device call (H200, ~5 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (test binaries removed, mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session38_call3.sh
# The GEMV defaults re-checked against today's build (submit thread, the append in the
# attention launch, the qkv cluster): each decided in sessions 20-33 by ncu kernel sums or
# end-to-end rounds, never by an in-process A/B of the device clock. One A/B per flag
# (step_ab in e2e_run.sh), turbo4 at 32K: MLXCEL_QMV_POST, MLXCEL_QMV_EARLY,
# MLXCEL_QMV_NORM_LATE, MLXCEL_QKV_CLUSTER (default on) and MLXCEL_QMV_RFIRST (default off).
# Prediction: every default holds within +-0.02 ms per step; a flag whose other arm wins by more
# is re-checked at 128K and 4K before its default changes.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s38c3
for flag in MLXCEL_QMV_POST MLXCEL_QMV_EARLY MLXCEL_QMV_NORM_LATE MLXCEL_QKV_CLUSTER MLXCEL_QMV_RFIRST; do
  ((SECONDS < 470)) || { echo "skipped $flag"; continue; }
  step_ab "ab-${flag#MLXCEL_}" "$flag" turbo4 32768
done
echo "done at t=${SECONDS}s"
