#!/usr/bin/env bash
# Session 6, second device call (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session6_call2.sh
# Call 1's timelines showed the pipelined loop's wait for step k's token also waiting for
# step k+1 (reading the token went through mx::contiguous, a new eval behind the queued
# step). With the copy-out fixed (cpp/bridge.cc array_copy_to):
# 1. timelines at 4K (turbo4, fp16; MLXCEL_DEVICE_CLOCK=1) and the polling wait;
# 2. end to end, the issue's table: fp16, turbo4-asym, turbo4, int8 at 4K, 32K and 128K,
#    128 generated tokens, --profile, modes interleaved per context.
set -uo pipefail
R=/tmp/s6c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s6c2.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
run() {  # tag kv ctx [env...]
  local tag=$1 kv=$2 ctx=$3; shift 3
  env "$@" .devcarry/bin/mlxcel generate --model "${MODEL:-synthetic:llama3-8b-4bit}" --prompt-tokens "$ctx" \
    --max-tokens 128 --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$tag-$kv-$ctx.json" 2> "$R/$tag-$kv-$ctx.err"
  echo "$kv $ctx $tag: $(grep -E 'decode \(2nd|host per|of which|device clock|^error' "$R/$tag-$kv-$ctx.err" | tr -s ' ' | tr '\n' ' ')"
}
echo "== timelines"
run tl turbo4 4096 MLXCEL_DEVICE_CLOCK=1
run tl fp16 4096 MLXCEL_DEVICE_CLOCK=1
run poll turbo4 4096 MLXCEL_POLL_WAIT=1
python3 benchmarks/gpu/timeline.py "$R"/tl*.json 2>&1 | tee "$R/timeline.txt"
echo "== end to end"
for ctx in ${CTXS:-4096 32768 131072}; do
  for kv in ${MODES:-fp16 turbo4-asym turbo4 int8}; do run e2e "$kv" "$ctx"; done
done
