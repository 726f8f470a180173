#!/usr/bin/env bash
# Session 60, a short last call (~3.5 min): turbo4 at 128K with the first three layers as its
# boundary layers (the default since ADR 0028) against fp16 and the first 2 + last 2
# (`MLXCEL_KV_BOUNDARY_LAYERS=2`, tag b22), one round; then the paired-table test on CUDA (its
# g >= k shape checks MLX's matmul at 3 rows only there).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session60_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s60c3
e2e_setup "${BUDGET:-200}" 60
nvidia-smi --query-gpu=name --format=csv,noheader
timed 30 r1 turbo4 131072
timed 30 r1 fp16 131072
timed 30 r1b22 turbo4 131072 MLXCEL_KV_BOUNDARY_LAYERS=2
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
budget_test gpu_quantized_gemv 100 "bit-identity|strided|differ|panicked" paired_tables_give_the_same_bits_or_are_refused
finish_call
