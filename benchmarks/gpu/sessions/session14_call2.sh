#!/usr/bin/env bash
# Next session's second device call (H200, ~8 min; timeout_s 600), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session14_call2.sh
# Written after session 13's last device call (NVRTC-checked, CPU-tested; never run on a GPU):
# the turbo4 / turbo4-asym / int8 K+V cache append folded into the qkv GEMV (MLXCEL_QKV_ENCODE,
# off by default). Prediction: -28 launches and MLX nodes per step; the 7.3-us append launch per layer
# replaced by a ~2-us tail on the qkv GEMV: ~-0.15 ms of device time per step at every
# context, and ~-0.15 ms of host.
# 1. gpu_qkv_encode: parts and cache contents bit-identical to the projection + the separate
#    in-place append over three steps (turbo4, turbo4-asym, int8; head_dim 128 and 64, both
#    RoPE layouts);
# 2. greedy tokens with the fold off / on (turbo4, turbo4-asym, int8 at 1K: must match);
# 3. three interleaved rounds of the three modes at 32K, then of turbo4 at 4K, fold off / on,
#    with the build profile (ops per step should fall by 28).
# If all hold: default on (flags.rs, docs/usage.md), ADR 0011 addendum.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX_BIG=512 CTX_SMALL=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s14c2
timeout 150 .devcarry/bin/tests/gpu_qkv_encode --test-threads=1 --nocapture > "$R/test-qkv-encode.txt" 2>&1
echo "qkv encode test rc=$? $(grep -E 'test result|panicked|qkv encode' "$R/test-qkv-encode.txt" | tr '\n' ' ' | cut -c1-600)"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-520}
for kv in turbo4 turbo4-asym int8; do tokens_ab MLXCEL_QKV_ENCODE "$kv" enc; done
export FILL=random-kv
RUN_TIMEOUT=80
FLAG_MODES="turbo4 turbo4-asym int8" flag_rounds MLXCEL_QKV_ENCODE 20 "${CTX_BIG:-32768}"
FLAG_MODES=turbo4 flag_rounds MLXCEL_QKV_ENCODE 20 "${CTX_SMALL:-4096}"
for c in ${CTX_BIG:-32768} ${CTX_SMALL:-4096}; do
  for kv in turbo4 turbo4-asym int8; do
    for t in on off; do
      echo "$kv $t $c ops per step: $(grep -h 'ops per step' "$R"/$t?-$kv-$c.err 2>/dev/null | awk '{print $4}' | tr '\n' ' ')"
    done
  done
done
echo "done at t=${SECONDS}s"
