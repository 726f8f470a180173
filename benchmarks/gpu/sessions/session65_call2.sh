#!/usr/bin/env bash
# Session 65, second call (~4-5 min). On an H200: the end-to-end table (table_if_h200).
# Elsewhere: end-to-end confirmation of MLXCEL_FOLD_32 on the synthetic Qwen2.5-7B (28 / 4 heads,
# D 128), where call 1 measured -1.4 to -2.0 us per attention call by kernel time (ncu, 4K-32K)
# and -0.07 to -0.11 ms host per step, but a step A/B whose device part moved +0.06 / -0.02 ms
# (inside the A/B's spread). Prediction: turbo4 and turbo4-asym decode ~1-3% faster at 4K and
# 32K with the flag on (28 layers x ~1.8 us = ~0.05 ms of ~2.3 ms device per step, plus whatever
# the host saving uncovers at 4K).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session65_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s65c2
e2e_setup "${BUDGET:-330}" 90
export MODEL=synthetic:benchmarks/configs/qwen2.5-7b-4bit.json TOKENS=128
TOKENS=8 run warm turbo4 4096 > /dev/null
echo "warm-up done t=${SECONDS}s"
FLAG_ROUNDS=2 FLAG_MODES="turbo4 turbo4-asym fp16" env_rounds 25 MLXCEL_FOLD_32=1 MLXCEL_FOLD_32=0 32768 4096
for ctx in 4096 32768; do
  ((SECONDS + 30 < BUDGET)) && TOKENS=384 step_ab ab2-f32 MLXCEL_FOLD_32 turbo4 $ctx
done
finish_call
