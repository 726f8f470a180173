#!/usr/bin/env bash
# Session 37's third device call (H200, ~3 min; timeout_s 300), after benchmarks/gpu/stage.sh
# (mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session37_call3.sh
# The premise of the next lever (ADR 0016): one launch for o_proj + gate/up (+ down) would save
# each launch's ramp and drain. Without writing that kernel: the shipped gate/up GEMV (ring, the
# folded norm) timed at Llama-3-8B's intermediate 14336 (28672 rows) and at 16384 (32768 rows:
# gate/up's rows plus o_proj's 4096, same K), beside o_proj alone. If the 4096 more rows cost
# much less than o_proj's own launch, the ramp is the saving; if about the same, a merged
# launch buys nothing. 12288 gives the slope below.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s37c3
for inter in 14336 16384 12288 14336; do
  timeout 100 .devcarry/bin/mlxcel bench gemv --schedules ring --norm --iters 200 \
    --model "4096:$inter:128256:32:8:128" --out "$R/gemv-$inter-$SECONDS" > /dev/null 2> "$R/gemv-$inter-$SECONDS.err"
  echo "intermediate $inter rc=$? t=${SECONDS}s"
done
for f in "$R"/gemv-*/gemv.md; do echo "== $f"; cat "$f"; done
echo "done at t=${SECONDS}s"
