#!/usr/bin/env bash
# Session 61, an H200 attempt: on an H200 the end-to-end table (session61_call1.sh's
# H200 branch with BUDGET=450: 128K, 32K and 4K once, then turbo4 and fp16 at 128K again);
# on any other card it stops at once (session 61's H100 measurements are done).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session61_call7.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200 BUDGET="${BUDGET:-450}"
