#!/usr/bin/env bash
# Next session's second device call (H200, ~7 min), same staging as session9_call1.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session9_call2.sh
# 32K with random-kv, three interleaved rounds of fp16 / turbo4 / turbo4 lifted / int8 /
# turbo4-asym; then 4K turbo4-asym (B) three times; then one pinned round at 128K
# (PIN_CPUS: $PIN, else the GPU's CPU affinity from nvidia-smi topo, else 0-7) to see
# whether holding the process on fixed cores removes the run-to-run host spread; last,
# ncu's full set on the GEMV kernels (benchmarks/gpu/ncu_gemv.sh) if time is left.
set -uo pipefail
R=/tmp/s9c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s9c2.tgz" -C "$R" .' EXIT
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-500}
export FILL=random-kv
RUN_TIMEOUT=90
rounds "${MID:-32768}" 15
unset FILL
for round in 1 2 3; do timed 10 "r$round" turbo4-asym "${SMALL:-4096}"; timed 10 "r$round" fp16 "${SMALL:-4096}"; done
export FILL=random-kv
pin=${PIN:-$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+-[0-9]+$/) {print $i; exit}}')}
pin=${pin:-0-7}; echo "pinned round: taskset -c $pin"
for c in fp16 turbo4 int8; do PIN_CPUS=$pin timed 25 "r9pin" "$c" "${BIG:-131072}"; done
python3 benchmarks/repeats_summary.py "$R" | tee "$R/summary.md"
# Last, if time is left: ncu's full set on the first GEMV launches of one decode step
# (benchmarks/gpu/ncu_gemv.sh; ~2-3 min under ncu's replays).
if ((SECONDS + 180 < BUDGET + 60)); then NCU_OUT="$R" NCU_TIMEOUT=$((BUDGET + 60 - SECONDS)) bash benchmarks/gpu/ncu_gemv.sh; else echo "skipped ncu_gemv (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
