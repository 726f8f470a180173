#!/usr/bin/env bash
# Session 62, fifth call. On an H200 (the card issue 5 names): the end-to-end table with
# ADR 0028's defaults (session61_call1.sh's H200 branch, BUDGET 450). On any other card (~90 s):
# the lasting kernel cache folder and the parallel compiles.
# - The `mlxcel` binary now points MLX_PTX_CACHE_DIR at ~/.cache/mlxcel/mlx-ptx/<MLX version>
#   when it is unset; predicted: `mlxcel info` names that folder, the first generate fills it
#   (MLX's own kernels and mlxcel's images), the second decodes its 16 tokens in < 1 s, and
#   /tmp/mlx gains nothing.
# - Compiles now run on up to 8 threads, waited for before each evaluation. fp16 at 1024 tokens
#   with the cache off (MLX compiles one after another: call 1 measured 11.1 s for 16 tokens)
#   against the cache on with mlxcel's images deleted first (predicted: ~2-3 s, the slowest
#   single compile, instead of call 1's 9.4 s).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session62_call5.sh
# (session62_call6.sh runs it with FIRST_KV=fp16 into s62c6.)
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 BUDGET="${BUDGET:-450}"
call_dir "${CALL:-s62c5}"
.devcarry/bin/mlxcel info | grep -E "^(MLX |kernel cache)"
before=$(find /tmp/mlx -type f 2>/dev/null | wc -l)
gen first "${FIRST_KV:-turbo4}" 1024
gen again "${FIRST_KV:-turbo4}" 1024
.devcarry/bin/mlxcel info | grep -E "^kernel cache"
echo "files under ~/.cache/mlxcel/mlx-ptx: $(find ~/.cache/mlxcel/mlx-ptx -type f | wc -l); under /tmp/mlx: $before before, $(find /tmp/mlx -type f 2>/dev/null | wc -l) after"
find ~/.cache/mlxcel/mlx-ptx -name 'custom_kernel_*' -delete
gen serial fp16 1024 MLXCEL_KERNEL_DISK_CACHE=0
echo "mlxcel images after the serial pass (expected 0): $(find ~/.cache/mlxcel/mlx-ptx -name 'custom_kernel_*.ptx' | wc -l)"
gen parallel fp16 1024
gen cached fp16 1024
grep -h "kernel disk cache" "$R"/*.err | head -3
grep -H "kernel compiles" "$R"/*.err
