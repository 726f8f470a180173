#!/usr/bin/env bash
# Session 28's sixth device call (H200, ~3 min; timeout_s 270), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call6.sh
# Calls 3-5: MLXCEL_QMV_POST's gate/up + SiLU runs 21.95 us without the folded RMSNorm (bench;
# 22.2 in situ with the norms unfolded) but 25.90 (bench --norm) / 27.58 (in situ) with it,
# while the default kernel pays only 25.86 -> 27.07 for the fold. Where do POST's warps wait
# with the fold? ncu source counters (warp-state samples per SASS instruction) of one gate/up
# launch each: POST with and without --norm, the default with --norm.
# Prediction: POST + norm's extra samples sit in the prologue (the norm's barrier and x's
# staging before the per-warp x sums), not in the main loop.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c6
BIN=${BIN:-.devcarry/bin/mlxcel}
B=("$BIN" bench gemv --schedules ring --iters 3)
MLXCEL_QMV_POST=1 source_profile post-norm qgemv4_silu 4 "${B[@]}" --norm
MLXCEL_QMV_POST=1 source_profile post qgemv4_silu 4 "${B[@]}"
MLXCEL_QMV_POST=0 source_profile default-norm qgemv4_silu 4 "${B[@]}" --norm
echo "done at t=${SECONDS}s"
