#!/usr/bin/env bash
# Session 22's third device call (H200, ~7 min; timeout_s 600), on session22_call2.sh's staging
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && [EXTRA_ENV="VAR=VALUE ..."] bash benchmarks/gpu/sessions/session22_call3.sh
# The issue's table with the session's defaults (ring:8:3 GEMVs, QFIRST1 off in turbo4-asym's
# kernel; EXTRA_ENV adds what call 2 decided, e.g. MLXCEL_MMA_ONE_WAVE=1 before it is the
# built-in default): fp16, turbo4, turbo4-asym and int8, one interleaved round at 128K, two at
# 32K, one at 4K, device clock.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTXS="1024 512" SHORT=256 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s22c3
e2e_setup 560 80
RUN_ENV="$RUN_ENV ${EXTRA_ENV:-}"
echo "RUN_ENV: $RUN_ENV"
read -r long short32 <<< "${CTXS:-131072 32768}"
config_rounds "$long" 36 "1" fp16 turbo4 turbo4-asym int8
config_rounds "$short32" 22 "1 2" fp16 turbo4 turbo4-asym int8
for kv in fp16 turbo4 turbo4-asym int8; do timed 16 r1 "$kv" "${SHORT:-4096}"; done
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
