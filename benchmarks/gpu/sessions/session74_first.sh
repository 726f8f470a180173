#!/usr/bin/env bash
# Session 74's first call: on an H200 the issue's table (table_if_h200, does not return). On any
# other card, today's step budget (ADR 0016's inputs, last measured on an H200 in session 37,
# before ADRs 0017-0031): device-clock steps and every kernel of two decode steps in situ (ncu,
# caches kept between kernels) for turbo4-asym and fp16 at 32K, then turbo4 and fp16 at 128K;
# benchmarks/gpu/step_budget.py splits them here into the shared weight GEMVs and each mode's
# own kernels.
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=480 bash benchmarks/gpu/sessions/session74_first.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 MLXCEL_MERGE_SIGNS_FIRST=1  # does not return on an H200
call_dir s74c1
BUDGET=${BUDGET:-480}
command -v ncu > /dev/null || echo "ncu not found: device-clock steps only"
for run in "turbo4-asym 32768" "fp16 32768" "turbo4 131072" "fp16 131072"; do
  set -- $run
  have 60 "device clock $1 $2" && RUN_ENV=MLXCEL_DEVICE_CLOCK=1 FILL=random-kv TOKENS=64 run clock "$1" "$2"
  command -v ncu > /dev/null || continue
  have 90 "ncu $1 $2" || continue
  NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-$1-$2" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh "$1" "$2" 8,2 2>&1 | tail -16
  gzip -f "$R"/insitu-"$1-$2"/ncu-e2e/*.csv 2> /dev/null
  echo "t=${SECONDS}s"
done
echo "done at t=${SECONDS}s"
