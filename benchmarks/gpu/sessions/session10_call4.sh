#!/usr/bin/env bash
# Session 10, fourth device call (H200, ~7 min; timeout_s 540), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session10_call4.sh
# The end-to-end table with the pair table on by default (MLXCEL_MMA_LUT_K/_V,
# measured in call 3): fp16, turbo4, int8, turbo4-asym at 4K, 32K and 128K in one call
# (random-kv fill), after a warm-up run for the fresh machine's JIT; plus turbo4 with the
# tables off at 32K and 128K for the same-call A/B.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json SMALL=128 MID=256 BIG=512 TOKENS=8
set -uo pipefail
R=/tmp/s10c4; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s10c4.tgz" -C "$R" .' EXIT
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-450}
RUN_TIMEOUT=120
TOKENS=8 timed 60 warm turbo4 1024
TOKENS=8 timed 60 warm int8 1024
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${BIG:-131072} ${MID:-32768} ${SMALL:-4096}; do
  for kv in fp16 turbo4 int8 turbo4-asym; do
    timed 25 table "$kv" "$ctx"
  done
done
for ctx in ${BIG:-131072} ${MID:-32768}; do
  timed 25 nolut turbo4 "$ctx" MLXCEL_MMA_LUT_K=0
done
echo "done at t=${SECONDS}s"
