#!/usr/bin/env bash
# Session 42, call 3 (H200, ~9 min; timeout_s 590), after benchmarks/gpu/stage.sh with
# MLXCEL_QMV_TILED on by default (no test binaries needed):
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session42_call3.sh
# 1. Greedy tokens with the weights tiled (now the default) against MLX's layout, int8 and
#    turbo4-asym at 1024 positions (turbo4's 192 tokens at 32K matched in call 1);
# 2. the table with this build's defaults: 32K two rounds of fp16 / turbo4 /
#    turbo4-asym / int8 (order rotated), 128K one round of the four plus a second of fp16 and
#    turbo4, 4K one run each. Device clock, random-kv caches.
# Prediction: turbo4 32K ~2.34 ms per step (calls 1-2), fp16 32K ~3.15 (3.214 in session 41
# less the GEMVs' ~0.05); 128K turbo4 ~3.45, fp16 ~6.1: ~1.35x at 32K, ~1.77x at 128K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s42c3
BUDGET=${BUDGET:-545}
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_QMV_TILED int8 toki
tokens_ab MLXCEL_QMV_TILED turbo4-asym toka
TOKENS=128 config_rounds 32768 30 "1 2" fp16 turbo4 turbo4-asym int8
export TOKENS=64
for kv in turbo4 fp16 turbo4-asym int8; do timed 40 "long" "$kv" 131072; done
for kv in fp16 turbo4; do timed 40 "long2" "$kv" 131072; done
for kv in fp16 turbo4 turbo4-asym int8; do timed 16 "short" "$kv" 4096; done
finish_call
