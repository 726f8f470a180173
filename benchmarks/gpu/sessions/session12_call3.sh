#!/usr/bin/env bash
# Session 12, device call 3 (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh and
# benchmarks/gpu/stage_ab.sh b779b93:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session12_call3.sh
# Call 2's machine ran every quantized mode host-bound at 32K (submit 2.6-2.8 ms per step
# against 1.9-2.1 in session 11's call 2; fp16's 3.2 in both). Whether this build's host
# side regressed: this build against b779b93 (before the kept flags and borrowed template
# names) at 32K, turbo4 and fp16, three interleaved rounds (session12_call2.sh with
# CTX=32768). Then 128K, two interleaved rounds of the four modes.
set -uo pipefail
CTX=32768 BUDGET=300 bash benchmarks/gpu/sessions/session12_call2.sh
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s12c3
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=$((565 - SECONDS)) FILL=random-kv
SECONDS=0
RUN_TIMEOUT=80
modes=(fp16 turbo4 int8 turbo4-asym)
for round in 1 2; do
  for i in 0 1 2 3; do timed 40 "r$round" "${modes[$(((i + round) % 4))]}" 131072; done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" | tee "$R/summary.md"
echo "done at t=${SECONDS}s"
