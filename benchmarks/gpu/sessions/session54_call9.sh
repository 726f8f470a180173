#!/usr/bin/env bash
# After session54_call8.sh (~6 min): what bounds the symmetric 2- and 3-bit attention launches
# at 128K, with the 2-bit field table (MLXCEL_MMA_LUT_LOW) off and on. ncu of one launch each of
# turbo3 and turbo2 in `bench attention` (Llama-3-8B layer): SpeedOfLight, Occupancy,
# WarpStateStats, SchedulerStats. Read: issue slots busy and the top stall reasons. If the table
# leaves the loop issue-bound, the next cut is the 3-bit sign application (2 instructions per
# pair); if it is latency-bound (few eligible warps), more warps per SM (4-warp CTAs at 4 per SM).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session54_call9.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s54c9
BUDGET=${BUDGET:-400}
export NCU_SECTIONS="SpeedOfLight Occupancy WarpStateStats SchedulerStats"
for mode in turbo3 turbo2; do
  NCU_MODE=$mode ncu_attention "ncu-$mode-lut0" MLXCEL_MMA_LUT_LOW=0
  NCU_MODE=$mode ncu_attention "ncu-$mode-lut1" MLXCEL_MMA_LUT_LOW=1
done
NCU_MODE=turbo4 ncu_attention ncu-turbo4
echo "done at t=${SECONDS}s"
