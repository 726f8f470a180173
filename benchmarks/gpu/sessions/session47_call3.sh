#!/usr/bin/env bash
# Session 47, third device call (H200, ~4 min): two existing options re-measured at 128K with this
# session's defaults. (1) The fold (each launch merges its own splits, MLXCEL_FOLD_MERGE) at 128K,
# where MLXCEL_FOLD_MAX_CONTEXT (65536) keeps the separate merge kernel since session 31 measured
# the fold +0.1 ms of device time per step there: A/B'd in one process with the limit lifted
# (prediction: still no gain; the separate merges cost ~0.115 ms per step). (2) The opt-in int8r
# boundary layers (ADR 0012; 1.92x in session 45) beside the default turbo4 and fp16, one round.
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c3
step_ab ab-fold MLXCEL_FOLD_MERGE turbo4 131072 MLXCEL_FOLD_MAX_CONTEXT=262144
BUDGET=${BUDGET:-400}
e2e_setup "$BUDGET" 90
timed 45 r1 turbo4 131072
timed 45 r1int8r turbo4 131072 MLXCEL_KV_BOUNDARY_TYPE=int8r
timed 60 r1 fp16 131072
timed 45 r2int8r turbo4 131072 MLXCEL_KV_BOUNDARY_TYPE=int8r
timed 45 r2 turbo4 131072
finish_call
