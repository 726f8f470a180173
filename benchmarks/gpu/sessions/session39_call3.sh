#!/usr/bin/env bash
# Session 39's third device call (H200, ~9 min; timeout_s 560), staged as call 2.
# MLXCEL_QMV_WLOCAL(_TILES) was removed after this call: check out 0bf44e5 to run this script.
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session39_call3.sh
# Call 2: MLXCEL_QMV_WLOCAL (each warp a contiguous run of tiles, its own prologue, no CTA
# barrier) was slower: +0.067 ms per turbo4 step at 32K, +0.071 at 128K, +0.079 for fp16 at
# 4K; its gate/up source counters moved the barrier's samples to the ring's copy wait. Two
# things changed at once: the prologue (per-warp loads, no barrier) and the tile order (runs
# instead of every NW-th tile, so the CTA's 8 warps no longer read one 512-byte span of each
# row at a time). MLXCEL_QMV_WLOCAL_TILES=strided keeps the default tile order with the
# warp-local prologue.
# Prediction: if the tile order cost call 2's loss, strided is level with the default
# (+-0.02 ms per step); if the per-warp prologue did (scattered 4-byte table loads, 16x the
# requests), strided loses about as much as runs.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s39c3
BUDGET=540
step_ab ab-wlstrided-32k MLXCEL_QMV_WLOCAL turbo4 32768 MLXCEL_QMV_WLOCAL_TILES=strided
step_ab ab-wlruns-32k MLXCEL_QMV_WLOCAL turbo4 32768 MLXCEL_QMV_WLOCAL_TILES=runs
step_ab ab-wlstrided-128k MLXCEL_QMV_WLOCAL turbo4 131072 MLXCEL_QMV_WLOCAL_TILES=strided
step_ab ab-wlstrided-4k MLXCEL_QMV_WLOCAL fp16 4096 MLXCEL_QMV_WLOCAL_TILES=strided
((SECONDS < 300)) && insitu_env wl2 MLXCEL_QMV_WLOCAL=1 MLXCEL_QMV_WLOCAL_TILES=strided
gpu_test gpu_quantized_gemv $((BUDGET - SECONDS > 60 ? BUDGET - SECONDS - 10 : 50)) "warp-local" warp_local_prologue
grep -E "^wlocal" "$R/test-gpu_quantized_gemv.txt" | awk '{print $NF, $0}' | sort -g | tail -2
echo "wlocal cases passed: $(grep -cE '^wlocal' "$R/test-gpu_quantized_gemv.txt")"
echo "done at t=${SECONDS}s"
