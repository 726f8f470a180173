#!/usr/bin/env bash
# Session 60 (~9.5 min, H200 or H100): issue 5's end-to-end table with session 57's defaults,
# and the boundary layers counted apart: turbo4 keeping only its first two (`MLXCEL_KV_BOUNDARY_LAYERS=2,0`,
# tag f2) or first three layers (`3,0`, tag f3) as boundary layers beside the default (first 2
# and last 2). On the CPU the last two buy turbo4 only 1-2% of its KLD, and a third first layer
# more than they do (benchmarks/results/2026-12-06-kv-boundary-ends-apart.md).
# Prediction on the H200: each layer of fp16 keys fewer at 128K is 197 MB less at ~3.6 TB/s,
# about -0.05 ms per 128K step: f2 2.95 -> ~2.85 ms (1.98x -> ~2.05x), f3 ~2.90 ms (~2.01x).
# Order: 128K round 1, 32K (128 tokens), 4K, 128K round 2 (the order reversed), each run only
# while its time fits $BUDGET.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session60_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s60c1
e2e_setup "${BUDGET:-560}" 90
nvidia-smi --query-gpu=name,clocks.max.memory --format=csv,noheader
F2=MLXCEL_KV_BOUNDARY_LAYERS=2,0
F3=MLXCEL_KV_BOUNDARY_LAYERS=3,0
timed 40 r1 fp16 131072
timed 40 r1 turbo4 131072
timed 40 r1f2 turbo4 131072 "$F2"
timed 40 r1f3 turbo4 131072 "$F3"
timed 40 r1 turbo4-asym 131072
timed 40 r1 int8 131072
for kv in turbo4 fp16 int8 turbo4-asym; do TOKENS=128 timed 30 r1 "$kv" 32768; done
TOKENS=128 timed 30 r1f2 turbo4 32768 "$F2"
for kv in int8 turbo4-asym fp16 turbo4; do timed 16 r1 "$kv" 4096; done
timed 40 r2f3 turbo4 131072 "$F3"
timed 40 r2f2 turbo4 131072 "$F2"
timed 40 r2 turbo4 131072
timed 40 r2 fp16 131072
timed 40 r2 int8 131072
timed 40 r2 turbo4-asym 131072
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
