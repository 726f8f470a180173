#!/usr/bin/env bash
# Session 5, device call 2: main (A, .devcarry/bin-main) against branch next/rope-fold with
# all four levers on (B, .devcarry/bin, staged by stage.sh); results in
# benchmarks/results/2026-11-29-h200-session5.md.
source .devcarry/mlx-cuda/activate.sh && A_BIN=.devcarry/bin-main TESTS=gpu_fused_rope MODES="turbo4 fp16" CTXS=4096 REPS=2 \
  EXTRA_B="MLXCEL_FUSED_NORM=0" NCU_MODES="turbo4 fp16" bash benchmarks/gpu/ab_builds.sh
