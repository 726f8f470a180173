#!/usr/bin/env bash
# Session 39's first device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (test binaries removed, mlxcel gzip'd):
#   gunzip .devcarry/bin/mlxcel.gz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session39_call1.sh
# NOTES "Next lever (after session 38)", item 1a: where today's shipped weight GEMVs wait, in
# situ. ncu source counters (warp-state samples per SASS instruction, by stall reason) and the
# scheduler / occupancy / memory sections of one launch each of gate/up + SiLU, down, o_proj,
# qkv (layer 10 of decode step 8) and the LM head, turbo4 at 32K (insitu_source in
# e2e_run.sh). Session 28's counters were taken in `bench gemv`, before LATE, POST and RFIRST
# changed the prologue. Then gate/up and down once more with a 5-stage ring (ring:8:5, level or
# slower in situ in sessions 21 and 28 for the other GEMVs; down's 256 CTAs hold ~32 KiB of
# copies in flight per SM at 3 stages): which stall a deeper ring moves.
# Prediction: gate/up's loop samples mostly wait on the ring's copies (long scoreboard at the
# cp.async wait), its prologue 30-45% of the samples; o_proj / qkv (256 / 384 CTAs, ~2-3 per
# SM) dominated by the prologue and the reduction (few eligible warps), not by the loop.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s39c1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv | tee "$R/gpu.txt"
insitu_source gateup qgemv4_silu 10
insitu_source down 'mlxcel_qgemv4_[0-9]' 21
insitu_source oproj 'mlxcel_qgemv4_[0-9]' 20
insitu_source qkv qgemv4_qkv 10
insitu_source head 'mlxcel_qgemv4_[0-9]' 64
((SECONDS < 440)) && insitu_source gateup-s5 qgemv4_silu 10 MLXCEL_QMV_SCHEDULE=ring:8:5
((SECONDS < 480)) && insitu_source down-s5 'mlxcel_qgemv4_[0-9]' 21 MLXCEL_QMV_SCHEDULE=ring:8:5
echo "done at t=${SECONDS}s"
