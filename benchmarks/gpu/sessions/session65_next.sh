#!/usr/bin/env bash
# After session 65: the first device call of the next session. On an H200: the issue's
# end-to-end table (table_if_h200; the Llama-3-8B shape, which MLXCEL_FOLD_32 does not touch).
# Elsewhere: the GPU tests of the fold with MLXCEL_FOLD_32 on by default (ADR 0031), first the
# test that failed in session 65's call 4 (now with MLXCEL_FOLD_SPLIT_CAP held off on both sides
# and a 24-split case: it must pass, 0 differing outputs in every case), then the rest of the
# gpu_fused_decode suite in what is left of $BUDGET (a fresh machine's NVRTC compiles make the
# whole suite longer than one call: rerun with SKIP_FIRST=1 in a second call to finish it).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session65_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s65next
BUDGET=${BUDGET:-540}
FOLD_TESTS=(folded_merge_is_bit_identical_to_the_warp_merge fold_32_merges_up_to_32_splits_in_the_kernel
  split_cap_folds_turbo2_at_head_dim_64_within_parity)
if [ -z "${SKIP_FIRST:-}" ]; then
  for t in "${FOLD_TESTS[@]}"; do
    budget_test gpu_fused_decode 240 "differing outputs|worst|panicked" "$t"
  done
fi
suite_rest gpu_fused_decode "${FOLD_TESTS[@]}"
echo "done at t=${SECONDS}s"
