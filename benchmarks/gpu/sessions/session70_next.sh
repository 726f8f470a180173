#!/usr/bin/env bash
# Session 70. On an H200: the table (table_if_h200, in $BUDGET seconds). Elsewhere:
# MLXCEL_MERGE_SIGNS_FIRST (written in session 70, off): the split merges load V's rotation
# signs with their partials instead of where the inverse rotation uses them, one global round
# trip in the merge instead of three (NVRTC SASS). Prediction: the fold's merge at 32K
# (attn_timeline.py's `merge`, fold_end - fold_last: 1.60 us turbo4-asym, 1.73 turbo4 in
# session 69) shorter by ~0.4-0.8 us (two L2 round trips); -0.01 to -0.03 ms per 32K step
# (32 layers); the separate warp merge at 128K likewise. In order: its bit-identity test on the
# fused kernel and the merge launch, turbo4-asym's in-process step A/B at 32K, the 32K
# timelines with it off and on (the probe build that prints after the ticket), the attention
# append's bit-identity test with it, turbo4's step A/Bs, the probe's own bit-identity test.
# Binaries: .devcarry/bin/COMMIT.
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=540 bash benchmarks/gpu/sessions/session70_next.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
table_if_h200
call_dir s70next
e2e_setup "${BUDGET:-540}" 90
budget_test gpu_fused_decode 150 "merge signs first" merge_signs_first_is_bit_identical
ok1=$(grep -c "test result: ok" "$R/test-gpu_fused_decode-merge_signs_first_is_bit_identical.txt" 2>/dev/null)
echo "bit identity (fused kernel and merge launch): ${ok1:-0} (1 = passed) t=${SECONDS}s"
# A short call (BUDGET ~300) gets the fused test, asym's step A/B and its timelines; the
# attention append's test and the other A/Bs follow where time is left.
[ "${ok1:-0}" = 1 ] && have 60 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4-asym 32768
for msf in 0 1; do
  have 45 timeline && timeline "tl$msf" turbo4-asym 32768 MLXCEL_MERGE_SIGNS_FIRST=$msf
  [ -f "$R/tl$msf-turbo4-asym-32768.json" ] && python3 benchmarks/gpu/attn_timeline.py --splits 30000 12 "$R/tl$msf-turbo4-asym-32768.json" > "$R/splits-msf$msf.txt" 2>&1
done
export MLXCEL_PARITY_FLAGS=MLXCEL_MERGE_SIGNS_FIRST
budget_test gpu_attention_append 120 "bit-identical" refill_softmax_and_combine_trims_keep_the_attention_launches_bit_identical
unset MLXCEL_PARITY_FLAGS
if [ "${ok1:-0}" = 1 ]; then
  have 60 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4 32768
  have 70 step_ab && step_ab ab-msf MLXCEL_MERGE_SIGNS_FIRST turbo4 131072
fi
[ -n "${SKIP_PROBE_TEST:-}" ] || budget_test gpu_attention_append 90 "bit-identical" timeline_probe_keeps_the_attention_launch_bit_identical
gzip -9f "$R"/tl*.json 2>/dev/null
echo "done at t=${SECONDS}s"
