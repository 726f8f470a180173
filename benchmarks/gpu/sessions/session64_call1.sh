#!/usr/bin/env bash
# Session 64, first call. On an H200: the issue's end-to-end table (session61_call1.sh's H200
# branch). On any other card (~6-8 min): how 4-KV-head models at D 128 (Qwen2.5-7B: 28 / 4,
# GQA 7) should merge their splits (NOTES "Next lever (after session 63)" item 3). Today they run
# 22 splits at 4K and 33 beyond on one wave of 12-warp CTAs, each call with a separate merge
# launch. Two candidates:
# - MLXCEL_FOLD_SPLIT_CAP_FILL=0: the cut to 16 folded splits reaches them (64 CTAs: half the SMs
#   idle). Prediction: wins at 4K (merge launch gone), loses from ~16K (bandwidth of 64 SMs).
# - MLXCEL_FOLD_32=1: the fold takes up to 32 splits (two rounds of its tail's loads), 33 cut to
#   32 (128 CTAs). Prediction: -3 to -5 us per call at every context (the merge kernel's launch
#   and round trip, as turbo2 at D 64 gained in session 63), the tail's second round +~1 us.
# Steps: the FOLD_32 parity test (bit-identical at 4097 tokens, parity at 20000); ncu kernel
# times at 28:4:128 for the three settings; in-process step A/Bs on the synthetic Qwen2.5-7B.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session64_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s64c1
BUDGET=${BUDGET:-500}
gpu_test gpu_fused_decode 150 "MLXCEL_FOLD_32" fold_32_merges_up_to_32_splits_in_the_kernel
echo "parity done t=${SECONDS}s"
# A short call (little device time left): S64_MODES=turbo4 S64_CTXS=4096,32768.
MODES=${S64_MODES:-fp16,turbo4,turbo4-asym,int8}
CTXS=${S64_CTXS:-4096,8192,16384,32768}
for cfg in base:MLXCEL_FOLD_32=0 fold32:MLXCEL_FOLD_32=1 fill0:MLXCEL_FOLD_SPLIT_CAP_FILL=0; do
  tag=${cfg%%:*}
  if ((SECONDS + ${S64_NCU_NEED:-110} > BUDGET)); then echo "skipped kernel times $tag (t=${SECONDS}s)"; continue; fi
  env "${cfg#*:}" R=$R/kernels-$tag SHAPES=28:4:128 MODES=$MODES CTXS=$CTXS NCU_TIMEOUT=100 \
    bash benchmarks/gpu/attention_kernel_times.sh > "$R/kernels-$tag.log" 2>&1
  echo "kernel times $tag: t=${SECONDS}s"; cat "$R/kernels-$tag/table.md"
done
if ((SECONDS + 90 > BUDGET)); then echo "skipped the step A/Bs (t=${SECONDS}s)"; exit 0; fi
export MODEL=synthetic:benchmarks/configs/qwen2.5-7b-4bit.json
TOKENS=8 RUN_TIMEOUT=150 FILL=random-kv run warm turbo4 4096 > /dev/null
echo "warm-up done t=${SECONDS}s: $(grep -E '^error|decode' "$R/warm-turbo4-4096.err" | head -3 | tr '\n' ' ')"
for ctx in 4096 32768; do
  ((SECONDS + 60 < BUDGET)) && step_ab ab-f32 MLXCEL_FOLD_32 turbo4 $ctx
done
((SECONDS + 60 < BUDGET)) && step_ab ab-f32 MLXCEL_FOLD_32 turbo4-asym 32768
((SECONDS + 60 < BUDGET)) && step_ab ab-fill0 MLXCEL_FOLD_SPLIT_CAP turbo4 4096 MLXCEL_FOLD_SPLIT_CAP_FILL=0
echo "done at t=${SECONDS}s"
