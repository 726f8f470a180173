#!/usr/bin/env bash
# Session 71: the end-to-end table (session61_call1.sh's H200 rounds: fp16, turbo4,
# turbo4-asym, int8 at 128K, 32K and 4K, then a second round at 128K and 32K) on whatever card
# comes, with MLXCEL_MERGE_SIGNS_FIRST on (89017c1's default; set here so d12bcac's staged
# binaries, whose only difference is that default, give 89017c1's behaviour).
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=540 bash benchmarks/gpu/sessions/session71_table.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s71table
e2e_setup "${BUDGET:-540}" 90
export MLXCEL_MERGE_SIGNS_FIRST=1
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
for kv in fp16 turbo4 turbo4-asym int8; do timed 40 r1 "$kv" 131072; done
for kv in turbo4 fp16 int8 turbo4-asym; do TOKENS=128 timed 30 r1 "$kv" 32768; done
for kv in int8 turbo4-asym fp16 turbo4; do timed 16 r1 "$kv" 4096; done
for kv in turbo4 fp16 int8 turbo4-asym; do timed 40 r2 "$kv" 131072; done
for kv in turbo4-asym int8 fp16 turbo4; do TOKENS=128 timed 30 r2 "$kv" 32768; done
finish_call
