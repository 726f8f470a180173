#!/usr/bin/env bash
# After session 57 (H200 wanted, ~9 min): the issue's end-to-end table with session 57's defaults
# (turbo4's boundary layers fp16+turbo4, ADR 0027; the 2-bit field table on; W16 retired) for
# README's "Where the fused decode stands" (session 51's table has fp16+int8 ends): 128K, 32K
# (128 tokens), 4K, then a second 128K round while time is left; turbo2 / turbo3 beside them at
# 128K once (their H200 figures from session 57's call 2 were one run each).
# Prediction (H200): turbo4 128K ~2.95 ms, 1.97-1.98x; the others as in session 51.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session58_call1.sh
# Then, on an H200, `session57_call4.sh` (turbo2's 128K launch on the H200: ncu with the table 0/1).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s58c1
e2e_setup "${BUDGET:-565}" 90
MODES=(fp16 turbo4 turbo4-asym int8)
config_rounds 131072 40 "1" "${MODES[@]}" turbo2 turbo3
TOKENS=128 config_rounds 32768 30 "1" "${MODES[@]}"
config_rounds 4096 16 "1" "${MODES[@]}"
config_rounds 131072 40 "2" "${MODES[@]}"
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
