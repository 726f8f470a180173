#!/usr/bin/env bash
# Session 21's third device call (H200, ~8 min; timeout_s 600), after benchmarks/gpu/stage.sh
# with MLXCEL_MMA_QFIRST1 on by default (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session21_call3.sh
# 1. QFIRST1 in situ at 32K for the modes calls 1-2 did not measure (turbo4-asym, int8):
#    QFIRST1=0 against 1 (ncu_e2e.sh, two decode steps each);
# 2. the table with this session's defaults, one interleaved round each at 128K, 32K
#    and 4K (fp16, turbo4, turbo4-asym, int8; device clock);
# 3. while time is left, in-situ GEMV times at 32K (turbo4) under schedules measured only
#    standalone or end to end so far: ring:4:4 (session 16: faster in `bench gemv`, slower
#    end to end), ring:8:3 (5 CTAs per SM by shared memory for gate/up instead of 4),
#    ring:8:4:264 (a capped grid), against the default ring:8:4.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTXS="512 1024" SHORT=256 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s21c3
for kv in turbo4-asym int8; do
  for v in 0 1; do INSITU_KV=$kv insitu_env "$kv-q$v" MLXCEL_MMA_QFIRST1=$v; done
done
e2e_setup 545 80
for ctx in ${CTXS:-131072 32768}; do
  need=36; [ "$ctx" -ge 131072 ] || need=22
  config_rounds "$ctx" "$need" 1 fp16 turbo4 turbo4-asym int8
done
for kv in fp16 turbo4 turbo4-asym int8; do timed 16 r1 "$kv" "${SHORT:-4096}"; done
insitu_schedules ring:8:4 ring:4:4 ring:8:3 ring:8:4:264
finish_call
