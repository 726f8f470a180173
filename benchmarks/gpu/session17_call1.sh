#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session17_call1.sh
# Two tile-loop variants of the tensor-core decode kernel, written after session 16's call 4
# (NOTES "Next lever (after session 16)", item 3). Why: ncu found the kernel issue-bound on
# dependent instructions with 2 warps per scheduler (3.46-3.50 cycles per issued instruction).
# - MLXCEL_MMA_RSALL (default on since session 16's call 5): o rescaled every tile without
#   the warp vote; bit-identical (192 checks), SASS 404 -> 398 per tile, `bench attention`
#   turbo4 128K 65.8 -> 63.4 us in one A/B pair. To confirm: ncu and end to end.
# - MLXCEL_MMA_SACC2 (off): S = q K^T in two accumulator chains per n-tile; SASS 391 per tile;
#   parity held (turbo4, 35 cases, 5.56e-4) but one `bench attention` pair was slower (64.9 ->
#   68.4 us). To settle: ncu.
# 1. the parity suite with SACC2 on (turbo4-asym, int8, fp16+int8; turbo4 ran in session 16);
# 2. bench attention, turbo4, 4K / 32K / 128K, each flag off / on (bench_ab);
# 3. ncu of the turbo4 kernel at 128K: default (RSALL), RSALL=0, SACC2, SACC2 with RSALL=0;
# 4. turbo4 at 128K end to end, default / RSALL=0, two rounds with the device clock.
# If 3-4 show RSALL slower, turn it back off (flags.rs, docs/usage.md); SACC2 on only if ncu
# shows it faster.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 CTXS=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s17c1
MLXCEL_MMA_SACC2=1 MLXCEL_PARITY_MODES=turbo4-asym,int8,fp16+int8 timeout 200 \
  .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-sacc2.txt" 2>&1
echo "parity SACC2 rc=$? $(grep -E "test result|panicked|fused decode:" "$R/test-parity-sacc2.txt" | tr '\n' ' ')"
bench_ab MLXCEL_MMA_SACC2 sacc2
bench_ab MLXCEL_MMA_RSALL rsall
export BUDGET=${BUDGET:-520}
if [ "${NCU:-1}" = 1 ]; then
  export NCU_SECTIONS="SpeedOfLight WarpStateStats SchedulerStats"
  ncu_attention ncu-default MLXCEL_MMA_SACC2=0 MLXCEL_MMA_RSALL=1
  ncu_attention ncu-rsall0 MLXCEL_MMA_SACC2=0 MLXCEL_MMA_RSALL=0
  ncu_attention ncu-sacc2 MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=1
  ncu_attention ncu-sacc2-rsall0 MLXCEL_MMA_SACC2=1 MLXCEL_MMA_RSALL=0
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2; do
  if ((round % 2)); then
    timed 34 "r${round}rsall0" turbo4 "${CTX:-131072}" MLXCEL_MMA_RSALL=0
    timed 34 "r$round" turbo4 "${CTX:-131072}"
  else
    timed 34 "r$round" turbo4 "${CTX:-131072}"
    timed 34 "r${round}rsall0" turbo4 "${CTX:-131072}" MLXCEL_MMA_RSALL=0
  fi
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
