#!/usr/bin/env bash
# Session 52, fourth call (H200, what the session's last ~290 device-seconds allow: ~2.5 min of
# runs): one round of the boundary storage at 128K (session53_call1.sh holds the full two-round
# comparison with fp16 and the ncu profile): turbo4 with the default fp16+int8 ends, fp16+turbo4
# ends and int8r ends, random-kv caches, 64 tokens, the device clock. Prediction (session 51's
# defaults): fp16+turbo4 -0.06 ms per step, int8r -0.07.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session52_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s52c4
e2e_setup "${BUDGET:-165}" 60
ends_round 1 131072 40 "turbo4 fp16+int8" "turbo4 fp16+turbo4" "turbo4 int8r"
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
