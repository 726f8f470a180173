#!/usr/bin/env bash
# Session 17's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session17_call2.sh
# MLXCEL_MMA_FTZ (off, written after call 1): the tensor-core kernel's softmax exp2 without
# exp2f's denormal fix-up; NVRTC SASS of the turbo4 D=128 loop 399 -> 384 instructions per
# tile (-3.8%). The kernel is issue-bound, so the prediction is up to -3.8% per call at 128K
# (ncu 49.8 -> ~48 us), ~-0.05 ms per step end to end. WIDE is on by default in this build.
# 1. bit identity: hoisted_and_pipelined_loops_are_bit_identical (now with FTZ alone and with
#    HOIST + RSALL; 288 checks);
# 2. greedy tokens FTZ 0/1 (turbo4, 1K): must be equal;
# 3. bench attention A/B, ncu default vs FTZ at 128K;
# 4. turbo4 at 128K and 32K end to end, FTZ on / off, two rounds each (device clock).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 CTXS=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s17c2
gpu_test gpu_fused_decode 200 "bit-identity checks" hoisted
tokens_ab MLXCEL_MMA_FTZ turbo4 ftz
kernel_flag_ab MLXCEL_MMA_FTZ ftz
finish_call
