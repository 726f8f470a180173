#!/usr/bin/env bash
# Session 31's fourth device call (H200, ~4 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session31_call4.sh
# The fold on by default (<= 16 splits, below 64K tokens): its bit-identity test with the
# new split cases (16, 11; 47 takes the separate merge), then turbo4 at 32K with the new
# default and with MLXCEL_FOLD_MERGE=0, and fp16 at 32K (ops per step: 180 expected).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s31c4
gpu_test gpu_fused_decode 150 "fold" folded_merge
e2e_setup 250 60
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
timed 30 default turbo4 32768
timed 30 base fp16 32768
timed 30 nofold turbo4 32768 MLXCEL_FOLD_MERGE=0
grep -h "ops per step" "$R"/*.err
echo "done at t=${SECONDS}s"
