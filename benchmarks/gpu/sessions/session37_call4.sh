#!/usr/bin/env bash
# Session 37's fourth device call (H200, ~6 min; timeout_s 450), after benchmarks/gpu/stage.sh
# (mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session37_call4.sh
# Call 3 found gate/up's launch level from 896 to 1024 CTAs (26.5 -> 26.7 us) and 4 us faster at
# 768: wave quantization. ring:8:3 fits 4 CTAs per SM (registers): 528 per wave, so gate/up's
# 896 CTAs run 1.7 waves. With 4 warps per CTA, ring:4:3 fits 7 per SM (shared memory): 924,
# one wave; ring:4:2 fits 8 (1056). Session 21's ring:4:4 (6 per SM: 792, 1.13 waves) was
# slower in situ by 3.6 us. Prediction: gate/up under ring:4:3 / ring:4:2 in situ 27 -> 23-24
# us; down and o_proj (256 CTAs) slower with 4 warps. Each schedule: bench gemv, then ncu in
# situ (turbo4, 32K, two steps) and the device clock end to end (turbo4, 32K, 64 tokens).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s37c4
BUDGET=${BUDGET:-430}
timeout 90 .devcarry/bin/mlxcel bench gemv --schedules ring:8:3,ring:4:3,ring:4:2 --norm --iters 200 \
  --out "$R/gemv" > /dev/null 2> "$R/gemv.err"
echo "bench rc=$? t=${SECONDS}s"; grep -E "gate/up|down|o_proj|qkv" "$R/gemv/gemv.md" | grep ring
export TOKENS=64 FILL=random-kv RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
for sch in ring:8:3 ring:4:3 ring:4:2; do
  if ((SECONDS + 90 > BUDGET)); then echo "skipped $sch (t=${SECONDS}s)"; continue; fi
  MLXCEL_QMV_SCHEDULE=$sch NCU_CACHE=none NCU_OUT="$R/insitu-${sch//:/_}" timeout 100 \
    bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | grep -E "kernels|qgemv" | head -5
  gzip -f "$R"/insitu-"${sch//:/_}"/ncu-e2e/*.csv 2> /dev/null
  timed 40 "e2e-${sch//:/_}" turbo4 32768 MLXCEL_QMV_SCHEDULE=$sch
done
echo "done at t=${SECONDS}s"
