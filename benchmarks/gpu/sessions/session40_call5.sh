#!/usr/bin/env bash
# Session 40's fifth device call (H200, ~3 min; timeout_s 400; the session's last ~400 device-s),
# after benchmarks/gpu/stage.sh (test binaries but gpu_quantized_gemv removed, the rest gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz .devcarry/bin/tests/gpu_quantized_gemv.gz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session40_call5.sh
# Call 4: staging x without the folded norm (level xplain) put gate/up at 18.27 us in situ, the
# prologue level's 18.37 (no x at all) against the tables level's 22.91: x's own loads cost
# nothing, the norm's part of the staging 4.6 us. Level nwx (new) keeps that part but reads the
# norm's weight from x's address (asm loads, not merged with x's): same instructions, no lines of
# its own. Prediction: if the weight's lines (cold in L2 at each launch, or one more 8 KB stream
# per CTA) cost, nwx's gate/up lands near 18.3 us; if the staging's arithmetic and shuffles do,
# near 22.9. Then the A/B call 4 lost to its 60 s limit (the first run's compiles).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s40c5
insitu_env nwx MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=nwx
RUN_TIMEOUT=100 step_ab ab-xplain-32k MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=xplain
gpu_test gpu_quantized_gemv 90 "nomath" nomath_probe
echo "done at t=${SECONDS}s"
