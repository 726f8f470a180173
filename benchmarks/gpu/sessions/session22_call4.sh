#!/usr/bin/env bash
# Session 22's fourth device call (H200, ~3 min; timeout_s 280), on session22_call2.sh's staging
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session22_call4.sh
# fp16's step at 128K is bimodal: call 3's run spent most steps at 6.2 ms of device span and a
# few at 8-12 ms, session 21's call 3 most at 9-10 ms (turbo4 3.8 / 4.1 ms alike, +8%). Two
# interleaved rounds of fp16 and turbo4 at 128K with 128 decode tokens (more steps to see the
# switch), device clock and the per-step timeline (`decode_timeline` in the JSON).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s22c4
e2e_setup 250 60
TOKENS=128
config_rounds "${LONG:-131072}" 40 "1 2" fp16 turbo4
finish_call
