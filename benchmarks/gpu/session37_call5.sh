#!/usr/bin/env bash
# Session 37's fifth device call (H200, ~90 s; the session's last device seconds), after
# benchmarks/gpu/stage.sh (mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session37_call5.sh
# MLXCEL_QMV_SILU_OCC5 (the gate/up + SiLU kernel bounded to five CTAs per SM: 48 registers,
# 1.36 waves of 660 CTAs instead of 1.7 of 528). Prediction: gate/up ~3 us faster per launch
# (call 3's 768-CTA time), ~-0.1 ms of device per step in every mode; bit-identical tokens.
# Writes straight into $OUT (a short device budget: no tarball at exit).
# Ran on cee5a03. The flag lost (+0.10 ms per step at 32K, +0.21 at 4K) and was removed after
# this call: check out cee5a03 to run it again.
set -uo pipefail
R=${OUT:-/tmp/s37c5}; mkdir -p "$R"
B=.devcarry/bin/mlxcel
gen() {  # gen TAG KV CTX TOKENS [ENV=VALUE...]
  local tag=$1 kv=$2 ctx=$3 tok=$4; shift 4
  timeout 60 env MLXCEL_DEVICE_CLOCK=1 "$@" $B generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
    --max-tokens "$tok" --ignore-eos --profile --prefill-chunk 4096 --prompt-fill random-kv --kv "$kv" --json \
    > "$R/$tag.json" 2> "$R/$tag.err"
  echo "$tag rc=$? $(grep -E 'decode \(2nd|device clock|step A/B' "$R/$tag.err" | tr -s ' ' | tr '\n' ' ')"
}
gen tok-off turbo4 1024 32 MLXCEL_QMV_SILU_OCC5=0
gen tok-on turbo4 1024 32 MLXCEL_QMV_SILU_OCC5=1
python3 - "$R/tok-off.json" "$R/tok-on.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["tokens"] for p in sys.argv[1:])
print("tokens equal" if a == b else f"tokens differ at {next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)}")
PY
gen ab-turbo4-32k turbo4 32768 192 MLXCEL_STEP_AB=MLXCEL_QMV_SILU_OCC5 MLXCEL_STEP_AB_BLOCK=8
gen ab-fp16-4k fp16 4096 192 MLXCEL_STEP_AB=MLXCEL_QMV_SILU_OCC5 MLXCEL_STEP_AB_BLOCK=8
echo "done at t=${SECONDS}s"
