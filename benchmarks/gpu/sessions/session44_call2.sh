#!/usr/bin/env bash
# Session 44, call 2 (H200, ~9 min; timeout_s 590), after staging the mlxcel binary and the
# gpu_quantized_gemv test binary (stripped, xz'd into .devcarry/bin):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session44_call2.sh
# Call 1: probe level nosb (the scale tables' loads gone, arithmetic kept) ran the turbo4 32K step
# 0.231 ms faster (MLXCEL_STEP_AB; kernels 2.459 -> 2.281 ms in situ). MLXCEL_QMV_RING_TABLES
# (off; a load-time layout) reorders the tables at load so that each lane copies its rows' pairs
# with each tile. Prediction: most of nosb's -0.18 to -0.23 ms per step (the 8-byte copies and
# the 1.25 KiB slots cost a little back).
# Here:
# - its bit-identity test (paired against tiled tables, five kernel paths, 54 checks);
# - in situ with it (turbo4 32K; call 1's shipped: 2.459 ms of kernels per step);
# - turbo4 32K with it off / on / off / on (separate runs: a load-time layout), greedy tokens
#   compared (token_pairs.py);
# - fp16 and turbo4 at 128K with it on (call 1, off: fp16 6.049 ms, turbo4 3.307 ms per step);
# - then, if time is left, the pair-blocks test (its corrected count) and the probe's test.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s44c2
gpu_test gpu_quantized_gemv 150 "checks" paired
insitu_env rt MLXCEL_QMV_RING_TABLES=1
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
TOKENS=128
for round in 1 2; do
  timed 30 "off$round" turbo4 32768 MLXCEL_QMV_RING_TABLES=0
  timed 30 "on$round" turbo4 32768 MLXCEL_QMV_RING_TABLES=1
done
TOKENS=64
timed 40 on1 turbo4 131072 MLXCEL_QMV_RING_TABLES=1
timed 40 on1 fp16 131072 MLXCEL_QMV_RING_TABLES=1
python3 benchmarks/gpu/token_pairs.py "$R" | tee "$R/token_pairs.txt"
((SECONDS < 440)) && gpu_test gpu_quantized_gemv 100 "checks" pair_blocks
((SECONDS < 500)) && gpu_test gpu_quantized_gemv 60 "checks" nomath
finish_call
