#!/usr/bin/env bash
# Session 36's first device call (H200, ~9 min; timeout_s 580), after benchmarks/gpu/stage.sh
# plus the mlxcel-models test binary synthetic_and_hub in .devcarry/bin/tests:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session36_call1.sh
# The submit thread (MLXCEL_SUBMIT_THREAD, new, default on): MLX's async_eval of step t on a
# second thread while the loop builds step t + 1 (mlxcel-core/src/mlx/submit.rs).
# 1. On CUDA: the generation tests' token comparisons (pipelined with and without the thread
#    against the synchronous loop, tiny model, four cache modes) and turbo4's greedy tokens on
#    the synthetic 8B at 1024 positions with the thread off / on (must match).
# 2. 32K, two interleaved rounds of fp16 and turbo4 with the thread off and on. Prediction:
#    turbo4's host per step (loop thread) falls from build + submit (~2.5-3.5 ms) to
#    max(build, submit) + hand-off (~1.5-1.9 ms), below its 2.45 ms of device time: the
#    device's idle time between steps goes to ~0 and tok/s rises to ~1/device time
#    (~400 tok/s); fp16 (3.26 ms of device) gains where its host was the slower side.
# 3. 128K fp16 and turbo4 with the thread (both device-bound before: little change expected).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s36c1
BUDGET=${BUDGET:-540}
gunzip -f .devcarry/bin/tests/synthetic_and_hub.gz && chmod +x .devcarry/bin/tests/synthetic_and_hub
timeout 120 .devcarry/bin/tests/synthetic_and_hub --test-threads=1 pipelined step_ab > "$R/test-synthetic_and_hub.txt" 2>&1
echo "synthetic_and_hub rc=$? $(grep -E "test result|panicked|left|right" "$R/test-synthetic_and_hub.txt" | tr '\n' ' ' | cut -c1-600)"
e2e_setup "$BUDGET" 90
tokens_ab MLXCEL_SUBMIT_THREAD turbo4 tok
export TOKENS=128
for round in 1 2; do
  if ((round == 1)); then order="0 1"; else order="1 0"; fi
  for v in $order; do
    timed 40 "r$round-t$v" fp16 32768 MLXCEL_SUBMIT_THREAD=$v
    timed 40 "r$round-t$v" turbo4 32768 MLXCEL_SUBMIT_THREAD=$v
  done
done
timed 60 "long-t1" fp16 131072 MLXCEL_SUBMIT_THREAD=1
timed 60 "long-t1" turbo4 131072 MLXCEL_SUBMIT_THREAD=1
echo "done at t=${SECONDS}s"
