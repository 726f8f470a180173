#!/usr/bin/env bash
# Session 72, first call: on an H200, the table (session71_h200.sh: table_if_h200, with
# 89017c1's MLXCEL_MERGE_SIGNS_FIRST default); on any other card, the carried compiled-kernel
# cache's test (session71_ptx.sh), so the call is not spent on nothing.
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=480 SECS=75 bash benchmarks/gpu/sessions/session72_first.sh
set -uo pipefail
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash benchmarks/gpu/sessions/session71_h200.sh
fi
nvidia-smi -L
exec bash benchmarks/gpu/sessions/session71_ptx.sh
