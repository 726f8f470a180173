#!/usr/bin/env bash
# Session 63, an H200 attempt with little device time left: on an H200, the 128K row only
# (fp16 and turbo4 first, then turbo4-asym and int8 as $BUDGET allows; random-kv, device clock,
# 64 tokens), with ADR 0028's defaults. Prediction: turbo4 ~2.01-2.02x fp16 (session 57: 1.98x
# with the first 2 + last 2 boundary layers). On any other card it stops at once.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=200 bash benchmarks/gpu/sessions/session63_h200_128k.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $GPU; binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
[[ "$GPU" == *H200* ]] || exit 0
call_dir s63h200
e2e_setup "${BUDGET:-200}" 90
for kv in fp16 turbo4 turbo4-asym int8; do timed 35 r1 "$kv" 131072; done
finish_call
