#!/usr/bin/env bash
# Session 67, a later call. On an H200: the table (table_if_h200, in $BUDGET seconds).
# Elsewhere: where turbo4-asym's attention call at 32K spends the ~10 us that do not move bytes
# (37.3 us per call on an H100 against ~27.6 at the copy rate; 1.3x end to end needs ~35), from
# the kernel's per-warp timeline (MLXCEL_ATTENTION_TIMING_PROBE=timeline; no such run of asym
# before), beside int8 (no value decode) and turbo4 (the pair table); all three run 12-warp CTAs
# at 32K and fold their 16 splits. The probe's bit-identity test first (it now covers
# turbo4-asym, and the fold's MLXCEL_TLF stamps written in session 67: the last CTA's ticket and
# merged store, attn_timeline.py's fold_last / fold_end). Needs binaries built with those
# stamps (session 67's last staging; .devcarry/bin/COMMIT names it) and
# tests/gpu_attention_append staged beside gpu_fused_decode. SKIP_PROBE_TEST=1 leaves the test out
# (the timelines alone, ~40 s each).
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=... bash benchmarks/gpu/sessions/session67_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s67next
e2e_setup "${BUDGET:-240}" 90
[ -n "${SKIP_PROBE_TEST:-}" ] || budget_test gpu_attention_append 90 "bit-identical" timeline_probe_keeps_the_attention_launch_bit_identical
for kv in turbo4-asym int8 turbo4; do
  have 40 timeline "$kv" || continue
  timeline tl "$kv" 32768
  python3 benchmarks/gpu/attn_timeline.py --splits 30000 12 "$R/tl-$kv-32768.json" > "$R/splits-$kv.txt" 2>&1
  cat "$R/splits-$kv.txt"
done
gzip -9f "$R"/tl-*.json
echo "done at t=${SECONDS}s"
