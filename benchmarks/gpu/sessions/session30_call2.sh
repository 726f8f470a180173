#!/usr/bin/env bash
# Session 30's second device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session30_call2.sh
# Call 1 failed the EARLY and folded-norm tests at gate/up K = 2048, group 32, ring:4:8 with
# `cuGraphAddKernelNode ... invalid argument`: POST's static xsum (5 KiB at group 32) on top of
# 45.5 KB of dynamic shared memory passes 48 KiB, and MLX opts a kernel in only above 48000
# dynamic bytes. The launches now ask for 48001 bytes there (quantized_gemv.rs, SharedMemory).
# 1. Both tests again (the fix); the fold's bit-identity test (below) in the background.
# 2. In situ turbo4 32K with MLXCEL_QMV_SCHEDULE=ring:8:4 (session 28's failure, the same
#    cause: the qkv + append kernel's tables on top of POST's xsum).
# 3. MLXCEL_FOLD_MERGE (the split merge in the attention launch: one kernel and one graph node
#    fewer per layer) under today's attention kernel (wide CTAs, PAIR): session 18 measured it
#    slower (27.30 us against 20.58 + 4.13). Two interleaved rounds of turbo4 at 32K with the
#    device clock. Prediction: +0.03 to +0.08 ms of device time per step (refuted again).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s30c2
bg_test fold-merge gpu_fused_decode 250 "fold" folded_merge
gpu_test gpu_quantized_gemv 150 "folded norm:" folded_rms_norm
cp "$R/test-gpu_quantized_gemv.txt" "$R/test-fold.txt"
gpu_test gpu_quantized_gemv 280 "early GEMV" early_prologue
cp "$R/test-gpu_quantized_gemv.txt" "$R/test-early.txt"
bg_wait
e2e_setup 540 200
timed 45 r0-ring84 turbo4 32768 MLXCEL_QMV_SCHEDULE=ring:8:4
for round in 1 2; do
  if [ "$round" = 1 ]; then
    timed 45 "r$round-base" turbo4 32768
    timed 45 "r$round-fold" turbo4 32768 MLXCEL_FOLD_MERGE=1
  else
    timed 45 "r$round-fold" turbo4 32768 MLXCEL_FOLD_MERGE=1
    timed 45 "r$round-base" turbo4 32768
  fi
done
echo "done at t=${SECONDS}s"
