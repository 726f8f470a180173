#!/usr/bin/env bash
# Session 49, second device call (H200, ~7 min), prepared in session 48: the attention launch's
# tests of session 48's options. Bit identity with and without MLXCEL_MMA_QFIRST2 (turbo4, int8;
# GQA 1-8, D 64 and 128, lengths 1-4097; ~40 checks), MLXCEL_MMA_FCOPY1 / MLXCEL_MMA_VZERO /
# MLXCEL_MMA_COMBINE_W1 / MLXCEL_MMA_DEEP_PLAIN where each changes the build (~110 checks), and
# MLXCEL_MMA_WIDE_PLAIN within the parity bound (every format; 125 cases). Session 46's 100
# checks took ~165-195 s.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session49_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s49c2
gpu_test gpu_fused_decode 150 "bit-identity checks" first_two_ring_tiles
gpu_test gpu_fused_decode 240 "bit-identity checks" refill_softmax_and_combine_trims
gpu_test gpu_fused_decode 180 "worst|cases" wide_plain_ctas
finish_call
