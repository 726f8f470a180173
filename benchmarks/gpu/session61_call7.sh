#!/usr/bin/env bash
# Session 61, an H200 attempt: on an H200 the end-to-end table (session61_call1.sh's
# H200 branch with BUDGET=450: 128K, 32K and 4K once, then turbo4 and fp16 at 128K again);
# on any other card it stops at once (session 61's H100 measurements are done).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session61_call7.sh
set -uo pipefail
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $GPU"
if [[ "$GPU" == *H200* ]]; then BUDGET=450 SKIP_PAIRED=1 exec bash benchmarks/gpu/session61_call1.sh; fi
