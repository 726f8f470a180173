#!/usr/bin/env bash
# Ran on the build of commit 97b1199 (its pf runs set that build's MLXCEL_L2_PREFETCH, since removed).
# Session 24, third device call (H200, ~2 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session24_call3.sh
# Call 2's greedy fp16 tokens at 1K differed at token 25 with MLXCEL_L2_PREFETCH off / on,
# though a prefetch cannot change a value (turbo4's matched). Is the fp16 decode itself
# deterministic? The same fp16 run three times (the default in-place appends), twice with
# MLXCEL_FP16_INPLACE_APPEND=0 (rope + slice_update), twice with the prefetch on, and turbo4
# twice; every pair's first differing token.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s24c3
e2e_setup 240 60
export TOKENS=32
for i in 1 2 3; do timed 40 "det$i" fp16 1024; done
for i in 1 2; do timed 40 "ref$i" fp16 1024 MLXCEL_FP16_INPLACE_APPEND=0; done
for i in 1 2; do timed 40 "pf$i" fp16 1024 MLXCEL_L2_PREFETCH=1; done
for i in 1 2; do timed 40 "tq$i" turbo4 1024; done
python3 benchmarks/gpu/token_pairs.py "$R"
echo "done at t=${SECONDS}s"
