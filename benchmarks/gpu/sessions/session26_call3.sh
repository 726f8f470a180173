#!/usr/bin/env bash
# Session 26's third device call (H200, ~9 min; timeout_s 560), after session26_call2.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session26_call3.sh
# 1. The pair-table bit-identity test with PAIR pinned equal on both sides (call 2 found the
#    one-table variant, whose ring is capped at 4 stages and so runs the one-tile loop,
#    compared with the paired default: 1 differing output at len = 17);
# 2. the table, a second interleaved round fp16 / turbo4 / turbo4-asym at 128K and
#    32K (128 tokens; call 1 was round 1);
# 3. if time is left, Nsight Compute's full set on one decode step's four layer GEMVs (qkv +
#    append, o_proj, gate/up + SiLU, down): warp states and issue rates, for the NOTES' open
#    question whether the GEMVs are latency-bound per warp as the attention loop was.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s26c3
if [ "${TESTS:-1}" != 0 ]; then
  gpu_test gpu_fused_decode 110 "pair table:" pair_table_decodes
fi
e2e_setup 480 60
TOKENS=128
config_rounds "${LONG:-131072}" 36 2 fp16 turbo4 turbo4-asym
config_rounds "${CTX:-32768}" 20 2 fp16 turbo4 turbo4-asym
if [ "${NCU:-1}" != 0 ] && ((SECONDS + 130 <= BUDGET)); then
  NCU_OUT=$R LAUNCHES=4 NCU_TIMEOUT=110 bash benchmarks/gpu/ncu_gemv.sh > "$R/ncu-gemv-summary.txt" 2>&1
  rm -f "$R/ncu-gemv/gemv.ncu-rep"
  head -c 3000 "$R/ncu-gemv-summary.txt"
else
  echo "skipped ncu of the GEMVs (t=${SECONDS}s)"
fi
finish_call
