#!/usr/bin/env bash
# Session 50, fourth device call (H200, ~9 min; written in session 48 as session49_call3.sh,
# not run there).
# 1. The attention append's remaining tests: the bit-identical trims (5 flags x 24 steps, with
#    session 49's MLXCEL_MMA_VSEL), and the append against the separate append under
#    MLXCEL_MMA_WIDE_PLAIN (QFIRST2's and LAZY / MASK_LAST's ran in call 3).
# 2. The boundary layers' storage for turbo4 at 128K (two interleaved rounds, as the budget
#    allows): fp16+int8 (the default), fp16+turbo4 (new in session 48: fp16 keys and turbo4
#    values, turbo4-asym's cache and kernel; 322 of 386 bytes per position and head), int8r
#    (opt-in, -0.074 ms in session 47), fp16 in the same call. Quality on the CPU (session 48,
#    turbo4 KLD against fp16+int8 ends: +6.3% SmolLM2, +1.8% Qwen2.5-Coder-0.5B, +2.2% 1.5B;
#    benchmarks/results/2026-12-04-kv-boundary-fp16-turbo4.md). Prediction:
#    fp16+turbo4 -0.06 to -0.08 ms per 128K step (4 launches x ~19 us at turbo4-asym's rate).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session50_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s50c4
gpu_test gpu_attention_append 150 "steps" refill_softmax_and_combine_trims
(export MLXCEL_MMA_WIDE_PLAIN=1; gpu_test gpu_attention_append 90 "panicked|ok" attention_append_writes_and_attends)
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
ends_round 1 131072 40 "turbo4 fp16+int8" "turbo4 fp16+turbo4" "turbo4 int8r" "fp16 fp16"
ends_round 2 131072 40 "turbo4 fp16+int8" "turbo4 fp16+turbo4" "fp16 fp16"
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
