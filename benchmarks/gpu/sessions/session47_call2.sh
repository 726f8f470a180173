#!/usr/bin/env bash
# Session 47, second device call (H200, ~9 min): the issue's table with this session's defaults
# (MLXCEL_ROPE_TABLE on: call 1 measured turbo4 128K 3.193 -> 3.171 ms per step, turbo4-asym
# 128K 4.553 -> 4.446, turbo4 32K 2.092 -> 2.098), after turbo4-asym's A/B at 32K (the one mode
# and length call 1 did not cover). fp16, turbo4, turbo4-asym and int8 at 128K (two rounds),
# 32K and 4K (one round). Prediction: turbo4 ~1.86-1.88x at 128K, turbo4-asym ~1.30x.
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c2
step_ab ab-rtab MLXCEL_ROPE_TABLE turbo4-asym 32768
BUDGET=${BUDGET:-525}
e2e_setup "$BUDGET" 90
issue_table fp16 turbo4 turbo4-asym int8
finish_call
