#!/usr/bin/env bash
# Ran on the build of commit 97b1199 (MLXCEL_L2_PREFETCH); that code was removed after this call
# measured it slower (session 24 write-up): check that commit out to run this again.
# Session 24, second device call (H200, ~8 min; timeout_s 580), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session24_call2.sh
# MLXCEL_L2_PREFETCH (new, off by default): each GEMV launch of a decode step prefetches the
# next GEMV's weights into L2 (kernels/l2_prefetch.rs, next_prefetch in cuda/qgemv4.cuh).
# 1. bit identity of every GEMV kernel with and without the prefetch (gpu_quantized_gemv);
# 2. greedy tokens with the flag off and on (turbo4, fp16);
# 3. where and how much: turbo4 at 32K, two rounds of off / mid / start / end / mid with
#    evict_normal / 32 MB / 8 MB (tags r<round>pf<variant>: repeats_summary.py);
# 4. off / mid for fp16 at 32K and for turbo4 and fp16 at 128K, two rounds.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 BIN=target/release/mlxcel TESTS=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s24c2
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_quantized_gemv 150 "next-weights|changed the output|panicked" \
  next_weights_prefetch_is_bit_identical_or_is_not_used
e2e_setup 540 60
tokens_ab MLXCEL_L2_PREFETCH turbo4 tok
tokens_ab MLXCEL_L2_PREFETCH fp16 tokf

PF="MLXCEL_L2_PREFETCH"
declare -A VARIANT=(
  [off]="$PF=0"
  [mid]="$PF=1"
  [start]="$PF=1 ${PF}_AT=start"
  [end]="$PF=1 ${PF}_AT=end"
  [normal]="$PF=1 ${PF}_EVICT=normal"
  [mb32]="$PF=1 ${PF}_MB=32"
  [mb8]="$PF=1 ${PF}_MB=8"
)
# `pf_rounds CTX NEED ROUNDS KV VARIANT...`: ROUNDS rounds at CTX of the variants for KV, their
# order rotated each round (tags r<round>pf<variant>).
pf_rounds() {
  local ctx=$1 need=$2 rounds=$3 kv=$4 round i v; shift 4
  local names=("$@")
  for ((round = 1; round <= rounds; round++)); do
    for ((i = 0; i < ${#names[@]}; i++)); do
      v=${names[$(((i + round) % ${#names[@]}))]}
      # shellcheck disable=SC2086
      timed "$need" "r${round}pf$v" "$kv" "$ctx" ${VARIANT[$v]}
    done
  done
}
pf_rounds "${CTX:-32768}" 20 2 turbo4 off mid start end normal mb32 mb8
pf_rounds "${CTX:-32768}" 20 2 fp16 off mid
pf_rounds "${LONG:-131072}" 25 2 turbo4 off mid
pf_rounds "${LONG:-131072}" 25 2 fp16 off mid
finish_call
