#!/usr/bin/env bash
# Session 32's fourth device call (H200, ~6 min; timeout_s 400), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session32_call4.sh
# Where the turbo4 attention call's fixed time goes (session 32's step budget: ~7.6 us per call
# at 32K that does not scale with the context, beside ~8 us of streaming and ~3.4 us of fold
# tail). In situ (ncu, two decode steps, L2 kept: NCU_CACHE=none) at 32K with the kernel's
# timing probes (MLXCEL_ATTENTION_TIMING_PROBE): off, no-tiles (launch + prologue + warp merge
# + partials + fold tail), prologue (launch + prologue), empty (launch and CTA scheduling).
# Then no-tiles and off at 4K and 128K (the fixed part should not move with the context; at
# 128K the fold is off, so there the merge is a launch of its own).
# The probes break the outputs: the runs' tokens are meaningless, only kernel times count.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s32c4
BUDGET=${BUDGET:-300}
probe() {
  local p=$1 ctx=$2
  if ((SECONDS + 60 > BUDGET)); then echo "skipped probe $p $ctx (t=${SECONDS}s)"; return; fi
  echo "== probe $p, turbo4 $ctx"
  MLXCEL_ATTENTION_TIMING_PROBE=$p NCU_CACHE=none FILL=random-kv NCU_OUT="$R/probe-$p-$ctx" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh turbo4 "$ctx" 8,2 2>&1 | grep -E "kernels|decode_attention|merge|qgemv4_qkv_enc|error" | head -6
  gzip -f "$R"/probe-"$p-$ctx"/ncu-e2e/*.csv 2> /dev/null
}
for p in off no-tiles prologue empty; do probe "$p" 32768; done
for ctx in 131072 4096; do for p in no-tiles off; do probe "$p" "$ctx"; done; done
python3 benchmarks/gpu/insitu_medians.py "$R"/probe-off-32768/ncu-e2e/*.csv.gz "$R"/probe-no-tiles-32768/ncu-e2e/*.csv.gz \
  "$R"/probe-prologue-32768/ncu-e2e/*.csv.gz "$R"/probe-empty-32768/ncu-e2e/*.csv.gz --grep decode_attention 2>&1 | head -12
echo "done at t=${SECONDS}s"
