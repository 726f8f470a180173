#!/usr/bin/env bash
# Session 56, sixth call (~6 min): main after the merge of next/fp16-centroids, with the 2-bit
# field table on by default (ADR 0025).
# - The fused encoders against the reference encoder (byte identity): the encoders' midpoints
#   are now the means of fp16 centroids, passed from the codec, so they must still match.
# - Parity of symmetric turbo3 / turbo2 (the table on, the new centroids) against the f32 split
#   path (session 56 call 1 with the old centroids: worst 6.71e-4).
# - End to end at 4K, two rounds: turbo3 / turbo2 with the table on (default) and off beside fp16.
#   `bench attention` put the table's fill at +3-4 us per launch at 4K (one run); is it real end
#   to end (~0.1 ms per step if so)?
# - The in-place decode appends (10 steps after a prefill) if time is left.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session56_call6.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s56c6
e2e_setup "${BUDGET:-360}" 60
budget_test gpu_fused_decode 60 "differing|panicked" fused_turbo4_encoder
(export MLXCEL_PARITY_MODES=turbo3,turbo2; budget_test gpu_fused_decode 150 "fused decode|worst|panicked" fused_decode_matches)
export TOKENS=128
for round in 1 2; do
  timed 20 "r$round" fp16 4096
  timed 20 "r${round}lut" turbo3 4096
  timed 20 "r$round" turbo3 4096 MLXCEL_MMA_LUT_LOW=0
  timed 20 "r${round}lut" turbo2 4096
  timed 20 "r$round" turbo2 4096 MLXCEL_MMA_LUT_LOW=0
done
budget_test gpu_fused_decode 60 "match|panicked" in_place_decode_appends
finish_call
