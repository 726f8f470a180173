#!/usr/bin/env bash
# Next session's third device call (H200, ~9 min; timeout_s 600), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session15_call3.sh
# Written after session 14's last device call (NVRTC-checked, CPU-tested; never run on a GPU):
# two tile-loop variants of the tensor-core decode kernel, both off by default. Why: session
# 14's ncu at 128K found the kernel issue-bound (3.43 cycles per issued instruction,
# dependent-latency "wait" stalls first, long scoreboard 0.14, 2 warps per scheduler).
# - MLXCEL_MMA_HOIST: the cp.async addressing set up once per warp; NVRTC's SASS spent ~70 of
#   the loop's 427 instructions per tile on it; hoisted: 404 (-5.4%). Prediction ~-3 us per
#   call at 128K.
# - MLXCEL_MMA_PIPE: tile i + 1's K phase next to tile i's V phase (ptxas interleaves the S
#   and O mma chains in the SASS); 435 instructions per tile but two independent chains.
#   Prediction: if "wait" stalls halve, ~-10 us per call at 128K.
# Both keep the arithmetic and its order: bit-identical outputs expected.
# 1. gpu_fused_decode's hoisted_and_pipelined_loops_are_bit_identical (4 formats x 3 shapes x
#    4 lengths x 3 flag combinations, fixed splits);
# 2. bench attention, turbo4, 4K / 32K / 128K, each flag off / on;
# 3. ncu of the turbo4 kernel at 128K: default, HOIST, PIPE, both;
# 4. turbo4 at 128K end to end, default / both, two rounds with the device clock.
# If 1 holds and 2-3 show the kernel faster: default on (flags.rs, docs/usage.md).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 CTXS=512 NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c3
gpu_test gpu_fused_decode 200 'pipelined loops' hoisted
bench_ab MLXCEL_MMA_HOIST hoist
bench_ab MLXCEL_MMA_PIPE pipe
export BUDGET=${BUDGET:-520}
if [ "${NCU:-1}" = 1 ]; then
  export NCU_SECTIONS="SpeedOfLight WarpStateStats SchedulerStats"
  ncu_attention ncu-default MLXCEL_MMA_HOIST=0 MLXCEL_MMA_PIPE=0
  ncu_attention ncu-hoist MLXCEL_MMA_HOIST=1 MLXCEL_MMA_PIPE=0
  ncu_attention ncu-pipe MLXCEL_MMA_HOIST=0 MLXCEL_MMA_PIPE=1
  ncu_attention ncu-both MLXCEL_MMA_HOIST=1 MLXCEL_MMA_PIPE=1
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2; do
  if ((round % 2)); then
    timed 34 "r${round}both" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=1 MLXCEL_MMA_PIPE=1
    timed 34 "r$round" turbo4 "${CTX:-131072}"
  else
    timed 34 "r$round" turbo4 "${CTX:-131072}"
    timed 34 "r${round}both" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=1 MLXCEL_MMA_PIPE=1
  fi
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
