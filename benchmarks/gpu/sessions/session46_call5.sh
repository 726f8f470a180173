#!/usr/bin/env bash
# Session 46, fifth device call (H200, ~3 min, the session's last device seconds): ncu's source
# counters and warp states of one turbo4 attention launch in situ at 128K (layer 10 of decode
# step 8, caches kept), for the next session: the timeline (calls 1-3) left ~3.8 us before the
# prologue's barrier and ~2 us from the slowest warp's loop end to the CTA's end unexplained
# (not the combine's bank conflicts: MLXCEL_MMA_COMBINE_SWZ changed nothing). Which stall
# reasons fill the prologue and the epilogue (no_inst would point at instruction fetch).
#   xz -d .devcarry/bin/mlxcel.xz && chmod +x .devcarry/bin/mlxcel &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session46_call5.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s46c5
CTX=131072 insitu_source attn128k decode_attention_mma_app 10
python3 benchmarks/gpu/source_regions.py "$R/attn128k-sass.csv.gz"
echo "done at t=${SECONDS}s"
