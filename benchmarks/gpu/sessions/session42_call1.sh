#!/usr/bin/env bash
# Written in session 41 for the next session's first device call (H200, ~9 min; timeout_s 560),
# after benchmarks/gpu/stage.sh (test binaries but gpu_quantized_gemv removed, the rest xz'd:
# gzip no longer fits beside the tree in the 64 MiB carry):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session42_call1.sh
# NOTES "Next lever (after session 41)", item 1: even with dynamic shared memory aligned
# (MLXCEL_QMV_ALIGN128), a POST ring copy of MLX's layout writes 8 rows' 64-byte pieces and
# ncu counted 12.8 shared wavefronts per copy against an ideal 3.6 (session 41). The tiled layout
# (MLXCEL_QMV_TILED: weights reordered at load, 1 KiB per 16-row x 128-value tile) makes each copy
# one 512-byte run; session 41 gave POST's loop a tiled variant (written, not run; same slot
# contents, bit-identical by construction). TILED is a load-time layout: A/B by separate runs, not
# MLXCEL_STEP_AB.
# Prediction: if the ring's shared writes hold the GEMVs, gate/up 24.0 -> ~20-22 us in situ and
# -0.1 to -0.3 ms per step (turbo4 32K; fp16 shares the GEMVs); if not, level (as before POST, session 27).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s42c1
insitu_env tiled MLXCEL_QMV_TILED=1
insitu_env untiled MLXCEL_QMV_TILED=0
# Source counters (wavefronts per cp.async) of gate/up, shipped layout and tiled.
((SECONDS < 200)) && insitu_source gateup-untiled qgemv4_silu 10
((SECONDS < 240)) && insitu_source gateup-tiled qgemv4_silu 10 MLXCEL_QMV_TILED=1
RUN_ENV="MLXCEL_DEVICE_CLOCK=1" FILL=random-kv TOKENS=192 BUDGET=440 FLAG_ROUNDS=2 FLAG_MODES=turbo4 \
  flag_rounds MLXCEL_QMV_TILED 45 32768
# The tiled kernels against MLX's layout, POST off and on (90 bit-identity checks).
((SECONDS < 330)) && gpu_test gpu_quantized_gemv 220 "tiled" tiled_weights
echo "done at t=${SECONDS}s"
