#!/usr/bin/env bash
# Session 53's code for 2- and 3-bit turbo sides on CUDA (MLXCEL_LOWBIT_CUDA, off by default:
# written without a GPU), first of two calls (H200, ~9 min): the GPU tests with the flag set.
# - tensor_core: the dispatch (turbo3/turbo2 sides on the tensor-core kernel with the flag).
# - the fused encoder against the reference encoder at 4, 3 and 2 bits (packed bytes may differ
#   only at midpoints within rounding: <= 1 in 1000; norms within 2e-3).
# - the in-place decode appends feeding the fused kernel (10 steps after a 250-position prefill)
#   for turbo3-asym, turbo3, turbo2-asym, turbo2 beside the shipped modes.
# - the parity suite (fused decode against the f32 split path, random keys, 7 contexts incl.
#   1, 15, 17, 4097; GQA 1/4/7; D 64/128; bound 1e-3) for turbo3-asym and turbo2-asym.
# Prediction: all pass; the kernel's error like turbo4's (4-6e-4: the same fp16 operands).
# If any fails, the flag stays off and the failing case says which side (K or V, 2 or 3 bits).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session53_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s53c3
BUDGET=560
export MLXCEL_LOWBIT_CUDA=1
budget_test gpu_fused_decode 30 "mma-v4|panicked" tensor_core_kernel
budget_test gpu_fused_decode 90 "encode d=|panicked" fused_turbo4_encoder
budget_test gpu_fused_decode 150 "in-place appends|panicked" in_place_decode_appends
(export MLXCEL_PARITY_MODES=turbo3-asym,turbo2-asym; budget_test gpu_fused_decode 280 "fused decode|worst|panicked" fused_decode_matches)
finish_call
