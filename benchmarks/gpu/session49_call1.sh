#!/usr/bin/env bash
# Session 49, first device call (H200, ~8 min), prepared in session 48 (whose device loans
# stopped after its first call): step A/Bs of the attention kernel's options written in session
# 48, all off by default, each bit-identical by construction or within parity (their tests run
# in call 2, session49_call2.sh). Device ms per step, MLXCEL_STEP_AB (blocks of 8 steps).
# - MLXCEL_MMA_QFIRST2: the paired loop's first two ring tiles before the prologue's barrier
#   (its first wait needs two; QFIRST1 was measured before pairs). Prediction -0.01 to -0.04 ms
#   at 128K and 32K. MLXCEL_MMA_QFIRST (all early), last measured before pairs, beside it.
# - MLXCEL_MMA_FCOPY1, MLXCEL_MMA_VZERO: the pair loop 633 -> 619 / 621 instructions per pair
#   (NVRTC). Prediction -0.005 to -0.02 ms each at 128K (a third of the instruction share).
# - MLXCEL_MMA_COMBINE_W1: the combine's weights once per (warp, head). Prediction -0.005 to
#   -0.015 ms at 128K and 32K (~0.2-0.5 us of each launch's ~2 us tail).
# - MLXCEL_MMA_LUT_V (default on) off: V decoded by byte permutes (ALU) instead of the pair
#   table (shared-memory pipe, ~70% busy in session 47's profile): is the table's pipe the
#   limit now? Session 10 (4-warp kernel) measured it slower.
# - MLXCEL_MMA_WIDE_PLAIN: 12-warp CTAs for kernels without the table: turbo4's 4 boundary
#   layers (fp16 K + int8 V, 86% of the copy roofline, CTAs spread 88-106 us) and turbo4-asym's
#   28. Prediction: -0.01 to -0.04 ms for turbo4 at 128K; turbo4-asym unknown sign.
# - MLXCEL_MMA_DEEP_PLAIN: the boundary layers' ring 3 -> 4 stages at the same 2 CTAs per SM
#   (bit-identical). Prediction: -0.01 to -0.04 ms for turbo4 at 128K.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session49_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s49c1
# Each step A/B takes ~33-45 s; skip what would pass ~550 s so the results come back (the
# device tool stops a command at 600 s). Ordered by expected value.
ab() { if ((SECONDS + 45 > 550)); then echo "skipped $* (t=${SECONDS}s)"; else step_ab "$@"; fi; }
ab ab-qfirst2 MLXCEL_MMA_QFIRST2 turbo4 131072
ab ab-wplain MLXCEL_MMA_WIDE_PLAIN turbo4 131072
ab ab-deep MLXCEL_MMA_DEEP_PLAIN turbo4 131072
ab ab-lutv MLXCEL_MMA_LUT_V turbo4 131072
ab ab-fcopy1 MLXCEL_MMA_FCOPY1 turbo4 131072
ab ab-vzero MLXCEL_MMA_VZERO turbo4 131072
ab ab-cw1 MLXCEL_MMA_COMBINE_W1 turbo4 131072
ab ab-qfirst MLXCEL_MMA_QFIRST turbo4 131072
ab ab-qfirst2 MLXCEL_MMA_QFIRST2 turbo4 32768
ab ab-cw1 MLXCEL_MMA_COMBINE_W1 turbo4 32768
ab ab-wplain MLXCEL_MMA_WIDE_PLAIN turbo4-asym 131072
ab ab-wplain MLXCEL_MMA_WIDE_PLAIN turbo4-asym 32768
finish_call
