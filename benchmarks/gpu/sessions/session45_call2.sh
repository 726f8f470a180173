#!/usr/bin/env bash
# Session 45, call 2 (H200, ~8 min; timeout_s 595), on a build with MLXCEL_QMV_XSUM_STAGE on by
# default (call 1: -0.032 ms per turbo4 32K step in one process). First its bit-identity test,
# which ran past 150 s in call 1 (50 checks, two NVRTC builds each), then one round of the
# issue's 128K row with every default on.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session45_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s45c2
gpu_test gpu_quantized_gemv 320 "checks" x_sums_at_staging
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
config_rounds 131072 40 "1" fp16 turbo4 turbo4-asym int8
finish_call
