#!/usr/bin/env bash
# Session 63, eighth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~4 min): MLXCEL_FOLD_SPLIT_CAP (binaries of .devcarry/bin/COMMIT):
# symmetric turbo2 at head_dim 64 with 8 KV heads cut from 22-33 splits to 16 so it folds.
# - gpu_fused_decode's split_cap_folds_turbo2_at_head_dim_64_within_parity (parity against
#   the f32 reference and the flag off; the flag must change the outputs).
# - kernel times (attention_kernel_times.sh, D 64, fp16 / turbo2 / turbo3) with the cap on / off.
#   Prediction: turbo2 at 4K-32K from 14.5-20.0 us (kernel + merge, calls 4 and 6) to about
#   turbo3's folded 9.6-15.8 us; 64K and 128K unchanged (at or above the fold's limit).
# - `bench attention` D 64, turbo2 / turbo3, cap on / off (serial and pipelined times).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call8.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c8
gpu_test gpu_fused_decode 240 "FOLD_SPLIT_CAP|cases on CUDA" split_cap
for cap in 1 0; do
  mkdir -p "$R/kt$cap"
  MLXCEL_FOLD_SPLIT_CAP=$cap R=$R/kt$cap SHAPES=32:8:64 MODES=fp16,turbo2,turbo3 ITERS=5 \
    bash benchmarks/gpu/attention_kernel_times.sh | grep -E "rc=|copy|\| (turbo2|turbo3|fp16) \|"
  echo "cap=$cap t=${SECONDS}s"
done
for cap in 1 0; do
  MLXCEL_FOLD_SPLIT_CAP=$cap timeout 200 .devcarry/bin/mlxcel bench attention --shapes 32:8:64 --modes turbo2,turbo3 \
    --split-modes none --out "$R/bench$cap" > /dev/null 2> "$R/bench$cap.err"
  echo "bench cap=$cap rc=$? t=${SECONDS}s"; grep -E "turbo2" "$R/bench$cap.err"
done
echo "done at t=${SECONDS}s"
