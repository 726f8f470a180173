#!/usr/bin/env bash
# Session 14's third device call (H200, ~9.5 min; timeout_s 600): the issue's table with this
# build (MLXCEL_QKV_ENCODE on), boundary layers fp16 and int8 named explicitly
# (MLXCEL_KV_BOUNDARY_TYPE, so the table does not depend on the default):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session14_call4.sh
# Two rounds; each round visits 128K, 32K and 4K with the configs in a rotated order:
#   128K: fp16, turbo4, turbo4 int8-ends, turbo4-asym, turbo4-asym int8-ends, int8
#   32K, 4K: fp16, turbo4, turbo4 int8-ends, turbo4-asym, int8
# `python3 benchmarks/repeats_summary.py DIR` gives the medians (tags r<round>, r<round>i8).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256 128"
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s14c4
e2e_setup 565 80
for round in 1 2; do
  for ctx in ${CTXS:-131072 32768 4096}; do
    configs=("fp16 fp16" "turbo4 fp16" "turbo4 int8" "turbo4-asym fp16" "int8 fp16")
    need=16
    if [ "$ctx" -ge 131072 ]; then configs+=("turbo4-asym int8"); need=24; fi
    ends_round "$round" "$ctx" "$need" "${configs[@]}"
  done
done
finish_call
