#!/usr/bin/env bash
# Session 61, third call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch, ~7.5 min). On an H100: issue 5's microbenchmark (deliverable 4) in one run with
# today's defaults: `mlxcel bench attention` over its default modes (fp16, int8, turbo4-asym,
# turbo4, turbo3-asym, turbo3, turbo2-asym, turbo2), contexts 4K-128K, the Llama-3-8B layer
# (32:8:128) and the head_dim-64 shape (32:8:64), with the split paths of turbo4 / turbo4-asym
# beside them; MLX's fp16 SDPA, bytes, TB/s and the fraction of a copy measured in the same run.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session61_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s61c3
nvidia-smi --query-gpu=name,clocks.max.memory,clocks.max.sm --format=csv,noheader
timeout "${BENCH_TIMEOUT:-420}" .devcarry/bin/mlxcel bench attention --out "$R/bench-attention" \
  > "$R/bench-attention.out" 2> "$R/bench-attention.err"
echo "bench attention rc=$? t=${SECONDS}s"
cat "$R/bench-attention/results.md" 2>/dev/null || tail -20 "$R/bench-attention.err"
