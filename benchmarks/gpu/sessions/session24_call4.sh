#!/usr/bin/env bash
# Ran on the build of commit 97b1199 (the fp16 runs do not touch its MLXCEL_L2_PREFETCH code).
# Session 24, fourth device call (H200, ~3 min; timeout_s 280), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session24_call4.sh
# Call 3: the default fp16 decode (in-place appends, MLXCEL_FP16_INPLACE_APPEND) gave greedy
# tokens at 1K that differ between identical runs (first difference at 25 in one of three),
# and differ from the rope + slice_update path at 19, while with the GEMVs slowed by the L2
# prefetch it matched that path in both runs: timing-dependent, a race. Which?
#  - the same run three times again (reproduce);
#  - MLX_USE_CUDA_GRAPHS=0, twice: every node in stream order, no graph concurrency;
#  - prompt 200 (< 256: MLX's SDPA takes its vector kernel, not cuDNN's decode path), three times,
#    and the reference path there once;
#  - the reference path (MLXCEL_FP16_INPLACE_APPEND=0) at 1K once (call 3's tokens again?).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s24c4
e2e_setup 250 60
export TOKENS=32
for i in 1 2 3; do timed 30 "det$i" fp16 1024; done
for i in 1 2; do timed 30 "nog$i" fp16 1024 MLX_USE_CUDA_GRAPHS=0; done
timed 30 ref1 fp16 1024 MLXCEL_FP16_INPLACE_APPEND=0
for i in 1 2 3; do timed 30 "short$i" fp16 200; done
timed 30 shortref1 fp16 200 MLXCEL_FP16_INPLACE_APPEND=0
python3 benchmarks/gpu/token_pairs.py "$R" --tokens
echo "done at t=${SECONDS}s"
