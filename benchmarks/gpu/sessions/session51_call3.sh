#!/usr/bin/env bash
# Session 51, third device call (H200, <= 10 min): what call 1 measured faster, shipped together.
# - MLXCEL_MMA_VSEL's bit identity (call 2's test ran out of time before it; the staged test
#   binary takes MLXCEL_PARITY_FLAGS to check only it).
# - The end-to-end table with the pair-loop trims (LAZY_RESCALE, MASK_LAST, VSEL,
#   FCOPY1, VZERO) and WIDE_PLAIN set for every mode: 128K, 32K (128 tokens), 4K, then a second
#   128K round while time is left.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session51_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s51c3
(export MLXCEL_PARITY_FLAGS=MLXCEL_MMA_VSEL; gpu_test gpu_fused_decode 75 "bit-identity checks" refill_softmax_and_combine_trims)
for f in LAZY_RESCALE MASK_LAST VSEL FCOPY1 VZERO WIDE_PLAIN; do export "MLXCEL_MMA_$f=1"; done
e2e_setup "${BUDGET:-565}" 90
MODES=(fp16 turbo4 turbo4-asym int8)
config_rounds 131072 40 "1" "${MODES[@]}"
TOKENS=128 config_rounds 32768 30 "1" "${MODES[@]}"
config_rounds 4096 16 "1" "${MODES[@]}"
config_rounds 131072 40 "2" "${MODES[@]}"
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
finish_call
