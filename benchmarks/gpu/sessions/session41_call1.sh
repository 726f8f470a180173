#!/usr/bin/env bash
# Written in session 40 for the next session's first device call (H200, ~8 min; timeout_s 540),
# after benchmarks/gpu/stage.sh (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session41_call1.sh
# NOTES "Next lever (after session 40)", item 1a: the folded norm's share of x's staging cost gate/up
# 4.7 us per launch in situ (probe level tables 22.9 us against xplain 18.2), the head 19.5, qkv
# 0.9; neither x's loads nor the norm weight's lines are it (levels xplain, nwx). Level nosums
# (written in session 40, not yet run) keeps the weight's loads and products, drops the sums of
# squares and their shuffles.
# Prediction: if the sums are the cost, nosums' gate/up lands near 18.2 us (then partial sums of
# squares written by the residual GEMVs that produce x are the fix); if the weight's part is, near
# 22.9 (then nw * x staged once). Then ncu source counters (where the warps wait) of gate/up and the
# head at levels tables, xplain and nosums.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s41c1
insitu_env nosums MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=nosums
RUN_TIMEOUT=100 step_ab ab-nosums-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=nosums
gpu_test gpu_quantized_gemv 120 "nomath" nomath_probe
for lv in tables xplain nosums; do
  ((SECONDS < 420)) && insitu_source "gateup-$lv" qgemv4_silu 10 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=$lv
done
# The head: the plain kernel's 65th launch of the step (o_proj and down take 64), under the level's name.
((SECONDS < 460)) && insitu_source head-tables 'mlxcel_qgemv4_notables_[0-9]' 64 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
((SECONDS < 500)) && insitu_source head-xplain 'mlxcel_qgemv4_xplain_[0-9]' 64 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=xplain
echo "done at t=${SECONDS}s"
