#!/usr/bin/env bash
# Session 36's fourth device call (H200, ~1 min; timeout_s 140). Carry .devcarry with the
# mlxcel-models test binary synthetic_and_hub (release, gzip'd) in .devcarry/bin:
#   gunzip .devcarry/bin/synthetic_and_hub.gz && chmod +x .devcarry/bin/synthetic_and_hub &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session36_call4.sh
# The generation test that compares the pipelined loop, with and without the submit thread,
# against the synchronous loop (fp16, int8, turbo4, turbo3-asym caches; tiny f32 model) on
# CUDA: call 1 stopped after fp16 on a CPU-only expectation, now backend-aware. Then the step
# A/B test twice (call 1: its plain and A/B runs' tokens differed on CUDA): the same
# difference twice points at the flag, different ones at run-to-run variation.
set -uo pipefail
R=/tmp/s36c4; rm -rf "$R"; mkdir -p "$R"; trap 'tar czf "${OUT:-/tmp}/s36c4.tgz" -C "$R" .' EXIT
t=.devcarry/bin/synthetic_and_hub
timeout 60 $t --test-threads=1 pipelined > "$R/pipelined.txt" 2>&1
echo "pipelined rc=$? $(grep -E "test result|panicked|left|right" "$R/pipelined.txt" | tr '\n' ' ' | cut -c1-500)"
for i in 1 2; do
  timeout 30 $t --test-threads=1 step_ab > "$R/step_ab$i.txt" 2>&1
  echo "step_ab $i rc=$? $(grep -E "test result|left|right" "$R/step_ab$i.txt" | tr '\n' ' ' | cut -c1-700)"
done
