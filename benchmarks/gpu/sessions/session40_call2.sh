#!/usr/bin/env bash
# Session 40's second device call (H200, ~5-6 min; timeout_s 480), after benchmarks/gpu/stage.sh
# (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session40_call2.sh
# Call 1 (session39_call4.sh) ran MLXCEL_QMV_NOMATH_PROBE: without the tile arithmetic gate/up took
# 23.90 us in situ against 26.30 shipped, the step 2.304 against 2.486 ms (32K). The bench's bare
# ring ran gate/up at 17.6 us. MLXCEL_QMV_NOMATH_LEVEL (new) drops more: `tables` (also the
# prologue's scale tables and POST's x sums), `prologue` (also x's staging and the folded norm),
# the deeper builds padded to the shipped 4 CTAs per SM.
# Prediction: if the per-CTA prologue is what holds the GEMVs (session 39: 36-60% of their warp
# samples sit in it), `prologue` brings gate/up near the bench's bare ring (~18-19 us) and the step
# 0.4-0.6 ms under the shipped; if the copies themselves are the limit in a decode step, `prologue`
# stays within ~1 us of `loop` per gate/up (<= 0.1 ms per step more than loop's -0.18).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s40c2
RUN_TIMEOUT=60 step_ab ab-tables-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=tables
RUN_TIMEOUT=60 step_ab ab-prologue-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=prologue
gpu_test gpu_quantized_gemv 120 "nomath" nomath_probe
insitu_env tables MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
insitu_env prologue MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=prologue
RUN_TIMEOUT=60 step_ab ab-prologue-128k MLXCEL_QMV_NOMATH_PROBE turbo4 131072 MLXCEL_QMV_NOMATH_LEVEL=prologue
echo "done at t=${SECONDS}s"
