#!/usr/bin/env bash
# Session 10, third device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session10_call3.sh
# Call 2's ncu of the turbo4 attention kernel at 128K: ALU pipe 68% busy, DRAM 42%, issue
# 54%: the byte-permute decoders (nvdisasm: 583 instructions per 16-token tile, 168 PRMT,
# 99 LOP3) are what bounds it. The shared-memory pair table (MLXCEL_MMA_LUT_K / _V; 550
# instructions per tile, 64 PRMT, 52 LOP3, 77 LDS; 115 registers; 64 KiB per CTA, so 2
# CTAs per SM and 264-CTA waves). This call:
# 1. gpu_fused_decode: bit-identity of the table against the permutes (fixed splits), the
#    split-count rule, then the turbo4 / turbo4-asym parity suite with both tables on;
# 2. `bench attention` turbo4 / turbo4-asym at 4K, 32K, 128K: tables off, K, V, K+V;
# 3. end to end (random-kv) at 32K and 128K: turbo4 tables off / K+V, fp16;
# 4. ncu of the turbo4 kernel at 128K with both tables.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json MID=256 BIG=512 TOKENS=8 CTXS=256,512
set -uo pipefail
R=/tmp/s10c3; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s10c3.tgz" -C "$R" .' EXIT
T=.devcarry/bin/tests/gpu_fused_decode
timeout 150 $T --test-threads=1 --nocapture pair_table mma_splits > "$R/test-pair-table.txt" 2>&1
echo "pair table test rc=$? $(grep -E 'test result|panicked|bit-identity' "$R/test-pair-table.txt" | tr '\n' ' ' | cut -c1-400)"
grep -E "differing outputs" "$R/test-pair-table.txt" | grep -v ": 0 differing" | head -5
MLXCEL_MMA_LUT_K=1 MLXCEL_MMA_LUT_V=1 MLXCEL_PARITY_MODES=turbo4,turbo4-asym timeout 120 $T --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-lut.txt" 2>&1
echo "parity (tables on) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-parity-lut.txt" | tr '\n' ' ' | cut -c1-400)"
for lut in 00 10 01 11; do
  MLXCEL_MMA_LUT_K=${lut:0:1} MLXCEL_MMA_LUT_V=${lut:1:1} timeout 100 .devcarry/bin/mlxcel bench attention --contexts "${CTXS:-4096,32768,131072}" \
    --modes turbo4,turbo4-asym --shapes 32:8:128 --split-modes none --iters 50 \
    --out "$R/bench-attn-lut$lut" > /dev/null 2> "$R/bench-attn-lut$lut.err"
  echo "bench attention lut(k,v)=$lut rc=$?"; grep -E " us \(host" "$R/bench-attn-lut$lut.err"
done
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-380}
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${BIG:-131072} ${MID:-32768}; do
  timed 25 lut11 turbo4 "$ctx" MLXCEL_MMA_LUT_K=1 MLXCEL_MMA_LUT_V=1
  timed 25 lut00 turbo4 "$ctx"
  timed 25 lut11 turbo4-asym "$ctx" MLXCEL_MMA_LUT_K=1 MLXCEL_MMA_LUT_V=1
  timed 25 lut00 fp16 "$ctx"
done
echo "t=${SECONDS}s"
if ((SECONDS + 50 < BUDGET + 90)) && command -v ncu > /dev/null; then
  mkdir -p "$R/ncu-attn"
  MLXCEL_MMA_LUT_K=1 MLXCEL_MMA_LUT_V=1 timeout $((BUDGET + 90 - SECONDS)) ncu --clock-control none --set full --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 \
    -f -o "$R/ncu-attn/turbo4-131072-lut" .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn/run.out" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072-lut.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|highest-utilized|bank conflict" "$R/ncu-attn/details.txt" | sed -E 's/ +/ /g' | head -14
else echo "skipped ncu (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
