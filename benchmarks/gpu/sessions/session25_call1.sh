#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session25_call1.sh
# MLXCEL_QKV_ENC_TAIL (written in session 24 after its device calls, off, never run): the qkv
# GEMV with the folded K+V append copies the encoder's tables into shared memory at its start
# and takes each head's ticket with one acquire-release atomic instead of two fences. In situ
# at 32K (session 24) the launch took 12.64 us against 8.91 for the GEMV without the append.
# Prediction: -1 to -2 us per compressed layer (two dependent L2 round trips and one MEMBAR
# fewer in the serial tail), -0.03 to -0.06 ms per step in every turbo / int8 mode.
# 1. gpu_qkv_encode: the cache bits with the flag off and on against the separate append
#    (6 cases x 2 x 3 steps);
# 2. in situ (ncu, turbo4 at 32K) with the flag off and on: the qkv + append kernel's median
#    (insitu_medians.py on the two CSVs);
# 3. greedy turbo4 tokens off / on (turbo4 is deterministic run to run; fp16 is not at >= 256
#    positions, session 24);
# 4. two interleaved rounds off / on of turbo4 and turbo4-asym at 32K, one at 128K (device
#    time: repeats_summary.py's on / off rows).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s25c1
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_qkv_encode 150 "qkv encode:|differs"
e2e_setup 540 60
insitu_flags MLXCEL_QKV_ENC_TAIL
tokens_ab MLXCEL_QKV_ENC_TAIL turbo4 tok
FLAG_MODES="turbo4 turbo4-asym" FLAG_ROUNDS=2 flag_rounds MLXCEL_QKV_ENC_TAIL 20 "${CTX:-32768}"
FLAG_MODES="turbo4 turbo4-asym" FLAG_ROUNDS=1 flag_rounds MLXCEL_QKV_ENC_TAIL 25 "${LONG:-131072}"
finish_call
