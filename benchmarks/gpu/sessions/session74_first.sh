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
  insitu_budget $run
done
echo "done at t=${SECONDS}s"
