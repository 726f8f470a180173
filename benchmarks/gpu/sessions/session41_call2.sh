#!/usr/bin/env bash
# Session 41, second device call (H200, ~7 min; timeout_s 540), staged as session41_call1.sh.
# Call 1: level nosums ran as tables (gate/up 22.78 us in situ against 22.91; xplain 18.18), so
# the folded norm's cost is its weight's part (loads and products), not the sums of squares.
# Here: level partials, the consumer's share of a fold whose producer (the residual GEMV that
# writes x) also writes nw * x and per-16-row partial sums of x^2; level xtwice, xplain with x's
# chunks loaded twice (are two more 16-byte loads per thread from lines every CTA reads the
# cost?); xplain again as this machine's baseline.
# Prediction: partials' gate/up within ~0.5 us of xplain's (then the producer-written fold is
# worth building: ~0.2 ms per step with correct outputs); xtwice near tables' if the second
# loads are what the weight's part costs.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s41c2
insitu_env partials MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=partials
insitu_env xtwice MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=xtwice
insitu_env xplain MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=xplain
insitu_env tables MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
RUN_TIMEOUT=100 step_ab ab-partials-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=partials
((SECONDS < 400)) && gpu_test gpu_quantized_gemv 120 "nomath" nomath_probe
echo "done at t=${SECONDS}s"
