#!/usr/bin/env bash
# Session 18's third device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session18_call3.sh
# The fixed part of the turbo4 attention call, which decides the 32K ratio (call 2's in-situ
# ncu at 32K: attention 20.58 us per call for ~9.6 us of bytes at the copy roofline; a
# separate merge 4.13 us per call; 32 of each per step):
#   MLXCEL_MMA_EARLY (written this session): the ring's first copies before the prologue.
#     Prediction: -0.5 to -1.5 us per call (one DRAM latency that no longer follows the
#     prologue), the same at every context.
#   MLXCEL_FOLD_MERGE with fold v3 (written this session): the merge in the attention launch,
#     one warp per query head in the last CTA. Prediction: the attention call +1-2 us (the
#     last CTA's tail), the merge launch's 4.13 us and its graph gap gone: about -0.08 ms per
#     step at 32K (2.91 -> ~2.83 ms) and at 128K, and one MLX node per layer fewer.
# 1. bit identity: fold v3 and early against the default (gpu_fused_decode), and the warp
#    merge against the block merge (merge_splits_warp.cu now calls the shared helpers);
# 2. ncu of the turbo4 kernel at 32K (isolated, bench attention): default, EARLY;
# 3. in-situ ncu at 32K with the fold (turbo4; the attention kernel's time per call and the
#    merge gone);
# 4. end to end, turbo4, fold on / off: two interleaved rounds at 32K and 128K.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c3
gpu_test gpu_fused_decode 200 "bit-identity checks|bit-identical to the block" "folded_merge_and_early|warp_merge_matches"
e2e_setup 540 80
if [ "${NCU:-1}" = 1 ]; then
  export NCU_SECTIONS="SpeedOfLight Occupancy WarpStateStats SchedulerStats" ATTN_CTX=${CTX:-32768}
  ncu_attention ncu-default MLXCEL_MMA_EARLY=0
  ncu_attention ncu-early MLXCEL_MMA_EARLY=1
  MLXCEL_FOLD_MERGE=1 FILL=random-kv NCU_OUT="$R/insitu-fold" timeout 120 bash benchmarks/gpu/ncu_e2e.sh turbo4 "${CTX:-32768}" 8,2 2>&1 | tail -8
fi
export FLAG_MODES=turbo4 FLAG_ROUNDS=2
flag_rounds MLXCEL_FOLD_MERGE 22 "${CTX:-32768}"
flag_rounds MLXCEL_FOLD_MERGE 34 "${LONG:-131072}"
finish_call
