#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session22_call1.sh
# Session 21 made the GEMVs' ring 3 stages deep by default (ring:8:3) on in-situ medians
# (qkv + append 13.49 -> 12.58 us, gate/up 27.87 -> 27.26 at 32K) with only the gate/up + SiLU
# test run under it on the GPU (call 4 ran out of device time). This call:
# 1. bit identity under the new default: all of gpu_quantized_gemv (its schedule list holds
#    ring = 8:3 and ring:8:4; plain, residual, folded norm, qkv parts) in the background, and
#    gpu_qkv_encode (the folded K+V append, 18 steps bit-identical to the projection and the
#    separate append) in the foreground;
# 2. then, in what is left of the call, ring:8:3 against ring:8:4 end to end at 32K (turbo4);
#    session22_call2.sh runs the full A/B and the table.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s22c1
bg_test gemv gpu_quantized_gemv 480 "bit-identity checks|worst|bit-identical to batched: false"
gpu_test gpu_qkv_encode 150 "qkv encode:"
bg_wait
e2e_setup 560 80
FLAG_MODES=turbo4 FLAG_ROUNDS=1 env_rounds 22 "MLXCEL_QMV_SCHEDULE=ring:8:3" "MLXCEL_QMV_SCHEDULE=ring:8:4" "${CTX:-32768}"
finish_call
