#!/usr/bin/env bash
# Session 9's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session9_call2.sh
# Call 1's ncu of the GEMVs: 86-89 registers -> 2 CTAs of 8 warps per SM (25% occupancy),
# 0.56 eligible warps per scheduler, DRAM at 23-40% of peak, 39% of L2 sectors excess
# (2-byte scale/bias loads of 8 rows per instruction), x staged with 2-byte loads before the
# first weight load. The ring schedule (cp.async ring of S stages per warp, scales staged
# once as (scale, bias) pairs, x staged 16 bytes at a time) was written against that:
# 46-53 registers (NVRTC), bit-identical outputs for the same warp count. This call:
# 1. gpu_quantized_gemv: every schedule against the float64 reference, bit-identity;
# 2. `mlxcel bench gemv`: each GEMV of a Llama-3-8B step per schedule, MLX beside;
# 3. end to end (random-kv fill): ring (default) vs batched (MLXCEL_QMV_RING=0), fp16 and
#    turbo4 at 32K and 128K, then int8 / turbo4-asym at 128K; device spans are the number;
# 4. ncu's full set on the ring GEMVs of one step, if time is left.
set -uo pipefail
R=/tmp/s9c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s9c2.tgz" -C "$R" .' EXIT
timeout 180 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gpu_quantized_gemv.txt" 2>&1
echo "gpu_quantized_gemv rc=$? $(grep -E 'test result|panicked|worst' "$R/test-gpu_quantized_gemv.txt" | tr '\n' ' ' | cut -c1-400)"
grep -c "bit-identical to batched: true" "$R/test-gpu_quantized_gemv.txt"
grep "bit-identical to batched: false" "$R/test-gpu_quantized_gemv.txt" | head -5
timeout 200 .devcarry/bin/mlxcel bench gemv --schedules batched,ring:8:4,ring:8:8,ring:4:8,ring:8:2,ring:4:4,ring:16:4 \
  --out "$R/bench-gemv" > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$?"; cat "$R/bench-gemv/gemv.md" 2>/dev/null || tail -5 "$R/bench-gemv.err"
echo "t=${SECONDS}s"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-480}
export FILL=random-kv
RUN_TIMEOUT=90
for ctx in 32768 131072; do
  for kv in fp16 turbo4; do
    timed 25 ring "$kv" "$ctx"
    timed 25 batched "$kv" "$ctx" MLXCEL_QMV_RING=0
  done
done
timed 25 ring int8 131072
timed 25 ring turbo4-asym 131072
timed 25 ring2 fp16 131072
echo "t=${SECONDS}s"
if ((SECONDS + 120 < BUDGET + 80)); then
  NCU_OUT="$R" NCU_TIMEOUT=$((BUDGET + 80 - SECONDS)) bash benchmarks/gpu/ncu_gemv.sh 2>&1 | head -80
else echo "skipped ncu_gemv (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
