#!/usr/bin/env bash
# Session 71: does a carried compiled-kernel cache (e2e_run.sh's ptx_cache_in / ptx_cache_out)
# spare a fresh machine its NVRTC compiles? In one call: the fused-decode parity suite for
# $SECS seconds with an empty cache (run 1), the cache packed as the parts a call brings back,
# the cache folder emptied and seeded from those parts alone (what the next call's
# ptx_cache_in does), the suite again for $SECS seconds in a new process (run 2). Prediction:
# run 2 passes run 1's cases in a few seconds (its instantiations load, none compile) and goes
# on past them; run 1 spends most of its time in NVRTC (~2.4 s per instantiation).
#   source .devcarry/mlx-cuda/activate.sh && SECS=80 bash benchmarks/gpu/sessions/session71_ptx.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s71ptx
SECS=${SECS:-80}
[ -n "${PTX_KEY:-}" ] || { echo "no ptx cache key (no GPU?)"; exit 0; }
parity() {
  local t0=$SECONDS
  MLXCEL_MERGE_SIGNS_FIRST=1 timeout "$SECS" .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture \
    fused_decode_matches_split_paths_or_falls_back > "$R/$1.txt" 2>&1
  echo "$1: rc=$? $(grep -c 'relative RMS' "$R/$1.txt") cases in $((SECONDS - t0)) s; cache $(ptx_cache_files) files"
}
parity run1
ptx_cache_out
rm -rf "$MLX_PTX_CACHE_DIR" && mkdir -p "$MLX_PTX_CACHE_DIR"
ptx_cache_seed "$OUT"  # what the next call's ptx_cache_in does with the parts kept
parity run2
diff <(grep -o '^[a-z0-9-]* hq=[0-9]* hkv=[0-9]* d=[0-9]* len=[0-9]* [a-z0-9-]*' "$R/run1.txt") \
  <(grep -o '^[a-z0-9-]* hq=[0-9]* hkv=[0-9]* d=[0-9]* len=[0-9]* [a-z0-9-]*' "$R/run2.txt" | head -n "$(grep -c 'relative RMS' "$R/run1.txt")") > /dev/null &&
  echo "run 2 began with run 1's cases in the same order"
echo "done at t=${SECONDS}s"
