#!/usr/bin/env bash
# Session 62, sixth call. On an H200 (the card issue 5 names): the end-to-end table with
# ADR 0028's defaults (session61_call1.sh's H200 branch, BUDGET 450). On any other card (~90 s):
# the parallel compiles again. Call 5 measured 16 decode tokens after a 1024-token fp16 prefill
# at 12.4 s with MLX's one-after-another compiles and 9.1 s with mlxcel's parallel ones; every
# contiguity check of a graph build waited for the queue then (an evaluation entry point even
# for evaluated arrays). Now only evaluations that may launch new kernels wait. Predicted: the
# parallel pass ~3-5 s (the slowest single compile plus the prefill's); the --profile line
# `kernel compiles` says how long the compiles took in sum and how long evaluations waited.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session62_call6.sh
set -uo pipefail
CALL=s62c6 FIRST_KV=fp16 exec bash benchmarks/gpu/sessions/session62_call5.sh
