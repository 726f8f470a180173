#!/usr/bin/env bash
# After session 56 (~8 min, H100 or H200; run after session57_call1.sh): MLXCEL_MMA_W16, 16-warp
# CTAs for symmetric turbo3 / turbo2 at head_dim 128 (with the 2-bit field table), written in
# session 56 from its ncu (latency-bound: ~1.1 eligible warps per scheduler of 3).
# - Parity with it on (turbo3, turbo2; D 64 unaffected, D 128 16 warps).
# - `bench attention` at 32K and 128K: W16 0, 1, and 1 without paired tiles (MLXCEL_MMA_PAIR=0:
#   NVRTC fits the unpaired build in 120-125 registers without spills; the paired one spills
#   4-20 bytes at the 128 cap).
# - End to end at 128K, turbo3 / turbo2, W16 0 / 1, fp16 beside them.
# Prediction: 16 warps hide more latency; turbo2's 128K launch (47.0 us on an H100, DRAM 59%)
# toward ~40 us (DRAM ~70%, turbo3's level), turbo3's less (already 71% DRAM). Turn it on
# (ADR) if within parity and faster end to end at 128K and not slower at 32K.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session57_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s57c2
e2e_setup "${BUDGET:-500}" 90
(export MLXCEL_PARITY_MODES=turbo3,turbo2; budget_test gpu_fused_decode 170 "fused decode|worst|differ|panicked" sixteen_warp_ctas)
BENCH_MODES=turbo3,turbo2 CTXS=32768,131072 bench_ab MLXCEL_MMA_W16 w16
(export MLXCEL_MMA_W16=1 MLXCEL_MMA_PAIR=0; BENCH_MODES=turbo3,turbo2 CTXS=32768,131072 bench_ab MLXCEL_MMA_PAIR w16pair)
timed 40 r1 fp16 131072
for kv in turbo2 turbo3; do
  timed 40 r1 "$kv" 131072
  timed 40 r1w16 "$kv" 131072 MLXCEL_MMA_W16=1
done
finish_call
