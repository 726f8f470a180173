#!/usr/bin/env bash
# Next session's first device call (H200, ~5 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session19_call1.sh
# MLXCEL_MMA_FILLW (written after session 18's device calls, never run): the turbo4 pair table
# filled by warps 8-11 (no q head) instead of warps 0-3 after their q heads, the codebook
# loaded before the first store. Why: session 18's source counters at 32K put ~9% of the
# stall samples in the fill, serial after q on warps 0-3 while warps 8-11 waited. NVRTC SASS:
# the loop 393 -> 397 instructions per tile (ptxas), so 128K may lose ~0.4 us.
# Prediction: -0.5 to -1 us per call at every context (the prologue's critical path loses the
# fill), +-0.4 us at 128K from the loop.
# 1. bit identity against the default fill (gpu_fused_decode);
# 2. ncu sweeps (every launch, medians) at 4K, 32K, 128K: default, FILLW;
# 2b. the same at 128K without ncu's L2 flush between launches;
# 3. if FILLW is faster at 32K + 128K: turbo4 end to end, two interleaved rounds at 32K and
#    128K (device clock).
# If 1 holds and 2-3 show it faster: default on (flags.rs, docs/usage.md).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s19c1
gpu_test gpu_fused_decode 150 "bit-identity checks" pair_table_fill_on_idle_warps
best=$(sweep_best default MLXCEL_MMA_FILLW=0 fillw MLXCEL_MMA_FILLW=1)
# The same two at 128K with the L2 kept between launches (the prologue's loads hit L2 there,
# as in a decode step): how much of the ~8 us fixed time is ncu's cache flush.
SWEEP_CTXS=131072 NCU_CACHE=none sweep_best l2default MLXCEL_MMA_FILLW=0 l2fillw MLXCEL_MMA_FILLW=1 > /dev/null
e2e_setup 540 80
ab_if_faster "$best" MLXCEL_MMA_FILLW=1 MLXCEL_MMA_FILLW=0
finish_call
