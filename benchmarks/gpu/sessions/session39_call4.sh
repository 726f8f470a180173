#!/usr/bin/env bash
# Session 39's fourth device call (refused: no device time left; for the next session: H200,
# ~5 min; timeout_s 400),
# after benchmarks/gpu/stage.sh (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session39_call4.sh
# NOTES "Next lever (after session 39)", item 1a: MLXCEL_QMV_NOMATH_PROBE (new, off; wrong
# outputs) keeps the GEMVs' prologue, copies, waits and slot reads but skips each tile's
# arithmetic. In one process, A/B'd by step (device clock), turbo4 at 32K.
# Prediction: if the copy pattern holds the GEMVs in a decode step, the probe saves at most
# ~0.2 ms of the GEMVs' 1.9 ms per step; if the arithmetic interferes with the copies (bench's
# bare ring: gate/up 17.6 against 26.0 us), it saves ~0.4-0.6 ms.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s39c4
RUN_TIMEOUT=60 step_ab ab-nomath-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768
gpu_test gpu_quantized_gemv 60 "nomath" nomath_probe
# Per GEMV in situ (ncu, two steps): which launches the arithmetic holds (session 28's bench
# probe: gate/up 17.6 us bare against 26.0 shipped; head 67.7 against 103.2).
insitu_env nomath0 MLXCEL_QMV_NOMATH_PROBE=0
insitu_env nomath1 MLXCEL_QMV_NOMATH_PROBE=1
RUN_TIMEOUT=60 step_ab ab-nomath-128k MLXCEL_QMV_NOMATH_PROBE turbo4 131072
echo "done at t=${SECONDS}s"
