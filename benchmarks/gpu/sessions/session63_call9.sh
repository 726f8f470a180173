#!/usr/bin/env bash
# Session 63, ninth call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~5 min): a head_dim-64 model end to end for the first time, the
# synthetic Llama-3.2-1B 4-bit (benchmarks/configs/llama3.2-1b-4bit.json: 16 layers, 32/8 heads,
# head_dim 64), random-kv caches, device clock:
# - turbo2 with MLXCEL_FOLD_SPLIT_CAP A/B'd inside one run (MLXCEL_STEP_AB) at 4K and 32K.
#   Prediction: -5 us of kernel time per layer (call 8: 14.56 -> 9.25 at 4K, 19.87 -> 14.27 at
#   32K), ~-0.07 ms per step over its 13 layers of turbo2 (3 boundary layers keep fp16 keys).
# - the modes at 4K, 32K and 128K against fp16 in the same run (one round).
#   Prediction: the ratios above the 8B's at 32K and 128K (a 1B's weights are a smaller share
#   of the step, so attention weighs more), fp16 at 128K ~4 GB of cache read per step.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call9.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c9
export MODEL=synthetic:benchmarks/configs/llama3.2-1b-4bit.json
TOKENS=8 RUN_TIMEOUT=200 FILL=random-kv run warm turbo2 4096 > /dev/null
echo "warm-up t=${SECONDS}s"
for ctx in 4096 32768; do TOKENS=192 step_ab ab-cap MLXCEL_FOLD_SPLIT_CAP turbo2 "$ctx"; done
e2e_setup "${BUDGET:-480}" 60
for ctx in 4096 32768 131072; do
  config_rounds "$ctx" 25 "1" fp16 turbo4 turbo4-asym int8 turbo2
done
finish_call
