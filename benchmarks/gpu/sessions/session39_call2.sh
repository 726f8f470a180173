#!/usr/bin/env bash
# Session 39's second device call (H200, ~9 min; timeout_s 580), after benchmarks/gpu/stage.sh
# MLXCEL_QMV_WLOCAL was removed after call 3: check out a435943 to run this script.
# (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session39_call2.sh
# Call 1 (in-situ source counters): 36-60% of the shipped GEMVs' warp samples sit in the
# CTA-wide prologue; gate/up's largest waits are x's load (15% of all samples) and the
# prologue's barrier (13%). MLXCEL_QMV_WLOCAL (new, off): each warp owns a contiguous run of
# tiles and loads, stages and sums only its own x chunks and table groups, then starts its
# loop after a __syncwarp (no CTA barrier before the loop).
# 1. Accuracy: warp_local_prologue_matches_a_float64_reference_or_is_not_used (80 cases).
# 2. In-process A/B (device clock, step_ab): turbo4 at 32K and 128K, fp16 at 4K.
# 3. In situ (ncu_e2e, two steps, turbo4 32K): per-kernel times with the flag off and on.
# 4. Source counters of gate/up with the flag on (where its samples move).
# Prediction: the barrier's samples go and each warp starts on its own x: gate/up -1 to -3 us,
# o_proj / qkv / down -0.3 to -1 us per launch; -0.05 to -0.15 ms per step.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s39c2
BUDGET=560
gpu_test gpu_quantized_gemv 200 "warp-local|wlocal.*relative RMS [0-9.e-]+ \(POST kernel [0-9.e-]+\)$" warp_local_prologue
grep -E "^wlocal" "$R/test-gpu_quantized_gemv.txt" | sort -k2 -g | tail -3
step_ab ab-wlocal-32k MLXCEL_QMV_WLOCAL turbo4 32768
step_ab ab-wlocal-128k MLXCEL_QMV_WLOCAL turbo4 131072
step_ab ab-wlocal-4k MLXCEL_QMV_WLOCAL fp16 4096
((SECONDS < 380)) && insitu_env wl0 MLXCEL_QMV_WLOCAL=0
((SECONDS < 440)) && insitu_env wl1 MLXCEL_QMV_WLOCAL=1
((SECONDS < 490)) && insitu_source gateup-wl qgemv4_silu 10 MLXCEL_QMV_WLOCAL=1
echo "done at t=${SECONDS}s"
