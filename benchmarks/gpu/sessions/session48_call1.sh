#!/usr/bin/env bash
# Session 48, first device call (H200, ~8 min): MLXCEL_MMA_L2PF (each attention CTA asks the TMA
# unit at entry to prefetch its first tiles into L2, so that DRAM works during the prologue's
# ~3-5 us instead of idling; MLXCEL_MMA_L2PF_TILES tiles per CTA, default 48). Step A/Bs for
# turbo4 at 128K (24, 48 and 96 tiles) and 32K (48), turbo4-asym at 128K (48); prediction:
# -0.02 to -0.08 ms per 128K step (up to ~3 us per launch of DRAM time moved into the
# prologue, 32 launches), less at 32K in ms. Then its bit identity (attention and attention
# append, four append formats, two tile counts, ~3K and 131K positions).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session48_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s48c1
step_ab ab-l2pf48 MLXCEL_MMA_L2PF turbo4 131072
step_ab ab-l2pf96 MLXCEL_MMA_L2PF turbo4 131072 MLXCEL_MMA_L2PF_TILES=96
step_ab ab-l2pf24 MLXCEL_MMA_L2PF turbo4 131072 MLXCEL_MMA_L2PF_TILES=24
step_ab ab-l2pf48 MLXCEL_MMA_L2PF turbo4 32768
step_ab ab-l2pf48 MLXCEL_MMA_L2PF turbo4-asym 131072
gpu_test gpu_attention_append 280 "steps" l2_prefetch
finish_call
