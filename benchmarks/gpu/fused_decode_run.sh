#!/usr/bin/env bash
# Runs on the H200 after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/fused_decode_run.sh [e2e-contexts]
# 1. GPU parity suite of the fused decode kernel (and the KV-mode tests) on CUDA;
# 2. `mlxcel bench attention` (all modes, 4K..128K, Llama-3-8B and head_dim-64 layer shapes);
# 3. end-to-end decode of the synthetic Llama-3-8B 4-bit model per KV mode (--profile).
# Env: TESTS (test binaries, "none" skips), FOLD_PARITY=0, SKIP_BENCH=1, BENCH_ARGS, TOKENS, MODES (KV
# modes of the end-to-end runs), RUN_TAG (suffix of the archive, so that several runs of one
# device call each keep their results).
set -uo pipefail
FINAL="${OUT:-/tmp/out}"; mkdir -p "$FINAL"
# Work in a scratch folder; only one archive goes to $OUT (the device tool returns 8 files).
OUT=/tmp/mlxcel-run${RUN_TAG:-}; rm -rf "$OUT"; mkdir -p "$OUT"
E2E="${1:-4096,32768}"
TOKENS="${TOKENS:-256}"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
for t in ${TESTS:-gpu_fused_decode gpu_quantized_gemv}; do
  [ "$t" = none ] && continue
  echo "== $t"
  .devcarry/bin/tests/$t --test-threads=1 --nocapture > "$OUT/test-$t.txt" 2>&1 || status=1
  grep -E "^test |test result|panicked|relative RMS|fused decode:" "$OUT/test-$t.txt" | tail -15
done
# The split merge folded into the attention launch is off by default (ADR 0005): its parity
# runs here with the flag on, on the tensor-core modes (FOLD_PARITY=0 skips).
if [ "${FOLD_PARITY:-1}" != 0 ] && [[ " ${TESTS:-gpu_fused_decode} " == *" gpu_fused_decode "* ]]; then
  echo "== gpu_fused_decode, MLXCEL_FOLD_MERGE=1"
  MLXCEL_FOLD_MERGE=1 MLXCEL_PARITY_MODES=turbo4,int8 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture \
    fused_decode_matches > "$OUT/test-fold.txt" 2>&1 || status=1
  grep -E "test result|panicked|fused decode:" "$OUT/test-fold.txt" | tail -4
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  echo "== bench attention"
  .devcarry/bin/mlxcel bench attention --out "$OUT/bench" ${BENCH_ARGS:-} 2> "$OUT/bench.log" || status=1
  grep -v "^ *$" "$OUT/bench.log" | tail -60
fi
echo "== end to end: synthetic llama3-8b-4bit"
[ "$E2E" = none ] && E2E=""
for ctx in ${E2E//,/ }; do
  for kv in ${MODES:-fp16 turbo4-asym turbo4 int8}; do
    .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" --max-tokens "$TOKENS" --ignore-eos --profile \
      --prefill-chunk 4096 --kv "$kv" --json > "$OUT/e2e-$ctx-$kv.json" 2> "$OUT/e2e-$ctx-$kv.err" || status=1
    python3 -c "import json,sys; s=json.load(open('$OUT/e2e-$ctx-$kv.json'))['stats']; print('$ctx', '$kv', round(s['decode_steady_tokens_per_second'],2), 'tok/s steady decode', round(s['decode_tokens_per_second'],2), 'tok/s decode', round(s['prefill_tokens_per_second']), 'tok/s prefill', round(1e3*s['decode_host_seconds_per_step_steady'],3), 'ms host per step, pipelined', s['decode_pipelined'], s['kv_cache_bytes'], 'KV bytes', s['peak_memory_bytes'], 'peak')" 2>&1 | tail -1
  done
done
tar czf "$FINAL/fused_decode_results${RUN_TAG:-}.tgz" -C "$OUT" .
echo "fused_decode_run status=$status"
exit $status
