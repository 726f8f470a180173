#!/usr/bin/env bash
# Session 67, a later call. On an H200: the table (table_if_h200, in $BUDGET seconds).
# Elsewhere: where turbo4-asym's attention call at 32K spends the ~10 us that do not move bytes
# (37.3 us per call on an H100 against ~27.6 at the copy rate; 1.3x end to end needs ~35), from
# the kernel's per-warp timeline (MLXCEL_ATTENTION_TIMING_PROBE=timeline; no such run of asym
# before), beside int8 (same 4-warp CTAs, no value decode) and turbo4 (12-warp pair-table CTAs).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=... bash benchmarks/gpu/sessions/session67_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s67next
e2e_setup "${BUDGET:-240}" 90
for kv in turbo4-asym int8 turbo4; do
  if ((SECONDS + 40 > BUDGET)); then echo "skipped timeline $kv (t=${SECONDS}s)"; continue; fi
  timeline tl "$kv" 32768
  for nw in 4 12; do
    python3 benchmarks/gpu/attn_timeline.py --splits 30000 "$nw" "$R/tl-$kv-32768.json" > "$R/splits-$kv-nw$nw.txt" 2>&1
  done
  head -40 "$R/splits-$kv-nw4.txt" "$R/splits-$kv-nw12.txt" | grep -v "^$"
done
gzip -9f "$R"/tl-*.json
echo "done at t=${SECONDS}s"
