#!/usr/bin/env bash
# Session 63, sixth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~4 min):
# - `bench attention` with its defaults and 61896ac's pipelined time per call (calls handed to
#   MLX in batches of 5 as they are built, the host working ahead of the device). Prediction:
#   pipelined ratios at 32K near call 4's kernel-time ratios (turbo4 ~2.5-2.9x: the fused
#   call's host work, ~16-18 us, now under its ~22 us kernel), at 4K between the serial
#   ~1.05x and the kernel's 2.70x (the host, not the device, sets the pace there).
# - attention_kernel_times.sh at D 128 (the copy kernel matched now: --kernel-name-base
#   demangled). Prediction: the copy kernel ~2.8-3.0 TB/s, the ratios of call 4 within +-0.1.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call6.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c6
timeout 300 .devcarry/bin/mlxcel bench attention --out "$R/bench" > /dev/null 2> "$R/bench.err"
echo "bench attention rc=$? t=${SECONDS}s"
grep -E "copy roofline|32:8:128 .*(turbo4 |turbo3 |int8 |asym |fp16 )" "$R/bench.err"
mkdir -p "$R/kt"
R=$R/kt SHAPES=32:8:128 ITERS=3 bash benchmarks/gpu/attention_kernel_times.sh | head -60
echo "done at t=${SECONDS}s"
