#!/usr/bin/env bash
# Session 15's fourth device call (H200; timeout_s 600), after benchmarks/gpu/stage.sh with the
# new defaults (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session15_call4.sh
# The shipped defaults after session 15's first three calls: MLXCEL_MMA_HOIST and
# MLXCEL_INT8R_FUSED on, turbo2/3/4 with int8r boundary layers on CUDA (ADR 0012 addendum).
# No MLXCEL_* variable is set here except the device clock: this is what a user of that build got.
# The int8r-ends default was reverted afterwards (ADR 0012 addendum); to reproduce these turbo4
# rows now, run with MLXCEL_KV_BOUNDARY_TYPE=int8r (turbo4-asym and int8r are unaffected).
# fp16 / turbo4 / turbo4-asym / int8r (whole cache), two interleaved rounds at 128K and 32K,
# one at 4K; the first run's log must name turbo4's boundary storage (int8r).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" SHORT=128 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c4
e2e_setup 570 80
table_rounds fp16 turbo4 turbo4-asym int8r
finish_call
