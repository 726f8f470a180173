#!/usr/bin/env bash
# Session 64, first call. On an H200: the issue's end-to-end table (session61_call1.sh's H200
# branch). On any other card (~5-7 min): whether 4-KV-head models at D 128 (Qwen2.5-7B: 28 / 4,
# GQA 7) should fold 16 splits on 64 CTAs instead of running ~22-33 splits and a separate merge
# (NOTES "Next lever (after session 63)" item 3). MLXCEL_FOLD_SPLIT_CAP_FILL=0 lets the cut reach
# them (default 90: only where 16 splits fill >= 90% of the SMs).
# Prediction: the fold wins at 4K-8K (kernel ~-3 to -5 us: the merge kernel's launch and its
# partials' round trip, as turbo2 at D 64 in session 63), level around 16K, and loses at 32K (half
# the SMs idle: each CTA streams twice the bytes).
# - ncu kernel times (attention_kernel_times.sh) at 28:4:128 with the default fill and with 0.
# - `bench attention` wall and pipelined times, both fills.
# - In-process step A/Bs on the synthetic Qwen2.5-7B (MLXCEL_FOLD_SPLIT_CAP with the fill at 0):
#   turbo4 at 4K, 16K and 32K, turbo4-asym at 4K and 32K.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session64_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s64c1
BUDGET=${BUDGET:-520}
MODES=fp16,turbo4,turbo3,turbo4-asym,int8,turbo2
CTXS=4096,8192,16384,32768
for fill in 90 0; do
  MLXCEL_FOLD_SPLIT_CAP_FILL=$fill R=$R/kernels-fill$fill SHAPES=28:4:128 MODES=$MODES CTXS=$CTXS NCU_TIMEOUT=150 \
    bash benchmarks/gpu/attention_kernel_times.sh > "$R/kernels-fill$fill.log" 2>&1
  echo "kernel times fill $fill: t=${SECONDS}s"; cat "$R/kernels-fill$fill/table.md"
done
for fill in 90 0; do
  MLXCEL_FOLD_SPLIT_CAP_FILL=$fill timeout 120 .devcarry/bin/mlxcel bench attention --contexts $CTXS --modes $MODES \
    --shapes 28:4:128 --split-modes none --copy-mib 1024 --out "$R/bench-fill$fill" > /dev/null 2> "$R/bench-fill$fill.err"
  echo "bench attention fill $fill rc=$? t=${SECONDS}s"; grep -E " us \(host" "$R/bench-fill$fill.err"
done
export MODEL=synthetic:benchmarks/configs/qwen2.5-7b-4bit.json
TOKENS=8 RUN_TIMEOUT=150 FILL=random-kv run warm turbo4 4096 > /dev/null
echo "warm-up done t=${SECONDS}s: $(grep -E '^error|decode' "$R/warm-turbo4-4096.err" | head -3 | tr '\n' ' ')"
for ctx in 4096 16384 32768; do
  ((SECONDS + 60 < BUDGET)) && step_ab ab-cap MLXCEL_FOLD_SPLIT_CAP turbo4 $ctx MLXCEL_FOLD_SPLIT_CAP_FILL=0
done
for ctx in 4096 32768; do
  ((SECONDS + 60 < BUDGET)) && step_ab ab-cap MLXCEL_FOLD_SPLIT_CAP turbo4-asym $ctx MLXCEL_FOLD_SPLIT_CAP_FILL=0
done
echo "done at t=${SECONDS}s"
