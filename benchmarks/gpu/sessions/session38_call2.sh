#!/usr/bin/env bash
# Session 38's second device call (H200, ~8 min; timeout_s 590), after benchmarks/gpu/stage.sh
# (test binaries but gpu_quantized_gemv and gpu_qkv_encode removed, those and mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/*.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session38_call2.sh
# MLXCEL_QMV_SIR: each tile's scales and biases copied into its ring slot with its words (POST,
# group 64), no per-CTA (scale, bias) tables in the GEMV prologue.
# 1. Bit identity: the five GEMV kernels on Llama-3-8B's shapes (gpu_quantized_gemv), and the
#    qkv GEMV with the folded append (gpu_qkv_encode) with the flag on against its references.
# 2. Tokens: turbo4 1K, 32 tokens, flag off and on: equal.
# 3. In-process A/B (MLXCEL_STEP_AB=MLXCEL_QMV_SIR, blocks of 8, 192 tokens, device clock):
#    turbo4 32K and 128K, fp16 4K.
# 4. ncu in situ (turbo4 32K, NCU_CACHE=none, 2 steps) with the flag on: the per-GEMV times
#    against session 37's (gate/up 25.4, down 14.1, qkv 8.75, o_proj 7.0 us).
# Prediction: gate/up -1 to -2 us per launch, down -1 to -2, qkv / o_proj -0.5 to -1 (the
# prologue's table staging gone: session 28's probe put tables + reduction at +5.1 us of
# gate/up without EARLY); -0.05 to -0.15 ms of device per step in every mode.
# (Its runs were written out in the script when it ran; e2e_run.sh's tokens_ab and step_ab
# since.) Ran on 4db63fc. The flag lost (+0.064 to +0.067 ms per step in all three A/Bs; the ncu part
# did not run, past its time) and was removed after this call: check out 4db63fc to run it again.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s38c2
timeout 400 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture scales_in > "$R/test-sir.txt" 2>&1
echo "gemv test rc=$? $(grep -E "test result|panicked|scales in the ring" "$R/test-sir.txt" | tr '\n' ' ' | cut -c1-400) t=${SECONDS}s"
MLXCEL_QMV_SIR=1 timeout 200 .devcarry/bin/tests/gpu_qkv_encode --test-threads=1 --nocapture > "$R/test-qkv-sir.txt" 2>&1
echo "qkv encode test (SIR on) rc=$? $(grep -E "test result|panicked" "$R/test-qkv-sir.txt" | tr '\n' ' ' | cut -c1-300) t=${SECONDS}s"
export RUN_ENV="MLXCEL_DEVICE_CLOCK=1" FILL=random-kv
tokens_ab MLXCEL_QMV_SIR turbo4 tok
step_ab ab MLXCEL_QMV_SIR turbo4 32768
step_ab ab MLXCEL_QMV_SIR turbo4 131072
step_ab ab MLXCEL_QMV_SIR fp16 4096
if ((SECONDS < 420)); then
  for sir in 1 0; do
    MLXCEL_QMV_SIR=$sir NCU_OUT="$R/ncu-sir$sir" NCU_CACHE=none FILL=random-kv timeout 120 \
      bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 > "$R/ncu-sir$sir.txt" 2>&1
    echo "ncu SIR=$sir rc=$? t=${SECONDS}s"
    python3 benchmarks/gpu/step_budget.py turbo4 32768 "$R/ncu-sir$sir/ncu-e2e/ncu-e2e-turbo4-32768.csv" 2>&1 | head -12
    gzip -f "$R/ncu-sir$sir/ncu-e2e/"*.csv
    ((SECONDS < 480)) || break
  done
fi
echo "done at t=${SECONDS}s"
