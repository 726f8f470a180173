#!/usr/bin/env bash
# Session 46, second device call (H200, ~6 min): MLXCEL_MMA_LIGHT_LAST (written after call 1's
# timeline: the last split, whose CTA also encodes the step's K and V, set each 128K launch's
# end 1.2 us after the other splits'). Its step A/B at 128K and 32K (prediction: -0.02 to
# -0.04 ms per 128K step, ~-0.01 at 32K), the timeline with it on (the last split's end should
# fall within ~0.3 us of the others'), and the attention append's bit identity to the separate
# append (both kernels split alike).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session46_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s46c2
step_ab ab-light MLXCEL_MMA_LIGHT_LAST turbo4 131072
step_ab ab-light MLXCEL_MMA_LIGHT_LAST turbo4 32768
RUN_TIMEOUT=120 timeline tl turbo4 131072
gpu_test gpu_attention_append 200 "steps" attention_append_writes
finish_call
