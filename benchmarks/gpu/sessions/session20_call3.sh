#!/usr/bin/env bash
# Session 20's third device call (H200, ~8 min; timeout_s 600), after session20_call2.sh on the
# same staging: end to end, MLXCEL_QMV_EARLY on against off (call 2 in situ at 32K: the GEMVs
# -166 us per step; MLXCEL_MMA_QFIRST measured slower at 32K there, so it stays off), two
# interleaved rounds of turbo4 and fp16 at 32K (EARLY also changes fp16's GEMVs) and of turbo4
# at 128K, with the device clock.
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session20_call3.sh
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c3
e2e_setup 560 80
FLAG_MODES="turbo4 fp16" FLAG_ROUNDS=2 flag_rounds MLXCEL_QMV_EARLY 22 "${CTX:-32768}"
FLAG_MODES=turbo4 FLAG_ROUNDS=2 flag_rounds MLXCEL_QMV_EARLY 34 "${LONG:-131072}"
# 4K, where turbo4-asym was the mode nearest fp16 (0.89x by tok/s on a slow host, session 19).
FLAG_MODES="turbo4-asym fp16" FLAG_ROUNDS=1 flag_rounds MLXCEL_QMV_EARLY 15 "${SHORT:-4096}"
finish_call
