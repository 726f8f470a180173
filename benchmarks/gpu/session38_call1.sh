#!/usr/bin/env bash
# Session 38's first device call (H200, ~6 min; timeout_s 590), after benchmarks/gpu/stage.sh
# (all test binaries but gpu_quantized_gemv removed, that one and mlxcel gzip'd: the carry
# limit is 64 MiB with the tracked files):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz &&
#   chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/gpu_quantized_gemv &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session38_call1.sh
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
R=${OUT:-/tmp/s38c1}; mkdir -p "$R"
B=.devcarry/bin/mlxcel
T=.devcarry/bin/tests/gpu_quantized_gemv
timeout 300 $T --test-threads=1 --nocapture grid_barrier > "$R/test-gbar.txt" 2>&1
echo "gemv test rc=$? $(grep -E "test result|panicked|grid barrier probe" "$R/test-gbar.txt" | tr '\n' ' ' | cut -c1-400) t=${SECONDS}s"
gen() {  # gen TAG KV CTX TOKENS [ENV=VALUE...]
  local tag=$1 kv=$2 ctx=$3 tok=$4; shift 4
  timeout 90 env MLXCEL_DEVICE_CLOCK=1 "$@" $B generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
    --max-tokens "$tok" --ignore-eos --profile --prefill-chunk 4096 --prompt-fill random-kv --kv "$kv" --json \
    > "$R/$tag.json" 2> "$R/$tag.err"
  echo "$tag rc=$? $(grep -E 'decode \(2nd|device clock|step A/B' "$R/$tag.err" | tr -s ' ' | tr '\n' ' ') t=${SECONDS}s"
}
gen tok-off turbo4 1024 32 MLXCEL_QMV_GBAR_PROBE=0
gen tok-on turbo4 1024 32 MLXCEL_QMV_GBAR_PROBE=1
python3 - "$R/tok-off.json" "$R/tok-on.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["tokens"] for p in sys.argv[1:])
print("tokens equal" if a == b else f"tokens differ at {next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)}")
PY
AB="MLXCEL_STEP_AB=MLXCEL_QMV_GBAR_PROBE MLXCEL_STEP_AB_BLOCK=8"
# shellcheck disable=SC2086
gen ab-turbo4-32k-copies turbo4 32768 192 $AB MLXCEL_QMV_GBAR_AT=copies
# shellcheck disable=SC2086
gen ab-turbo4-32k-start turbo4 32768 192 $AB MLXCEL_QMV_GBAR_AT=start
# shellcheck disable=SC2086
gen ab-turbo4-128k-copies turbo4 131072 192 $AB MLXCEL_QMV_GBAR_AT=copies
# shellcheck disable=SC2086
gen ab-fp16-4k-copies fp16 4096 192 $AB MLXCEL_QMV_GBAR_AT=copies
echo "done at t=${SECONDS}s"
