#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session17_call1.sh
# Three tile-loop / occupancy variants of the tensor-core decode kernel, written during session
# 16 (NOTES "Next lever (after session 16)", item 3). Why: ncu found the kernel issue-bound on
# dependent instructions with 2 warps per scheduler (3.46-3.50 cycles per issued instruction).
# - MLXCEL_MMA_WIDE (off, never run): CTAs of 12 warps sharing one 64-KiB pair table, i.e. 12
#   warps per SM instead of 8 (turbo4 D=128: 196 KB of shared memory, 130 registers). Not
#   bit-identical (each warp's tiles change): parity. Prediction: if the kernel is latency-
#   bound, up to ~1.4x per call at 128K (50.75 us in ncu -> ~36-42).
# - MLXCEL_MMA_RSALL (default on since session 16's call 5): o rescaled every tile without the
#   warp vote; bit-identical (192 checks), `bench attention` turbo4 128K 65.8 -> 63.4 us in one
#   pair. To confirm: ncu.
# - MLXCEL_MMA_SACC2 (off): two S accumulator chains; parity held (turbo4); one `bench
#   attention` pair was slower (64.9 -> 68.4 us). To settle: ncu.
# 1. the parity suite with WIDE on (turbo4, turbo4 ends' fp16+int8 does not use the table);
# 2. bench attention, turbo4, 4K / 32K / 128K, each flag off / on (bench_ab);
# 3. ncu of the turbo4 kernel at 128K: default, WIDE, RSALL=0, SACC2;
# 4. turbo4 at 128K and 32K end to end, WIDE on / off, two rounds each with the device clock
#    (flag_rounds: tags on<round> / off<round>).
# If WIDE holds parity and 2-4 show it faster: default on (flags.rs, docs/usage.md), and
# re-run the table (session16_call2.sh). RSALL back off if ncu shows it slower.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 CTXS=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s17c1
flag_parity wide 120 MLXCEL_MMA_WIDE=1
bench_ab MLXCEL_MMA_WIDE wide
bench_ab MLXCEL_MMA_RSALL rsall
bench_ab MLXCEL_MMA_SACC2 sacc2
e2e_setup 540 80
if [ "${NCU:-1}" = 1 ]; then
  export NCU_SECTIONS="SpeedOfLight Occupancy WarpStateStats SchedulerStats"
  ncu_attention ncu-default MLXCEL_MMA_WIDE=0
  ncu_attention ncu-wide MLXCEL_MMA_WIDE=1
  ncu_attention ncu-rsall0 MLXCEL_MMA_RSALL=0
  ncu_attention ncu-sacc2 MLXCEL_MMA_SACC2=1
fi
export FLAG_MODES=turbo4 FLAG_ROUNDS=2
flag_rounds MLXCEL_MMA_WIDE 34 "${LONG:-131072}"
flag_rounds MLXCEL_MMA_WIDE 22 "${CTX:-32768}"
finish_call
