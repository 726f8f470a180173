#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session12_call1.sh
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
# Added in session 12 before its first call: the warp merge (MLXCEL_MERGE_WARP, written in
# session 12, CPU-tested and NVRTC-checked): its bit-identity test, bench attention A/B,
# ncu time of the merge kernels alone, end to end turbo4-asym A/B and turbo4 with both.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json MID=256 BIG=512 TOKENS=8 CTXS=256,512
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s12c1
T=.devcarry/bin/tests/gpu_fused_decode
timeout 240 $T --test-threads=1 --nocapture pair_table primitive_cache warp_merge > "$R/test-pair-table.txt" 2>&1
echo "pair table + primitive cache + warp merge tests rc=$? $(grep -E 'test result|panicked|bit-identity|primitive cache|warp merge' "$R/test-pair-table.txt" | tr '\n' ' ' | cut -c1-500)"
grep -E "differing outputs" "$R/test-pair-table.txt" | grep -v ": 0 differing" | head -5
for v in MLXCEL_MMA_LUT_IMM MLXCEL_FOLD_MERGE; do
  env "$v=1" MLXCEL_PARITY_MODES=turbo4 timeout 100 $T --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-$v.txt" 2>&1
  echo "parity ($v=1) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-parity-$v.txt" | tr '\n' ' ' | cut -c1-300)"
done
bench_ab MLXCEL_MMA_LUT_IMM imm
bench_ab MLXCEL_MERGE_WARP mw
# The merge kernels alone (ncu, turbo4 at 32K in bench attention): block merge vs warp merge.
if command -v ncu > /dev/null; then
  for mw in 0 1; do
    MLXCEL_MERGE_WARP=$mw timeout 60 ncu --clock-control none --kernel-name "regex:mlxcel_merge" --launch-skip 4 --launch-count 3 \
      --csv --metrics gpu__time_duration.sum .devcarry/bin/mlxcel bench attention --contexts "${MID:-32768}" --modes turbo4 \
      --shapes 32:8:128 --split-modes none --iters 3 > "$R/ncu-merge-mw$mw.csv" 2>&1
    echo "ncu merge MLXCEL_MERGE_WARP=$mw: $(python3 -c 'import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1], errors="replace") if l.startswith("\""))]
h = rows[0] if rows else []
for r in rows[1:]:
    d = dict(zip(h, r))
    if d.get("Metric Name") == "gpu__time_duration.sum":
        print(d["Kernel Name"][:28], d["Metric Value"], d["Metric Unit"], end="; ")' "$R/ncu-merge-mw$mw.csv")"
  done
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-430}
export FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${BIG:-131072} ${MID:-32768}; do
  timed 25 imm1 turbo4 "$ctx" MLXCEL_MMA_LUT_IMM=1
  timed 25 imm0 turbo4 "$ctx"
  timed 25 imm0 fp16 "$ctx"
  timed 25 mw1 turbo4-asym "$ctx" MLXCEL_MERGE_WARP=1
  timed 25 mw0 turbo4-asym "$ctx"
  timed 25 both turbo4 "$ctx" MLXCEL_MMA_LUT_IMM=1 MLXCEL_MERGE_WARP=1
done
echo "t=${SECONDS}s"
ncu_attention ncu-attn-imm0 MLXCEL_MMA_LUT_IMM=0
ncu_attention ncu-attn-imm1 MLXCEL_MMA_LUT_IMM=1
echo "done at t=${SECONDS}s"
