#!/usr/bin/env bash
# Session 33's second device call (H200, ~4 min; timeout_s 400), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session33_call2.sh
# Call 1: MLXCEL_QKV_CLUSTER bit-identical (72 steps) but the qkv + append launch only 11.36 ->
# 11.28 us in situ at 32K: the ticket and the L2 read-back are not where its 2.85-us tail over
# the plain qkv GEMV goes. Here: ncu source counters of one qkv + append launch in situ (32K,
# turbo4, decode step 7), ticket and cluster builds, to see where the warps wait; then two more
# in-process A/Bs of the flag at 32K (call 1: device -0.017 ms, host +0.08 ms per step).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s33c2
BUDGET=${BUDGET:-330}
gen=(.devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 32768 --max-tokens 10 --ignore-eos
  --prefill-chunk 4096 --prompt-fill random-kv --kv turbo4)
MLXCEL_QKV_CLUSTER=0 source_profile src-ticket "qgemv4_qkv_enc" 196 "${gen[@]}"
MLXCEL_QKV_CLUSTER=1 source_profile src-cluster "qgemv4_qkv_enc" 196 "${gen[@]}"
e2e_setup "$BUDGET" 90
export TOKENS=128
for i in 1 2; do timed 40 "ab$i-cluster" turbo4 32768 MLXCEL_STEP_AB=MLXCEL_QKV_CLUSTER; done
for f in "$R"/ab*.err; do echo "$(basename "$f"):"; grep -h "step A/B" "$f"; done
echo "done at t=${SECONDS}s"
