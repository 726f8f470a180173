#!/usr/bin/env bash
# Session 12, device call 2 (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh with
# LUTI and the warp merge on by default:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session12_call2m.sh
# 1. The warp merge's bit-identity test, now with the block merge's summation order for
#    more than 4 * D splits (call 1: 74 of 75 cases identical, the 75th past that bound).
# 2. The issue table at 4K and 32K as medians of three interleaved rounds
#    (session11_call2.sh, without its warm-up runs: the first step of each run is excluded).
set -uo pipefail
mkdir -p /tmp/s12c2m
timeout 150 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture warp_merge > /tmp/s12c2m/test-warp-merge.txt 2>&1
echo "warp merge test rc=$? $(grep -E 'test result|warp merge|panicked' /tmp/s12c2m/test-warp-merge.txt | tr '\n' ' ')"
grep -E "differing outputs" /tmp/s12c2m/test-warp-merge.txt | grep -v ": 0 differing" | head -5
cp /tmp/s12c2m/test-warp-merge.txt "${OUT:-/tmp}/"
CTXS="${CTXS:-4096 32768}" WARM=0 BUDGET=$((560 - SECONDS)) bash benchmarks/gpu/sessions/session11_call2.sh
