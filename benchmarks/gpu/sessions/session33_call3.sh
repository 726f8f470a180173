#!/usr/bin/env bash
# Session 33's third device call (H200, ~6 min; timeout_s 480), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call3.sh
# MLXCEL_MMA_DEEP_RING (new, off): the turbo4 attention kernel's ring 6 stages deep instead of
# 5 (3 tiles in flight while a warp computes a pair instead of 2; still one CTA per SM, same
# splits). Session 32's probes: the tile loop runs ~5.2 us per call above its bytes at copy
# speed at 32K and ~5.8 us at 128K. Prediction: if the warps wait on their copies, -1 to -2 us
# per turbo4 call at 32K and 128K (-0.03 to -0.06 ms per step); if the per-warp chain holds
# them (session 26's reading of REFILL_EARLY), level.
# 1. the fused-decode parity suite (turbo4) with the flag on;
# 2. in situ (ncu, two decode steps, L2 kept) at 32K, off / on;
# 3. in-process A/Bs (MLXCEL_STEP_AB) at 32K and 128K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c3
BUDGET=${BUDGET:-420}
flag_parity deep 150 MLXCEL_MMA_DEEP_RING=1
for c in 0 1; do
  echo "== in situ, deep ring $c"
  MLXCEL_MMA_DEEP_RING=$c NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-d$c" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|decode_attention|error" | head -4
  gzip -f "$R"/insitu-d$c/ncu-e2e/*.csv 2> /dev/null
done
python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-d0/ncu-e2e/*.csv.gz "$R"/insitu-d1/ncu-e2e/*.csv.gz --grep decode_attention 2>&1 | head -8
e2e_setup "$BUDGET" 90
export TOKENS=128
timed 40 ab-deep turbo4 32768 MLXCEL_STEP_AB=MLXCEL_MMA_DEEP_RING
timed 50 ab-deep turbo4 131072 MLXCEL_STEP_AB=MLXCEL_MMA_DEEP_RING
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
