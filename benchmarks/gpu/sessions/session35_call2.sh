#!/usr/bin/env bash
# Session 35's second device call (H200, ~8 min; timeout_s 560), the same build as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session35_call2.sh
# Then the 128K row against today's fp16 (in-place appends since session 23): fp16 and turbo4
# twice (interleaved), turbo4 with int8r boundary layers and with none (what the boundary
# layers cost at 128K; not a default), turbo4-asym and int8 once. The user docs' boundary-layer
# ratios (2.07-2.22x) were measured against fp16's older 9.5-ms step and are replaced by these.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s35c2
BUDGET=${BUDGET:-530}
e2e_setup "$BUDGET" 90
export TOKENS=64
echo "profilers: $(command -v perf gdb py-spy 2>/dev/null | tr '\n' ' ')"
# Where a 32K step's host time goes on this machine (call 1's host took 3.2-3.5 ms per turbo4
# step against 2.45 ms of device time): the build profile's parts and MLX's custom-kernel API.
timed 35 bp turbo4 32768 MLXCEL_BUILD_PROFILE=1
timed 35 bp fp16 32768 MLXCEL_BUILD_PROFILE=1
timed 50 r1 fp16 131072
timed 50 r1 turbo4 131072
timed 50 r1-int8r-ends turbo4 131072 MLXCEL_KV_BOUNDARY_TYPE=int8r
timed 50 r1-no-ends turbo4 131072 MLXCEL_KV_BOUNDARY_LAYERS=0
timed 50 r1 turbo4-asym 131072
timed 50 r1 int8 131072
timed 50 r2 turbo4 131072
timed 50 r2 fp16 131072
timed 35 r1 turbo4-asym 32768
timed 35 r1 int8 32768
echo "done at t=${SECONDS}s"
