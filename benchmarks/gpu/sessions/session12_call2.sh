#!/usr/bin/env bash
# Next session's second device call (H200, ~5 min; timeout_s 600), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh b779b93
# (b779b93: the last commit that read flags from the environment at every use):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session12_call2.sh
# The kept flags' and borrowed template names' host saving (written after session 11's
# last device call; expected -0.1 to -0.2 ms of host time per step at 4K-32K): build profile at 4K, turbo4 and fp16, this
# build against b779b93, three interleaved rounds. Then the issue table as medians with
# benchmarks/gpu/sessions/session11_call2.sh (CTXS="4096 32768", then CTXS=131072 WARM=0).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s12c2
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-400}
export FILL=random-kv
RUN_TIMEOUT=80
# JIT warm-up of both builds.
for bin in .devcarry/bin/mlxcel .devcarry/ab/mlxcel; do TOKENS=8 BIN=$bin timed 60 warm turbo4 1024 > /dev/null; done
for round in 1 2 3; do
  for kv in turbo4 fp16; do
    timed 25 "kept$round" "$kv" "${CTX:-4096}"
    BIN=.devcarry/ab/mlxcel timed 25 "peruse$round" "$kv" "${CTX:-4096}"
  done
done
echo "done at t=${SECONDS}s"
