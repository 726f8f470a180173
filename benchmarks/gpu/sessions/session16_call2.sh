#!/usr/bin/env bash
# Session 16's second device call (H200; timeout_s 600), after benchmarks/gpu/stage.sh with the
# new default boundary layers (fp16 keys, int8 values: ADR 0012 follow-up) (carry
# .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session16_call2.sh
# The end-to-end table with the shipped defaults: fp16 / turbo4 / turbo4-asym / int8, two
# interleaved rounds at 128K and 32K, one at 4K. No MLXCEL_* variable is set except the device
# clock: this is what a user of this build gets. The turbo runs' logs must name their boundary
# storage (fp16+int8).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" SHORT=128 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s16c2
e2e_setup 570 80
table_rounds fp16 turbo4 turbo4-asym int8
finish_call
