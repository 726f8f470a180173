#!/usr/bin/env bash
# Session 12, device call 4 (H200, ~5 min), same staging as call 3:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session12_call4.sh
# Call 3: fp16 at 32K submitted 0.3 ms per step slower with this build than with b779b93 in
# 3 of 3 pairs, always run right after b779b93's turbo4 run (turbo4's pairs were mixed).
# Here the order is swapped (b779b93 first) and only fp16 runs, three rounds; then a third
# round at 128K (call 3 ran two).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s12c4
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-290} FILL=random-kv
RUN_TIMEOUT=80
for bin in .devcarry/ab/mlxcel .devcarry/bin/mlxcel; do TOKENS=8 BIN=$bin timed 60 warm fp16 1024 > /dev/null; done
for round in 1 2 3; do
  BIN=.devcarry/ab/mlxcel timed 25 "peruse$round" fp16 32768
  timed 25 "kept$round" fp16 32768
done
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
modes=(fp16 turbo4 int8 turbo4-asym)
for i in 0 1 2 3; do timed 35 r3 "${modes[$(((i + 3) % 4))]}" 131072; done
echo "done at t=${SECONDS}s"
