#!/usr/bin/env bash
# Session 30's third device call (H200, ~7 min; timeout_s 440), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session30_call3.sh
# Call 2: MLXCEL_FOLD_MERGE at 32K took turbo4 from 228.8 / 226.3 to 245.0 / 242.2 tok/s
# (host per step 4.46 / 4.50 -> 4.16 / 4.21 ms: one MLX node fewer per layer) while its device
# span grew 2.528 / 2.624 -> 2.636 / 2.638 ms; every run of that call was host-bound (host
# 4.2-4.5 ms per step, against 2.7 ms in session 29's fast runs). This call: fp16, turbo4 and
# turbo4 with the fold at 32K in two interleaved rounds with the build profile (where the host
# time goes), then turbo4 and turbo4 with the fold at 128K (the fold's device cost where the
# device bounds the step), and the machine's CPU layout (the host time is bimodal across runs).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s30c3
{ nproc; lscpu; numactl -H 2> /dev/null; nvidia-smi topo -m 2> /dev/null; } > "$R/cpu.txt" 2>&1
e2e_setup 420 120
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
for round in 1 2; do
  if [ "$round" = 1 ]; then
    timed 45 "r$round-base" fp16 32768
    timed 45 "r$round-base" turbo4 32768
    timed 45 "r$round-fold" turbo4 32768 MLXCEL_FOLD_MERGE=1
  else
    timed 45 "r$round-fold" turbo4 32768 MLXCEL_FOLD_MERGE=1
    timed 45 "r$round-base" turbo4 32768
    timed 45 "r$round-base" fp16 32768
  fi
done
timed 60 r1-base turbo4 131072
timed 60 r1-fold turbo4 131072 MLXCEL_FOLD_MERGE=1
echo "done at t=${SECONDS}s"
