#!/usr/bin/env bash
# Session 53 (or the next device session), first call (H200, <= 10 min), after
# session 52 verified session 51's defaults (ADR 0023) on the GPU with the one-split and long-prefill cases.
# - The boundary storage at 128K (was session50_call4.sh's, never run): turbo4 with the default
#   fp16+int8 ends against fp16+turbo4 ends (KLD +1.8% to +6.3%,
#   benchmarks/results/2026-12-04-kv-boundary-fp16-turbo4.md) and int8r ends, beside fp16, two
#   interleaved rounds. Prediction: fp16+turbo4 ends read 322 of fp16+int8's 386 bytes per
#   position and head, 4 layers x ~15 us at copy speed = -0.06 ms per 128K step; int8r ends
#   -0.07 (session 47's -0.074 before the trims and WIDE_PLAIN, which sped up the ends too).
#   turbo4 is 0.07 ms per 128K step short of 2x (session 51: 3.003 against fp16's 5.861).
# - ncu of the 128K turbo4 attention launch (bench attention, one launch) with session 51's
#   defaults, to replace the 44.8 us that session 47 measured before the trims.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session53_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s53c1
e2e_setup "${BUDGET:-470}" 90
ends_round 1 131072 40 "turbo4 fp16+int8" "turbo4 fp16+turbo4" "turbo4 int8r" "fp16 fp16"
ends_round 2 131072 40 "turbo4 fp16+int8" "turbo4 fp16+turbo4" "turbo4 int8r" "fp16 fp16"
grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
NCU_SECTIONS="SpeedOfLight Occupancy WarpStateStats SchedulerStats" ncu_attention ncu-default
finish_call
