#!/usr/bin/env bash
# Session 60 (~4-5 min, H100 or H200): the fix for CUDA prefills (MLX's quantized_matmul got
# stride-2 scale/bias views from the paired GEMV tables and refused them: "No implementation
# for problem shape: 4096x6144x4096x1", session 60 call 2). Checks: the paired-table test on
# CUDA (now with MLX's matmul at 3 and 16 rows and a row-contiguity check), then real prefills:
# `generate` at 4K for turbo4 and fp16 (no random-kv: the prompt runs through the model), and
# `mlxcel serve` (serve_smoke.py: three requests with cache reuse on the synthetic 8B).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session60_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s60c2
BUDGET=${BUDGET:-330}
budget_test gpu_quantized_gemv 150 "bit-identity|strided|differ|panicked" paired_tables_give_the_same_bits_or_are_refused
TOKENS=64 timed 60 real turbo4 4096
TOKENS=64 timed 60 real fp16 4096
grep -h "^prefill" "$R"/real-*.err
timeout 150 python3 benchmarks/gpu/serve_smoke.py .devcarry/bin/mlxcel synthetic:llama3-8b-4bit turbo4 4096 > "$R/serve.txt" 2>&1
echo "serve_smoke rc=$?"; tail -25 "$R/serve.txt"
finish_call
