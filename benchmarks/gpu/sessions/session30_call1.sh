#!/usr/bin/env bash
# Session 30's first device call (H200, ~9 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/tests/gpu_quantized_gemv, .devcarry/bin/tests/gpu_qkv_encode,
# .devcarry/bin/tests/gpu_fused_rope):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session30_call1.sh
# Session 29 made MLXCEL_QMV_NORM_LATE and MLXCEL_QMV_POST the defaults. Session 26's lesson:
# when a default changes, run every test that compares against the defaults. This call runs
# them under the new defaults: the tiled bit-identity test (now pins POST off; not yet run), the
# EARLY and RFIRST bit-identity tests, the folded norm and qkv-parts tests, the qkv + append
# test (both sides through the same GEMV flags), and gpu_fused_rope (end-to-end decode paths).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s30c1
bg_test qkv gpu_qkv_encode 300 "qkv encode:|differs"
gpu_test gpu_quantized_gemv 240 "tiled:" tiled_weights
cp "$R/test-gpu_quantized_gemv.txt" "$R/test-tiled.txt"
gpu_test gpu_quantized_gemv 200 "early GEMV" early_prologue
cp "$R/test-gpu_quantized_gemv.txt" "$R/test-early.txt"
gpu_test gpu_quantized_gemv 150 "folded norm:" folded_rms_norm
cp "$R/test-gpu_quantized_gemv.txt" "$R/test-fold.txt"
bg_wait
gpu_test gpu_fused_rope 200 "rope"
echo "done at t=${SECONDS}s"
