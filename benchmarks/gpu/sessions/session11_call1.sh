#!/usr/bin/env bash
# Next session's first device call (H200, ~7 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session11_call1.sh
# Session 10 made the turbo4 pair table the default (64 KiB, 2 CTAs per SM): ncu 128K
# 59.1 us, DRAM 49.6%, occupancy 12.3%, 0.85 eligible warps per scheduler (latency-bound).
# Written after its last call (NVRTC-checked, CPU-tested, never run on a GPU): LUT1
# (MLXCEL_MMA_LUT_ONE=1), one 32 KiB table with 128-byte rows for K and V and a 4-stage
# ring: 70656 bytes, 3 CTAs per SM, 396 CTAs. Prediction: ~45-50 us at 128K. This call:
# 1. gpu_fused_decode: bit-identity of every table layout (incl. LUT1) against the byte
#    permutes, the split-count rule; then the turbo4 parity suite with LUT1 on;
# 2. `bench attention` turbo4 at 4K / 32K / 128K: LUT1 off / on;
# 3. end to end (random-kv) at 128K and 32K: turbo4 LUT1 off / on, fp16 (same call);
# 4. build parts of turbo4 and fp16 at 4K (MLXCEL_BUILD_PROFILE=1), incl. the time inside
#    MLX's custom-kernel API, with MLXCEL_KERNEL_PRIMITIVE_CACHE off and on (also new: its
#    bit-identity test runs in step 1);
# 5. ncu of the turbo4 kernel at 128K with LUT1.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json MID=256 BIG=512 TOKENS=8 CTXS=256,512
set -uo pipefail
R=/tmp/s11c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s11c1.tgz" -C "$R" .' EXIT
T=.devcarry/bin/tests/gpu_fused_decode
timeout 200 $T --test-threads=1 --nocapture pair_table mma_splits primitive_cache > "$R/test-pair-table.txt" 2>&1
echo "pair table + primitive cache tests rc=$? $(grep -E 'test result|panicked|bit-identity|primitive cache' "$R/test-pair-table.txt" | tr '\n' ' ' | cut -c1-500)"
grep -E "differing outputs" "$R/test-pair-table.txt" | grep -v ": 0 differing" | head -5
MLXCEL_MMA_LUT_ONE=1 MLXCEL_PARITY_MODES=turbo4 timeout 100 $T --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-lut1.txt" 2>&1
echo "parity (LUT1) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-parity-lut1.txt" | tr '\n' ' ' | cut -c1-400)"
for one in 0 1; do
  MLXCEL_MMA_LUT_ONE=$one timeout 100 .devcarry/bin/mlxcel bench attention --contexts "${CTXS:-4096,32768,131072}" \
    --modes turbo4 --shapes 32:8:128 --split-modes none --iters 50 \
    --out "$R/bench-attn-one$one" > /dev/null 2> "$R/bench-attn-one$one.err"
  echo "bench attention LUT1=$one rc=$?"; grep -E " us \(host" "$R/bench-attn-one$one.err"
done
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-460}
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${BIG:-131072} ${MID:-32768}; do
  timed 25 one1 turbo4 "$ctx" MLXCEL_MMA_LUT_ONE=1
  timed 25 one0 turbo4 "$ctx"
  timed 25 one0 fp16 "$ctx"
done
# Where turbo4's extra graph-building time goes (session 8: attention 0.425 vs 0.137 ms and
# KV append 0.244 vs 0.107 ms per step against fp16): build parts with the time inside MLX's
# custom-kernel API split out ("inside them").
# MLXCEL_KERNEL_PRIMITIVE_CACHE=1 (written after session 10's last call) should shrink the
# "inside them" time and the attention / KV-append parts.
for kv in turbo4 fp16; do
  timed 25 prof "$kv" 4096 MLXCEL_BUILD_PROFILE=1
  timed 25 profcache "$kv" 4096 MLXCEL_BUILD_PROFILE=1 MLXCEL_KERNEL_PRIMITIVE_CACHE=1
done
echo "t=${SECONDS}s"
if ((SECONDS + 50 < BUDGET + 100)) && command -v ncu > /dev/null; then
  mkdir -p "$R/ncu-attn"
  MLXCEL_MMA_LUT_ONE=1 timeout $((BUDGET + 100 - SECONDS)) ncu --clock-control none --set full --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 \
    -f -o "$R/ncu-attn/turbo4-131072-lut1" .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn/run.out" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072-lut1.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
  rm -f "$R/ncu-attn/turbo4-131072-lut1.ncu-rep"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|highest-utilized|Eligible Warps" "$R/ncu-attn/details.txt" | sed -E 's/ +/ /g' | head -14
else echo "skipped ncu (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
