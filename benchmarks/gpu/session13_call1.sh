#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin: the tree with results passes 64 MiB with .devcarry/ab):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session13_call1.sh
# Written after session 12's last device call (NVRTC-checked, CPU-tested, never run on a GPU):
# the folded RMSNorm (MLXCEL_FUSED_NORM=1: the qkv, gate/up and LM-head GEMV kernels stage
# rms_norm(x, w, eps) with MLX's roundings; -65 MLX nodes and launches per 8B decode step).
# 1. gpu_quantized_gemv's folded-norm test (float64 reference and MLX's norm + the kernel)
#    and the GEMV tests (the kernels gained the NORM / EPS template constants);
# 2. end to end, greedy tokens with the fold off / on (turbo4, fp16 at 1K: they should match;
#    a flip late in the run is possible, the roundings of the sum of squares differ);
# 3. three interleaved rounds at 32K and 4K of turbo4 and fp16, fold off / on, with the build
#    profile (ops per step should fall by 65).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX_BIG=512 CTX_SMALL=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s13c1
timeout 240 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gemv.txt" 2>&1
echo "gemv tests rc=$? $(grep -E 'test result|panicked|folded norm: worst|qgemv4: ' "$R/test-gemv.txt" | tr '\n' ' ' | cut -c1-500)"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-480}
for kv in turbo4 fp16; do
  TOKENS=32 timed 60 fold0 "$kv" 1024 MLXCEL_FUSED_NORM=0
  TOKENS=32 timed 60 fold1 "$kv" 1024 MLXCEL_FUSED_NORM=1
  python3 -c 'import json, sys
a, b = (json.load(open(f))["tokens"] for f in sys.argv[1:3])
d = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
print(sys.argv[3], "fold off/on tokens:", "match" if not d and len(a) == len(b) else f"first difference at {d[:1]}", len(a), len(b))' \
    "$R/fold0-$kv-1024.json" "$R/fold1-$kv-1024.json" "$kv" 2>&1 | tail -1
done
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${CTX_BIG:-32768} ${CTX_SMALL:-4096}; do
  for round in 1 2 3; do
    for kv in turbo4 fp16; do
      if ((round % 2)); then
        timed 25 "on$round" "$kv" "$ctx" MLXCEL_FUSED_NORM=1
        timed 25 "off$round" "$kv" "$ctx" MLXCEL_FUSED_NORM=0
      else
        timed 25 "off$round" "$kv" "$ctx" MLXCEL_FUSED_NORM=0
        timed 25 "on$round" "$kv" "$ctx" MLXCEL_FUSED_NORM=1
      fi
    done
  done
done
echo "done at t=${SECONDS}s"
