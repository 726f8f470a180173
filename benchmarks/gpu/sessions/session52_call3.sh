#!/usr/bin/env bash
# Session 52, third call (H200, ~9 min; a test that would pass ~560 s is skipped): what calls 1-2
# did not reach, with session 51's defaults (ADR 0023) and MLXCEL_MMA_QSPLIT gone again (call 2:
# +0.053 ms per 128K step).
# - The attention append (the decode kernel that also encodes the step's K and V) with
#   LAZY_RESCALE and MASK_LAST on and off after a ~40K prefill (~13 tiles per warp); call 1 ran
#   its LAZY_RESCALE half (36 steps within parity) before the 130 s limit.
# - The append's bit-identical trims (VSEL, FCOPY1, VZERO) after the same prefill.
# - lazy_rescale for turbo4 with its new rising-keys assertion (the flag within 1.25x the
#   kernel's own error without it, plus 1e-4, and under 2e-3).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session52_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s52c3
BUDGET=560
budget_test gpu_attention_append 250 "steps|panicked" lazy_rescale_and_last_tile_masks
(export MLXCEL_PARITY_FLAGS=MLXCEL_MMA_VSEL,MLXCEL_MMA_FCOPY1,MLXCEL_MMA_VZERO
 budget_test gpu_attention_append 170 "steps|panicked" refill_softmax_and_combine_trims)
(export MLXCEL_PARITY_MODES=turbo4; budget_test gpu_fused_decode $((BUDGET - SECONDS)) "worst|cases|panicked" lazy_rescale)
finish_call
