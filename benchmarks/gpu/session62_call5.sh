#!/usr/bin/env bash
# Session 62, fifth call. On an H200 (the card issue 5 names): the issue's end-to-end table with
# ADR 0028's defaults (session61_call1.sh's H200 branch, BUDGET 450). On any other card (~90 s):
# the lasting kernel cache folder. The `mlxcel` binary now points MLX_PTX_CACHE_DIR at
# ~/.cache/mlxcel/mlx-ptx/<MLX version> when it is unset; predicted: `mlxcel info` names that
# folder, the first generate fills it (MLX's own kernels and mlxcel's images), the second
# decodes its 16 tokens in < 1 s, and /tmp/mlx gains nothing.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session62_call5.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 BUDGET="${BUDGET:-450}"
call_dir s62c5
.devcarry/bin/mlxcel info | grep -E "^(MLX |kernel cache)"
before=$(find /tmp/mlx -type f 2>/dev/null | wc -l)
for pass in 1 2; do
  t0=$SECONDS
  timeout 200 .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 1024 --max-tokens 16 \
    --ignore-eos --profile --kv turbo4 > /dev/null 2> "$R/pass$pass.err"
  echo "pass $pass: rc=$? wall $((SECONDS - t0)) s | $(grep -E '^(prefill|decode  )' "$R/pass$pass.err" | tr -s ' ' | tr '\n' '|') warnings: $(grep -ci 'warn' "$R/pass$pass.err")"
done
.devcarry/bin/mlxcel info | grep -E "^kernel cache"
echo "files under ~/.cache/mlxcel/mlx-ptx: $(find ~/.cache/mlxcel/mlx-ptx -type f | wc -l); under /tmp/mlx: $before before, $(find /tmp/mlx -type f 2>/dev/null | wc -l) after"
