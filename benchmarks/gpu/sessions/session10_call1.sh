#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session10_call1.sh
# Session 9 measured the GEMV ring (8 warps, 4 stages): -0.67 ms of device time per step at
# 32K, -1.16 ms for turbo4 at 128K; the LM head streamed at 88% of copy but the layer GEMVs
# at ~50%. Written after session 9's last call (NVRTC-checked, CPU-tested, never run on a
# GPU): capped ring grids (`ring:W:S:GRID`, ring_blocks in qgemv4.cuh): at most GRID CTAs,
# each owning several 16-row blocks, x staged once, the ring running across blocks. This:
# 1. gpu_quantized_gemv: every schedule (incl. capped grids of 64 and 3 CTAs, uneven block
#    counts) against the float64 reference; bit-identical to batched with 8 warps; then
#    gpu_fused_decode with the attention kernel's bank swizzle (default on, unverified);
# 2. a short warm-up run (the fresh machine's JIT compiles took > 40 s in session 9);
# 3. `mlxcel bench gemv` (batched, ring:8:4, ring:4:4, ring:8:4:264, ring:8:4:396);
# 4. end to end (random-kv), device spans: fp16 and turbo4 at 32K and 128K with the ring
#    (default) and ring:8:4:264, and fp16 32K ring:8:4:396;
# 5. ncu's full set on the ring GEMVs of one step (never profiled), if time is left.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json MID=256 BIG=512 TOKENS=8 BENCH_ARGS='--model 256:512:1024:4:2:64 --iters 2'
set -uo pipefail
R=/tmp/s10c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s10c1.tgz" -C "$R" .' EXIT
timeout 240 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gpu_quantized_gemv.txt" 2>&1
echo "gpu_quantized_gemv rc=$? $(grep -E 'test result|panicked|worst' "$R/test-gpu_quantized_gemv.txt" | tr '\n' ' ' | cut -c1-400)"
echo "bit-identical: $(grep -c 'bit-identical to batched: true' "$R/test-gpu_quantized_gemv.txt") true, $(grep -c 'bit-identical to batched: false' "$R/test-gpu_quantized_gemv.txt") false"
grep "bit-identical to batched: false" "$R/test-gpu_quantized_gemv.txt" | grep -v "ring:4:4" | head -5
# The attention kernel's bank swizzle (MLXCEL_MMA_SWIZZLE, default on, also unverified):
# its parity suite first, since every compressed mode's decode uses it.
timeout 150 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture > "$R/test-gpu_fused_decode.txt" 2>&1
echo "gpu_fused_decode (swizzle on) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-gpu_fused_decode.txt" | tr '\n' ' ' | cut -c1-500)"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-500}
RUN_TIMEOUT=120
TOKENS=8 timed 60 warm turbo4 1024
timeout 150 .devcarry/bin/mlxcel bench gemv ${BENCH_ARGS:---iters 40} --out "$R/bench-gemv" > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$?"; grep -E "us \(host|error" "$R/bench-gemv.err" | head -30
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${MID:-32768} ${BIG:-131072}; do
  for kv in fp16 turbo4; do
    timed 25 ring "$kv" "$ctx"
    timed 25 cap264 "$kv" "$ctx" MLXCEL_QMV_SCHEDULE=ring:8:4:264
  done
done
timed 25 cap396 fp16 "${MID:-32768}" MLXCEL_QMV_SCHEDULE=ring:8:4:396
echo "t=${SECONDS}s"
if ((SECONDS + 100 < BUDGET + 90)); then
  NCU_OUT="$R" NCU_TIMEOUT=$((BUDGET + 90 - SECONDS)) bash benchmarks/gpu/ncu_gemv.sh 2>&1 | grep -E "custom_kernel|Duration|DRAM Throughput|Registers|Achieved Occupancy|Eligible Warps" | head -60
else echo "skipped ncu_gemv (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
