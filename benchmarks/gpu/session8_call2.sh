#!/usr/bin/env bash
# Next session's second device call (H200, ~6 min), after session8_call1.sh (same staging):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session8_call2.sh
# The table at 32K and 128K for fp16 / turbo4-asym / turbo4 / int8 with the build of
# the checked-out code, the device timeline on; fp16 first and last at each context (the
# host's speed drifts between runs, and every ratio is taken against fp16 of the same call).
set -uo pipefail
R=/tmp/s8c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s8c2.tgz" -C "$R" .' EXIT
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
for ctx in ${CTXS:-32768 131072}; do
  RUN_TIMEOUT=$((ctx > 65536 ? 150 : 90))
  run first fp16 "$ctx"
  for kv in turbo4-asym turbo4 int8; do run default "$kv" "$ctx"; done
  run last fp16 "$ctx"
done
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last" "$R/timeline.txt" | head -60
