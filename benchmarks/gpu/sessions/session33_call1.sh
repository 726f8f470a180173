#!/usr/bin/env bash
# Session 33's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call1.sh
# MLXCEL_QKV_CLUSTER (new, off): the qkv GEMV + folded K+V append in thread-block clusters of
# one head's CTAs, the head gathered through distributed shared memory instead of a
# device-scope ticket and an L2 read-back. Prediction: the qkv + append launch 11.36 -> ~10.2
# us in situ at 32K (-1.0 to -1.5 of its 2.85-us tail), -0.03 to -0.04 ms of device time per
# turbo4 step at 32K and 128K.
# 1. gpu_qkv_encode: 72 steps (6 cases x ETAIL off/on x CLUSTER off/on) bit-identical to the
#    projection + the separate append;
# 2. in situ (ncu, two decode steps, L2 kept) at 32K, turbo4, cluster off / on;
# 3. in-process A/Bs (MLXCEL_STEP_AB) at 32K for turbo4, turbo4-asym and int8, and turbo4 at 128K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c1
BUDGET=${BUDGET:-520}
gpu_test gpu_qkv_encode 200 "qkv encode:|differs"
for c in 0 1; do
  echo "== in situ, cluster $c"
  MLXCEL_QKV_CLUSTER=$c NCU_CACHE=none FILL=random-kv NCU_OUT="$R/insitu-c$c" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|decode_attention|qgemv4_qkv_enc|error" | head -5
  gzip -f "$R"/insitu-c$c/ncu-e2e/*.csv 2> /dev/null
done
python3 benchmarks/gpu/insitu_medians.py "$R"/insitu-c0/ncu-e2e/*.csv.gz "$R"/insitu-c1/ncu-e2e/*.csv.gz --grep qkv 2>&1 | head -12
e2e_setup "$BUDGET" 90
export TOKENS=128
for kv in turbo4 turbo4-asym int8; do timed 40 ab-cluster "$kv" 32768 MLXCEL_STEP_AB=MLXCEL_QKV_CLUSTER; done
timed 50 ab-cluster turbo4 131072 MLXCEL_STEP_AB=MLXCEL_QKV_CLUSTER
for f in "$R"/ab-*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
