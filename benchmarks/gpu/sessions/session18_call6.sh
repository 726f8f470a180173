#!/usr/bin/env bash
# Session 18's sixth device call (H200, ~5 min; timeout_s 330), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=280 bash benchmarks/gpu/sessions/session18_call6.sh
# The end-to-end table at 32K (two interleaved rounds) and 4K (one round) with the
# shipped defaults, MLXCEL_MMA_QSWZ now on: fp16, turbo4, turbo4-asym, int8 (128K was
# measured with QSWZ in call 5: turbo4 4.40 ms per step; 32K is where the 1.3x line is).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS=512 SHORT=256 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c6
e2e_setup 280 80
CTXS=${CTXS:-32768} table_rounds fp16 turbo4 turbo4-asym int8
finish_call
