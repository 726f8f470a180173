#!/usr/bin/env bash
# Next session's first device call (H200, ~7 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session21_call1.sh
# Two flags written after session 20's device calls (NOTES, "Next lever (after session 20)"),
# both bit-identical by construction, never run:
# - MLXCEL_MMA_QFIRST1: only the ring's first tile issued right after each attention warp's own
#   prologue loads, the rest after the barrier (QFIRST with all tiles early removed the first
#   tile's wait but lengthened the barrier's: 32K +0.6 us, 4K -0.3, 128K -1.2).
#   Prediction: -0.3 to -1 us per call at every context.
# - MLXCEL_QMV_RFIRST: o_proj's and down's residual loaded in the prologue, converted in the
#   epilogue (33 of o_proj's 567 stall samples waited for it there).
#   Prediction: -0.2 to -0.4 us per o_proj / down launch, ~-0.02 ms per step.
# 1. bit identity: all of gpu_quantized_gemv (RFIRST's 9 checks; EARLY's 50 and the schedule
#    tests, which also run the EARLY-off, batched and capped-grid kernels whose NVRTC SASS the
#    review of session 20 changed by sharing store_pairs8 / sb_put8; JIT compiles, in the
#    background while 2 runs) and gpu_fused_decode's QFIRST1 test (48 checks);
# 2. ncu sweeps of the turbo4 call (every launch, medians) at 4K, 32K, 128K: default, QFIRST1;
# 3. in-situ kernel times at 32K (ncu_e2e.sh, turbo4, 2 steps): both off, both on;
# 4. if QFIRST1 was faster at 32K + 128K in 2: end to end, two interleaved turbo4 rounds at 32K
#    and 128K with both on against both off.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s21c1
bg_test gemv gpu_quantized_gemv 420 "bit-identity checks|worst"
gpu_test gpu_fused_decode 150 "bit-identity checks" first_ring_tile_after
best=$(sweep_best default MLXCEL_MMA_QFIRST1=0 qfirst1 MLXCEL_MMA_QFIRST1=1)
bg_wait
insitu_flags MLXCEL_QMV_RFIRST MLXCEL_MMA_QFIRST1
e2e_setup 560 80
ab_if_faster "$best" "MLXCEL_MMA_QFIRST1=1 MLXCEL_QMV_RFIRST=1" "MLXCEL_MMA_QFIRST1=0 MLXCEL_QMV_RFIRST=0"
finish_call
