#!/usr/bin/env bash
# Session 75's later calls: on an H200 the issue's table (table_if_h200, does not return). On any
# other card, the weight GEMVs by ring shape and grid (`mlxcel bench gemv --tiled --norm`, the
# layout and folded norm a decode step uses; ring:8:3 is the default): session 75's step budget
# on an H100 put the small GEMVs at 53% (qkv) and ~69% (o_proj, down, head) of the copy rate in
# situ against 82% for gate/up (ADR 0016 addendum), so does another ring shape or grid serve the
# small ones better on this card?
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session75_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 MLXCEL_MERGE_SIGNS_FIRST=1  # does not return on an H200
call_dir s75c2
timeout 400 .devcarry/bin/mlxcel bench gemv --tiled --norm --iters 100 \
  --schedules ring:8:3,ring:8:4,ring:8:2,ring:4:3,ring:4:4,ring:8:3:264,ring:8:3:396,ring:8:3:528 \
  --out "$R/bench-gemv" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$? (t=${SECONDS}s)"
cat "$R/bench-gemv/gemv.md" 2> /dev/null || tail -5 "$R/bench-gemv.err"
