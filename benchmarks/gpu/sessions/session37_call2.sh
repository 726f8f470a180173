#!/usr/bin/env bash
# Session 37's second device call (H200, ~8 min; timeout_s 570), after
# `STAGE_GENERATION_TESTS=1 bash benchmarks/gpu/stage.sh` (tests moved out, mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/synthetic_and_hub.gz &&
#   chmod +x .devcarry/bin/mlxcel .devcarry/bin/synthetic_and_hub &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session37_call2.sh
# 1. The generation tests as mended after call 1 (the build profile's parts where the attention
#    launch appends; the step A/B on an int8 cache), the step A/B test twice.
# 2. Today's step budget (ADR 0016's inputs): every kernel of two decode steps in situ (ncu,
#    NCU_CACHE=none) for turbo4 and fp16 at 128K, turbo4-asym and fp16 at 32K; split by
#    benchmarks/gpu/step_budget.py into the weight GEMVs every mode shares and each mode's own
#    kernels, against the copy roofline. Session 32's budget is older than the append inside
#    the attention launch (session 34).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s37c2
BUDGET=${BUDGET:-540}
generation_tests
for run in "turbo4 131072" "fp16 131072" "turbo4-asym 32768" "fp16 32768" "turbo4-asym 131072"; do
  set -- $run
  if ((SECONDS + 100 > BUDGET)); then echo "skipped ncu $1 $2 (t=${SECONDS}s)"; continue; fi
  NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-$1-$2" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh "$1" "$2" 8,2 2>&1 | tail -16
  gzip -f "$R"/insitu-"$1-$2"/ncu-e2e/*.csv 2> /dev/null
  echo "t=${SECONDS}s"
done
echo "done at t=${SECONDS}s"
