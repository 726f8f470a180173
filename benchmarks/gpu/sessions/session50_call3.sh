#!/usr/bin/env bash
# Session 50, third device call (H200, ~7 min; written in session 48 as session49_call2.sh,
# not run there): the attention launch's tests of session 48's options. Bit identity with and without MLXCEL_MMA_QFIRST2 (turbo4, int8;
# GQA 1-8, D 64 and 128, lengths 1-4097; ~40 checks; the trims' bit identity runs in call 2),
# MLXCEL_MMA_WIDE_PLAIN within the parity bound (every format; 150 cases), and the attention
# append's tests of sessions 48-49 (QFIRST2, the bit-identical trims with VSEL, and LAZY /
# MASK_LAST within parity with the append agreeing with the launch). Session 46's 100
# checks took ~165-195 s.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session50_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s50c3
gpu_test gpu_fused_decode 150 "bit-identity checks" first_two_ring_tiles
gpu_test gpu_fused_decode 150 "worst|cases" wide_plain_ctas
gpu_test gpu_attention_append 100 "steps" first_two_ring_tiles_early
gpu_test gpu_attention_append 90 "steps" lazy_rescale_and_last_tile_masks
finish_call
