#!/usr/bin/env bash
# Session 73, later calls: on an H200 the table (table_if_h200); on any other card the
# GPU tests not yet run with today's defaults, several at a time (suite_parallel): the rest of
# gpu_fused_decode (the skip list: the parity suite and the eleven that passed in sessions
# 71-73) six at a time, beside the rest of gpu_attention_append (three passed in session 73) two
# at a time. The general form, every staged GPU binary at once: benchmarks/gpu/all_gpu_tests.sh.
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=250 bash benchmarks/gpu/sessions/session73_par.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 MLXCEL_MERGE_SIGNS_FIRST=1  # does not return on an H200
call_dir s73par
BUDGET=${BUDGET:-400}
suite_parallel gpu_fused_decode "${JOBS_FUSED:-6}" fused_decode_matches_split_paths_or_falls_back \
  delegated_values_take_the_split_path first_ring_tile_after_the_prologue_loads_is_bit_identical \
  first_two_ring_tiles_after_the_prologue_loads_are_bit_identical \
  fold_32_merges_up_to_32_splits_in_the_kernel folded_merge_is_bit_identical_to_the_warp_merge \
  fused_turbo4_encoder_matches_the_reference_encoder \
  hoisted_rescale_always_and_ftz_loops_are_bit_identical \
  in_place_decode_appends_feed_the_fused_kernel_and_store_the_reference_codes \
  last_tile_masks_match_the_reference lazy_rescale_matches_the_reference \
  merge_signs_first_is_bit_identical > "$R/fused.txt" 2>&1 &
suite_parallel gpu_attention_append "${JOBS_APPEND:-2}" \
  attention_append_writes_and_attends_as_the_separate_append_or_is_not_offered \
  decode_steps_after_a_truncation_equal_a_cache_that_never_held_the_dropped_positions \
  first_two_ring_tiles_early_keep_the_attention_launches_bit_identical > "$R/append.txt" 2>&1
wait
cat "$R/fused.txt" "$R/append.txt"
echo "done at t=${SECONDS}s"
