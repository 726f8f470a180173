#!/usr/bin/env bash
# Session 62, sixth call. On an H200 (the card issue 5 names): the issue's end-to-end table with
# ADR 0028's defaults (session61_call1.sh's H200 branch, BUDGET 450). On any other card (~90 s):
# the parallel compiles again. Call 5 measured 16 decode tokens after a 1024-token fp16 prefill
# at 12.4 s with MLX's one-after-another compiles and 9.1 s with mlxcel's parallel ones; every
# contiguity check of a graph build waited for the queue then (an evaluation entry point even
# for evaluated arrays). Now only evaluations that may launch new kernels wait. Predicted: the
# parallel pass ~3-5 s (the slowest single compile plus the prefill's); the --profile line
# `kernel compiles` says how long the compiles took in sum and how long evaluations waited.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session62_call6.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 BUDGET="${BUDGET:-450}"
call_dir s62c6
.devcarry/bin/mlxcel info | grep -E "^(MLX |kernel cache)"
before=$(find /tmp/mlx -type f 2>/dev/null | wc -l)
# `pass TAG KV [ENV=VALUE...]`: one generate of 16 tokens after a 1024-token prefill.
pass() {
  local tag=$1 kv=$2 t0=$SECONDS rc; shift 2
  env "$@" timeout 200 .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 1024 --max-tokens 16 \
    --ignore-eos --profile --kv "$kv" > /dev/null 2> "$R/$tag-$kv.err"
  rc=$?
  echo "$tag $kv ($*): rc=$rc wall $((SECONDS - t0)) s | $(grep -E '^(prefill|decode  )' "$R/$tag-$kv.err" | tr -s ' ' | tr '\n' '|') warnings: $(grep -ci 'warn' "$R/$tag-$kv.err")"
}
pass first fp16
pass again fp16
.devcarry/bin/mlxcel info | grep -E "^kernel cache"
echo "files under ~/.cache/mlxcel/mlx-ptx: $(find ~/.cache/mlxcel/mlx-ptx -type f | wc -l); under /tmp/mlx: $before before, $(find /tmp/mlx -type f 2>/dev/null | wc -l) after"
find ~/.cache/mlxcel/mlx-ptx -name 'custom_kernel_*' -delete
pass serial fp16 MLXCEL_KERNEL_DISK_CACHE=0
echo "mlxcel images after the serial pass (expected 0): $(find ~/.cache/mlxcel/mlx-ptx -name 'custom_kernel_*.ptx' | wc -l)"
pass parallel fp16
pass cached fp16
grep -h "kernel disk cache" "$R"/*.err | head -3
grep -H "kernel compiles" "$R"/*.err
