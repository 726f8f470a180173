#!/usr/bin/env bash
# Session 23, calls 2 and 3 (H200, ~8 min; timeout_s 580), after benchmarks/gpu/stage.sh (carry
# .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_rope):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session23_call2.sh
# Call 1 confirmed the lead: 2186 and 2422 of 8000 fp16 appends at 128K copied the layer's
# cache (MLX's slice_update, the buffer still held by the previous step's attention). The fix,
# MLXCEL_FP16_INPLACE_APPEND (default on): fp16 K+V appends written in place by one launch
# (cuda/fp16_append_kv.cu, RoPE inside), SDPA ordered after it by a depends node. This call:
# 1. gpu_fused_rope (now with fp16): the in-place append with RoPE against MLX's rope +
#    slice_update, the stored keys, and SDPA reading the new position without a host wait;
# 2. greedy tokens of fp16 at 1K with the flag off and on;
# 3. fp16 with the flag on / off, two interleaved rounds at 128K and 32K, one at 4K (128
#    tokens), with the `kv appends` count;
# 4. turbo4 once at each context (the same binary), for the ratio against the new fp16
#    ($OTHER_MODES, default turbo4).
# Call 2 ran this with SDPA ordered after the write by an MLX depends node, which does not
# order anything in MLX's CUDA graphs (gpu_fused_rope failed, tokens differed); call 3 ran it
# again (OTHER_MODES="turbo4 turbo4-asym int8") with the query RoPE launch that takes the
# write's token (cuda/rope_q_after.cu).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 SHORT=256 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s23c2
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_fused_rope 150 "^fp16 hq|fused rope:"
e2e_setup 540 60
tokens_ab MLXCEL_FP16_INPLACE_APPEND fp16 tok
TOKENS=128
export FLAG_MODES=fp16 FLAG_ROUNDS=2
flag_rounds MLXCEL_FP16_INPLACE_APPEND 36 "${LONG:-131072}"
flag_rounds MLXCEL_FP16_INPLACE_APPEND 20 "${CTX:-32768}"
FLAG_ROUNDS=1 flag_rounds MLXCEL_FP16_INPLACE_APPEND 14 "${SHORT:-4096}"
for kv in ${OTHER_MODES:-turbo4}; do
  timed 36 t4 "$kv" "${LONG:-131072}"
  timed 20 t4 "$kv" "${CTX:-32768}"
done
for kv in ${OTHER_MODES:-turbo4}; do timed 14 t4 "$kv" "${SHORT:-4096}"; done
finish_call
