#!/usr/bin/env bash
# Session 20's third device call (H200, ~8 min; timeout_s 600), after session20_call2.sh on the
# same staging: end to end, MLXCEL_QMV_EARLY and MLXCEL_MMA_QFIRST both on against both off,
# two interleaved rounds of turbo4 and fp16 at 32K (EARLY also changes fp16's GEMVs) and of
# turbo4 at 128K, with the device clock.
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session20_call3.sh
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c3
e2e_setup 560 80
ON="MLXCEL_QMV_EARLY=1 MLXCEL_MMA_QFIRST=1" OFF="MLXCEL_QMV_EARLY=0 MLXCEL_MMA_QFIRST=0"
FLAG_MODES="turbo4 fp16" FLAG_ROUNDS=2 env_rounds 22 "$ON" "$OFF" "${CTX:-32768}"
FLAG_MODES=turbo4 FLAG_ROUNDS=2 env_rounds 34 "$ON" "$OFF" "${LONG:-131072}"
finish_call
