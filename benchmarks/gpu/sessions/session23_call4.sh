#!/usr/bin/env bash
# Session 23, call 4 (H200, ~7 min; timeout_s 520), after benchmarks/gpu/stage.sh (carry
# .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_rope):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session23_call4.sh
# Call 3 left turbo4's boundary layers (fp16 keys, int8 values) appending keys through
# slice_update, 85 of 500 copied at 128K (239 in call 2). MLXCEL_FP16_INPLACE_APPEND now also
# writes fp16+int8 pairs in place (cuda/fp16_int8_kv.cu at the time; the review merged
# it into cuda/fp16_append_kv.cu under MLXCEL_V_INT8, NVRTC cubins byte-identical). This call:
# 1. gpu_fused_rope's first test (now with fp16+int8);
# 2. turbo4's greedy tokens at 1K with the flag off and on;
# 3. turbo4 with the flag on / off: two interleaved rounds at 128K, one at 32K (128 tokens);
# 4. fp16 and turbo4-asym once at 128K and 32K (the same binary).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s23c4
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_fused_rope 150 "^fp16\+int8 hq|fused rope:" rope_inside_the_fused_kernels_matches_mlx_rope_first
e2e_setup 480 60
tokens_ab MLXCEL_FP16_INPLACE_APPEND turbo4 tok
TOKENS=128
export FLAG_MODES=turbo4 FLAG_ROUNDS=2
flag_rounds MLXCEL_FP16_INPLACE_APPEND 36 "${LONG:-131072}"
FLAG_ROUNDS=1 flag_rounds MLXCEL_FP16_INPLACE_APPEND 20 "${CTX:-32768}"
for kv in fp16 turbo4-asym; do
  timed 36 t4 "$kv" "${LONG:-131072}"
  timed 20 t4 "$kv" "${CTX:-32768}"
done
finish_call
