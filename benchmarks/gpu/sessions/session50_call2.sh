#!/usr/bin/env bash
# Session 50, second device call (H200, ~5 min): the parity tests of session 49's options that
# change rounding, against the f32 split reference and the kernel with the flag off (relative
# RMS < 1e-3; every format, D 64 and 128, GQA 1-8, lengths 1-4097 and 4096):
# - MLXCEL_MMA_LAZY_RESCALE over random keys and over keys growing 8-fold along the sequence
#   (the rescale inside the loop exercised), ~300 cases;
# - MLXCEL_MMA_MASK_LAST, ~150 cases;
# then the bit-identity of MLXCEL_MMA_VSEL with session 48's trims (the combined test).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session50_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s50c2
gpu_test gpu_fused_decode 120 "worst|cases" lazy_rescale
gpu_test gpu_fused_decode 70 "worst|cases" last_tile_masks
gpu_test gpu_fused_decode 100 "bit-identity checks" refill_softmax_and_combine_trims
finish_call
