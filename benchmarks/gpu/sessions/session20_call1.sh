#!/usr/bin/env bash
# Next session's first device call (H200, ~6 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_rope):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session20_call1.sh
# What the fixed time is, before writing more levers (NOTES, "Next lever (after session 19)"):
# 1. the turbo4 attention call's warp-state samples per SASS instruction at 4K (2 tile rounds
#    per warp: the call is mostly its fixed ~6 us) and at 32K, with the defaults (QSWZ, FILLW);
#    prologue / loop / epilogue shares and the top instructions (source_samples.py);
# 2. the same for the o_proj-shaped GEMV (K 4096, N 4096; ~4.7 us per launch that does not
#    scale with the weight, by session 18's in-situ fit; EARLY did not move it);
# 3. the tests session 19 could not finish on the H200: EARLY's bit identity (gpu_quantized_gemv
#    timed out at 150 s in its JIT compiles) and the RoPE case at position 131000 with its own
#    bound (gpu_fused_rope).
# CPU dry run: NCU=0 (the tests then check the CPU's dispatch only).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s20c1
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  for ctx in 4096 32768; do
    source_profile "attn$((ctx / 1024))k" mlxcel_decode 6 "$BIN" bench attention --contexts "$ctx" --modes turbo4 \
      --shapes 32:8:128 --split-modes none --iters 2
  done
  # o_proj's kernel: K = 4096 -> 45312 bytes of shared memory with the default ring (SMEM), EARLY
  # off (f), the residual folded (t).
  source_profile oproj "mlxcel_qgemv4_64_8_4_4_f_f_45312_t" 4 "$BIN" bench gemv --schedules ring:8:4 --iters 3
fi
gpu_test gpu_fused_rope 200 "prefill=131000|worst" past_the_fast_reduction_range
gpu_test gpu_quantized_gemv 300 "early GEMV prologue" early_prologue_loads
finish_call
