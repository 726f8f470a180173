#!/usr/bin/env bash
# Ran on the build of commit 97b1199 (the fp16 runs do not touch its MLXCEL_L2_PREFETCH code).
# Session 24, fifth device call (H200, ~3 min; timeout_s 240), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session24_call5.sh
# Call 4: the default fp16 decode at 1K gives one of two token sequences from run to run, even
# with MLX_USE_CUDA_GRAPHS=0 (stream order: no race between graph nodes); at 200 (< 256, where
# MLX's SDPA never takes cuDNN's decode path) it is deterministic and equals the reference.
# Hypothesis: with the in-place appends, MLX's SDPA over the cache views takes cuDNN's decode
# path (k/v slices of a buffer whose capacity is a multiple of 256), whose results vary from
# run to run; the reference path's views go to MLX's vector kernel. Which kernels run: ncu
# names of one decode step at 1K for both paths; then the reference path twice more.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s24c5
for v in 1 0; do
  echo "MLXCEL_FP16_INPLACE_APPEND=$v:"
  MLXCEL_FP16_INPLACE_APPEND=$v FILL=random-kv NCU_OUT="$R/ncu-inplace$v" timeout 90 \
    bash benchmarks/gpu/ncu_e2e.sh fp16 1024 8,1 2>&1 | tail -8
  f="$R/ncu-inplace$v/ncu-e2e/ncu-e2e-fp16-1024.csv"
  grep -o '"[^"]*\(sdpa\|cudnn\|fmha\|flash\|attention\)[^"]*"' "$f" | sort | uniq -c | head -8
done
e2e_setup 200 40
export TOKENS=32
for i in 2 3; do timed 30 "ref$i" fp16 1024 MLXCEL_FP16_INPLACE_APPEND=0; done
python3 - "$R" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    t = json.load(open(f))["tokens"]
    print(os.path.basename(f), t[17:22])
PY
echo "done at t=${SECONDS}s"
