#!/usr/bin/env bash
# Next session's second device call (H200, ~7 min), after session8_call1.sh (same staging):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session8_call2.sh
# The table at 32K and 128K for fp16 / turbo4-asym / turbo4 / int8 with the build of
# the checked-out code, the device timeline on; fp16 first and last at each context (the
# host's speed drifts between runs, and every ratio is taken against fp16 of the same call).
# Determinism lead (session 7: two fp16 runs that should match diverged): MLX picks cuDNN's
# SDPA or its own vector kernel for a decode step at eval time (use_cudnn_for_decoding in
# backend/cuda/scaled_dot_product_attention.cpp: K/V must be cache slices whose status is
# `evaluated`), so the fp16 kernel may differ between runs. The two identical fp16 runs'
# tokens are compared, and one fp16 run with MLX_CUDA_USE_CUDNN_SDPA=0 (vector kernel only)
# shows its speed.
set -uo pipefail
R=/tmp/s8c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s8c2.tgz" -C "$R" .' EXIT
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
for ctx in ${CTXS:-32768 131072}; do
  RUN_TIMEOUT=$((ctx > 65536 ? 150 : 90))
  run first fp16 "$ctx"
  for kv in turbo4-asym turbo4 int8; do run default "$kv" "$ctx"; done
  run last fp16 "$ctx"
  run nocudnn fp16 "$ctx" MLX_CUDA_USE_CUDNN_SDPA=0
  python3 -c "import json,sys; a,b=(json.load(open(f))['tokens'] for f in sys.argv[1:]); d=[i for i,(x,y) in enumerate(zip(a,b)) if x!=y]; print('fp16 $ctx first vs last tokens:', 'identical' if not d else 'differ from %d (%d of %d)' % (d[0], len(d), len(a)))" \
    "$R/first-fp16-$ctx.json" "$R/last-fp16-$ctx.json"
done
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last" "$R/timeline.txt" | head -60
