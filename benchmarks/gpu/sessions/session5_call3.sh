#!/usr/bin/env bash
# Session 5, device call 3 (after session5's calls 1-2, see benchmarks/results/): branch
# next/rope-fold without the RMSNorm lever and with the float4 fold merge (B, .devcarry/bin)
# against main (A, .devcarry/bin-main): parity, e2e turbo4 at 4K (2 reps) and 32K, with
# MLXCEL_FOLD_MERGE=0 as the extra B run, then ncu kernel time per step at 4K.
set -uo pipefail
export A_BIN=.devcarry/bin-main  # as run: ab_builds.sh read build A from there then
MLXCEL_PARITY_MODES=turbo4,int8,turbo4-asym TESTS="gpu_fused_rope gpu_fused_decode" MODES=turbo4 CTXS=4096 REPS=2 \
  EXTRA_B="MLXCEL_FOLD_MERGE=0" NCU_MODES=none bash benchmarks/gpu/ab_builds.sh
mv "$OUT/ab_results.tgz" "$OUT/ab_4k.tgz"
MODES=turbo4 CTXS=32768 REPS=1 EXTRA_B="MLXCEL_FOLD_MERGE=0" NCU_MODES=turbo4 bash benchmarks/gpu/ab_builds.sh
mv "$OUT/ab_results.tgz" "$OUT/ab_32k.tgz"
echo "-- B, MLXCEL_FOLD_MERGE=0"
MLXCEL_FOLD_MERGE=0 NCU_OUT=/tmp/ncu-b-nofold bash benchmarks/gpu/ncu_e2e.sh turbo4 4096 8,8 2>&1 | head -12
