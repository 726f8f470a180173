#!/usr/bin/env bash
# Session 16's fourth device call (H200, the ~8 min left; timeout_s 480), same staging as call 2:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session16_call4.sh
# Why: call 1's `bench gemv` timed the ring with 4 warps per CTA (ring:4:4) faster than the
# default 8 (ring:8:4) on every layer GEMV: 2.257 against 2.613 ms of GEMVs per token (-0.36
# ms, in isolation). Session 9 found 4:4 slower end to end (fp16 128K 8.85 vs 8.06 ms), but
# that was before the device clock, the folded norms and the qkv append. An end-to-end A/B
# with the device clock decides it (tags r<round>q8 / r<round>q4: MLXCEL_QMV_SCHEDULE), plus
# the folded qkv append's bit-identity test under ring:4:4 (the one GEMV with an epilogue).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json LONG=512 CTX=256 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s16c4
export BUDGET=${BUDGET:-430}
MLXCEL_QMV_SCHEDULE=ring:4:4 gpu_test gpu_qkv_encode 60 'qkv encode:'
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=60
long=${LONG:-131072} ctx=${CTX:-32768}
pair() {  # pair NEED ROUND KV CTX: both schedules, the order flipped by ROUND
  local need=$1 round=$2 kv=$3 c=$4
  if ((round % 2)); then
    timed "$need" "r${round}q8" "$kv" "$c" MLXCEL_QMV_SCHEDULE=ring:8:4
    timed "$need" "r${round}q4" "$kv" "$c" MLXCEL_QMV_SCHEDULE=ring:4:4
  else
    timed "$need" "r${round}q4" "$kv" "$c" MLXCEL_QMV_SCHEDULE=ring:4:4
    timed "$need" "r${round}q8" "$kv" "$c" MLXCEL_QMV_SCHEDULE=ring:8:4
  fi
}
pair 36 1 turbo4 "$long"
pair 22 1 turbo4 "$ctx"
pair 22 1 fp16 "$ctx"
pair 36 1 fp16 "$long"
pair 22 2 fp16 "$ctx"
pair 22 2 turbo4 "$ctx"
pair 36 2 turbo4 "$long"
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
