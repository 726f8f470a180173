#!/usr/bin/env bash
# Session 38's first device call (H200, ~6 min; timeout_s 590), after benchmarks/gpu/stage.sh
# (all test binaries but gpu_quantized_gemv removed, that one and mlxcel gzip'd: the carry
# limit is 64 MiB with the tracked files):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz &&
#   chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/gpu_quantized_gemv &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session38_call1.sh
# The grid-barrier premise (NOTES "Next lever (after session 37)": a fused GEMV needs a grid-wide
# barrier between its phases; test its cost first). MLXCEL_QMV_GBAR_PROBE puts one into the
# prologue of o_proj and down_proj (256 CTAs each, 64 launches per step), after their first
# weight copies (MLXCEL_QMV_GBAR_AT=copies, where a fused kernel needs it) or before anything
# (start: the bare cost).
# 1. The GEMV test: bit-identical outputs at both places, and a chain of 140 launches (every
#    counter slot reused; a barrier that never released would hang: timeout).
# 2. Tokens: turbo4 1K, 32 tokens, probe off and on: equal.
# 3. In-process A/B (MLXCEL_STEP_AB=MLXCEL_QMV_GBAR_PROBE, blocks of 8, 192 tokens, device
#    clock): turbo4 32K at copies and at start, turbo4 128K and fp16 4K at copies.
# Prediction: at copies the barrier hides under the in-flight copies' DRAM latency, +0.3 to
# +0.8 us per launch (+0.02 to +0.05 ms per step); at start +1 to +1.5 us per launch (+0.06 to
# +0.10 ms per step). A fused merge + o_proj (the merge launch: 3.75 us at 128K, 4.7 at
# turbo4-asym's 32K) pays if the copies-place cost is below ~2 us per launch.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s38c1
T=.devcarry/bin/tests/gpu_quantized_gemv
timeout 300 $T --test-threads=1 --nocapture grid_barrier > "$R/test-gbar.txt" 2>&1
echo "gemv test rc=$? $(grep -E "test result|panicked|grid barrier probe" "$R/test-gbar.txt" | tr '\n' ' ' | cut -c1-400) t=${SECONDS}s"
export RUN_ENV="MLXCEL_DEVICE_CLOCK=1" FILL=random-kv
tokens_ab MLXCEL_QMV_GBAR_PROBE turbo4 tok
step_ab ab-copies MLXCEL_QMV_GBAR_PROBE turbo4 32768 MLXCEL_QMV_GBAR_AT=copies
step_ab ab-start MLXCEL_QMV_GBAR_PROBE turbo4 32768 MLXCEL_QMV_GBAR_AT=start
step_ab ab-copies MLXCEL_QMV_GBAR_PROBE turbo4 131072 MLXCEL_QMV_GBAR_AT=copies
step_ab ab-copies MLXCEL_QMV_GBAR_PROBE fp16 4096 MLXCEL_QMV_GBAR_AT=copies
echo "done at t=${SECONDS}s"
