#!/usr/bin/env bash
# Session 31's first device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_qkv_encode,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session31_call1.sh
# Session 30 built each ticket slot's marker once (decode_attention.rs, Placeholder::Slot)
# instead of slicing a new view per qkv + append launch: CPU-tested only. This call:
# 1. its GPU checks: gpu_qkv_encode (36 steps bit-identical to the projection + separate
#    append) and the fold's bit-identity test (180 checks), both through the cached markers;
# 2. ops and host time per step, turbo4 at 32K with the build profile, the separate merge and
#    the fold, and fp16, in three interleaved rounds (the host is bimodal across runs: three
#    samples per arm). Prediction: turbo4 ops per step 240 -> 212 (fold 184); host -0.05 to
#    -0.1 ms per step against session 30's fast runs (2.72-2.89 ms); device time unchanged
#    (2.52 ms; fold 2.63).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s31c1
bg_test qkv gpu_qkv_encode 200 "qkv encode:|differs"
gpu_test gpu_fused_decode 200 "fold" folded_merge
bg_wait
e2e_setup 540 120
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
interleaved 32768 45 "base turbo4" "fold turbo4 MLXCEL_FOLD_MERGE=1" "base fp16"
echo "done at t=${SECONDS}s"
