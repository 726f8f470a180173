#!/usr/bin/env bash
# Session 46, third device call (H200, ~8 min): MLXCEL_MMA_COMBINE_SWZ (written after call 2's
# timeline: ~2 us from the slowest warp's loop end to the CTA's end; the warps' partial-output
# stores fall 8 ways onto one bank, ~3000 store cycles per CTA). Its step A/B at 128K and 32K
# (prediction: -0.02 to -0.04 ms per step at both, the tail being context-free), the timeline
# with it on (end - slowest loop end: ~2.0 -> <= 1.0 us), its bit-identity test, and
# MLXCEL_MMA_LIGHT_LAST's parity test.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session46_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s46c3
step_ab ab-cswz MLXCEL_MMA_COMBINE_SWZ turbo4 131072
step_ab ab-cswz MLXCEL_MMA_COMBINE_SWZ turbo4 32768
RUN_TIMEOUT=120 timeline tl turbo4 131072
gpu_test gpu_fused_decode 170 "checks on CUDA" swizzled_combine
((SECONDS < 330)) && gpu_test gpu_fused_decode 200 "cases on CUDA" lighter_last_split
finish_call
