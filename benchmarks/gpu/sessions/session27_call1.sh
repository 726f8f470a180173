#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 580), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session27_call1.sh
# MLXCEL_QMV_POST (written in session 26 after its device time was spent, off, never run): the
# GEMV ring kernels feed 4-bit codes to the mma as exact fp16 offsets straight from one LOP3 and
# apply each group's scale and bias after it in fp32 (ring_rows16_post in cuda/qgemv4.cuh).
# The two numbers, written first: bytes unchanged (0.5625 per weight); NVRTC SASS per
# 2048-weight tile gate/up + SiLU 215 -> 139, o_proj / down 179 -> 133, qkv + append 179 -> 134;
# session 26's ncu: gate/up issue-bound at 4.31 thread-instructions per weight (62% of issue
# slots busy, 54% of DRAM).
# Prediction: in situ at 32K gate/up 27.2 -> 20-23 us, down 14.5 -> 12-13.5, o_proj and qkv
# -0 to -1 us (occupancy-bound); -0.2 to -0.35 ms per step in every mode.
# 1. gpu_quantized_gemv's POST test (float64 reference, TOL 2e-3, and within 1.5x the default
#    kernel's error + 1e-4; 8 shapes x 5 kernels, 3 schedules on the first), then session 26's
#    fixed pair-table test (PAIR and WIDE pinned per comparison; never run on a GPU);
# 2. in situ (ncu, turbo4 at 32K) POST off / on: per-kernel medians (insitu_medians.py);
# 3. greedy turbo4 tokens off / on (expected to differ at some step: other roundings).
# Then session27_call2.sh: ncu of the GEMVs with POST on, rounds off / on.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s27c1
if [ "${TESTS:-1}" != 0 ]; then
  gpu_test gpu_quantized_gemv 200 "post-scaled GEMV:|post .*>=" post_scaled
  gpu_test gpu_fused_decode 90 "pair table:" pair_table_decodes
fi
e2e_setup 560 60
insitu_flags MLXCEL_QMV_POST
tokens_ab MLXCEL_QMV_POST turbo4 tok
finish_call
