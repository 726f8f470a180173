#!/usr/bin/env bash
# Next session's third device call (H200, ~8 min; timeout_s 600), same staging as call 1:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session15_call3.sh
# Written after session 14's last device call (NVRTC-checked, CPU-tested; never run on a GPU):
# MLXCEL_MMA_HOIST (off by default), the tensor-core decode kernel's cp.async addressing set
# up once per warp instead of per tile. Why: session 14's ncu at 128K found the kernel
# issue-bound (3.43 cycles per issued instruction, dependent-latency "wait" stalls first,
# long scoreboard 0.14), and NVRTC's SASS spent ~70 of the loop's 427 instructions per tile on
# 64-bit address arithmetic for the next tile's copies. Hoisted: 404 per tile (-5.4%).
# Prediction: ~-3 us per call at 128K (54.9 -> ~52), outputs bit-identical.
# 1. gpu_fused_decode's hoisted_copy_addressing_is_bit_identical (4 formats x 3 shapes x 4
#    lengths, fixed splits);
# 2. bench attention, turbo4, 4K / 32K / 128K, flag off / on;
# 3. ncu of the turbo4 kernel at 128K, flag off / on (duration, issue slots, stall reasons);
# 4. turbo4 at 128K end to end, flag off / on, two rounds with the device clock.
# If 1 holds and 2-3 show the kernel faster: default on (flags.rs, docs/usage.md).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 CTXS=512 NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s15c3
timeout 200 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture hoisted > "$R/test-gpu_fused_decode.txt" 2>&1
echo "hoist test rc=$? $(grep -E 'test result|panicked|hoisted copies' "$R/test-gpu_fused_decode.txt" | tr '\n' ' ' | cut -c1-600)"
bench_ab MLXCEL_MMA_HOIST hoist
export BUDGET=${BUDGET:-520}
if [ "${NCU:-1}" = 1 ]; then
  NCU_SECTIONS="SpeedOfLight WarpStateStats SchedulerStats" ncu_attention ncu-hoist0 MLXCEL_MMA_HOIST=0
  NCU_SECTIONS="SpeedOfLight WarpStateStats SchedulerStats" ncu_attention ncu-hoist1 MLXCEL_MMA_HOIST=1
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2; do
  if ((round % 2)); then
    timed 34 "r${round}hoist" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=1
    timed 34 "r$round" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=0
  else
    timed 34 "r$round" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=0
    timed 34 "r${round}hoist" turbo4 "${CTX:-131072}" MLXCEL_MMA_HOIST=1
  fi
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
