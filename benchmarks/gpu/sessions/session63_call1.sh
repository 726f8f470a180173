#!/usr/bin/env bash
# Session 63, first call. On an H200: the end-to-end table (session61_call1.sh's H200
# branch). On any other card (~3-4 min): what holds turbo4-asym below 1.3x fp16 at 32K (1.24-1.25x
# on H100s; it needs ~-0.11 ms of its ~2.92 ms step, ~3.5 us per layer) and whether turbo3's
# 32K miss against turbo4 (per call 35.4 / 30.6 against 32.6 / 27.6 us in session 61) is noise.
# - In-process step A/Bs of turbo4-asym at 32K (random-kv, device clock): 12-warp CTAs for the
#   kernels without the pair table (MLXCEL_MMA_WIDE_PLAIN; never A/B'd at 32K: session 51 took
#   it on turbo4's 128K boundary layers), the fold (MLXCEL_FOLD_MERGE), QFIRST (off by
#   default, measured on turbo4 only). Prediction: none moves the step by 0.1 ms (sessions
#   18-51 put the asym kernel's 32K fixed time at ~10 us a call, mostly prologue, first tile
#   and tail, which none of them removes); WIDE_PLAIN=0 (3 CTAs of 4 warps per SM, 49 splits,
#   a separate merge) the likeliest to differ, by +-0.05 ms.
# - `bench attention` turbo4-asym at 32K and 128K with WIDE_PLAIN off / on.
# - `bench attention` turbo4 and turbo3 at 16K, 32K and 64K, three runs (per-call noise).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session63_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s63c1
BUDGET=${BUDGET:-400}
# The machine's first process compiles MLX's and mlxcel's kernels (~60 s on a fresh machine).
TOKENS=8 RUN_TIMEOUT=150 FILL=random-kv run warm turbo4-asym 32768 > /dev/null
echo "warm-up done t=${SECONDS}s"
step_ab ab-wide MLXCEL_MMA_WIDE_PLAIN turbo4-asym 32768
step_ab ab-fold MLXCEL_FOLD_MERGE turbo4-asym 32768
step_ab ab-qfirst MLXCEL_MMA_QFIRST turbo4-asym 32768
CTXS=32768,131072 BENCH_MODES=turbo4-asym bench_ab MLXCEL_MMA_WIDE_PLAIN wide
for i in 1 2 3; do
  timeout 100 .devcarry/bin/mlxcel bench attention --contexts 16384,32768,65536 --modes turbo4,turbo3 \
    --shapes 32:8:128 --split-modes none --copy-mib 256 --out "$R/bench-t34-$i" > /dev/null 2> "$R/bench-t34-$i.err"
  echo "turbo4 / turbo3 run $i rc=$? t=${SECONDS}s"; grep -E " us \(host" "$R/bench-t34-$i.err"
done
echo "done at t=${SECONDS}s"
