#!/usr/bin/env bash
# A/B of the fused decode kernels on the H200 after stage.sh and stage_ab.sh (see there):
# parity of the patched build on the tensor-core modes, then the attention benchmark and the
# end-to-end decode of both builds in the same run (E2E=none skips it; CTXS, MODES
# choose the benchmark). Everything goes into one archive in $OUT.
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ab_run.sh
set -uo pipefail
FINAL="${OUT:-/tmp/out}"; mkdir -p "$FINAL"
W=/tmp/mlxcel-ab-run; rm -rf "$W"; mkdir -p "$W"
MODES="${MODES:-fp16,int8,turbo4-asym,turbo4}"
CTXS="${CTXS:-4096,32768,131072}"
E2E="${E2E:-4096:fp16 4096:turbo4-asym 4096:turbo4 32768:fp16 32768:turbo4-asym 32768:turbo4 131072:fp16 131072:turbo4}"
[ -x .devcarry/ab/tests/gpu_fused_decode ] && MLXCEL_PARITY_MODES="$MODES" timeout 200 .devcarry/ab/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches \
  > "$W/parity-b.txt" 2>&1; grep -aE "test result|panicked|fused decode:" "$W/parity-b.txt"
for side in a b; do
  bin=.devcarry/bin/mlxcel; [ "$side" = b ] && bin=.devcarry/ab/mlxcel
  timeout 90 "$bin" bench attention --contexts "$CTXS" --modes "$MODES" --shapes 32:8:128 \
    --split-modes none --iters 30 --out "$W/bench-$side" 2>&1 | grep ctx | sed "s/^/$side /"
done
for side in a b; do
  bin=.devcarry/bin/mlxcel; [ "$side" = b ] && bin=.devcarry/ab/mlxcel
  for p in $E2E; do
    [ "$p" = none ] && continue
    ctx=${p%%:*}; kv=${p##*:}
    timeout 60 "$bin" generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" --max-tokens 128 --ignore-eos \
      --profile --prefill-chunk 4096 --kv "$kv" --json > "$W/e2e-$side-$ctx-$kv.json" 2> "$W/e2e-$side-$ctx-$kv.err"
    python3 -c "import json; s=json.load(open('$W/e2e-$side-$ctx-$kv.json'))['stats']; print('$side $ctx $kv steady', round(s['decode_steady_tokens_per_second'],2))" 2>&1 | tail -1
  done
done
tar czf "$FINAL/ab_results.tgz" -C "$W" .
