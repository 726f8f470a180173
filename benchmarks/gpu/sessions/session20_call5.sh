#!/usr/bin/env bash
# Session 20's fifth device call (H200, ~2 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session20_call5.sh
# Where the GEMVs' time goes now that EARLY is on (source-level samples of o_proj, down and
# gate/up + SiLU in bench gemv), and why MLXCEL_MMA_QFIRST lost at 32K while it won at 4K and
# 128K (call 2): its source samples at 32K and a second pair of 32K sweeps.
# CPU dry run: NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c5
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  source_profile oproj "mlxcel_qgemv4_64_8_4_4_f_t_45312_t" 4 "$BIN" bench gemv --schedules ring:8:4 --iters 3
  source_profile down "mlxcel_qgemv4_64_8_4_4_f_t_76032" 4 "$BIN" bench gemv --schedules ring:8:4 --iters 3
  source_profile gateup "mlxcel_qgemv4_silu_64_8_4_4_f_t" 4 "$BIN" bench gemv --schedules ring:8:4 --iters 3
  MLXCEL_MMA_QFIRST=1 source_profile attn32kq mlxcel_decode 6 "$BIN" bench attention --contexts 32768 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2
  SWEEP_CTXS=32768 sweep_best default MLXCEL_MMA_QFIRST=0 qfirst MLXCEL_MMA_QFIRST=1
fi
finish_call
