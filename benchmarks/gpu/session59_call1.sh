#!/usr/bin/env bash
# Written in session 58 (no device that session; ~2-3 min, H100 or H200): the KV cache's
# truncation (`KvCache::truncate`, what `mlxcel chat` does when a transcript diverges from the
# cache) after decode steps that wrote in place, on the CUDA paths: the attention append, the
# in-place pair appends and the fused attention, 7 formats x 2 shapes, each step after the cut
# bit-identical to a cache that never held the dropped positions (on the CPU it passed through
# the split paths). Also the attention-append test itself, as the reference the new one leans on.
# Stage first (`benchmarks/gpu/stage.sh`), then:
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session59_call1.sh
# Then `session58_call1.sh` (the issue's table with session 57's defaults).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s59c1
BUDGET=${BUDGET:-200}
budget_test gpu_attention_append 120 "bit-identical|differ|panicked" decode_steps_after_a_truncation
budget_test gpu_attention_append 120 "bit-identical|differ|panicked" attention_append_writes_and_attends
finish_call
