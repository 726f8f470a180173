#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session17_call1.sh
# Written after session 16's last device call (NVRTC-checked, CPU-tested; never run on a GPU):
# two tile-loop variants of the tensor-core decode kernel, both off by default (NOTES "Next
# lever (after session 16)", item 3). Why: ncu found the kernel issue-bound on dependent
# instructions with 2 warps per scheduler (3.46-3.50 cycles per issued instruction, session 15).
# - MLXCEL_MMA_SACC2: S = q K^T in two accumulator chains per n-tile (4 chains of 4 mma at
#   D = 128 instead of 2 of 8; NVRTC SASS of the turbo4 D=128 GQA-4 loop 404 -> 391
#   instructions per tile, +4 FADD, fewer IMAD). A different summation order: parity, not bits.
# - MLXCEL_MMA_RSALL: o rescaled every tile without the warp vote (bit-identical: alpha is
#   exactly 1 where the max did not grow); one basic block, 404 -> 398 per tile.
# Prediction: each -1 to -3 us per call at 128K (50.75 us in ncu with HOIST); both -3 to -5.
# 1. hoisted_and_pipelined_loops_are_bit_identical (now with RSALL: 4 formats x 3 shapes x 4
#    lengths x 4 flag combinations); the parity suite with SACC2 and RSALL on (turbo4,
#    turbo4-asym, int8, fp16+int8; tolerance 1e-3);
# 2. bench attention, turbo4, 4K / 32K / 128K, each flag off / on (bench_ab);
# 3. ncu of the turbo4 kernel at 128K: default, SACC2, RSALL, both;
# 4. turbo4 at 128K end to end, default / both, two rounds with the device clock.
# If 1 holds and 2-3 show the kernel faster: default on (flags.rs, docs/usage.md).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 CTXS=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s17c1
gpu_test gpu_fused_decode 200 'rescale-always loops' hoisted
MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1 MLXCEL_PARITY_MODES=turbo4,turbo4-asym,int8,fp16+int8 timeout 200 \
  .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-sacc2-rsall.txt" 2>&1
echo "parity SACC2+RSALL rc=$? $(grep -E "test result|panicked|fused decode:" "$R/test-parity-sacc2-rsall.txt" | tr '\n' ' ')"
bench_ab MLXCEL_MMA_SACC2 sacc2
bench_ab MLXCEL_MMA_RSALL rsall
export BUDGET=${BUDGET:-520}
if [ "${NCU:-1}" = 1 ]; then
  export NCU_SECTIONS="SpeedOfLight WarpStateStats SchedulerStats"
  ncu_attention ncu-default MLXCEL_MMA_SACC2=0 MLXCEL_MMA_RSALL=0
  ncu_attention ncu-sacc2 MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=0
  ncu_attention ncu-rsall MLXCEL_MMA_SACC2=0 MLXCEL_MMA_RSALL=1
  ncu_attention ncu-both MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2; do
  if ((round % 2)); then
    timed 34 "r${round}both" turbo4 "${CTX:-131072}" MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1
    timed 34 "r$round" turbo4 "${CTX:-131072}"
  else
    timed 34 "r$round" turbo4 "${CTX:-131072}"
    timed 34 "r${round}both" turbo4 "${CTX:-131072}" MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1
  fi
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
