#!/usr/bin/env bash
# Session 29's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session29_call1.sh
# MLXCEL_QMV_XASYNC (written after session 28's calls, never run): x and the folded norm's
# weight staged by cp.async ahead of the ring's first copies, so that ptxas cannot put the
# copies first (it did in the POST build with the fold: session 28, call 6).
# Prediction: bit-identical; bench gemv --norm POST gate/up 25.90 -> 22-23 us with XASYNC (its
# unfolded speed), the default 27.09 -> 26.5-27; in situ (turbo4 32K) POST + XASYNC gate/up
# 27.6 -> 22-23 us, the step 2.85 -> ~2.70-2.75 ms.
# 1. gpu_quantized_gemv's bit-identity test for XASYNC (POST off and on);
# 2. ncu of bench gemv --norm: XASYNC 0/1 x POST 0/1 at ring:8:3;
# 3. in situ (ncu, turbo4 at 32K): default; XASYNC; XASYNC + POST.
# CPU dry run: TESTS=0 NCU=0 BIN=target/release/mlxcel.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s29c1
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${TESTS:-1}" != 0 ]; then
  gpu_test gpu_quantized_gemv 200 "x by cp.async" x_staged_by_cp_async
fi
if [ "${NCU:-1}" != 0 ]; then
  for xa in 0 1; do
    for post in 0 1; do
      MLXCEL_QMV_XASYNC=$xa MLXCEL_QMV_POST=$post NCU_GEMV_TIMEOUT=80 ncu_gemv "x$xa-p$post" --norm --schedules ring --iters 10
    done
  done
fi
e2e_setup 540 60
insitu_env base MLXCEL_QMV_XASYNC=0
insitu_env xasync MLXCEL_QMV_XASYNC=1
insitu_env xasync-post MLXCEL_QMV_XASYNC=1 MLXCEL_QMV_POST=1
c=(); for t in base xasync xasync-post; do c+=("$R/insitu-$t/ncu-e2e/ncu-e2e-turbo4-32768.csv"); done
python3 benchmarks/gpu/insitu_medians.py "${c[@]}" 2>&1 | grep qgemv4 | sed 's/custom_kernel_mlxcel_//' | cut -c1-200
echo "done at t=${SECONDS}s"
