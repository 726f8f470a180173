#!/usr/bin/env bash
# Session 47, fifth device call (H200, ~4.5 min): MLXCEL_MMA_QFIRST_ASYM (turbo4-asym's kernel
# alone takes the early ring copies that MLXCEL_MMA_QFIRST gives every kernel; call 4 measured
# the latter at 4.549 -> 4.519 ms per 128K turbo4-asym step and 2.382 -> 2.362 at 32K). Its step
# A/B at 128K and 32K (prediction: about call 4's -0.02 to -0.03 ms, the boundary layers' kernels
# unchanged now), its bit identity (turbo4-asym, D 64 / 128, GQA 1-8, lengths 1-4097), and the
# attention append's 60 steps against the separate append with it on (the appending CTA holds
# its early copies: now two tiles in turbo4-asym's 3-stage ring).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call5.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c5
step_ab ab-qfasym MLXCEL_MMA_QFIRST_ASYM turbo4-asym 131072
step_ab ab-qfasym MLXCEL_MMA_QFIRST_ASYM turbo4-asym 32768
gpu_test gpu_fused_decode 150 "checks" asym_ring_copies
gpu_test gpu_attention_append 150 "steps" attention_append_writes
finish_call
