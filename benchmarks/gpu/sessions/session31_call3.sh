#!/usr/bin/env bash
# Session 31's third device call (H200, ~8 min; timeout_s 520), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session31_call3.sh
# The fold (MLXCEL_FOLD_MERGE, new tail) A/B'd inside each run: MLXCEL_STEP_AB alternates the
# flag in blocks of 8 decode steps (written in session 31; the host's speed differs between
# processes, not inside one), so both arms meet the same host. 128 tokens: 49 counted steps
# per arm. turbo4 at 32K (three runs), 128K, 4K; turbo4-asym at 32K; fp16 at 32K and 4K for
# the ratios; and MLXCEL_FOLD_MAX_CONTEXT's check (128K, fold on, limit 64K: ops per step must
# be the separate merge's 212).
# Prediction: fold arm device +0.05 ms per step at 32K (+0.08 at 128K), host -0.1 ms.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s31c3
e2e_setup 470 90
export TOKENS=128
AB="MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE"
timed 40 ab1 turbo4 32768 "$AB"
timed 40 base fp16 32768
timed 40 ab2 turbo4 32768 "$AB"
timed 50 ab1 turbo4 131072 "$AB"
timed 40 ab3 turbo4 32768 "$AB"
timed 40 ab1 turbo4 4096 "$AB"
timed 40 base fp16 4096
timed 40 ab1 turbo4-asym 32768 "$AB"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1" TOKENS=32 timed 50 limit turbo4 131072 MLXCEL_FOLD_MERGE=1 MLXCEL_FOLD_MAX_CONTEXT=65536
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1" TOKENS=32 timed 50 nolimit turbo4 131072 MLXCEL_FOLD_MERGE=1
grep -h "step A/B" "$R"/*.err
echo "done at t=${SECONDS}s"
