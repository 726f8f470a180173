#!/usr/bin/env bash
# After session 56 (~8-9 min, H100 or H200): the merged main (fp16 centroids, the 2-bit field table
# on) re-run where session 56's call 6 ran out or tripped:
# - `fused_turbo4_encoder` with the norm check that allows a code flipped on a midpoint
#   (compares |x| = norm x the row's own codes' |c| there; call 6 failed on such a row);
# - the in-place decode appends (10 steps after a prefill) with the new codebook;
# - the parity suite for every turbo mode (call 6 reached 50 of 70 turbo3 / turbo2 cases,
#   worst 3.54e-4, before its limit).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session57_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s57c1
# Each parity run of two modes took 115 s with a warm JIT cache and ran past 150 s with a cold
# one (session 56, calls 1 and 6): two modes per run, 170 s each; what does not fit is skipped.
BUDGET=${BUDGET:-560}
budget_test gpu_fused_decode 60 "differing|panicked" fused_turbo4_encoder
budget_test gpu_fused_decode 80 "match|panicked" in_place_decode_appends
for modes in turbo3,turbo2 turbo4,turbo4-asym turbo3-asym,turbo2-asym; do
  (export MLXCEL_PARITY_MODES=$modes TEST_TAG=${modes/,/-}; budget_test gpu_fused_decode 170 "fused decode|worst|panicked" fused_decode_matches)
done
finish_call
