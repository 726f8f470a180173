#!/usr/bin/env bash
# Next session's second device call (H200, ~8 min; timeout_s 560), after session27_call1.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session27_call2.sh
# MLXCEL_QMV_POST, second half (see session27_call1.sh for the flag and the prediction):
# 1. Nsight Compute's full set on one decode step's layer GEMVs with POST on (fp16 mode, 4K:
#    instructions per weight, issue slots, DRAM; session 26 has the same with it off);
# 2. interleaved rounds POST off / on, turbo4 at 32K (two) and 128K (one), device time per
#    step (repeats_summary.py's on / off rows).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s27c2
if [ "${NCU:-1}" != 0 ]; then
  MLXCEL_QMV_POST=1 NCU_OUT=$R LAUNCHES=4 NCU_TIMEOUT=150 bash benchmarks/gpu/ncu_gemv.sh > "$R/ncu-gemv-post.txt" 2>&1
  rm -f "$R/ncu-gemv/gemv.ncu-rep"
  grep -E "custom_kernel|Duration|DRAM Throughput|Issue Slots Busy" "$R/ncu-gemv-post.txt" | head -24
fi
e2e_setup 530 60
TOKENS=128
FLAG_MODES=turbo4 FLAG_ROUNDS=2 flag_rounds MLXCEL_QMV_POST 20 "${CTX:-32768}"
FLAG_MODES=turbo4 FLAG_ROUNDS=1 flag_rounds MLXCEL_QMV_POST 36 "${LONG:-131072}"
finish_call
