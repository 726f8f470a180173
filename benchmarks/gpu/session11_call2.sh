#!/usr/bin/env bash
# Next session's second device call (H200, ~9 min; timeout_s 600), same staging:
#   CTXS="4096 32768" source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session11_call2.sh
#   CTXS=131072 ... (a third call; fewer runs fit: ~35 s each at 128K)
# The issue's table as medians: session 10's single samples could not settle the 4K
# criterion (turbo4 0.83x in call 4; host per step varies up to 2x between runs of one
# configuration). Three interleaved rounds of fp16 / turbo4 / int8 / turbo4-asym per context,
# the order rotated each round, after JIT warm-up runs; then
# `benchmarks/repeats_summary.py` prints medians, ranges and median ratios to fp16.
# Set LUT1=1 to run with MLXCEL_MMA_LUT_ONE=1 if call 1 made it the winner.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="256 512" TOKENS=8
set -uo pipefail
R=/tmp/s11c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s11c2.tgz" -C "$R" .' EXIT
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1${LUT1:+ MLXCEL_MMA_LUT_ONE=$LUT1}"
export BUDGET=${BUDGET:-540}
RUN_TIMEOUT=120
for kv in turbo4 int8 turbo4-asym; do TOKENS=8 timed 60 warm "$kv" 1024; done
export FILL=random-kv
RUN_TIMEOUT=80
modes=(fp16 turbo4 int8 turbo4-asym)
for ctx in ${CTXS:-4096 32768}; do
  for round in 1 2 3; do
    for i in 0 1 2 3; do
      timed 25 "r$round" "${modes[$(((i + round) % 4))]}" "$ctx"
    done
  done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" | tee "$R/summary.md"
echo "done at t=${SECONDS}s"
