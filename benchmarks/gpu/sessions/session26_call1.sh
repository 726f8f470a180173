#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 580), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session26_call1.sh
# Session 25 made MLXCEL_MMA_PAIR the default (turbo4's 5-stage rings: ncu 47.04 -> 44.10 us per
# 128K call) and wrote MLXCEL_MMA_REFILL_EARLY after its device time ran out (off, never run:
# the freed ring slot refilled before each wait, one more copy in flight; bit-identical by
# construction). NVRTC SASS per iteration (turbo4 D=128): paired 667 -> 702 instructions with
# it, one-tile 401 -> 365.
# Prediction: REFILL_EARLY -0.5 to -2 us per 128K call in both loops; turbo4-asym's 3-stage
# one-tile kernel gains most (one copy in flight -> two).
# 1. gpu_fused_decode: the parity suite under the new defaults (PAIR on turbo4), and
#    REFILL_EARLY's bit identity (both loops);
# 2. ncu sweeps (medians of 18 launches at 4K / 32K / 128K): turbo4 default / REFILL_EARLY,
#    turbo4-asym default / REFILL_EARLY;
# 3. the table with the new defaults, one interleaved round fp16 / turbo4 / 
#    turbo4-asym at 128K and 32K (128 tokens), and turbo4 with PAIR off in the same round.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s26c1
if [ "${TESTS:-1}" != 0 ]; then
  PARITY_MODES=turbo4,turbo4-asym,int8,fp16+int8,fp16+int8r flag_parity defaults 150
  gpu_test gpu_fused_decode 150 "early ring refill:" early_ring_refill
fi
sweep_best default MLXCEL_MMA_REFILL_EARLY=0 rfe MLXCEL_MMA_REFILL_EARLY=1 > /dev/null
SWEEP_MODE=turbo4-asym sweep_best asym MLXCEL_MMA_REFILL_EARLY=0 asymrfe MLXCEL_MMA_REFILL_EARLY=1 > /dev/null
e2e_setup 560 60
TOKENS=128
config_rounds "${LONG:-131072}" 36 1 fp16 turbo4 turbo4-asym
timed 36 off1 turbo4 "${LONG:-131072}" MLXCEL_MMA_PAIR=0  # "turbo4 off" in the summary: PAIR off
config_rounds "${CTX:-32768}" 20 1 fp16 turbo4 turbo4-asym
finish_call
