#!/usr/bin/env bash
# Written in session 44 for the next session's first device call (H200, ~9 min; timeout_s 590),
# after staging the mlxcel binary and the gpu_quantized_gemv test binary (stripped, xz'd into
# .devcarry/bin):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session45_call1.sh
# Session 44 left three GEMV tests unrun on the H200 (each ran past a limit set too short, or
# beside ncu runs): the ring tables' bit-identity test (cut to 50 NVRTC builds), the probe's 55
# checks, the pair blocks' corrected count. Each alone here, with room; also the test and the
# step A/B of MLXCEL_QMV_XSUM_STAGE (written after session 44's device time). Then the 128K step with
# int8r boundary layers (the documented opt-in for speed, ADR 0012) against the default
# fp16+int8 ends and fp16, all with the ring tables: 2x at 128K needs turbo4 at ~2.92 ms per
# step; int8r ends read ~0.53 GB less per step (prediction: ~-0.13 ms).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s45c1
# Ordered by what decides a default first (session 45): XSUM_STAGE's test and A/B, the shipped
# ring tables' bit identity, the 128K trio; the probe's and pair blocks' tests if time is left.
gpu_test gpu_quantized_gemv 150 "checks" x_sums_at_staging
# MLXCEL_QMV_XSUM_STAGE (off; written after session 44's device time): POST's x sums formed
# while x is staged. Prediction: -0.03 to -0.06 ms per turbo4 32K step (the probe: -0.072).
step_ab ab-xsf MLXCEL_QMV_XSUM_STAGE turbo4 32768
gpu_test gpu_quantized_gemv 200 "checks" paired
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
timed 40 r1 turbo4 131072
timed 40 r1int8r turbo4 131072 MLXCEL_KV_BOUNDARY_TYPE=int8r
timed 40 r1 fp16 131072
((SECONDS < 430)) && gpu_test gpu_quantized_gemv 150 "checks" nomath
((SECONDS < 330)) && gpu_test gpu_quantized_gemv 230 "checks" pair_blocks
finish_call
