#!/usr/bin/env bash
# Session 35's third device call (H200, ~4 min; timeout_s 300). Carry .devcarry with the
# mlxcel binary built with `--features host-profile`, not stripped (gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session35_call3.sh
# Where a decode step's host time goes (calls 1-2: turbo4 at 32K took 2.6-3.5 ms of host per
# step against 2.45 ms of device time, so tok/s followed the host): the host sampler
# (`MLXCEL_HOST_PROFILE`, 997 Hz, from the third token on) on turbo4 and fp16 at 32K, 256 tokens,
# with the build profile off (its spans would be sampled too). Then the collapsed stacks'
# summary (host_profile_top.py) under the decode loop.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s35c3
BUDGET=${BUDGET:-270}
e2e_setup "$BUDGET" 90
export TOKENS=256
n=0
for kv in turbo4 fp16 turbo4; do
  tag=hp$((++n))
  timed 45 "$tag" "$kv" 32768 MLXCEL_HOST_PROFILE="$R/$tag-$kv.stacks"
  gzip -kf "$R/$tag-$kv.stacks" 2> /dev/null
done
for f in "$R"/*.stacks; do
  echo "== $(basename "$f")"
  python3 benchmarks/gpu/host_profile_top.py "$f" --under mlxcel_models::generate --top 45
  rm -f "$f"
done > "$R/host-profile-summary.txt"
head -120 "$R/host-profile-summary.txt"
echo "done at t=${SECONDS}s"
