#!/usr/bin/env bash
# Prepared in session 36 for session 37's first device call (H200, ~8 min; timeout_s 560),
# after `STAGE_GENERATION_TESTS=1 bash benchmarks/gpu/stage.sh` (then move .devcarry/bin/tests
# out and gzip .devcarry/bin/mlxcel: the carry limit is 64 MiB with the tracked files):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/synthetic_and_hub.gz &&
#   chmod +x .devcarry/bin/mlxcel .devcarry/bin/synthetic_and_hub &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session37_call1.sh
# 1. The generation tests on CUDA (never run on the GPU with the thread): the pipelined loop with and
#    without the submit thread against the synchronous loop for four cache modes; the step
#    A/B test twice (its CUDA token difference in session 36: the flag or run-to-run?).
# 2. The merge fold re-decided with the submit thread (NOTES "Next lever (after session 36)"
#    item 3): in-process A/B (MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE, 256 tokens, blocks of 8) at 4K
#    and 32K, turbo4 and int8. Prediction: device -0.02 to -0.10 ms per step with the fold
#    off (sessions 31-32), the worker's submit +0.1-0.2 ms (28 nodes more), still below the
#    device time: turn the fold off by default if every arm's device time drops.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s37c1
BUDGET=${BUDGET:-530}
generation_tests
e2e_setup "$BUDGET" 90
export TOKENS=256
for ctx in 32768 4096; do
  for kv in turbo4 int8; do
    timed 45 "ab-fold" "$kv" "$ctx" MLXCEL_STEP_AB=MLXCEL_FOLD_MERGE MLXCEL_STEP_AB_BLOCK=8
  done
done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
