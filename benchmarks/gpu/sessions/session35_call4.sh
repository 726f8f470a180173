#!/usr/bin/env bash
# Session 35's fourth device call (H200, ~4 min; timeout_s 330). Two builds, both with
# `--features host-profile`: .devcarry/ab/mlxcel = call 3's (A), .devcarry/bin/mlxcel = A plus
# the host allocation cuts (B: launch vectors sized once, `Array::dim` without building the
# shape, the bridge's vectors reserved), gzip'd:
#   for b in ab bin; do gunzip -f .devcarry/$b/mlxcel.gz; chmod +x .devcarry/$b/mlxcel; done &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session35_call4.sh
# Call 3's host sampler put ~37% of the attention call's build samples (a third of the decode
# loop's host time) in malloc / realloc / free. Prediction: B's build parts -0.05 to -0.15 ms
# per turbo4 step at 32K (attention the most); MLX's submit unchanged. Three interleaved rounds
# of A and B with the build profile, then one sampled run of B.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s35c4
BUDGET=${BUDGET:-290}
e2e_setup "$BUDGET" 90
export TOKENS=128
for round in $(seq 1 "${ROUNDS:-3}"); do
  if ((round % 2)); then order="ab bin"; else order="bin ab"; fi
  for b in $order; do
    BIN=.devcarry/$b/mlxcel timed 35 "r$round-$b" turbo4 32768 MLXCEL_BUILD_PROFILE=1
  done
done
TOKENS=256 timed 40 hpB turbo4 32768 MLXCEL_HOST_PROFILE="$R/hpB-turbo4.stacks"
gzip -f "$R"/*.stacks 2> /dev/null
echo "done at t=${SECONDS}s"
