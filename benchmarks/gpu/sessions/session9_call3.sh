#!/usr/bin/env bash
# Session 9's third device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session9_call3.sh
# Call 2 ran the ring schedule for the first time: outputs bit-identical to the batched
# schedule where they ran, gate/up + SiLU 43.8 -> 34.0 us in `mlxcel bench gemv`, but every
# launch whose dynamic shared memory passed 48 KB failed once a smaller launch had loaded
# the same kernel first (MLX raises the limit only at a kernel's first load). Fixed with the
# SMEM template argument (one kernel per shared-memory size). This call:
# 1. gpu_quantized_gemv: every schedule against the float64 reference, bit-identity;
# 2. end to end (random-kv fill): ring (default) vs batched (MLXCEL_QMV_RING=0) for fp16 and
#    turbo4 at 32K and 128K, ring:4:4 for fp16, int8 / turbo4-asym at 128K, 4K fp16/turbo4;
# 3. ncu's full set on the ring GEMVs of one decode step (in-situ device time per kernel);
# 4. `mlxcel bench gemv` (batched, ring:8:4, ring:4:4) for the record.
set -uo pipefail
R=/tmp/s9c3; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s9c3.tgz" -C "$R" .' EXIT
timeout 150 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gpu_quantized_gemv.txt" 2>&1
echo "gpu_quantized_gemv rc=$? $(grep -E 'test result|panicked|worst' "$R/test-gpu_quantized_gemv.txt" | tr '\n' ' ' | cut -c1-400)"
echo "bit-identical: $(grep -c 'bit-identical to batched: true' "$R/test-gpu_quantized_gemv.txt") true, $(grep -c 'bit-identical to batched: false' "$R/test-gpu_quantized_gemv.txt") false"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-430}
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in 131072 32768; do
  for kv in fp16 turbo4; do
    timed 25 ring "$kv" "$ctx"
    timed 25 batched "$kv" "$ctx" MLXCEL_QMV_RING=0
  done
  timed 25 ring44 fp16 "$ctx" MLXCEL_QMV_SCHEDULE=ring:4:4
done
timed 25 ring int8 131072
timed 25 ring turbo4-asym 131072
timed 25 ring int8 32768
timed 25 ring turbo4-asym 32768
unset FILL
for kv in fp16 turbo4 int8 turbo4-asym; do timed 15 ring "$kv" 4096; done
echo "t=${SECONDS}s"
if ((SECONDS + 100 < BUDGET + 90)); then
  NCU_OUT="$R" NCU_TIMEOUT=$((BUDGET + 90 - SECONDS)) bash benchmarks/gpu/ncu_gemv.sh 2>&1 | grep -E "custom_kernel|Duration|DRAM Throughput|Registers|Achieved Occupancy|Eligible Warps" | head -60
else echo "skipped ncu_gemv (t=${SECONDS}s)"; fi
echo "t=${SECONDS}s"
if ((SECONDS + 60 < 560)); then
  timeout $((560 - SECONDS)) .devcarry/bin/mlxcel bench gemv --schedules batched,ring:8:4,ring:4:4 --iters 40 \
    --out "$R/bench-gemv" > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
  echo "bench gemv rc=$?"; grep -E "us \(host" "$R/bench-gemv.err" | head -20
fi
echo "done at t=${SECONDS}s"
