#!/usr/bin/env bash
# Session 9's last device call (H200, ~4.5 min; timeout_s 330), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session9_call4.sh
# Call 3's gpu_quantized_gemv ran out of its 150 s (each schedule x shared-memory size is a
# JIT compile) at the 7th of 8 shapes, all checks passing so far. This call runs it with
# the schedules trimmed to batched / ring (8:4) / ring:4:4 / ring:8:2 and a longer limit,
# then the 4K end-to-end runs call 3 skipped (ring, real prefill).
set -uo pipefail
R=/tmp/s9c4; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s9c4.tgz" -C "$R" .' EXIT
timeout 210 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gpu_quantized_gemv.txt" 2>&1
echo "gpu_quantized_gemv rc=$? $(grep -E 'test result|panicked|worst' "$R/test-gpu_quantized_gemv.txt" | tr '\n' ' ' | cut -c1-400)"
echo "bit-identical: $(grep -c 'bit-identical to batched: true' "$R/test-gpu_quantized_gemv.txt") true, $(grep -c 'bit-identical to batched: false' "$R/test-gpu_quantized_gemv.txt") false"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-290}
RUN_TIMEOUT=40
for kv in fp16 turbo4 int8 turbo4-asym; do timed 14 ring "$kv" 4096; done
echo "done at t=${SECONDS}s"
