#!/usr/bin/env bash
# Host-side A/B of two builds in one device call: this tree's build (.devcarry/bin/mlxcel,
# benchmarks/gpu/stage.sh) against another revision (.devcarry/ab/mlxcel,
# benchmarks/gpu/stage_ab.sh REV), end to end with the build profile, ROUNDS pairs with the
# order alternating (session 12 saw an order-independent fp16 submit difference against
# b779b93: calls 3-4). Carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/ab/mlxcel.
#   KVS="fp16" CTX=32768 ROUNDS=4 source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/host_ab.sh
# Tags: `r<round>A` (this build) and `r<round>B` (REV); `python3 benchmarks/repeats_summary.py DIR` gives the
# medians per build. CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir host-ab
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-540} FILL=random-kv
RUN_TIMEOUT=80
for bin in .devcarry/bin/mlxcel .devcarry/ab/mlxcel; do TOKENS=8 BIN=$bin timed 60 warm turbo4 1024 > /dev/null; done
for round in $(seq 1 "${ROUNDS:-3}"); do
  for kv in ${KVS:-fp16 turbo4}; do
    if ((round % 2)); then
      timed 25 "r${round}A" "$kv" "${CTX:-32768}"
      BIN=.devcarry/ab/mlxcel timed 25 "r${round}B" "$kv" "${CTX:-32768}"
    else
      BIN=.devcarry/ab/mlxcel timed 25 "r${round}B" "$kv" "${CTX:-32768}"
      timed 25 "r${round}A" "$kv" "${CTX:-32768}"
    fi
  done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" | tee "$R/summary.md"
echo "done at t=${SECONDS}s"
