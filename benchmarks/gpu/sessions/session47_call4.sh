#!/usr/bin/env bash
# Session 47, fourth device call (H200, ~2.5 min): turbo4-asym's prologue. The step's RoPE table
# took 0.107 ms off its 128K step (5x turbo4's gain, call 1), which says its 4-warp kernel's
# prologue (no early ring copies: MLXCEL_MMA_QFIRST1 is off for fp16 keys with turbo4 values,
# measured slower in session 21) is long. MLXCEL_MMA_QFIRST (every warp issues its first
# STAGES - 1 tiles right after its prologue loads; bit-identical) A/B'd in one process at 128K
# and 32K. It also switches the other layers' kernels from QFIRST1 to QFIRST (the boundary
# layers'; turbo4's measured slower with it in session 20). Prediction: -0.02 to -0.06 ms at 128K.
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c4
step_ab ab-qfirst MLXCEL_MMA_QFIRST turbo4-asym 131072
step_ab ab-qfirst MLXCEL_MMA_QFIRST turbo4-asym 32768
finish_call
