#!/usr/bin/env bash
# Written in session 58 (no device that session; ~3-4 min with session 59's serve check, H100 or H200): the KV cache's
# truncation (`KvCache::truncate`, what `mlxcel chat` does when a transcript diverges from the
# cache) after decode steps that wrote in place, on the CUDA paths: the attention append, the
# in-place pair appends and the fused attention, 7 formats x 2 shapes, each step after the cut
# bit-identical to a cache that never held the dropped positions (on the CPU it passed through
# the split paths). Also the attention-append test itself, as the reference the new one leans on.
# Stage first (`benchmarks/gpu/stage.sh`), then:
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session59_call1.sh
# Then `session58_call1.sh` (the issue's table with session 57's defaults).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s59c1
BUDGET=${BUDGET:-420}
budget_test gpu_attention_append 120 "bit-identical|differ|panicked" decode_steps_after_a_truncation
budget_test gpu_attention_append 120 "bit-identical|differ|panicked" attention_append_writes_and_attends
# Added in session 59: `mlxcel serve` on the GPU (its model runs on a spawned thread): three
# token-id requests on the synthetic 8B at 4K with turbo4 (cache reuse across requests), then
# `generate` at the same context for its decode speed beside the server's log lines.
timeout 150 python3 benchmarks/gpu/serve_smoke.py .devcarry/bin/mlxcel synthetic:llama3-8b-4bit turbo4 4096 > "$R/serve.txt" 2>&1
echo "serve_smoke rc=$?"; cat "$R/serve.txt"
TOKENS=64 timed 90 s59 turbo4 4096
finish_call
