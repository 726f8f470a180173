#!/usr/bin/env bash
# Session 43, call 3 (H200, ~9 min; timeout_s 590), after benchmarks/gpu/stage.sh (the mlxcel
# binary and the gpu_quantized_gemv test binary only, stripped and xz'd):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session43_call3.sh
# Call 2 turned MLXCEL_QMV_OWN_CHUNKS on (turbo4 step -0.05 ms at 32K and 128K). With it, the LM
# head's ncu source counters put 66% of its warp samples in the per-CTA prologue (x, its norm,
# the tables, POST's x sums) of its 8016 CTAs. MLXCEL_QMV_PAIR_BLOCKS (off) runs two 16-row
# blocks per CTA for launches of >= 32768 rows. Prediction: head 90 -> 75-82 us in situ, the
# turbo4 32K step -0.01 to -0.015 ms.
# Here:
# - its bit-identity test in the background beside the ncu run;
# - in situ with it (turbo4 32K; call 2's in-situ head with OWN_CHUNKS: 90.18 us);
# - MLXCEL_STEP_AB inside one turbo4 32K run;
# - then, with the test done, the table with the shipped defaults (OWN_CHUNKS on,
#   PAIR_BLOCKS off): one round each of fp16 / turbo4 / turbo4-asym / int8 at 32K, 128K and 4K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s43c3
bg_test pair gpu_quantized_gemv 240 "pair blocks" pair_blocks
insitu_env pair MLXCEL_QMV_PAIR_BLOCKS=1
step_ab ab32k MLXCEL_QMV_PAIR_BLOCKS turbo4 32768
bg_wait
BUDGET=${BUDGET:-550}
e2e_setup "$BUDGET" 90
TOKENS=128 config_rounds 32768 30 "1" fp16 turbo4 turbo4-asym int8
config_rounds 131072 40 "1" fp16 turbo4 turbo4-asym int8
config_rounds 4096 16 "1" fp16 turbo4 turbo4-asym int8
finish_call
