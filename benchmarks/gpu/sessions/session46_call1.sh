#!/usr/bin/env bash
# Written in session 45 (after its device time) for the next session's first device call (H200,
# ~4 min): the attention launches' per-warp timeline (MLXCEL_ATTENTION_TIMING_PROBE=timeline,
# not yet run on a GPU) at 128K and 32K, turbo4, to split the 128K call's ~5.8 us of "ramp and
# drain" (NOTES, "Next lever (after session 45)"). Prediction: the median warp's first tile lands
# 1-2 us after its prologue; the slowest warp's loop ends 1-3 us after the median's.
# Stage the mlxcel binary and the gpu_attention_append test binary (stripped, xz'd into
# .devcarry/bin and .devcarry/bin/tests), then:
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session46_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s46c1
# The probe must leave the launch bit-identical (4 steps: turbo4 and fp16+int8, printed or not).
gpu_test gpu_attention_append 120 "timeline probe" timeline_probe
RUN_TIMEOUT=120 timeline tl turbo4 131072
RUN_TIMEOUT=90 timeline tl turbo4 32768
finish_call
