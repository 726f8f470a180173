#!/usr/bin/env bash
# Session 63, fifth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~1.5 min): does turbo4's pair table pay at short contexts?
# Call 4 put turbo4's 32K kernel at 22.26 us on an H100 (2.86x MLX's fp16 SDPA; 3x needs
# ~21.2), of which ~9 us is fixed time per call (session 18's fit) that includes the 64 KiB
# table's fill. ncu durations (medians of 18 launches) of the turbo4 kernel at 4K-128K with the
# table (default) and without (MLXCEL_MMA_LUT_K=0: register byte permutes, no fill; 12-warp
# CTAs either way through WIDE_PLAIN). Prediction: without the table faster at 4K by ~1 us (the
# fill), level at 16K, slower from 32K (the loop's ALU load: 70.1 -> 59.1 us at 128K when the
# table came, session 10).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call5.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c5
export SWEEP_CTXS=4096,16384,32768,65536,131072
timeout 150 .devcarry/bin/mlxcel bench attention --contexts 4096 --modes turbo4 --shapes 32:8:128 \
  --split-modes none --iters 2 --copy-mib 64 > /dev/null 2> "$R/warm.err"
echo "warm-up rc=$? t=${SECONDS}s"
for v in 1 0; do
  SWEEP_MODE=turbo4 ncu_sweep "lutk$v" MLXCEL_MMA_LUT_K=$v
  echo "sweep MLXCEL_MMA_LUT_K=$v rc=$? t=${SECONDS}s"
done
sweep_medians lutk1 lutk0
gzip -9 "$R"/sweep-*.csv
echo "done at t=${SECONDS}s"
