#!/usr/bin/env bash
# Written in session 42 for the next session's first device call (H200, ~8 min; timeout_s 560),
# after benchmarks/gpu/stage.sh (test binaries not needed: rm -rf .devcarry/bin/tests/*; then
# xz -9e -T2 .devcarry/bin/mlxcel):
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session43_call1.sh
# NOTES "Next lever (after session 42)", item 1: the shipped GEMVs take ~0.44 ms per step more
# than probe level `tables` (no tile arithmetic, no scale tables, no x sums); the head's copies
# alone run at the roofline (61 us) and the shipped head takes 95. Split that excess in situ,
# with the tiled default:
# - level `loop` (tile arithmetic skipped; tables and x sums kept) against `tables` and shipped;
# - source counters of the head (the 65th qgemv4 launch of a step) and of gate/up (layer 10),
#   shipped against `loop`: whether the shipped warps' samples sit on the ring waits (DEPBAR,
#   `source_samples.py`), i.e. too few tiles in flight while a warp computes, or on the
#   arithmetic itself.
# Prediction: `loop` within 1 us of `tables` for gate/up (session 40: arithmetic 0.18 ms and
# tables 0.1 per step, i.e. most of the excess is arithmetic); the shipped head's extra samples
# on the ring waits.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s43c1
insitu_env shipped
insitu_env loop MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=loop
insitu_env tables MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=tables
((SECONDS < 300)) && insitu_source head-shipped 'mlxcel_qgemv4_[0-9]' 64
((SECONDS < 360)) && insitu_source head-loop 'mlxcel_qgemv4_nomath_[0-9]' 64 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=loop
((SECONDS < 420)) && insitu_source gateup-loop 'qgemv4_silu_nomath' 10 MLXCEL_QMV_NOMATH_PROBE=1 MLXCEL_QMV_NOMATH_LEVEL=loop
echo "done at t=${SECONDS}s"
