#!/usr/bin/env bash
# Session 73, first call: on an H200, the table (e2e_run.sh's table_if_h200, with
# 89017c1's MLXCEL_MERGE_SIGNS_FIRST default). On any other card, the GPU tests not yet run with
# today's defaults: the rest of gpu_fused_decode (session 72 passed the parity suite and the six
# named below) and gpu_attention_append, with the kernel cache seeded from .devcarry/ptx-cache.
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=480 bash benchmarks/gpu/sessions/session73_first.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 MLXCEL_MERGE_SIGNS_FIRST=1  # does not return on an H200
call_dir s73tests
BUDGET=${BUDGET:-480}
# gpu_attention_append first: only its trims test has run with MLXCEL_MERGE_SIGNS_FIRST (session 71).
budget_test gpu_attention_append 150 "bit-identical|checks|cases"
suite_rest gpu_fused_decode fused_decode_matches_split_paths_or_falls_back \
  delegated_values_take_the_split_path first_ring_tile_after_the_prologue_loads_is_bit_identical \
  first_two_ring_tiles_after_the_prologue_loads_are_bit_identical \
  fold_32_merges_up_to_32_splits_in_the_kernel folded_merge_is_bit_identical_to_the_warp_merge \
  fused_turbo4_encoder_matches_the_reference_encoder
echo "done at t=${SECONDS}s"
