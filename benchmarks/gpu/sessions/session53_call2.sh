#!/usr/bin/env bash
# Session 53 (or the next device session), a call for branch next/fp16-centroids (stage its binaries:
# the turbo codebooks' centroids rounded to fp16, so that the tensor-core kernel and the f32
# reference decode a code to the same value; H200, ~8 min; a test that would pass ~560 s is skipped).
# On main (session 52) the kernel reached 1.04-1.19e-3 from the f32 reference over keys growing
# 8-fold along the sequence, q's and the centroids' fp16 roundings contributing about equally
# (benchmarks/gpu/fp16_operand_error.py). Prediction, from that script: the rising-key errors fall
# (GQA 1 worst 1.7e-3 -> 7.5e-4 simulated; GQA 7 1.08e-3 -> 1.04e-3), random keys 4.4 -> 3.6e-4.
# - lazy_rescale over turbo4 (its rising-keys half prints each case's error with the flag off,
#   i.e. the default kernel's): compare with session 52's call 3 (worst 1.19e-3).
# - The parity suite (fused decode against the split paths) for the turbo modes.
# No speed A/B: the kernels are unchanged, only the codebook's values.
# Merge the branch only if both pass and the rising-key errors fall; the greedy tokens of turbo
# modes will then differ from earlier sessions' (new codebook values).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session53_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s53c2
BUDGET=560
(export MLXCEL_PARITY_MODES=turbo4; budget_test gpu_fused_decode 150 "worst|cases|panicked" lazy_rescale)
(export MLXCEL_PARITY_MODES=turbo4,turbo4-asym; budget_test gpu_fused_decode 300 "fused decode|panicked" fused_decode_matches)
finish_call
