#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session16_call1.sh
# Why (NOTES "Next lever (after session 15)", item 1): turbo4-asym is 1.59x fp16 at 128K and
# 1.17x at 32K against the 2x / 1.3x. The estimate says its attention kernel is already
# at 87-90% of the copy roofline (session 10) and the rest of its 5.97-ms step is the GEMVs
# (~1.9 ms), the 4 fp16-end SDPAs (~0.5 ms) and small kernels. Confirm the split before any work:
# 1. in-situ kernel sums (ncu_e2e.sh, 2 steps) of turbo4-asym and turbo4 at 128K;
# 2. `bench attention` turbo4-asym / turbo4 / int8r at 32K and 128K (per call, % of copy);
# 3. `bench gemv` (the layer GEMVs' per-call times at the default schedule);
# 2b. the fused fp16 control kernel (MLXCEL_FUSED_FP16=1) against SDPA at 128K (NOTES item 0).
# CPU dry run of part 4: MODEL=synthetic:/tmp/tiny.json BIN=target/release/mlxcel (the 131072 runs take minutes on CPU).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s16c1
if command -v ncu > /dev/null; then
  FILL=random-kv NCU_OUT="$R/asym" timeout 150 bash benchmarks/gpu/ncu_e2e.sh turbo4-asym,turbo4 131072 8,2 2>&1 | tail -34
  gzip -9 "$R"/asym/ncu-e2e/*.csv 2> /dev/null
fi
timeout 120 .devcarry/bin/mlxcel bench attention --contexts 32768,131072 --modes turbo4-asym,turbo4,int8r \
  --shapes 32:8:128 --split-modes none --iters 50 --out "$R/bench-attn" > /dev/null 2> "$R/bench-attn.err"
echo "bench attention rc=$?"; grep -E " us \(host|error" "$R/bench-attn.err"
# 2b. NOTES item 0: the fused fp16 control kernel against MLX's SDPA at 128K (the fp16 ends).
MLXCEL_FUSED_FP16=1 timeout 60 .devcarry/bin/mlxcel bench attention --contexts 131072 --modes fp16 \
  --shapes 32:8:128 --split-modes none --iters 50 --out "$R/bench-attn-fp16" > /dev/null 2> "$R/bench-attn-fp16.err"
echo "bench attention fused fp16 rc=$?"; grep -E " us \(host|error" "$R/bench-attn-fp16.err"
timeout 100 .devcarry/bin/mlxcel bench gemv --iters 40 --out "$R/bench-gemv" > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$?"; grep -E "us \(host|error" "$R/bench-gemv.err" | head -20
# 4. fp16-key / int8-value boundary layers (`--kv-boundary-type fp16+int8`, new after session
#    15's device calls: never run on a GPU). Their quality on three models is near fp16 ends'
#    (benchmarks/results/2026-11-30-kv-boundary-asym-ends.md). Tokens through the fused path
#    against the reference path (different roundings: the first difference is printed), then
#    turbo4 at 128K with fp16 / fp16+int8 / int8r ends and fp16, two rounds. 2x needs <= 4.74
#    ms with session 15's fp16 (9.47 ms); fp16 ends measured 4.90, int8r ends 4.25.
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_KV_BOUNDARY_TYPE=fp16+int8"
export BUDGET=${BUDGET:-560}
tokens_ab MLXCEL_FUSED_DECODE turbo4 fi8
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=80
for round in 1 2; do ends_round "$round" 131072 36 "turbo4 fp16" "turbo4 fp16+int8" "turbo4 int8r" "fp16 fp16"; done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
