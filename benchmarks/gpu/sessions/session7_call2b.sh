#!/usr/bin/env bash
# Session 7's last device call (~6 min; the first call lost the machine, so the budget left
# only one more): the pipelined GEMV schedule's correctness and A/B, and the end-to-end
# table with it on.
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session7_call2b.sh
# Kept as run. MLXCEL_QMV_PIPELINE (default on in the binary that ran) measured slower and was
# removed afterwards; to rerun this call, `git apply benchmarks/kernel-notes/qgemv4_pipelined.patch`.
# 1. gpu_quantized_gemv (both schedules against a float64 reference, and bit for bit
#    against each other) and gpu_fused_rope (the in-place encoders after a839590's tidy).
# 2. 32K: fp16 and turbo4 with MLXCEL_QMV_PIPELINE=0 next to the default (on); their greedy
#    tokens must be identical (the schedules give the same bits).
# 3. The issue's table: 4K and 32K for fp16 / turbo4 / turbo4-asym / int8, 128K for fp16 /
#    turbo4, all with the device timeline (MLXCEL_DEVICE_CLOCK=1); and turbo4 at 4K with the
#    split merge folded into the attention launch (host-bound there: one node fewer per layer).
set -uo pipefail
R=/tmp/s7c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s7c2.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
for t in gpu_quantized_gemv gpu_fused_rope; do
  timeout 90 .devcarry/bin/tests/$t --test-threads 1 --nocapture > "$R/$t.txt" 2>&1
  echo "$t rc=$? $(grep -E 'test result|worst|identical|panicked' "$R/$t.txt" | tr '\n' ' ' | cut -c1-900)"
done
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
RUN_TIMEOUT=120
run nopipe fp16 32768 MLXCEL_QMV_PIPELINE=0
run default fp16 32768
run nopipe turbo4 32768 MLXCEL_QMV_PIPELINE=0
run default turbo4 32768
run default turbo4-asym 32768
run default int8 32768
for kv in fp16 turbo4; do
  python3 -c "import json,sys; a,b=(json.load(open(f))['tokens'] for f in sys.argv[1:]); print('$kv 32K tokens pipe=0 vs 1:', 'identical' if a==b else 'DIFFER at %d' % next(i for i,(x,y) in enumerate(zip(a,b)) if x!=y))" \
    "$R/nopipe-$kv-32768.json" "$R/default-$kv-32768.json" 2>&1 | tail -1
done
for kv in fp16 turbo4 turbo4-asym int8; do run default "$kv" 4096; done
run fold turbo4 4096 MLXCEL_FOLD_MERGE=1
RUN_TIMEOUT=150
for kv in fp16 turbo4; do run default "$kv" 131072; done
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last" "$R/timeline.txt" | head -60
