#!/usr/bin/env bash
# Session 37's fifth device call (H200, ~90 s; the session's last device seconds), after
# benchmarks/gpu/stage.sh (mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session37_call5.sh
# MLXCEL_QMV_SILU_OCC5 (the gate/up + SiLU kernel bounded to five CTAs per SM: 48 registers,
# 1.36 waves of 660 CTAs instead of 1.7 of 528). Prediction: gate/up ~3 us faster per launch
# (call 3's 768-CTA time), ~-0.1 ms of device per step in every mode; bit-identical tokens.
# (Its runs were written out in the script when it ran, straight into $OUT; e2e_run.sh's
# tokens_ab and step_ab since.)
# Ran on cee5a03. The flag lost (+0.10 ms per step at 32K, +0.21 at 4K) and was removed after
# this call: check out cee5a03 to run it again.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s37c5
export RUN_ENV="MLXCEL_DEVICE_CLOCK=1" FILL=random-kv
tokens_ab MLXCEL_QMV_SILU_OCC5 turbo4 tok
step_ab ab MLXCEL_QMV_SILU_OCC5 turbo4 32768
step_ab ab MLXCEL_QMV_SILU_OCC5 fp16 4096
echo "done at t=${SECONDS}s"
