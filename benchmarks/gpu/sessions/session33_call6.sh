#!/usr/bin/env bash
# Session 33's sixth device call (H200, ~3.5 min; timeout_s 280), after benchmarks/gpu/stage.sh
# (carry .devcarry with mlxcel, tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call6.sh
# MLXCEL_QKV_CLUSTER's tail without the fence: the head's values sent by st.async, completing
# on an mbarrier in rank 0 (NVRTC SASS: no MEMBAR.ALL.GPU left in the tail; the cluster
# barrier's release arrive had one). Prediction: -0.3 to -0.5 us per qkv + append launch,
# -0.01 ms per turbo4 step against the ticket beyond call 1's -0.017 to -0.045.
# 1. gpu_qkv_encode: 72 steps bit-identical (a lost st.async would hang rank 0: timeout);
# 2. in-process A/Bs of the flag (ticket against the cluster) at 32K, turbo4, twice.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c6
BUDGET=${BUDGET:-180}
gpu_test gpu_qkv_encode 150 "qkv encode:|differs"
e2e_setup "$BUDGET" 60
export TOKENS=128
for i in 1 2; do timed 40 "ab$i-cluster" turbo4 32768 MLXCEL_STEP_AB=MLXCEL_QKV_CLUSTER; done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
