#!/usr/bin/env bash
# Session 7's first call (session7_call1.sh) lost the machine mid-call with no output (the
# device tool: "stopped answering"), taking half of the session's device time. This is its
# trimmed re-run (~6 min): the fusedbound variant and four of the 32K variants dropped.
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session7_call1b.sh
set -uo pipefail
R=/tmp/s7c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s7c1.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
run default fp16 131072
run default turbo4 131072
run mb turbo4 131072 MLX_MAX_MB_PER_BUFFER=1000000
run mb fp16 131072 MLX_MAX_MB_PER_BUFFER=1000000
run fold turbo4 131072 MLXCEL_FOLD_MERGE=1
run default fp16 32768
run default turbo4 32768
run mb turbo4 32768 MLX_MAX_MB_PER_BUFFER=1000000
run nobound turbo4 32768 MLXCEL_KV_BOUNDARY_LAYERS=0
run fold turbo4 32768 MLXCEL_FOLD_MERGE=1
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last|idle before" "$R/timeline.txt"
