#!/usr/bin/env bash
# Next session's first device call (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session7_call1.sh   (~9 min)
# Session 7 ran this once: the device machine stopped answering mid-call and nothing came
# back (907 device-seconds lost); session7_call1b.sh is the trimmed re-run that worked.
# Since the copy-out fix (ADR 0006) every mode is host-bound: step time = graph building +
# MLX async_eval. This call measures four host-side levers at 128K and 32K, each next to
# the default, with the device timeline on (MLXCEL_DEVICE_CLOCK=1; benchmarks/gpu/timeline.py):
# - MLX_MAX_MB_PER_BUFFER=1000000: MLX (mlx/backend/cuda/device.cpp) commits its CUDA graph
#   every 100 nodes or once the inputs it has seen pass max_mb_per_buffer (1000 on sm_90,
#   counted in elements): an fp16 128K layer's K+V are 268 M elements, so about one extra
#   commit every 4 fp16 layers (turbo4: every ~8);
# - turbo4 without fp16 boundary layers (MLXCEL_KV_BOUNDARY_LAYERS=0): no cuDNN SDPA child
#   graph, rope or copy nodes of the four fp16 layers in the step;
# - turbo4 with its boundary layers on the fused fp16 kernel (MLXCEL_FUSED_FP16=1);
# - turbo4 with the split merge folded into the attention launch (MLXCEL_FOLD_MERGE=1):
#   session 5 measured it +90 us of device time per 4K step for one kernel node less per
#   layer; now that the host is the limit, one node (~7 us of MLX encoding plus the call's
#   graph building) per layer may be worth more.
# Every run also times the host's graph building per model part (MLXCEL_BUILD_PROFILE=1:
# where turbo4's extra 0.7 ms goes).
set -uo pipefail
R=/tmp/s7c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s7c1.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
for ctx in ${CTXS:-131072 32768}; do
  run default fp16 "$ctx"
  run default turbo4 "$ctx"
  run mb fp16 "$ctx" MLX_MAX_MB_PER_BUFFER=1000000
  run mb turbo4 "$ctx" MLX_MAX_MB_PER_BUFFER=1000000
  run nobound turbo4 "$ctx" MLXCEL_KV_BOUNDARY_LAYERS=0
  run fusedbound turbo4 "$ctx" MLXCEL_FUSED_FP16=1
  run fold turbo4 "$ctx" MLXCEL_FOLD_MERGE=1
done
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last|idle before" "$R/timeline.txt"
