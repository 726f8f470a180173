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
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s12c1
T=.devcarry/bin/tests/gpu_fused_decode
timeout 200 $T --test-threads=1 --nocapture pair_table primitive_cache > "$R/test-pair-table.txt" 2>&1
echo "pair table + primitive cache tests rc=$? $(grep -E 'test result|panicked|bit-identity|primitive cache' "$R/test-pair-table.txt" | tr '\n' ' ' | cut -c1-400)"
grep -E "differing outputs" "$R/test-pair-table.txt" | grep -v ": 0 differing" | head -5
for v in MLXCEL_MMA_LUT_IMM MLXCEL_FOLD_MERGE; do
  env "$v=1" MLXCEL_PARITY_MODES=turbo4 timeout 100 $T --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-$v.txt" 2>&1
  echo "parity ($v=1) rc=$? $(grep -E 'test result|panicked|worst' "$R/test-parity-$v.txt" | tr '\n' ' ' | cut -c1-300)"
done
bench_ab MLXCEL_MMA_LUT_IMM imm
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
ncu_attention ncu-attn-imm0 MLXCEL_MMA_LUT_IMM=0
ncu_attention ncu-attn-imm1 MLXCEL_MMA_LUT_IMM=1
echo "done at t=${SECONDS}s"
