#!/usr/bin/env bash
# Session 8, fourth device call (H200, <= 7.5 min), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session8_call4.sh
# The table with MLXCEL_LIFT_GRAPH_BYTES on (its default: generate lifts MLX's
# per-graph byte limit for compressed KV caches; call 3 measured it by hand at 128K:
# turbo4 127.7 -> 162.5 tok/s), fp16 first and last at each context, and turbo4 with the
# flag off as the same-call A/B. Runs are skipped once $BUDGET seconds are near, so the
# results always come back; the most important ones go first.
set -uo pipefail
R=/tmp/s8c4; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s8c4.tgz" -C "$R" .' EXIT
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
BUDGET=${BUDGET:-430}
timed() { # timed SECONDS_NEEDED TAG KV CTX [ENV...]
  local need=$1; shift
  if ((SECONDS + need > BUDGET)); then echo "skipped $* (t=${SECONDS}s)"; return; fi
  run "$@"
}
for ctx in ${CTXS:-131072 32768 4096}; do
  need=$((ctx > 65536 ? 60 : 16)); RUN_TIMEOUT=$((ctx > 65536 ? 150 : 90))
  timed "$need" first fp16 "$ctx"
  timed "$need" default turbo4 "$ctx"
  timed "$need" capped turbo4 "$ctx" MLXCEL_LIFT_GRAPH_BYTES=0
  timed "$need" default int8 "$ctx"
  timed "$need" default turbo4-asym "$ctx"
  timed "$need" last fp16 "$ctx"
done
timed 60 fusedfp16 turbo4 "${CTX_EXTRA:-131072}" MLXCEL_FUSED_FP16=1
grep -h "MLX graph limit" "$R"/*.err | sort | uniq -c
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
echo "done at t=${SECONDS}s"
