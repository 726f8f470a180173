#!/usr/bin/env bash
# Session 45, call 4 (H200, ~8 min; timeout_s 595): the pair blocks' bit-identity test with room
# (its corrected count ran past its limit in session 44), then the 128K turbo4 step's kernels in
# situ with every default on (ncu, two steps): the budget the next lever starts from.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session45_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s45c4
gpu_test gpu_quantized_gemv 290 "checks" pair_blocks
CTX=131072 insitu_env shipped-128k
finish_call
