#!/usr/bin/env bash
# Session 41, third device call (H200, what is left of the 30 minutes: ~9; timeout_s 500), staged
# as session41_call1.sh but keeping the gpu_qkv_encode test binary too.
# Calls 1-2: the folded norm's ~0.2 ms per step (session 40) follows the builds whose static
# shared arrays end off a 128-byte line (the norm's 32-byte nred; 48 bytes in qkv + encode):
# nosums and partials as slow as tables, xplain and xtwice fast; ncu: 17.4 shared wavefronts per
# cp.async against 12.8. MLXCEL_QMV_ALIGN128 (default on) puts dynamic shared memory on a
# 128-byte boundary.
# Ran in session 41: both tests hit their 90 s timeouts (their NVRTC builds take longer); rerun
# apart with 300 s (gpu_quantized_gemv dynamic_shared_alignment 215 s, gpu_qkv_encode 94 s; both
# passed). Give them 300 s when rerunning this script.
# Prediction: flag on against off, turbo4 at 32K, -0.15 to -0.2 ms per step (the folded
# kernels: gate/up ~4.7 us per launch, the head ~19, qkv ~1); the same at 128K and in fp16.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s41c3
RUN_TIMEOUT=100 step_ab ab-align-32k MLXCEL_QMV_ALIGN128 turbo4 32768
gpu_test gpu_quantized_gemv 90 "alignment" dynamic_shared_alignment
((SECONDS < 250)) && step_ab ab-align-128k MLXCEL_QMV_ALIGN128 turbo4 131072
((SECONDS < 300)) && gpu_test gpu_qkv_encode 90 "qkv encode" folded_append
((SECONDS < 360)) && step_ab ab-align-fp16-32k MLXCEL_QMV_ALIGN128 fp16 32768
((SECONDS < 400)) && insitu_env aligned
echo "done at t=${SECONDS}s"
