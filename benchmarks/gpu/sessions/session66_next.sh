#!/usr/bin/env bash
# After session 66: the first device call of the next session. On an H200: the issue's
# end-to-end table (table_if_h200). Elsewhere: the 17 gpu_fused_decode tests that have not yet
# run with MLXCEL_FOLD_32 on by default (ADR 0031); the other 11 passed with it on an H100 in
# sessions 65-66 (benchmarks/results/2026-12-06-session66.md) and are skipped. A fresh machine's
# NVRTC compiles make these longer than one call: a second call on the warm machine with
# SKIP="test names..." (the ones that printed ok) finishes them.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session66_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s66next
BUDGET=${BUDGET:-540}
PASSED=(folded_merge_is_bit_identical_to_the_warp_merge fold_32_merges_up_to_32_splits_in_the_kernel
  split_cap_folds_turbo2_at_head_dim_64_within_parity delegated_values_take_the_split_path
  first_ring_tile_after_the_prologue_loads_is_bit_identical
  first_two_ring_tiles_after_the_prologue_loads_are_bit_identical
  fused_decode_matches_split_paths_or_falls_back fused_turbo4_encoder_matches_the_reference_encoder
  hoisted_rescale_always_and_ftz_loops_are_bit_identical
  in_place_decode_appends_feed_the_fused_kernel_and_store_the_reference_codes
  last_tile_masks_match_the_reference)
# shellcheck disable=SC2086 # SKIP: names split on spaces
suite_rest gpu_fused_decode "${PASSED[@]}" ${SKIP:-}
echo "done at t=${SECONDS}s"
