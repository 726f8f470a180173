#!/usr/bin/env bash
# Session 32's third device call (H200, ~6 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session32_call3.sh
# The step budget at 32K and 128K, fp16 and turbo4: every kernel of two decode steps in situ
# (ncu, clocks and caches left alone: NCU_CACHE=none, so x, q and the partials stay in L2 as
# they do between a step's kernels), beside each mode's device clock in the same call. The
# kernels' sum against the device clock is the time between kernels (launch, drain, ramp)
# that no kernel change removes; the per-family sums against their bytes say where the rest
# of the gap to the copy roofline is.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s32c3
e2e_setup 540 90
export TOKENS=64
timed 30 base fp16 32768
timed 30 base turbo4 32768
timed 50 base fp16 131072
timed 50 base turbo4 131072
for ctx in 32768 131072; do
  for kv in turbo4 fp16; do
    if ((SECONDS + 70 > BUDGET)); then echo "skipped ncu $kv $ctx (t=${SECONDS}s)"; continue; fi
    NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-$kv-$ctx" timeout 120 \
      bash benchmarks/gpu/ncu_e2e.sh "$kv" "$ctx" 8,2 2>&1 | tail -16
    gzip -f "$R"/insitu-"$kv-$ctx"/ncu-e2e/*.csv 2> /dev/null
  done
done
echo "done at t=${SECONDS}s"
