#!/usr/bin/env bash
# Session 46, fourth device call (H200, ~8.5 min): the issue's table with this session's
# defaults (MLXCEL_MMA_LIGHT_LAST on; MLXCEL_MMA_COMBINE_SWZ off, measured no faster): fp16,
# turbo4, turbo4-asym and int8 at 128K (two rounds), 32K and 4K (one round; 4K if time is left).
# Prediction: turbo4 at 128K ~0.02 ms per step shorter than session 45's 3.190 (~1.87x).
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session46_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s46c4
BUDGET=${BUDGET:-500}
e2e_setup "$BUDGET" 90
issue_table fp16 turbo4 turbo4-asym int8
finish_call
