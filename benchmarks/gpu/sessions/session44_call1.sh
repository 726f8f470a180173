#!/usr/bin/env bash
# Session 44, call 1 (H200, ~9 min; timeout_s 590), after staging the mlxcel binary and the
# gpu_quantized_gemv and gpu_qkv_encode test binaries (stripped, xz'd into .devcarry/bin):
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session44_call1.sh
# NOTES "Next lever (after session 43)", item 1: probe level `tables` (no arithmetic, no scale
# tables, no x sums) ran the GEMVs ~0.17 ms per step under `loop` (no arithmetic). That bounds the
# two prologue pieces with the arithmetic gone; with it, part of their latency may hide. The new
# levels keep the arithmetic and drop one piece each: `nosb` (constant tables: their DRAM loads
# gone), `noxsum` (POST's x sums zeroed), `noprep` (both). Prediction: noprep -0.06 to -0.12 ms
# per turbo4 32K step, most of it nosb (down's 14 KB table per CTA).
# Here:
# - the GEMV suite in the background (the probe's 55 checks, the pair blocks' corrected count,
#   the float64 and tiled tests with both defaults on), then gpu_qkv_encode (with OWN_CHUNKS);
# - in situ shipped / nosb / noxsum / noprep (turbo4 32K);
# - MLXCEL_STEP_AB of the probe at noprep and nosb (turbo4 32K);
# - the table's fp16 and turbo4 at 32K and 128K with every default on (PAIR_BLOCKS included).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s44c1
bg_test gemv gpu_quantized_gemv 300 "cases on CUDA|checks"
insitu_env shipped
insitu_env nosb MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=nosb
insitu_env noxsum MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=noxsum
insitu_env noprep MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=noprep
bg_wait
gpu_test gpu_qkv_encode 120 "checks|steps"
step_ab ab-noprep MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=noprep
step_ab ab-nosb MLXCEL_QMV_NOMATH_PROBE turbo4 32768 MLXCEL_QMV_NOMATH_LEVEL=nosb
BUDGET=${BUDGET:-560}
e2e_setup "$BUDGET" 90
config_rounds 32768 30 "1" fp16 turbo4
config_rounds 131072 40 "1" fp16 turbo4
finish_call
