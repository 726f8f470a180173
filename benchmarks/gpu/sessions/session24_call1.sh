#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session24_call1.sh
# Session 23 made fp16 copy-free (6.2 ms per 128K step); turbo4 is 1.61x of it at 128K and
# 1.24-1.29x at 32K, and its GEMVs (61% of copy) are the step's gap (NOTES, "Next lever (after
# session 23)", item 1). This call:
# 1. the GEMV tests that compare schedules (plain, + residual, gate/up + SiLU), now with
#    ring:8:2: bit-identical to the batched schedule, like ring:8:3?
# 2. in situ (ncu, turbo4 at 32K, two decode steps) under ring:8:3 (the default), ring:8:2 and
#    ring:8:4: each GEMV kernel's median time per schedule (insitu_medians.py);
# 3. one interleaved round of fp16 and turbo4 at 128K and 32K (128 tokens): is the session-23
#    table stable on another machine?
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s24c1
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_quantized_gemv 240 "bit-identical to batched: false|ring:8:2" \
  gemv_matches_a_float64_reference_or_is_not_used
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_quantized_gemv 120 "bit-identical to batched: false|ring:8:2" \
  fused_gate_up_silu_matches_a_float64_reference_or_is_not_used
e2e_setup 540 60
insitu_schedules ring:8:3 ring:16:3 ring:8:2 ring:8:4
for f in "$R"/insitu-*/*.csv; do [ -f "$f" ] && echo "$f"; done
TOKENS=128
config_rounds "${LONG:-131072}" 36 1 fp16 turbo4
config_rounds "${CTX:-32768}" 20 1 fp16 turbo4
finish_call
