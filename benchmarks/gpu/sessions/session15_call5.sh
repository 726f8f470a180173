#!/usr/bin/env bash
# Session 15's fifth device call (H200, the ~5 min left; timeout_s 360), same staging as call 4:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session15_call5.sh
# More rounds of the shipped defaults where call 4 had one or where host noise was largest:
# 4K (fp16 / turbo4 / turbo4-asym / int8r, rounds 2-3) and 32K (fp16 / turbo4, rounds 3-5).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c5
e2e_setup 270 60
configs=(fp16 turbo4 turbo4-asym int8r)
for round in 2 3; do
  for ((i = 0; i < ${#configs[@]}; i++)); do
    timed 16 "r$round" "${configs[$(((i + round) % ${#configs[@]}))]}" "${SHORT:-4096}"
  done
done
for round in 3 4 5; do
  if ((round % 2)); then timed 22 "r$round" fp16 "${CTX:-32768}"; timed 22 "r$round" turbo4 "${CTX:-32768}"
  else timed 22 "r$round" turbo4 "${CTX:-32768}"; timed 22 "r$round" fp16 "${CTX:-32768}"; fi
done
finish_call
