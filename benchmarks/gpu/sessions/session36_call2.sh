#!/usr/bin/env bash
# Session 36's second device call (H200, ~9 min; timeout_s 590). Carry .devcarry with two
# unstripped, gzip'd builds of this commit: .devcarry/bin/mlxcel (`--features host-profile`,
# glibc malloc: G) and .devcarry/ab/mlxcel (`--features host-profile,jemalloc`: J):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/ab/mlxcel.gz && chmod +x .devcarry/bin/mlxcel .devcarry/ab/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session36_call2.sh
# Call 1 found the submit thread's worker 1.6-1.8x slower in MLX's async_eval than the loop's
# thread was (turbo4 32K: 2.17-2.38 ms against 1.31-1.40), so the thread lost on a machine
# whose one-thread host was already below the device time. Why: the host sampler on the worker
# (G, thread on) and on the one-thread loop (G, thread off); and whether the allocator is it
# (the worker frees the graph the loop's thread allocated: glibc's arena lock) with J.
# 32K turbo4, 128 tokens: G/J x thread off/on, two rounds, the order rotated; the sampler runs
# at the end; then fp16 with J, thread off/on.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s36c2
BUDGET=${BUDGET:-545}
e2e_setup "$BUDGET" 90
export TOKENS=128
for round in 1 2; do
  for cfg in "G 0" "J 1" "G 1" "J 0"; do
    set -- $cfg
    [ "$1" = J ] && b=.devcarry/ab/mlxcel || b=.devcarry/bin/mlxcel
    BIN=$b timed 40 "r$round-$1$2" turbo4 32768 MLXCEL_SUBMIT_THREAD=$2
  done
done
for cfg in "J 1" "J 0"; do
  set -- $cfg
  BIN=.devcarry/ab/mlxcel timed 40 "f-$1$2" fp16 32768 MLXCEL_SUBMIT_THREAD=$2
done
export TOKENS=256
for cfg in "G 1" "J 1" "G 0"; do
  set -- $cfg
  [ "$1" = J ] && b=.devcarry/ab/mlxcel || b=.devcarry/bin/mlxcel
  BIN=$b timed 45 "hp-$1$2" turbo4 32768 MLXCEL_SUBMIT_THREAD=$2 MLXCEL_HOST_PROFILE="$R/hp-$1$2.stacks"
  gzip -kf "$R/hp-$1$2.stacks" 2> /dev/null
done
for f in "$R"/*.stacks; do
  echo "== $(basename "$f") loop thread"
  python3 benchmarks/gpu/host_profile_top.py "$f" --under mlxcel_models::generate --top 30
  echo "== $(basename "$f") worker"
  python3 benchmarks/gpu/host_profile_top.py "$f" --thread mlxcel-submit --top 40
  rm -f "$f"
done > "$R/host-profile-summary.txt" 2>&1
echo "done at t=${SECONDS}s"
