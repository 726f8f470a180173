#!/usr/bin/env bash
# Next session's second device call (H200, ~9 min; timeout_s 600), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session15_call2.sh
# Why (session 14): with fp16 boundary layers turbo4's 128K device span was 4.82-4.99 ms, with
# int8 ends 4.20-4.22 ms. Kernel arithmetic explains ~0.2-0.3 ms of that (SDPA 131 -> int8 83
# us x 4, the ropes and copies of the fp16 ends); the rest looks like device idle inside the
# step: the fp16 ends' 2.15 GB of inputs make MLX close its CUDA graph by bytes (ADR 0007).
# 1. In-situ kernel sums at 128K (ncu_e2e.sh, 2 steps): turbo4 with fp16 ends and int8 ends.
#    span - kernel sum = idle inside the step.
# 2. MLXCEL_LIFT_GRAPH_BYTES (MLX_MAX_MB_PER_BUFFER lifted) off / on, turbo4 fp16 ends at
#    128K, three interleaved rounds with the device clock (ADR 0007's A/Bs predate it and
#    were decided by host noise). If the lift closes the gap, turbo4 with the default fp16
#    ends reaches ~2.1x at 128K; then make it the default for compressed caches.
# `python3 benchmarks/repeats_summary.py DIR` gives the medians (tags r<round>lift, r<round>).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c2
CTX=${CTX:-131072}
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  FILL=random-kv NCU_OUT="$R/ends-fp16" MLXCEL_KV_BOUNDARY_TYPE=fp16 timeout 120 bash benchmarks/gpu/ncu_e2e.sh turbo4 "$CTX" 8,2 2>&1 | tail -16
  FILL=random-kv NCU_OUT="$R/ends-int8" MLXCEL_KV_BOUNDARY_TYPE=int8 timeout 120 bash benchmarks/gpu/ncu_e2e.sh turbo4 "$CTX" 8,2 2>&1 | tail -16
  gzip -9 "$R"/ends-*/ncu-e2e/*.csv 2> /dev/null
  echo "ncu done at t=${SECONDS}s"
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_KV_BOUNDARY_TYPE=fp16"
export BUDGET=${BUDGET:-545} FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2 3; do
  if ((round % 2)); then
    timed 34 "r${round}lift" turbo4 "$CTX" MLXCEL_LIFT_GRAPH_BYTES=1
    timed 34 "r$round" turbo4 "$CTX" MLXCEL_LIFT_GRAPH_BYTES=0
  else
    timed 34 "r$round" turbo4 "$CTX" MLXCEL_LIFT_GRAPH_BYTES=0
    timed 34 "r${round}lift" turbo4 "$CTX" MLXCEL_LIFT_GRAPH_BYTES=1
  fi
done
timed 34 r1 fp16 "$CTX"
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
