#!/usr/bin/env bash
# Session 22's second device call (H200, ~8 min; timeout_s 600), on session22_call1.sh's staging
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session22_call2.sh
# 1. ring:8:3 (session 21's new default) against ring:8:4 end to end, interleaved, device clock:
#    turbo4 and fp16 at 32K, two rounds; turbo4 at 128K, two rounds. Prediction from session
#    21's in-situ medians: -0.045 ms of device time per step in every mode.
# 2. one round at 4K of the four modes with the defaults (the table's short context);
# 3. while time is left, in situ at 32K (turbo4): ring:8:3 against ring:8:2 (from 6 stages
#    down to 3 the qkv + append kernel got faster at every step; NOTES, next lever 1a).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 SHORT=256 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s22c2
e2e_setup 560 80
on="MLXCEL_QMV_SCHEDULE=ring:8:3" off="MLXCEL_QMV_SCHEDULE=ring:8:4"
FLAG_MODES="turbo4 fp16" FLAG_ROUNDS=2 env_rounds 22 "$on" "$off" "${CTX:-32768}"
FLAG_MODES=turbo4 FLAG_ROUNDS=2 env_rounds 34 "$on" "$off" "${LONG:-131072}"
for kv in fp16 turbo4 turbo4-asym int8; do timed 16 r1 "$kv" "${SHORT:-4096}"; done
insitu_schedules ring:8:3 ring:8:2
finish_call
