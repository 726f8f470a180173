#!/usr/bin/env bash
# Session 61, first call (~8.5-9.5 min). What runs depends on the card that came:
# - H200 (the card issue 5 names; none came in session 60): the end-to-end table with
#   ADR 0028's defaults (turbo4 keeps its first 3 layers as boundary layers). Prediction: turbo4
#   at 128K ~2.01-2.02x fp16 (session 57: 1.98x with the first 2 + last 2; each layer of fp16
#   keys fewer ~-0.05 ms per 128K step at ~3.6 TB/s).
# - H100 (its table ran in session 60): turbo3 and turbo2 at 128K with the first 3 against the
#   first 2 + last 2 (tag b22; predicted ~-0.06 ms per step, as turbo4 measured), and
#   turbo4-asym at 32K with no boundary layers (tag b0: how much of the 1.3x goal the 4
#   fp16-value layers hold; predicted ~-0.05 ms of 2.92).
# Then, on either card, the paired-table GEMV test (its g >= k shape now checks 1 row on CUDA).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session61_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s61c1
e2e_setup "${BUDGET:-560}" 90
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $GPU; binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
B22=MLXCEL_KV_BOUNDARY_LAYERS=2
if [[ "$GPU" == *H200* ]]; then
  for kv in fp16 turbo4 turbo4-asym int8; do timed 40 r1 "$kv" 131072; done
  for kv in turbo4 fp16 int8 turbo4-asym; do TOKENS=128 timed 30 r1 "$kv" 32768; done
  for kv in int8 turbo4-asym fp16 turbo4; do timed 16 r1 "$kv" 4096; done
  for kv in turbo4 fp16 int8 turbo4-asym; do timed 40 r2 "$kv" 131072; done
else
  timed 40 r1 fp16 131072
  for kv in turbo3 turbo2; do
    timed 40 r1 "$kv" 131072
    timed 40 r1b22 "$kv" 131072 "$B22"
  done
  for kv in turbo4-asym fp16; do TOKENS=128 timed 30 r1 "$kv" 32768; done
  TOKENS=128 timed 30 r1b0 turbo4-asym 32768 MLXCEL_KV_BOUNDARY_LAYERS=0
  for kv in turbo2 turbo3 fp16; do timed 40 r2 "$kv" 131072; done
fi
grep -h "boundary layers (" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
[ -n "${SKIP_PAIRED:-}" ] || BUDGET=$((BUDGET + 60)) budget_test gpu_quantized_gemv 100 "bit-identity|strided|differ|panicked" paired_tables_give_the_same_bits_or_are_refused
finish_call
