#!/usr/bin/env bash
# Session 43, call 2 (H200, ~9 min; timeout_s 590), after benchmarks/gpu/stage.sh (the mlxcel
# binary and the gpu_quantized_gemv test binary only, xz'd):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session43_call2.sh
# Call 1 split the GEMVs' excess over the copy-only probe in situ (turbo4 32K, us per launch,
# shipped / level loop / level tables): gate/up 22.78 / 18.69 / 17.38, down 13.89 / 12.40 / 10.30,
# qkv 8.48 / 7.01 / 6.18, o_proj 7.02 / 6.26 / 5.41, head 94.27 / 67.84 / 60.32: the tile
# arithmetic ~0.28 ms per step, the tables and x sums ~0.17; the head issued in 79% of its
# cycles. MLXCEL_QMV_OWN_CHUNKS (each lane reads back only its own copies, the mma's columns
# split by group) takes NVRTC's gate/up loop from ~134 to 109 SASS instructions per tile.
# Prediction: gate/up -1 to -2 us and the head -5 to -10 us per launch in situ, -0.04 to
# -0.08 ms per turbo4 step.
# Here:
# - its float64 test and its tiled bit-identity test, in the background (NVRTC builds on the
#   CPU between small launches) beside the ncu runs;
# - in situ, shipped against OWN_CHUNKS (turbo4 32K);
# - end to end, MLXCEL_STEP_AB inside one run: turbo4 at 32K and 128K (device clock);
# - source counters of the head with OWN_CHUNKS (instructions, issue), if time is left.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s43c2
(gpu_test gpu_quantized_gemv 470 "own chunks" own_chunks_match > "$R/bg-own.txt") &
own_pid=$!
# The second test binary run needs its own results file name: a copy of the binary.
cp .devcarry/bin/tests/gpu_quantized_gemv .devcarry/bin/tests/gpu_quantized_gemv_tiled
(gpu_test gpu_quantized_gemv_tiled 470 "tiled with own" tiled_weights_with_own > "$R/bg-tiled.txt") &
tiled_pid=$!
insitu_env shipped
insitu_env own MLXCEL_QMV_OWN_CHUNKS=1
step_ab ab32k MLXCEL_QMV_OWN_CHUNKS turbo4 32768
TOKENS=64 step_ab ab128k MLXCEL_QMV_OWN_CHUNKS turbo4 131072
((SECONDS < 380)) && insitu_source head-own 'mlxcel_qgemv4_[0-9]' 64 MLXCEL_QMV_OWN_CHUNKS=1
((SECONDS < 430)) && insitu_source gateup-own 'qgemv4_silu' 10 MLXCEL_QMV_OWN_CHUNKS=1
wait "$own_pid"; cat "$R/bg-own.txt"
wait "$tiled_pid"; cat "$R/bg-tiled.txt"
echo "done at t=${SECONDS}s"
