#!/usr/bin/env bash
# Session 49, second device call (H200, ~6 min), prepared in session 48: the tests of session
# 48's options. Bit identity with and without each of MLXCEL_MMA_QFIRST2, MLXCEL_MMA_FCOPY1,
# MLXCEL_MMA_VZERO, MLXCEL_MMA_COMBINE_W1 (the attention launch: every format, GQA 1-8, D 64 and
# 128, lengths 1-4097; the attention append: short and ~3K prefills, every append format);
# MLXCEL_MMA_WIDE_PLAIN within the parity bound, and the attention append against the separate
# append under it (both sides with 12-warp plain CTAs).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session49_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s49c2
gpu_test gpu_fused_decode 150 "bit-identity checks" first_two_ring_tiles
gpu_test gpu_fused_decode 200 "bit-identity checks" refill_softmax_and_combine_trims
gpu_test gpu_fused_decode 150 "worst" wide_plain_ctas
gpu_test gpu_attention_append 120 "steps" first_two_ring_tiles_early
gpu_test gpu_attention_append 150 "steps" refill_softmax_and_combine_trims
(export MLXCEL_MMA_WIDE_PLAIN=1; gpu_test gpu_attention_append 120 "panicked|ok" attention_append_writes_and_attends)
finish_call
