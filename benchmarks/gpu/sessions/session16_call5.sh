#!/usr/bin/env bash
# Session 16's fifth device call (H200, the ~3 min left; timeout_s 180), after
# benchmarks/gpu/stage.sh of d7106ac (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session16_call5.sh
# A first look at MLXCEL_MMA_SACC2 / MLXCEL_MMA_RSALL (written after call 4): the parity suite
# for turbo4 with both on, then `bench attention` turbo4 at 128K with each flag off / on.
# session17_call1.sh is the full check (bit-identity of RSALL, ncu, end to end).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s16c5
flag_parity sacc2-rsall 60 MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1
CTXS=131072 bench_ab MLXCEL_MMA_SACC2 sacc2
CTXS=131072 bench_ab MLXCEL_MMA_RSALL rsall
echo "done at t=${SECONDS}s"
