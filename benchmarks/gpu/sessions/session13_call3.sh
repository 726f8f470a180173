#!/usr/bin/env bash
# Session 13's third device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# with the folded RMSNorm and the qkv parts on by default (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session13_call3.sh
# 1. gpu_quantized_gemv's parts test (call 2's run stopped at a test bug: "batched:8" did not
#    parse back into a schedule);
# 2. the issue table: two interleaved rounds of fp16 / turbo4 / int8 / turbo4-asym at 32K, 4K
#    and 128K (the order rotated each round; ~17 s per run, ~30 s at 128K, so a third round
#    does not fit one call). `python3 benchmarks/repeats_summary.py DIR` gives the medians.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s13c3
timeout 120 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture qkv_parts > "$R/test-parts.txt" 2>&1
echo "parts test rc=$? $(grep -E 'test result|panicked|qkv parts' "$R/test-parts.txt" | tr '\n' ' ' | cut -c1-500)"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-545} FILL=random-kv
RUN_TIMEOUT=80
modes=(fp16 turbo4 int8 turbo4-asym)
for ctx in ${CTXS:-32768 4096 131072}; do
  for round in 1 2; do
    for i in 0 1 2 3; do
      timed 28 "r$round" "${modes[$(((i + round) % 4))]}" "$ctx"
    done
  done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
