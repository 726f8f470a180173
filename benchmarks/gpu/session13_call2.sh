#!/usr/bin/env bash
# Session 13's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session13_call2.sh
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
for kv in turbo4 fp16; do
  TOKENS=32 timed 60 parts0 "$kv" 1024 MLXCEL_QKV_PARTS=0
  TOKENS=32 timed 60 parts1 "$kv" 1024 MLXCEL_QKV_PARTS=1
  python3 -c 'import json, sys
a, b = (json.load(open(f))["tokens"] for f in sys.argv[1:3])
d = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
print(sys.argv[3], "parts off/on tokens:", "match" if not d and len(a) == len(b) else f"first difference at {d[:1]}", len(a), len(b))' \
    "$R/parts0-$kv-1024.json" "$R/parts1-$kv-1024.json" "$kv" 2>&1 | tail -1
done
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${CTX_BIG:-32768} ${CTX_SMALL:-4096}; do
  for round in 1 2 3; do
    for kv in turbo4 fp16; do
      if ((round % 2)); then
        timed 20 "on$round" "$kv" "$ctx" MLXCEL_QKV_PARTS=1
        timed 20 "off$round" "$kv" "$ctx" MLXCEL_QKV_PARTS=0
      else
        timed 20 "off$round" "$kv" "$ctx" MLXCEL_QKV_PARTS=0
        timed 20 "on$round" "$kv" "$ctx" MLXCEL_QKV_PARTS=1
      fi
    done
  done
done
echo "done at t=${SECONDS}s"
