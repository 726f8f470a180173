#!/usr/bin/env bash
# Session 54's two options for the symmetric 2- and 3-bit kernels, written without a GPU (~9 min):
# - MLXCEL_MMA_LUT_LOW (off): turbo3 / turbo2 sides through a shared-memory table of 2-bit field
#   bytes. NVRTC (D 128 GQA 4, the paired loop's span): turbo3 1081 -> 727 SASS instructions per
#   pair of tiles, turbo2 807 -> 573 (turbo4's: 582).
# - MLXCEL_MMA_WIDE_ONE_PER_SM (on): 12-warp CTAs count one per SM when the splits are sized
#   (symmetric turbo2 at D 128: 33 -> 16 splits per KV head, one wave instead of two).
# Order: correctness first (dispatch; the table's bit identity against the permutes; parity
# with the table on), then `bench attention` with the table 0/1 (4K: the fill is per CTA; 32K; 128K), then end to end
# (turbo3 / turbo2 at 128K and 32K with the table 0/1; turbo2 at 32K with ONE_PER_SM 0/1).
# Predictions: bit-identical; turbo3 128K attention 75.9 -> ~55 us and turbo2 74.1 -> ~50 us on
# an H100 (issue-bound share of the loop cut by a third), end to end -0.4 to -0.6 ms per 128K step.
# Turn MLXCEL_MMA_LUT_LOW on (and write the ADR) only if bit-identical and faster at 32K and 128K.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session54_call8.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s54c8
e2e_setup "${BUDGET:-540}" 90
budget_test gpu_fused_decode 30 "mma-v4|panicked" tensor_core_kernel
budget_test gpu_fused_decode 120 "2-bit field table:|panicked" low_bit_field_table
(export MLXCEL_MMA_LUT_LOW=1 MLXCEL_PARITY_MODES=turbo3,turbo2; budget_test gpu_fused_decode 150 "fused decode|worst|panicked" fused_decode_matches)
BENCH_MODES=turbo3,turbo2 CTXS=4096,32768,131072 bench_ab MLXCEL_MMA_LUT_LOW lutlow
for kv in turbo3 turbo2; do
  timed 40 r1 "$kv" 131072 MLXCEL_MMA_LUT_LOW=0
  timed 40 r1lut "$kv" 131072 MLXCEL_MMA_LUT_LOW=1
done
timed 40 r1 fp16 131072
for kv in turbo3 turbo2; do
  TOKENS=128 timed 25 r1 "$kv" 32768 MLXCEL_MMA_LUT_LOW=0
  TOKENS=128 timed 25 r1lut "$kv" 32768 MLXCEL_MMA_LUT_LOW=1
done
TOKENS=128 timed 25 r1wide0 turbo2 32768 MLXCEL_MMA_WIDE_ONE_PER_SM=0
TOKENS=128 timed 25 r1 fp16 32768
finish_call
