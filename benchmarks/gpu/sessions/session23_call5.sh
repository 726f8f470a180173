#!/usr/bin/env bash
# Session 23, call 5 (H200, ~3 min; timeout_s 240), the binary of call 4 (fp16 and fp16+int8
# appends in place), carry .devcarry/mlx-cuda and .devcarry/bin/mlxcel:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session23_call5.sh
# One interleaved round of fp16, turbo4-asym and turbo4 at 128K and at 32K (128 tokens): call 4
# ran out of time before turbo4-asym, whose boundary layers now append in place too.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s23c5
e2e_setup 225 60
TOKENS=128
config_rounds "${LONG:-131072}" 36 1 fp16 turbo4-asym turbo4
config_rounds "${CTX:-32768}" 20 1 fp16 turbo4-asym turbo4
finish_call
