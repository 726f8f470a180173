#!/usr/bin/env bash
# Session 61, fifth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch, ~7.5 min). On an H100 (~1 min): is the fused call's host build at 128K (~12 us against
# ~6 at 32K, call 4) the separate merge node? `bench attention` for turbo4 at 32K and 128K with
# the fold off everywhere (MLXCEL_FOLD_MAX_CONTEXT=1) and on everywhere (=1000000; 128K still
# has <= 16 splits). Prediction: the build follows the fold, not the context.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session61_call5.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s61c5
for fmc in 1 1000000; do
  MLXCEL_FOLD_MAX_CONTEXT=$fmc timeout 100 .devcarry/bin/mlxcel bench attention --contexts 32768,131072 \
    --modes turbo4 --shapes 32:8:128 --split-modes none --copy-mib 256 \
    --out "$R/bench-fmc$fmc" > /dev/null 2> "$R/bench-fmc$fmc.err"
  echo "MLXCEL_FOLD_MAX_CONTEXT=$fmc rc=$?"; grep -E " us \(host" "$R/bench-fmc$fmc.err"
done
