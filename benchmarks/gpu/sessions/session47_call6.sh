#!/usr/bin/env bash
# Session 47, sixth device call (H200, ~4.5 min): the review mend's tests on CUDA. The three
# attention-append tests now share their comparison helpers and prefill (assert_same_bits,
# assert_same_stored, twin_caches), and the turbo4-asym early-copy test takes the shared GQA 1-8
# shape list: all must pass as before (60 steps, 4 timeline steps, 48 table steps; 20 checks).
#   xz -d .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call6.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c6
gpu_test gpu_attention_append 330 "steps"
gpu_test gpu_fused_decode 120 "checks" asym_ring_copies
finish_call
