#!/usr/bin/env bash
# Next session's second device call (H200, ~7 min; timeout_s 600), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session10_call2.sh
# The tensor-core attention kernel's bank swizzle (SWZ, MLXCEL_MMA_SWIZZLE, default on),
# written after session 9's last call (NVRTC-checked; never run on a GPU): the ring stores
# its 16-byte chunks XOR-permuted within their 128-byte line so that V reads (4-way
# conflicts for turbo4 D=128) and K rows of >= 128 bytes (int8, asym's fp16 K) read
# conflict-free. This call:
# 1. (the parity suite with the swizzle on ran in session10_call1.sh);
# 2. `bench attention` A/B (MLXCEL_MMA_SWIZZLE=1 / 0) at 32K and 128K for turbo4, int8,
#    turbo4-asym (one Llama-3-8B layer);
# 3. end to end (random-kv) at 128K: turbo4 and turbo4-asym with the swizzle on and off;
# 4. ncu's shared-memory wavefronts of the turbo4 kernel at 128K with the swizzle on.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json BIG=512 TOKENS=8 CTXS=256
set -uo pipefail
R=/tmp/s10c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s10c2.tgz" -C "$R" .' EXIT
# (Its parity suite ran first thing in session10_call1.sh.)
for swz in 1 0; do
  MLXCEL_MMA_SWIZZLE=$swz timeout 120 .devcarry/bin/mlxcel bench attention --contexts "${CTXS:-32768,131072}" \
    --modes turbo4,int8,turbo4-asym --shapes 32:8:128 --split-modes none --iters 50 \
    --out "$R/bench-attn-swz$swz" > /dev/null 2> "$R/bench-attn-swz$swz.err"
  echo "bench attention swizzle=$swz rc=$?"; grep -E " us \(host" "$R/bench-attn-swz$swz.err"
done
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-450}
export FILL=random-kv
RUN_TIMEOUT=80
for kv in turbo4 turbo4-asym; do
  timed 25 swz1 "$kv" "${BIG:-131072}"
  timed 25 swz0 "$kv" "${BIG:-131072}" MLXCEL_MMA_SWIZZLE=0
done
timed 25 swz1 fp16 "${BIG:-131072}"
echo "t=${SECONDS}s"
if ((SECONDS + 60 < BUDGET + 100)) && command -v ncu > /dev/null; then
  mkdir -p "$R/ncu-attn"
  timeout $((BUDGET + 100 - SECONDS)) ncu --clock-control none --set full --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 \
    -f -o "$R/ncu-attn/turbo4-131072-swz" .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn/run.out" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072-swz.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
  grep -E "Duration|DRAM Throughput|bank conflict|Issue Slots Busy" "$R/ncu-attn/details.txt" | sed -E 's/ +/ /g' | head -12
else echo "skipped ncu (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
