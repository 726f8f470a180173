#!/usr/bin/env bash
# Next session's first device call (H200, ~6 min; timeout_s 600), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh b779b93
# (b779b93: the last commit that read flags from the environment at every use):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session12_call1.sh
# Written after session 11's last device call:
# 1. gpu_fused_decode's pair-table and primitive-cache tests: they flip flags inside one
#    process, which now needs flags::reload (flags are kept after their first read);
# 2. the kept flags' host saving: build profile at 4K, turbo4 and fp16, this build against
#    b779b93, two interleaved rounds (expected -0.1 to -0.2 ms of host time per step);
# 3. what stalls the turbo4 attention kernel at 128K (66 us in situ against a 36-us copy
#    limit; more warps and more bytes in flight did not help in session 11): ncu warp-state
#    sampling and source counters.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=256 TOKENS=8
set -uo pipefail
R=/tmp/s12c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s12c1.tgz" -C "$R" .' EXIT
T=.devcarry/bin/tests/gpu_fused_decode
timeout 200 $T --test-threads=1 --nocapture pair_table primitive_cache > "$R/test-flags-in-process.txt" 2>&1
echo "pair table + primitive cache tests rc=$? $(grep -E 'test result|panicked|bit-identity|primitive cache' "$R/test-flags-in-process.txt" | tr '\n' ' ' | cut -c1-400)"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
export BUDGET=${BUDGET:-400}
export FILL=random-kv
RUN_TIMEOUT=80
for round in 1 2; do
  for kv in turbo4 fp16; do
    timed 25 "kept$round" "$kv" "${CTX:-4096}"
    BIN=.devcarry/ab/mlxcel timed 25 "peruse$round" "$kv" "${CTX:-4096}"
  done
done
echo "t=${SECONDS}s"
if ((SECONDS + 60 < BUDGET + 150)) && command -v ncu > /dev/null; then
  mkdir -p "$R/ncu-attn"
  timeout $((BUDGET + 150 - SECONDS)) ncu --clock-control none --section WarpStateStats --section SourceCounters \
    --section SpeedOfLight --section Occupancy --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 \
    -f -o "$R/ncu-attn/turbo4-131072" .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 \
    --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn/run.out" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072.ncu-rep" --page source --csv > "$R/ncu-attn/source.csv" 2>&1
  rm -f "$R/ncu-attn/turbo4-131072.ncu-rep"
  grep -E "Duration|Stall|Warp Cycles|Eligible|Issued Warp" "$R/ncu-attn/details.txt" | sed -E 's/ +/ /g' | head -30
else echo "skipped ncu (t=${SECONDS}s)"; fi
echo "done at t=${SECONDS}s"
