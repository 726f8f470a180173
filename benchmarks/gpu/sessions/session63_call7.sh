#!/usr/bin/env bash
# Session 63, seventh call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~1.5 min): `bench attention` with its defaults and the chained
# pipelined time per call (each call's query is the previous call's output, batches of 5 handed
# to MLX as built). Call 6's unchained batches let short kernels overlap (MLX's 8K SDPA at 18 us
# per call against a 33 us kernel). Prediction: pipelined times now at or above the kernel
# times of call 6's ncu table (SDPA 8K >= ~33 us; turbo4 32K ~22-24 us, ratio ~2.5-3.0x;
# 128K ~3.1-3.3x), and at 4K-8K the fused calls host-bound at ~16-18 us (ratio ~1.8-2x).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call7.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c7
timeout 300 .devcarry/bin/mlxcel bench attention --split-modes none --out "$R/bench" > /dev/null 2> "$R/bench.err"
echo "bench attention rc=$? t=${SECONDS}s"
grep -E "copy roofline|mlx-sdpa|(turbo4|turbo3|int8|asym) +fused" "$R/bench.err" | grep -v "turbo[23]-asym"
echo "done at t=${SECONDS}s"
