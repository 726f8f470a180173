#!/usr/bin/env bash
# Session 38's third device call (H200, ~5 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (test binaries removed, mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session38_call3.sh
# The GEMV defaults re-checked against today's build (submit thread, the append in the
# attention launch, the qkv cluster): each decided in sessions 20-33 by ncu kernel sums or
# end-to-end rounds, never by an in-process A/B of the device clock. One A/B per flag
# (MLXCEL_STEP_AB, blocks of 8, 192 tokens), turbo4 at 32K: MLXCEL_QMV_POST, MLXCEL_QMV_EARLY,
# MLXCEL_QMV_NORM_LATE, MLXCEL_QKV_CLUSTER (default on) and MLXCEL_QMV_RFIRST (default off).
# Prediction: every default holds within +-0.02 ms per step; a flag whose other arm wins by more
# is re-checked at 128K and 4K before its default changes.
set -uo pipefail
R=${OUT:-/tmp/s38c3}; mkdir -p "$R"
B=.devcarry/bin/mlxcel
gen() {  # gen TAG KV CTX TOKENS [ENV=VALUE...]
  local tag=$1 kv=$2 ctx=$3 tok=$4; shift 4
  timeout 90 env MLXCEL_DEVICE_CLOCK=1 "$@" $B generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
    --max-tokens "$tok" --ignore-eos --profile --prefill-chunk 4096 --prompt-fill random-kv --kv "$kv" --json \
    > "$R/$tag.err.json" 2> "$R/$tag.err"
  rm -f "$R/$tag.err.json"
  echo "$tag rc=$? $(grep -E 'step A/B' "$R/$tag.err" | tr -s ' ' | tr '\n' ' ') t=${SECONDS}s"
}
for flag in MLXCEL_QMV_POST MLXCEL_QMV_EARLY MLXCEL_QMV_NORM_LATE MLXCEL_QKV_CLUSTER MLXCEL_QMV_RFIRST; do
  ((SECONDS < 470)) || { echo "skipped $flag"; continue; }
  gen "ab-${flag#MLXCEL_}-turbo4-32k" turbo4 32768 192 MLXCEL_STEP_AB=$flag MLXCEL_STEP_AB_BLOCK=8
done
echo "done at t=${SECONDS}s"
