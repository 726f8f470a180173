#!/usr/bin/env bash
# Session 32's second device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session32_call2.sh
# Why turbo4-asym's host takes ~2.7 ms more CPU per 128K step than turbo4's (call 1: 5.40 against
# 2.66 ms on the loop's thread; 5.1-5.8 against 2.4-4.4 in sessions 20 and 22) while at 32K the
# two are level: the build's parts (MLXCEL_BUILD_PROFILE) at 128K for both and at 32K for
# turbo4-asym, and turbo4-asym at 128K with MLX's per-graph byte limit lifted (fp16 keys hand
# MLX ~2x turbo4's input bytes per step: if the commits by bytes are the cost, lifting removes
# it). Then the 128K row again with int8r boundary layers (ADR 0012's opt-in for speed, last
# measured against session 15's slower fp16): fp16, turbo4 with int8r ends.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s32c2
e2e_setup 540 90
export TOKENS=64
timed 50 bp turbo4-asym 131072 MLXCEL_BUILD_PROFILE=1
timed 50 lift turbo4-asym 131072 MLXCEL_LIFT_GRAPH_BYTES=1
timed 50 bp turbo4 131072 MLXCEL_BUILD_PROFILE=1
timed 30 bp turbo4-asym 32768 MLXCEL_BUILD_PROFILE=1
timed 50 base fp16 131072
timed 50 int8r turbo4 131072 MLXCEL_KV_BOUNDARY_TYPE=int8r
timed 50 bp2 turbo4-asym 131072 MLXCEL_BUILD_PROFILE=1
for f in "$R"/bp*.err; do echo "$(basename "$f"):"; grep -A3 -E "^build parts" "$f"; done
echo "done at t=${SECONDS}s"
