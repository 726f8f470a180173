#!/usr/bin/env bash
# Session 51, second device call (H200, <= ~8 min): the parity and bit-identity tests of what
# call 1 (session50_call1.sh) measured faster: the five pair-loop trims (128K -0.063 ms/step),
# MLXCEL_MMA_WIDE_PLAIN (-0.032) and MLXCEL_MMA_DEEP_PLAIN (-0.026). QFIRST2 (+0.000) and
# COMBINE_W1 (+0.009) gained nothing, so their tests (session50_call3.sh) are not run.
# Merges session50_call2.sh, the trims/wide-plain parts of call3 and call4's append tests.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session51_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s51c2
gpu_test gpu_fused_decode 120 "worst|cases" lazy_rescale
gpu_test gpu_fused_decode 70 "worst|cases" last_tile_masks
gpu_test gpu_fused_decode 100 "bit-identity checks" refill_softmax_and_combine_trims
gpu_test gpu_fused_decode 120 "worst|cases" wide_plain_ctas
gpu_test gpu_attention_append 90 "steps" lazy_rescale_and_last_tile_masks
gpu_test gpu_attention_append 120 "steps" refill_softmax_and_combine_trims
(export MLXCEL_MMA_WIDE_PLAIN=1; gpu_test gpu_attention_append 90 "panicked|ok" attention_append_writes_and_attends)
finish_call
