#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session12_call1.sh
# Written after session 11's last device call (NVRTC-checked, CPU-tested, never run on a GPU):
# - LUTI (MLXCEL_MMA_LUT_IMM=1): the turbo4 pair table's lookups address it by an immediate
#   offset (the table at the start of dynamic shared memory, shared address 1024 on sm_80+),
#   no per-lookup add: main loop 498 -> 427 instructions per tile (NVRTC, D=128, GQA 4).
#   Prediction, if the kernel is issue-bound (session 11: 66 us in situ at 128K, 24 us at
#   32K): ~57 us and ~21 us; bench attention 128K 70.5 -> ~62 us.
# - FOLD's arrival flag moved from a static __shared__ int to q's staging area (so no
#   variant declares static shared memory);
# - flags are read once per process: the tests flip them in-process through flags::reload.
# This call:
# 1. gpu_fused_decode: pair-table bit identity (now incl. LUTI), primitive cache; turbo4
#    parity with LUTI, and with the fold on (the moved flag);
# 2. bench attention turbo4 at 4K / 32K / 128K, LUTI off / on;
# 3. end to end (random-kv) at 128K and 32K: turbo4 LUTI on / off, fp16;
# 4. ncu warp-state sampling of the turbo4 kernel at 128K, LUTI off and on.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json MID=256 BIG=512 TOKENS=8 CTXS=256,512
set -uo pipefail
R=/tmp/s12c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s12c1.tgz" -C "$R" .' EXIT
T=.devcarry/bin/tests/gpu_fused_decode
timeout 200 $T --test-threads=1 --nocapture pair_table primitive_cache > "$R/test-pair-table.txt" 2>&1
echo "pair table + primitive cache tests rc=$? $(grep -E 'test result|panicked|bit-identity|primitive cache' "$R/test-pair-table.txt" | tr '\n' ' ' | cut -c1-400)"
grep -E "differing outputs" "$R/test-pair-table.txt" | grep -v ": 0 differing" | head -5
for v in MLXCEL_MMA_LUT_IMM MLXCEL_FOLD_MERGE; do
  env "$v=1" MLXCEL_PARITY_MODES=turbo4 timeout 100 $T --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-$v.txt" 2>&1
  echo "parity ($v=1) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-parity-$v.txt" | tr '\n' ' ' | cut -c1-300)"
done
for imm in 0 1; do
  MLXCEL_MMA_LUT_IMM=$imm timeout 100 .devcarry/bin/mlxcel bench attention --contexts "${CTXS:-4096,32768,131072}" \
    --modes turbo4 --shapes 32:8:128 --split-modes none --iters 50 \
    --out "$R/bench-attn-imm$imm" > /dev/null 2> "$R/bench-attn-imm$imm.err"
  echo "bench attention LUTI=$imm rc=$?"; grep -E " us \(host" "$R/bench-attn-imm$imm.err"
done
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-420}
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${BIG:-131072} ${MID:-32768}; do
  timed 25 imm1 turbo4 "$ctx" MLXCEL_MMA_LUT_IMM=1
  timed 25 imm0 turbo4 "$ctx"
  timed 25 imm0 fp16 "$ctx"
done
echo "t=${SECONDS}s"
for imm in 0 1; do
  if ((SECONDS + 50 < BUDGET + 130)) && command -v ncu > /dev/null; then
    mkdir -p "$R/ncu-attn-imm$imm"
    MLXCEL_MMA_LUT_IMM=$imm timeout $((BUDGET + 130 - SECONDS)) ncu --clock-control none --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --kernel-name "regex:mlxcel_decode" \
      --launch-skip 6 --launch-count 1 -f -o "$R/ncu-attn-imm$imm/turbo4-131072" .devcarry/bin/mlxcel bench attention \
      --contexts 131072 --modes turbo4 --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn-imm$imm/run.out" 2>&1
    ncu --import "$R/ncu-attn-imm$imm/turbo4-131072.ncu-rep" --page details > "$R/ncu-attn-imm$imm/details.txt" 2>&1
    rm -f "$R/ncu-attn-imm$imm/turbo4-131072.ncu-rep"
    echo "ncu LUTI=$imm:"
    grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps|Stall|Warp Cycles Per Issued" \
      "$R/ncu-attn-imm$imm/details.txt" | sed -E 's/ +/ /g' | head -16
  else echo "skipped ncu LUTI=$imm (t=${SECONDS}s)"; fi
done
echo "done at t=${SECONDS}s"
