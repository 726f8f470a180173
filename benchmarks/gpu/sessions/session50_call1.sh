#!/usr/bin/env bash
# Session 50, first device call (H200, ~5 min). Written in session 48 as session49_call1.sh and
# cut to ~5 min in session 49, whose one device call was lost (the machine stopped answering
# after 600 s; no results) and whose loans then stopped: shorter calls lose less. Step A/Bs of
# the attention kernel's options, all off by default; device ms per step, MLXCEL_STEP_AB
# (blocks of 8 steps) with several flags switched together where they are one set.
# - The pair loop's trims together (session 49): MLXCEL_MMA_LAZY_RESCALE (o rescaled only when a
#   score passes the reference max by 2^4), MLXCEL_MMA_MASK_LAST (pairs without masks),
#   MLXCEL_MMA_VSEL (V nibble interleave by bit selects), with session 48's MLXCEL_MMA_FCOPY1 and
#   MLXCEL_MMA_VZERO: NVRTC 633 -> 535 instructions per pair (-15%). The 128K launch issues an
#   instruction on ~61% of cycles, ~38 of its 46.3 us (session 47); DRAM alone needs 32.6 us, and
#   session 48's arithmetic caps instruction cuts at ~3 us per launch (the stream's ~4.1 TB/s).
#   Prediction: -0.04 to -0.08 ms per 128K step (28 launches x 1.5-3 us), -0.02 to -0.04 at 32K.
#   LAZY and MASK_LAST change rounding (parity tests in call 2): the A/B's tokens follow neither
#   arm exactly; --ignore-eos keeps the shapes, so the times compare.
# - MLXCEL_MMA_QFIRST2: the paired loop's first two ring tiles before the prologue's barrier.
#   Prediction -0.01 to -0.04 ms at 128K.
# - MLXCEL_MMA_WIDE_PLAIN, MLXCEL_MMA_DEEP_PLAIN: the boundary layers (fp16 K + int8 V, 4 x 111 us
#   against 95.5 at the copy roofline) in 12-warp CTAs / a 4-stage ring. Prediction -0.01 to -0.04
#   ms each at 128K.
# - MLXCEL_MMA_COMBINE_W1: the combine's weights once per (warp, head). Prediction -0.005 to -0.015.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session50_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s50c1
TRIMS=MLXCEL_MMA_LAZY_RESCALE,MLXCEL_MMA_MASK_LAST,MLXCEL_MMA_VSEL,MLXCEL_MMA_FCOPY1,MLXCEL_MMA_VZERO
# Each step A/B takes ~33-45 s; skip what would pass ~290 s so the results come back early.
ab() { if ((SECONDS + 45 > 290)); then echo "skipped $* (t=${SECONDS}s)"; else step_ab "$@"; fi; }
ab ab-trims "$TRIMS" turbo4 131072
ab ab-qfirst2 MLXCEL_MMA_QFIRST2 turbo4 131072
ab ab-wplain MLXCEL_MMA_WIDE_PLAIN turbo4 131072
ab ab-deep MLXCEL_MMA_DEEP_PLAIN turbo4 131072
ab ab-trims "$TRIMS" turbo4 32768
ab ab-cw1 MLXCEL_MMA_COMBINE_W1 turbo4 131072
finish_call
