#!/usr/bin/env bash
# Session 20's fourth device call (H200; timeout_s 600): the table with the shipped defaults
# after MLXCEL_QMV_EARLY went on (fp16, turbo4, turbo4-asym, int8; two rounds each at 128K and
# 32K, one at 4K; device clock).
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session20_call4.sh
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 1024" BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c4
e2e_setup 540 80
table_rounds fp16 turbo4 turbo4-asym int8
finish_call
