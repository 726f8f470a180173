#!/usr/bin/env bash
# Session 29's second device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session29_call2.sh
# MLXCEL_QMV_NORM_LATE (written after call 1, never run): the folded norm's scale applied to
# the row sums in the epilogue; x staged once as nw * x, no barrier before the ring's first tile.
# Prediction: POST + fold's gate/up (bench --norm 25.90 us) -> ~22.5 (POST without the norm:
# 21.95); the default fold's 27.09 -> ~26; in situ (turbo4 32K) LATE + POST step 2.85 ->
# ~2.70 ms of kernels.
# 1. gpu_quantized_gemv's LATE accuracy test (float64 reference; in the background);
# 2. ncu of bench gemv --norm: LATE 0/1 x POST 0/1 at ring:8:3;
# 3. in situ (ncu, turbo4 at 32K): default; LATE; LATE + POST;
# 4. while time is left: end to end turbo4 32K (device clock) default / LATE + POST.
# CPU dry run: TESTS=0 NCU=0 BIN=target/release/mlxcel.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s29c2
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${TESTS:-1}" != 0 ]; then
  bg_test late gpu_quantized_gemv 330 "late norm" late_norm_scale
fi
if [ "${NCU:-1}" != 0 ]; then
  for late in 0 1; do
    for post in 0 1; do
      MLXCEL_QMV_NORM_LATE=$late MLXCEL_QMV_POST=$post NCU_GEMV_TIMEOUT=80 ncu_gemv "l$late-p$post" --norm --schedules ring --iters 10
    done
  done
fi
e2e_setup 530 70
insitu_env base MLXCEL_QMV_NORM_LATE=0
insitu_env late MLXCEL_QMV_NORM_LATE=1
insitu_env late-post MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
c=(); for t in base late late-post; do c+=("$R/insitu-$t/ncu-e2e/ncu-e2e-turbo4-32768.csv"); done
[ "${NCU:-1}" != 0 ] && python3 benchmarks/gpu/insitu_medians.py "${c[@]}" 2>&1 | grep qgemv4 | sed 's/custom_kernel_mlxcel_//' | cut -c1-200
[ "${TESTS:-1}" != 0 ] && bg_wait
timed 60 e2e-base turbo4 32768
timed 60 e2e-latepost turbo4 32768 MLXCEL_QMV_NORM_LATE=1 MLXCEL_QMV_POST=1
echo "done at t=${SECONDS}s"
