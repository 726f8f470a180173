#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session14_call1.sh
# Written after session 13's last device call (CPU-tested; never run on a GPU):
# 1. In-situ kernel times of this build (benchmarks/gpu/ncu_e2e.sh; the split by kernel has
#    not been taken since session 11, before the norm fold): turbo4 and fp16 at 32K.
# 2. int8 boundary layers (--kv-boundary-type int8 / MLXCEL_KV_BOUNDARY_TYPE=int8): the 4
#    boundary layers of turbo4 take the fused int8 kernel instead of MLX's fp16 SDPA.
#    Prediction from session 11's in-situ ncu (fp16 SDPA 48 us per call at 32K against the
#    tensor-core kernel's ~24; 4 ropes and 8 copies of ~3-4 us go with the fp16 ends) and
#    `bench attention` at 128K (SDPA 131 us, int8 83 us): ~-0.1 ms per step at 32K, ~-0.2 ms
#    at 128K (5.00 -> ~4.8 ms). Three interleaved rounds of turbo4 with fp16 / int8 ends at
#    128K and 32K, fp16 alongside.
# `python3 benchmarks/repeats_summary.py DIR` gives the medians (tags r<round>, r<round>i8).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" TOKENS=8 NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s14c1
# In-situ kernel times first (the most informative part if the call runs short).
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  FILL=random-kv NCU_OUT="$R" timeout 150 bash benchmarks/gpu/ncu_e2e.sh turbo4,fp16 32768 8,2 2>&1 | tail -40
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-540} FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${CTXS:-131072 32768}; do
  for round in 1 2 3; do ends_round "$round" "$ctx" 32 "turbo4 fp16" "turbo4 int8" "fp16 fp16"; done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
