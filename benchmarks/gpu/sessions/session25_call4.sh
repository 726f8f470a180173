#!/usr/bin/env bash
# Session 25's fourth device call (H200, ~8 min; timeout_s 540), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session25_call4.sh
# MLXCEL_MMA_PAIR (written after call 3): with KT's layout, two tiles per loop iteration and one
# softmax update over their 32 tokens. Call 3 found KT 9% fewer instructions but only 0.7%
# faster at 128K: the warps wait on each tile's dependent chain. NVRTC SASS (turbo4 D=128 GQA 4):
# 667 instructions per pair (333.5 per tile against 366 with KT, 401 default), 128 registers.
# Prediction: -3 to -6 us per call at 128K (46.99 us), -1 to -2 at 32K (17.60); end to end
# -0.08 to -0.15 ms per step at 128K.
# 1. paired_tiles_match_the_reference (gpu_fused_decode): PAIR against the split reference and
#    the default kernel, 5 modes x 5 shapes x 5 lengths;
# 2. ncu sweeps (every turbo4 launch of bench attention at 4K / 32K / 128K, medians): default /
#    PAIR;
# 3. turbo4 greedy tokens off / on, interleaved rounds of turbo4 at 128K and 32K and of
#    turbo4-asym at 128K (device time).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s25c4
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_fused_decode 170 "MLXCEL_MMA_PAIR: " paired_tiles
sweep_best default MLXCEL_MMA_PAIR=0 pair MLXCEL_MMA_PAIR=1 > /dev/null
e2e_setup 500 60
tokens_ab MLXCEL_MMA_PAIR turbo4 tok
FLAG_MODES="turbo4" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_PAIR 25 "${LONG:-131072}" "${CTX:-32768}"
FLAG_MODES="turbo4-asym" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_PAIR 25 "${LONG:-131072}"
finish_call
