#!/usr/bin/env bash
# Session 67: more rounds of the issue's end-to-end table with ADR 0028's defaults and
# MLXCEL_FOLD_32 on (binaries fb995b7) on whichever card came, so every cell has n >= 3, plus
# turbo3/turbo2 at 128K and turbo4-asym at 32K without boundary layers (tag b0).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session67_rounds.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s67rounds
e2e_setup "${BUDGET:-420}" 90
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
for round in 2 3 4; do
  for kv in fp16 turbo4 turbo4-asym int8; do TOKENS=128 timed 30 "r$round" "$kv" 32768; done
  for kv in turbo4 int8 fp16 turbo4-asym; do timed 16 "r$round" "$kv" 4096; done
done
for kv in turbo3 turbo2 fp16 turbo4 int8 turbo4-asym; do timed 40 r3 "$kv" 131072; done
for round in 1 2; do TOKENS=128 timed 30 "r${round}b0" turbo4-asym 32768 MLXCEL_KV_BOUNDARY_LAYERS=0; done
grep -h "boundary layers (" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
