#!/usr/bin/env bash
# Session 63, second call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~2-3 min): why turbo3 is slower than turbo4 per call at 32K in
# `bench attention` (+2.5 to +3.4 us in all three runs of call 1) while session 57's ncu medians
# on an H100 put its kernel at or below turbo4's (21.74 against 22.22 us, L2 flushed between
# launches). ncu durations (5 iterations' launches, medians) of turbo3 and turbo4 at 16K, 32K,
# 64K and 128K, with ncu's default L2 flush and with the L2 kept (NCU_CACHE=none, as
# `bench attention`'s back-to-back calls over one layer's cache see it: 26 / 35 MB at 32K fit in
# the 50 MB L2, fp16's 134 MB does not). Prediction: flushed, turbo3 <= turbo4 at every context;
# with the L2 kept, turbo3 slower at 16K-32K (its decode has more instructions per element, and
# an L2-fed loop is bound by them), level or faster from 64K.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c2
export SWEEP_CTXS=16384,32768,65536,131072
# The machine's first process compiles MLX's and mlxcel's kernels: outside ncu's time limits.
timeout 150 .devcarry/bin/mlxcel bench attention --contexts 16384 --modes turbo4,turbo3 --shapes 32:8:128 \
  --split-modes none --iters 2 --copy-mib 64 > /dev/null 2> "$R/warm.err"
echo "warm-up rc=$? t=${SECONDS}s"
for m in turbo4 turbo3; do
  SWEEP_MODE=$m ncu_sweep "$m-flush"
  echo "sweep $m flushed rc=$? t=${SECONDS}s"
  SWEEP_MODE=$m NCU_CACHE=none ncu_sweep "$m-l2"
  echo "sweep $m L2 kept rc=$? t=${SECONDS}s"
done
sweep_medians turbo4-flush turbo3-flush turbo4-l2 turbo3-l2
gzip -9 "$R"/sweep-*.csv
echo "done at t=${SECONDS}s"
