#!/usr/bin/env bash
# Session 25's third device call (H200, ~8 min; timeout_s 580), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session25_call3.sh
# MLXCEL_MMA_KT (written in session 25 after call 2's ncu: the 128K call issues on 66% of its
# cycles, DRAM at 63%): each tile's scores computed transposed, S^T = K q^T, the decoded K as
# the mma's A operand and q as B, P^T's B fragment by movmatrix. NVRTC SASS per tile (12-warp
# turbo4 D=128 GQA 4): 401 -> 364 instructions, 24 -> 16 mmas, 133 -> 118 registers;
# turbo4-asym 368 -> 334, int8 434 -> 421, fp16 295 -> 308.
# Prediction: -2 to -4 us per call at 128K (46.6 us in call 2), -0.5 to -1 at 32K; end to end
# -0.05 to -0.1 ms per step at 128K.
# 1. transposed_scores_match_the_reference (gpu_fused_decode): KT against the split reference
#    and the default kernel, 5 modes x 5 shapes x 5 lengths; then the parity suite with KT on
#    (turbo4, turbo4-asym, int8, fp16+int8);
# 2. ncu sweeps (every turbo4 launch of bench attention at 4K / 32K / 128K, medians): KT off / on;
# 3. turbo4 greedy tokens off / on (not expected bit-identical: the softmax sums in another
#    order), then interleaved rounds of turbo4 and turbo4-asym at 128K and 32K (device time).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s25c3
if [ "${TESTS:-1}" != 0 ]; then
  gpu_test gpu_fused_decode 200 "transposed scores:|relative RMS .* against" transposed_scores
  PARITY_MODES=turbo4,turbo4-asym,int8,fp16+int8 flag_parity kt 150 MLXCEL_MMA_KT=1
fi
sweep_best default MLXCEL_MMA_KT=0 kt MLXCEL_MMA_KT=1 > /dev/null
e2e_setup 560 60
tokens_ab MLXCEL_MMA_KT turbo4 tok
FLAG_MODES="turbo4 turbo4-asym" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_KT 25 "${LONG:-131072}"
FLAG_MODES="turbo4 turbo4-asym" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_KT 20 "${CTX:-32768}"
finish_call
