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
# The two halves are session55_call1.sh and session55_call2.sh (separate calls where devices come
# for short spells); this runs both in one call, their results in s55c1.tgz and s55c2.tgz.
# Predictions: bit-identical; turbo3 128K attention 75.9 -> ~55 us and turbo2 74.1 -> ~50 us on
# an H100 (issue-bound share of the loop cut by a third), end to end -0.4 to -0.6 ms per 128K step.
# Turn MLXCEL_MMA_LUT_LOW on (and write the ADR) only if bit-identical and faster at 32K and 128K.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session54_call8.sh
set -uo pipefail
# One call has 600 s: the two budgets add up to call 8's 540 (call 2 skips the runs that no longer fit).
BUDGET=260 bash benchmarks/gpu/sessions/session55_call1.sh
BUDGET=280 bash benchmarks/gpu/sessions/session55_call2.sh
