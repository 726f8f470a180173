#!/usr/bin/env bash
# Session 38's second device call (H200, ~8 min; timeout_s 590), after benchmarks/gpu/stage.sh
# (test binaries but gpu_quantized_gemv and gpu_qkv_encode removed, those and mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/*.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session38_call2.sh
# MLXCEL_QMV_SIR: each tile's scales and biases copied into its ring slot with its words (POST,
# group 64), no per-CTA (scale, bias) tables in the GEMV prologue.
# 1. Bit identity: the five GEMV kernels on Llama-3-8B's shapes (gpu_quantized_gemv), and the
#    qkv GEMV with the folded append (gpu_qkv_encode) with the flag on against its references.
# 2. Tokens: turbo4 1K, 32 tokens, flag off and on: equal.
# 3. In-process A/B (MLXCEL_STEP_AB=MLXCEL_QMV_SIR, blocks of 8, 192 tokens, device clock):
#    turbo4 32K and 128K, fp16 4K.
# 4. ncu in situ (turbo4 32K, NCU_CACHE=none, 2 steps) with the flag on: the per-GEMV times
#    against session 37's (gate/up 25.4, down 14.1, qkv 8.75, o_proj 7.0 us).
# Prediction: gate/up -1 to -2 us per launch, down -1 to -2, qkv / o_proj -0.5 to -1 (the
# prologue's table staging gone: session 28's probe put tables + reduction at +5.1 us of
# gate/up without EARLY); -0.05 to -0.15 ms of device per step in every mode.
# Ran on 4db63fc. The flag lost (+0.064 to +0.067 ms per step in all three A/Bs; the ncu part
# did not run, past its time) and was removed after this call: check out 4db63fc to run it again.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s38c2
B=.devcarry/bin/mlxcel
timeout 400 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture scales_in > "$R/test-sir.txt" 2>&1
echo "gemv test rc=$? $(grep -E "test result|panicked|scales in the ring" "$R/test-sir.txt" | tr '\n' ' ' | cut -c1-400) t=${SECONDS}s"
MLXCEL_QMV_SIR=1 timeout 200 .devcarry/bin/tests/gpu_qkv_encode --test-threads=1 --nocapture > "$R/test-qkv-sir.txt" 2>&1
echo "qkv encode test (SIR on) rc=$? $(grep -E "test result|panicked" "$R/test-qkv-sir.txt" | tr '\n' ' ' | cut -c1-300) t=${SECONDS}s"
gen() {  # gen TAG KV CTX TOKENS [ENV=VALUE...]
  local tag=$1 kv=$2 ctx=$3 tok=$4; shift 4
  timeout 90 env MLXCEL_DEVICE_CLOCK=1 "$@" $B generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
    --max-tokens "$tok" --ignore-eos --profile --prefill-chunk 4096 --prompt-fill random-kv --kv "$kv" --json \
    > "$R/$tag.json" 2> "$R/$tag.err"
  echo "$tag rc=$? $(grep -E 'decode \(2nd|device clock|step A/B' "$R/$tag.err" | tr -s ' ' | tr '\n' ' ') t=${SECONDS}s"
}
gen tok-off turbo4 1024 32 MLXCEL_QMV_SIR=0
gen tok-on turbo4 1024 32 MLXCEL_QMV_SIR=1
python3 - "$R/tok-off.json" "$R/tok-on.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["tokens"] for p in sys.argv[1:])
print("tokens equal" if a == b else f"tokens differ at {next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)}")
PY
AB="MLXCEL_STEP_AB=MLXCEL_QMV_SIR MLXCEL_STEP_AB_BLOCK=8"
# shellcheck disable=SC2086
gen ab-turbo4-32k turbo4 32768 192 $AB
# shellcheck disable=SC2086
gen ab-turbo4-128k turbo4 131072 192 $AB
# shellcheck disable=SC2086
gen ab-fp16-4k fp16 4096 192 $AB
if ((SECONDS < 420)); then
  for sir in 1 0; do
    MLXCEL_QMV_SIR=$sir NCU_OUT="$R/ncu-sir$sir" NCU_CACHE=none FILL=random-kv timeout 120 \
      bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 > "$R/ncu-sir$sir.txt" 2>&1
    echo "ncu SIR=$sir rc=$? t=${SECONDS}s"
    python3 benchmarks/gpu/step_budget.py turbo4 32768 "$R/ncu-sir$sir/ncu-e2e/ncu-e2e-turbo4-32768.csv" 2>&1 | head -12
    gzip -f "$R/ncu-sir$sir/ncu-e2e/"*.csv
    ((SECONDS < 480)) || break
  done
fi
echo "done at t=${SECONDS}s"
