#!/usr/bin/env bash
# Session 34's fourth device call (H200, ~6 min; timeout_s 420), the same build as call 3:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session34_call4.sh
# The table beyond 32K with this session's defaults: fp16, turbo4, turbo4-asym and int8
# at 128K and 4K, one run each, interleaved by context.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s34c4
BUDGET=${BUDGET:-380}
e2e_setup "$BUDGET" 90
export TOKENS=64
for kv in fp16 turbo4 turbo4-asym int8; do timed 50 base "$kv" 131072; done
for kv in fp16 turbo4 turbo4-asym int8; do timed 30 base "$kv" 4096; done
echo "done at t=${SECONDS}s"
