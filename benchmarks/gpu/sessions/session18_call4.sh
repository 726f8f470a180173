#!/usr/bin/env bash
# Session 18's fourth device call (H200, ~5 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session18_call4.sh
# 1. Bit identity (call 3's filter matched no test): fold v3 against the separate warp merge,
#    and the warp merge against the block merge (merge_splits_warp.cu now takes its max,
#    denominator and inverse rotation from helpers it shares with the fold).
# 2. Where the turbo4 call's fixed time goes. Isolated ncu: 19.84 us at 32K, 48.42 us at 128K,
#    so ~10 us per call does not scale with the context (the loop: ~0.9 us per 16-token tile
#    per warp). (a) kernel and merge durations over contexts 1K-128K (bench attention under
#    ncu, every launch: the intercept and the merge's share); (b) the warp-state sampling per
#    SASS instruction at 32K (SourceCounters, the source page as CSV): prologue, loop, and
#    epilogue shares of the stall samples.
# CPU dry run: NCU=0 (the tests only end in the CPU's error path).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c4
for t in folded_merge_is_bit warp_merge_matches; do
  timeout 200 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture "$t" > "$R/test-$t.txt" 2>&1
  echo "$t rc=$? $(grep -E "test result|panicked|bit-identity checks|bit-identical to the block" "$R/test-$t.txt" | tr '\n' ' ')"
done
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw --print-units base \
    --kernel-name "regex:mlxcel_(decode|merge)" "$BIN" bench attention --contexts 1024,4096,16384,32768,65536,131072 \
    --modes turbo4 --shapes 32:8:128 --split-modes none --iters 3 > "$R/sweep.csv" 2> "$R/sweep.err"
  echo "sweep rc=$?"
  python3 - "$R/sweep.csv" <<'PY'
import csv, sys, re, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
r = list(csv.reader(rows)); h = r[0]
ki, ti, gi = h.index("Kernel Name"), h.index("gpu__time_duration.sum"), h.index("Grid Size")
seq = [(re.sub(r".*mlxcel_(\w+?)_\d.*", r"\1", x[ki]), x[gi], float(x[ti].replace(",", "")) / 1e3) for x in r[2:]]
by = collections.defaultdict(list)
for name, grid, t in seq: by[(name, grid)].append(t)
for (name, grid), ts in by.items():
    ts.sort(); print(f"{name:28s} grid {grid:14s} n={len(ts):2d} median {ts[len(ts)//2]:7.2f} us  min {ts[0]:7.2f}")
PY
  source_profile src32k mlxcel_decode 6 "$BIN" bench attention --contexts 32768 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2
fi
echo "done at t=${SECONDS}s"
