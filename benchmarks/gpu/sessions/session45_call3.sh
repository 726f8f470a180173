#!/usr/bin/env bash
# Session 45, call 3 (H200, ~8 min; timeout_s 595): the table with every default on
# (MLXCEL_QMV_XSUM_STAGE now among them): 32K and 4K one round each, and a second 128K round
# (call 2 ran the first).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session45_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s45c3
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
TOKENS=128 config_rounds 32768 30 "1" fp16 turbo4 turbo4-asym int8
config_rounds 4096 16 "1" fp16 turbo4 turbo4-asym int8
config_rounds 131072 40 "2" fp16 turbo4 turbo4-asym int8
finish_call
