#!/usr/bin/env bash
# Session 63, fourth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~2-3 min): the microbenchmark by kernel time
# (attention_kernel_times.sh: `bench attention` with its default contexts, modes and shapes under
# ncu). Call 3 (the same measurement at 4K / 32K / 128K, D 128, without bench's files) put
# turbo4 at 2.53x / 2.83x / 3.22x MLX's fp16 SDPA by kernel time (bench's wall time per call:
# ~1.1x / ~1.6-1.9x / ~2.7-2.9x). Prediction: the same ratios within +-0.1 at those contexts;
# the D 64 shape below the D 128 ratios (half the bytes per token, the same fixed time).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c4
R=$R bash benchmarks/gpu/attention_kernel_times.sh
echo "done at t=${SECONDS}s"
