#!/usr/bin/env bash
# Session 43, call 4 (H200, ~6 min; timeout_s 400: the session's last device time), after
# benchmarks/gpu/stage.sh (the mlxcel binary and the gpu_quantized_gemv and gpu_qkv_encode test
# binaries, stripped and xz'd):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session43_call4.sh
# With both of this session's GEMV changes on by default (MLXCEL_QMV_OWN_CHUNKS, MLXCEL_QMV_PAIR_BLOCKS):
# - the pair-blocks bit-identity test again (call 3's 54 checks passed; only its expected count
#   was wrong) and the qkv + append test (its qkv GEMV now takes OWN_CHUNKS' loop), side by side;
# - then, with no test running, fp16 and turbo4 at 128K (the missed 2x) and 32K.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s43c4
(gpu_test gpu_quantized_gemv 200 "pair blocks" pair_blocks > "$R/bg-pair.txt") &
pair_pid=$!
(gpu_test gpu_qkv_encode 200 "folded append" > "$R/bg-qkv.txt") &
qkv_pid=$!
wait "$pair_pid"; cat "$R/bg-pair.txt"
wait "$qkv_pid"; cat "$R/bg-qkv.txt"
BUDGET=${BUDGET:-350}
e2e_setup "$BUDGET" 90
config_rounds 131072 40 "1" fp16 turbo4
TOKENS=128 config_rounds 32768 30 "1" fp16 turbo4
finish_call
