#!/usr/bin/env bash
# Session 17's fourth device call (H200, ~3 min), same build as call 3 (carry .devcarry/mlx-cuda,
# .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session17_call4.sh
# Call 3's one 4K round had turbo4 at 0.94x and turbo4-asym at 0.85x of fp16 by tok/s while
# their device time per step was shorter than fp16's (2.53 / 2.56 vs 2.72 ms) and the device
# sat idle 0.52 / 0.83 ms between steps (the host was behind). Three more interleaved rounds at
# 4K with the shipped defaults, to see whether that was the host of one run.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s17c4
e2e_setup 240 60
config_rounds 4096 16 "2 3 4" fp16 turbo4 turbo4-asym int8
finish_call
