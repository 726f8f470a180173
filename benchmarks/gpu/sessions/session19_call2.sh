#!/usr/bin/env bash
# Session 19's second device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_rope, .devcarry/bin/tests/gpu_qkv_encode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session19_call2.sh
# MLXCEL_QMV_EARLY (written after call 1, never run): the GEMV ring's scale loads leave before x
# is staged, and the folded RMSNorm keeps x and its weight in registers between its passes.
# Why: in situ at 32K (session 18) o_proj ran at 1.1 TB/s and qkv at ~1 TB/s; a fit of the four
# layer GEMVs' times against their bytes gives ~4.7 us per launch that does not scale with the
# weight, and the prologue ran x's L2 round trip, then the scales' DRAM round trip, then (with
# the norm) a second pass over x, before the first tile.
# Prediction: -0.5 to -1 us per GEMV launch (qkv and gate/up: two round trips fewer, o_proj
# and down: one), i.e. -0.06 to -0.13 ms per step in every mode.
# Also first run here: sincosf in rope_warp (one range reduction for both, instead of one each;
# only positions past 105615 take the slow exact reduction) and its test at position 131000.
# 1. GPU tests: gpu_quantized_gemv (EARLY's bit identity, 20 checks, and the rest),
#    gpu_fused_rope (incl. position 131000), gpu_qkv_encode with EARLY on (the qkv GEMV with
#    the append folded in, against the separate path, bit for bit);
# 2. in-situ kernel times at 32K (ncu_e2e.sh, turbo4, 2 steps), EARLY off / on;
# 3. end to end, two interleaved rounds at 32K (turbo4, fp16) and 128K (turbo4), device clock.
# If 1 holds and 2-3 show it faster: default on (flags.rs, docs/usage.md).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s19c2
gpu_test gpu_quantized_gemv 150 "early GEMV prologue|worst"
gpu_test gpu_fused_rope 150 "prefill=131000|worst"
MLXCEL_QMV_EARLY=1 timeout 120 .devcarry/bin/tests/gpu_qkv_encode --test-threads=1 --nocapture > "$R/test-gpu_qkv_encode-early.txt" 2>&1
echo "gpu_qkv_encode (EARLY on) rc=$? $(grep -E "test result|panicked" "$R/test-gpu_qkv_encode-early.txt" | tr '\n' ' ')"
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  for e in 0 1; do
    echo "in situ, MLXCEL_QMV_EARLY=$e:"
    MLXCEL_QMV_EARLY=$e FILL=random-kv NCU_OUT="$R/insitu-early$e" timeout 150 bash benchmarks/gpu/ncu_e2e.sh turbo4 "${CTX:-32768}" 8,2 2>&1 | tail -12
  done
fi
e2e_setup 560 80
FLAG_MODES="turbo4 fp16" FLAG_ROUNDS=2 flag_rounds MLXCEL_QMV_EARLY 22 "${CTX:-32768}"
FLAG_MODES=turbo4 FLAG_ROUNDS=2 flag_rounds MLXCEL_QMV_EARLY 34 "${LONG:-131072}"
finish_call
