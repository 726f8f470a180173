#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin: the tree with results passes 64 MiB with .devcarry/ab):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session13_call1.sh
# Written after session 12's last device call (NVRTC-checked, CPU-tested, never run on a GPU):
# the folded RMSNorm (MLXCEL_FUSED_NORM=1: the qkv, gate/up and LM-head GEMV kernels stage
# rms_norm(x, w, eps) with MLX's roundings; -65 MLX nodes and launches per 8B decode step).
# 1. gpu_quantized_gemv's folded-norm test (float64 reference and MLX's norm + the kernel)
#    and the GEMV tests (the kernels gained the NORM / EPS template constants);
# 2. end to end, greedy tokens with the fold off / on (turbo4, fp16 at 1K: they should match;
#    a flip late in the run is possible, the roundings of the sum of squares differ);
# 3. three interleaved rounds at 32K and 4K of turbo4 and fp16, fold off / on, with the build
#    profile (ops per step should fall by 65).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX_BIG=512 CTX_SMALL=256 TOKENS=8
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s13c1
timeout 240 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-gemv.txt" 2>&1
echo "gemv tests rc=$? $(grep -E 'test result|panicked|folded norm: worst|qgemv4: ' "$R/test-gemv.txt" | tr '\n' ' ' | cut -c1-500)"
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-480}
for kv in turbo4 fp16; do tokens_ab MLXCEL_FUSED_NORM "$kv" fold; done
export FILL=random-kv
RUN_TIMEOUT=80
flag_rounds MLXCEL_FUSED_NORM 25 "${CTX_BIG:-32768}" "${CTX_SMALL:-4096}"
echo "done at t=${SECONDS}s"
