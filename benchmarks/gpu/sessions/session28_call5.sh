#!/usr/bin/env bash
# Session 28's fifth device call (H200, ~3 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call5.sh
# Calls 3-4: MLXCEL_QMV_POST takes gate/up from 25.90 to 21.95 us in bench gemv without the
# folded RMSNorm, 27.09 -> 25.90 with it (bench gemv --norm, which reproduces the in-situ
# default's times within 0.1 us), and 27.07 -> 27.58 in situ (same kernel binary). Question:
# in situ with the norms unfolded (MLXCEL_FUSED_NORM=0: MLX's rms_norm before each GEMV),
# does POST keep its bench gain, and does it pay for the extra rms_norm launches?
# Prediction: POST's gate/up in situ without the fold at 22-24 us; the step no faster than the
# default's 2.85 ms (two rms_norm launches per layer at ~3 us each cost about what POST saves).
# In situ (ncu, turbo4 at 32K): MLXCEL_FUSED_NORM=0 with POST off and on.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c5
e2e_setup 270 60
insitu_env nofold MLXCEL_FUSED_NORM=0 MLXCEL_QMV_POST=0
insitu_env nofold-post MLXCEL_FUSED_NORM=0 MLXCEL_QMV_POST=1
c=(); for t in nofold nofold-post; do c+=("$R/insitu-$t/ncu-e2e/ncu-e2e-turbo4-32768.csv"); done
python3 benchmarks/gpu/insitu_medians.py "${c[@]}" 2>&1 | head -14 | sed 's/custom_kernel_mlxcel_//' | cut -c1-190
echo "done at t=${SECONDS}s"
