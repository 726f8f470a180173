#!/usr/bin/env bash
# Next session's second device call (H200, ~9 min; timeout_s 580), after session26_call1.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session26_call2.sh
# Session 25 made MLXCEL_MMA_PAIR the default on turbo4's kernels (and int8 / turbo4-asym at
# D = 64, their rings have 5 stages) without running gpu_fused_decode's other bit-identity
# tests under it: each compares a flag off / on with everything else at the defaults, so with
# PAIR on both sides they now check the paired loop. Each test's file is kept apart
# (gpu_test writes test-NAME.txt). The hoist / pipe test pins PAIR off (PAIR needs HOIST and
# no PIPE).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s26c2
export BUDGET=540
# Call 1's parity suite ran out of its 150 s in its last mode (fp16+int8r, 14 of 35 cases):
# that mode again on its own.
PARITY_MODES=fp16+int8r flag_parity int8r 100
for t in swizzled_q_staging pair_table_fill_on_idle_warps ring_copies_after_the_prologue_loads \
  first_ring_tile_after_the_prologue_loads folded_merge_is_bit_identical pair_table_decodes_bit_identically \
  hoisted_and_pipelined_loops; do
  if ((SECONDS + 90 > BUDGET)); then echo "skipped $t (t=${SECONDS}s)"; continue; fi
  gpu_test gpu_fused_decode 120 "bit-identity checks|identical" "$t"
  mv "$R/test-gpu_fused_decode.txt" "$R/test-$t.txt"
done
echo "done at t=${SECONDS}s"
