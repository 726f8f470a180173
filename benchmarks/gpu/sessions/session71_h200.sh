#!/usr/bin/env bash
# Session 71: the end-to-end table only if the card is an H200 (table_if_h200, with
# MLXCEL_MERGE_SIGNS_FIRST on: 89017c1's default, set here for d12bcac's staged binaries); on
# any other card it stops at once, so a start that brings an H100 costs only the start:
#   nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { nvidia-smi -L; exit 0; }
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=520 bash benchmarks/gpu/sessions/session71_h200.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 MLXCEL_MERGE_SIGNS_FIRST=1
echo "not an H200: nothing run"
