#!/usr/bin/env bash
# Session 13's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session13_call2.sh
# The stacked qkv GEMV writing q, k and v as three outputs (MLXCEL_QKV_PARTS; -4 MLX nodes per
# layer: the reshape and the three slices), with the folded RMSNorm now the default:
# 1. gpu_quantized_gemv's parts test (bit-identical to the split of one output, every schedule,
#    norm folded or not);
# 2. greedy tokens with the parts off / on (turbo4, fp16 at 1K: same kernel arithmetic, so
#    they must match);
# 3. three interleaved rounds at 32K and 4K of turbo4 and fp16, parts off / on, with the build
#    profile (ops per step should fall by 128).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX_BIG=512 CTX_SMALL=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s13c2
timeout 120 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture qkv_parts > "$R/test-parts.txt" 2>&1
echo "parts test rc=$? $(grep -E 'test result|panicked|qkv parts' "$R/test-parts.txt" | tr '\n' ' ' | cut -c1-500)"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-500}
for kv in turbo4 fp16; do tokens_ab MLXCEL_QKV_PARTS "$kv" parts; done
export FILL=random-kv
RUN_TIMEOUT=80
flag_rounds MLXCEL_QKV_PARTS 20 "${CTX_BIG:-32768}" "${CTX_SMALL:-4096}"
echo "done at t=${SECONDS}s"
