#!/usr/bin/env bash
# Session 61, fourth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch, ~7.5 min). On an H100 (~2 min): `bench attention` at D 128 for the issue's modes with
# the new "after build" ratio column (each call's graph build left out of both times).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session61_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s61c4
timeout 200 .devcarry/bin/mlxcel bench attention --contexts 4096,32768,131072 \
  --modes fp16,int8,turbo4-asym,turbo4,turbo3,turbo2 --shapes 32:8:128 --split-modes none \
  --out "$R/bench-attention" > "$R/bench-attention.out" 2> "$R/bench-attention.err"
echo "bench attention rc=$? t=${SECONDS}s"
cat "$R/bench-attention/results.md" 2>/dev/null || tail -20 "$R/bench-attention.err"
