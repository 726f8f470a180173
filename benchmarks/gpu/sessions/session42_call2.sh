#!/usr/bin/env bash
# Session 42, call 2 (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh (staged as for
# call 1):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session42_call2.sh
# Call 1: POST's loop on tiled weights took gate/up 23.9 -> 22.8 us in situ and the turbo4 32K
# step -0.04 ms (device clock, 2 rounds each), with the same 192 greedy tokens; its bit-identity
# test (90 checks) ran out of its 220 s. Here:
# - that test again with 480 s, in the background (its GPU work is small launches between NVRTC
#   builds) beside in-situ ncu runs (per-kernel device times; the test's launches time-slice
#   with them at most briefly);
# - the folded norm's remaining cost with the alignment on (NOTES "Next lever (after session
#   41)", item 2): probe levels tables against xplain in situ, tiled (the layout to ship);
# - in situ at 128K (turbo4 and fp16, tiled): where a 128K step's kernel time goes now.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s42c2
bg_test tiled gpu_quantized_gemv 480 "tiled" tiled_weights
insitu_env probe-tables MLXCEL_QMV_TILED=1 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
insitu_env probe-xplain MLXCEL_QMV_TILED=1 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=xplain
((SECONDS < 300)) && CTX=131072 insitu_env tiled-128k MLXCEL_QMV_TILED=1
((SECONDS < 380)) && CTX=131072 INSITU_KV=fp16 insitu_env fp16-tiled-128k MLXCEL_QMV_TILED=1
bg_wait
echo "done at t=${SECONDS}s"
