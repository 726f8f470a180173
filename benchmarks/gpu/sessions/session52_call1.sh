#!/usr/bin/env bash
# Session 52 (or the next device session), first call (H200, ~9-10 min; the last test is cut if time runs out): the parity tests that
# session 51's calls did not reach or could not see, with session 51's defaults on
# (LAZY_RESCALE, MASK_LAST, VSEL, FCOPY1, VZERO, WIDE_PLAIN; ADR 0023) as the baseline.
# - MMA_LENS now holds 4097 tokens in one split (~21 tiles, 10 pairs per warp). At the default
#   splits no warp ran a second pair, so session 51's LAZY_RESCALE and MASK_LAST cases were
#   all bit-identical to the default: blind to what those flags change.
# - Each test is limited to the modes whose kernel its flag changes (MLXCEL_PARITY_MODES) and,
#   for the bit-identity test, to the shipped flags (MLXCEL_PARITY_FLAGS), so that one call
#   holds them all (NVRTC compiles each case on the device, ~1-3 s).
# If a case fails, turn its flag back off (flags.rs) and say so in the results.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session52_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s52c1
# A test starts only if its time limit ends before ~570 s, so the results come back.
BUDGET=570
(export MLXCEL_PARITY_MODES=turbo4; budget_test gpu_fused_decode 130 "worst|cases|panicked" lazy_rescale)
(export MLXCEL_PARITY_MODES=turbo4; budget_test gpu_fused_decode 70 "worst|cases|panicked" last_tile_masks)
(export MLXCEL_PARITY_MODES=fp16+int8; budget_test gpu_fused_decode 70 "worst|cases|panicked" wide_plain_ctas)
(export MLXCEL_PARITY_FLAGS=MLXCEL_MMA_VSEL,MLXCEL_MMA_FCOPY1,MLXCEL_MMA_VZERO
 budget_test gpu_fused_decode 110 "bit-identity checks|panicked" refill_softmax_and_combine_trims)
# The attention append with the two flags, now with a ~40K prefill (~13 tiles per warp), and the
# shipped bit-identical trims there.
budget_test gpu_attention_append 130 "steps|panicked" lazy_rescale_and_last_tile_masks
(export MLXCEL_PARITY_FLAGS=MLXCEL_MMA_VSEL,MLXCEL_MMA_FCOPY1,MLXCEL_MMA_VZERO
 budget_test gpu_attention_append 150 "steps|panicked" refill_softmax_and_combine_trims)
# What time is left: the same two flags at D 64 in the modes whose kernels pair there.
(export MLXCEL_PARITY_MODES=turbo4-asym,int8; budget_test gpu_fused_decode 120 "worst|cases|panicked" lazy_rescale)
finish_call
